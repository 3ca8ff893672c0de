"""An oracle for `pitwatch.blackjack`'s settlement, independent of it.

Every amount below was worked out by hand from the rules (the regulation texts in
docs/regulations, the posted odds of docs/regulations/posted-rules.txt (b), and the
public summaries the README names for Blackjack Switch and Free Bet Blackjack), then
written down as a literal. Nothing here computes an expectation: the code under test is
only called, never used to work out what it should return.

Each case: what settles (the call), and the expected (outcome, paid, collected,
returned) in cents. "Paid" is the winnings; the stake stays with the player on a win.
pitwatch's reading where the texts are silent: a payout that is not a whole cent is
rounded down to the cent (3 to 2 on 1,005 is 1,507).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pitwatch.blackjack import (
    Ratio,
    Settlement,
    settle_bonus,
    settle_even_money,
    settle_free_wager,
    settle_hand,
    settle_insurance,
    settle_match,
    settle_push22,
    settle_surrender,
)

THREE_TO_TWO, SIX_TO_FIVE, ONE_TO_ONE = Ratio(3, 2), Ratio(6, 5), Ratio(1, 1)


def hand(player: str, dealer: str, stake: int, *, pays: Ratio = THREE_TO_TWO,
         push22: bool = False, natural: bool = True) -> Callable[[], Settlement]:
    return lambda: settle_hand(player.split(), dealer.split(), stake, blackjack_pays=pays,
                               dealer_22_pushes=push22, player_blackjack_allowed=natural)


def free(player: str, dealer: str, marker: int) -> Callable[[], Settlement]:
    return lambda: settle_free_wager(player.split(), dealer.split(), marker)


def bonus(dealer: str, stake: int, suits: str | None = None,
          table: dict[str, Ratio] | None = None) -> Callable[[], Settlement]:
    return lambda: settle_bonus(stake, dealer.split(), None if suits is None else list(suits),
                                pay_table=table)


def match(cards: str, stake: int) -> Callable[[], Settlement]:
    four = [(c[:-1], c[-1]) for c in cards.split()]
    return lambda: settle_match(stake, four, pay_table=None)


W, L, P, S = "WIN", "LOSE", "PUSH", "SURRENDER"

CASES: list[tuple[str, Callable[[], Settlement], tuple[str, int, int, int]]] = [
    # --- main wager: win 1 to 1, lose, push ---------------------------------------------
    ("19 beats 17", hand("10 9", "10 7", 2000), (W, 2000, 0, 0)),
    ("16 loses to 18", hand("10 6", "10 8", 2000), (L, 0, 2000, 0)),
    ("18 ties 18", hand("10 8", "9 9", 2000), (P, 0, 0, 2000)),
    ("player bust loses, even if the dealer busts", hand("10 6 9", "10 6 10", 2000),
     (L, 0, 2000, 0)),
    ("dealer bust, 16 wins", hand("10 6", "10 6 8", 2000), (W, 2000, 0, 0)),
    ("soft 18 beats 17", hand("A 7", "10 7", 1500), (W, 1500, 0, 0)),
    ("multi-card 21 loses to a dealer blackjack", hand("7 7 7", "A K", 2000), (L, 0, 2000, 0)),
    ("multi-card 21 ties a multi-card 21", hand("7 7 7", "10 5 6", 2000), (P, 0, 0, 2000)),
    # --- blackjack --------------------------------------------------------------------------
    ("blackjack 3 to 2", hand("A K", "10 7", 2000), (W, 3000, 0, 0)),
    ("blackjack 3 to 2 on 2,500", hand("K A", "9 8", 2500), (W, 3750, 0, 0)),
    ("blackjack 3 to 2 on an odd amount: the cent to the player", hand("A Q", "10 7", 1005),
     (W, 1508, 0, 0)),
    ("blackjack beats a three-card dealer 21", hand("A J", "10 6 5", 2000), (W, 3000, 0, 0)),
    ("blackjack against a dealer blackjack stands off", hand("A K", "A Q", 2000),
     (P, 0, 0, 2000)),
    ("blackjack 6 to 5 where posted", hand("A Q", "10 8", 2500, pays=SIX_TO_FIVE),
     (W, 3000, 0, 0)),
    ("blackjack 6 to 5 on 1,000", hand("A 10", "10 8", 1000, pays=SIX_TO_FIVE),
     (W, 1200, 0, 0)),
    ("Switch: blackjack 1 to 1", hand("A K", "10 7", 2000, pays=ONE_TO_ONE, push22=True),
     (W, 2000, 0, 0)),
    ("Switch: a switched ace and ten is 21, paid 1 to 1",
     hand("A 10", "10 9", 2000, pays=ONE_TO_ONE, push22=True, natural=False), (W, 2000, 0, 0)),
    ("Switch: a switched 21 loses to a dealer blackjack",
     hand("A 10", "A K", 2000, pays=ONE_TO_ONE, push22=True, natural=False), (L, 0, 2000, 0)),
    # --- dealer 22 pushes (Blackjack Switch, Free Bet Blackjack) --------------------------
    ("dealer 22 pushes a standing 18", hand("10 8", "10 6 6", 2000, push22=True),
     (P, 0, 0, 2000)),
    ("dealer 22 does not push a blackjack (Free Bet)", hand("A K", "10 6 6", 2000, push22=True),
     (W, 3000, 0, 0)),
    ("dealer 23 loses to 12", hand("10 2", "10 6 7", 2000, push22=True), (W, 2000, 0, 0)),
    ("dealer 22 still beats a player bust", hand("10 6 8", "10 6 6", 2000, push22=True),
     (L, 0, 2000, 0)),
    ("without the posted push, dealer 22 loses", hand("10 8", "10 6 6", 2000),
     (W, 2000, 0, 0)),
    # --- double and split: the hand's outcome, 1 to 1 ----------------------------------------
    ("double on 11 makes 21: the double wins 1 to 1", hand("5 6 10", "10 9", 2000),
     (W, 2000, 0, 0)),
    ("double on 11 makes 13: the double loses", hand("5 6 2", "10 9", 2000), (L, 0, 2000, 0)),
    ("split ace and ten is 21, not blackjack: 1 to 1", hand("A K", "10 9", 2000, natural=False),
     (W, 2000, 0, 0)),
    ("split 8 and 3 ties 11", hand("8 3 8", "10 9", 2000, natural=False), (P, 0, 0, 2000)),
    # --- insurance 2 to 1, even money ------------------------------------------------------
    ("insurance wins 2 to 1 on a dealer blackjack", lambda: settle_insurance(1000, True),
     (W, 2000, 0, 0)),
    ("insurance 2 to 1 on 1,005", lambda: settle_insurance(1005, True), (W, 2010, 0, 0)),
    ("insurance lost whole", lambda: settle_insurance(1000, False), (L, 0, 1000, 0)),
    ("insurance at posted 3 to 2 (PA, odds as posted)",
     lambda: settle_insurance(1000, True, pays=THREE_TO_TWO), (W, 1500, 0, 0)),
    ("even money: 1 to 1 in full settlement", lambda: settle_even_money(2000), (W, 2000, 0, 0)),
    # --- surrender: half, odd cent to the player --------------------------------------------
    ("surrender: half collected, half returned", lambda: settle_surrender(2000, False),
     (S, 0, 1000, 1000)),
    ("surrender of 1,001: the odd cent to the player", lambda: settle_surrender(1001, False),
     (S, 0, 500, 501)),
    ("surrender against a dealer blackjack: all collected", lambda: settle_surrender(2000, True),
     (L, 0, 2000, 0)),
    # --- the dealer-bust bonus wager, N.J.A.C. 13:69F-2.25(d)-(f) --------------------------
    ("bonus: third card 10-value busts 16, 3 to 1", bonus("10 6 K", 500), (W, 1500, 0, 0)),
    ("bonus: third card 9 busts 14, 5 to 1", bonus("9 5 9", 500), (W, 2500, 0, 0)),
    ("bonus: third card 8 busts 15, 7 to 1", bonus("9 6 8", 500), (W, 3500, 0, 0)),
    ("bonus: third card 7 busts 15, 9 to 1", bonus("10 5 7", 500), (W, 4500, 0, 0)),
    ("bonus: third card 6 busts 16, 15 to 1", bonus("10 6 6", 500), (W, 7500, 0, 0)),
    ("bonus: three cards make 21, lost", bonus("7 7 7", 500), (L, 0, 500, 0)),
    ("bonus: two cards of 17, lost", bonus("10 7", 500), (L, 0, 500, 0)),
    ("bonus: soft 17 on two cards, lost", bonus("A 6", 500), (L, 0, 500, 0)),
    ("bonus: three eights suited at the posted 50 to 1",
     bonus("8 8 8", 500, "SSS", {"THREE_EIGHTS_SUITED": Ratio(50, 1)}), (W, 25000, 0, 0)),
    ("bonus: three eights of one colour at the posted 25 to 1",
     bonus("8 8 8", 500, "HDH", {"THREE_EIGHTS_COLOR": Ratio(25, 1)}), (W, 12500, 0, 0)),
    ("bonus: three eights, nothing posted: the third card's 7 to 1",
     bonus("8 8 8", 500, "SSS"), (W, 3500, 0, 0)),
    # --- Blackjack Switch match wager (public summary) -----------------------------------
    ("match: one pair 1 to 1", match("7S 7H KD 2C", 500), (W, 500, 0, 0)),
    ("match: three of a kind 5 to 1", match("7S 7H 7D 2C", 500), (W, 2500, 0, 0)),
    ("match: two pair 8 to 1", match("7S 7H KD KC", 500), (W, 4000, 0, 0)),
    ("match: four of a kind 40 to 1", match("7S 7H 7D 7C", 500), (W, 20000, 0, 0)),
    ("match: 10 and K are not a pair", match("10S KH 2D 3C", 500), (L, 0, 500, 0)),
    # --- Free Bet Blackjack Push 22 (public summary: 11 to 1) ---------------------------
    ("Push 22: dealer 22 pays 11 to 1", lambda: settle_push22(500, ["10", "6", "6"]),
     (W, 5500, 0, 0)),
    ("Push 22: dealer 17, lost", lambda: settle_push22(500, ["10", "7"]), (L, 0, 500, 0)),
    ("Push 22: dealer blackjack, lost", lambda: settle_push22(500, ["A", "K"]), (L, 0, 500, 0)),
    ("Push 22: dealer 23, lost", lambda: settle_push22(500, ["10", "6", "7"]), (L, 0, 500, 0)),
    # --- Free Bet markers: paid 1 to 1 on a win, otherwise no money moves ----------------
    ("free double marker: the hand wins, paid 1 to 1", free("5 6 10", "10 9", 2000),
     (W, 2000, 0, 0)),
    ("free double marker: the hand loses, no money", free("5 6 2", "10 9", 2000), (L, 0, 0, 0)),
    ("free double marker: the hand ties, no money", free("5 4 10", "10 9", 2000), (P, 0, 0, 0)),
    ("free split marker: dealer 22 pushes, no money", free("8 10", "10 6 6", 2000),
     (P, 0, 0, 0)),
    ("free split marker: split ace and ten is 21, 1 to 1", free("A 10", "10 9", 2000),
     (W, 2000, 0, 0)),
]


@pytest.mark.parametrize(("call", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_settlement_matches_the_hand_written_amount(
        call: Callable[[], Settlement], expected: tuple[str, int, int, int]) -> None:
    got = call()
    assert (str(got.outcome), got.payout, got.collected, got.returned) == expected


def test_the_table_covers_every_wager_kind_and_outcome() -> None:
    names = " ".join(c[0] for c in CASES)
    for needed in ("3 to 2", "6 to 5", "1 to 1", "double", "split", "insurance",
                   "even money", "surrender", "bonus", "match", "Push 22", "free double",
                   "free split", "dealer 22"):
        assert needed in names, needed
    assert {c[2][0] for c in CASES} == {W, L, P, S}
    assert len({c[0] for c in CASES}) == len(CASES)
