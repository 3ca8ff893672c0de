"""The Pennsylvania Free Bet Blackjack pack (58 Pa. Code § 672a.8 insurance and even
money), judged on hand-built rounds.

Each regulation test quotes the sentence it enforces (lines starting with `> `, checked
verbatim against docs/regulations by the last test) and plays rounds on both
sides of it: a compliant round raises nothing at all, a faulty one exactly its code.
The table: 6 decks, dealer stands on all 17s, blackjack 3 to 2, insurance 2 to 1, card
reader, Push 22 wager, even money, no surrender, chips of 100; free doubles and free
splits, and a dealer 22 pushes the players' wagers (public summary).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from pitwatch.blackjack import Ratio, dealer_must_draw, hand_total
from pitwatch.events.model import Event, WagerReturned
from pitwatch.money import dollars
from pitwatch.packs import pa_free_bet
from pitwatch.packs.base import DEALER_POSTED, PAYOUT_POSTED, POSTED
from tests.rounds import Audit, TableScript, audit, check_quotes_and_coverage, expect, only

PACK = "pa-free-bet-blackjack"
P = "58 Pa. Code § 672a.8"
PAYOUT_CITATION = PAYOUT_POSTED
SOFT17_CITATION = DEALER_POSTED


def table(**rules: object) -> TableScript:
    return TableScript.opened("pa_free_bet", "PA-FB-11", **rules)


def _dealer_out(sc: TableScript, dealer: list[str], draws: list[str]) -> int:
    """The dealer plays out (stands on all 17s) drawing from `draws`; the final total."""
    it = iter(draws)
    while dealer_must_draw(dealer, hits_soft_17=False):
        card = next(it)
        sc.dealer(card, "C")
        dealer.append(card)
    return hand_total(dealer)[0]


def _insurance_round(*, main: int = 2000, amount: int = 1000, hole: str = "7",
                     when: str = "offered", void: bool | None = None,
                     collect: str = "at once", win_odds: tuple[int, int] = (2, 1),
                     up: str = "A", rules: dict[str, object] | None = None
                     ) -> tuple[TableScript, Event]:
    """Seat 2 plays `main` on 10 + 7 and insures `amount`, placed `when`: "before"
    (with the wagers, before any card), "offered" (after InsuranceOffered) or
    "inserted" (after the hole card went into the reader). A void insurance (by default
    one not placed "offered" against an ace at a table with insurance) is handed back at
    settlement. The dealer holds `up` + `hole`: a blackjack pays the insurance at
    `win_odds`; else losing insurance is collected `collect` ("at once" after the
    insertion, "after draw", "never"), seat 2 stands and the dealer plays out.
    Returns the script and the insurance placement."""
    rules = rules or {}
    if void is None:
        void = not (when == "offered" and up == "A" and rules.get("insurance", True))
    sc = table(**rules)
    sc.start(1, [2])
    sc.wager(2, "MAIN", main)
    placed = sc.wager(2, "INSURANCE", amount) if when == "before" else None
    sc.deal({2: ("10", "7")}, up=up, hole=hole)
    if up == "A":
        sc.offer_insurance()
    if when == "offered":
        placed = sc.wager(2, "INSURANCE", amount)
    dealer_bj = hand_total([up, hole])[0] == 21
    if up in ("A", "10", "J", "Q", "K"):
        sc.insert_hole(dealer_bj)
    if when == "inserted":
        placed = sc.wager(2, "INSURANCE", amount)
    assert placed is not None
    if dealer_bj:
        sc.reveal()
        if void:
            sc.give_back(2, "INSURANCE", amount)
        else:
            sc.pay(2, "INSURANCE", amount * win_odds[0] // win_odds[1])
        sc.collect(2, "MAIN", main)
        sc.clear(2)
        sc.finish_round()
        return sc, placed
    if collect == "at once" and not void:
        sc.collect(2, "INSURANCE", amount)
    sc.decide(2, "STAND")
    sc.reveal()
    total = _dealer_out(sc, [up, hole], ["8", "9", "K"])
    if collect == "after draw" and not void:
        sc.collect(2, "INSURANCE", amount)
    if void:
        sc.give_back(2, "INSURANCE", amount)
    if total == 22:
        sc.give_back(2, "MAIN", main)
    elif total > 21 or total < 17:
        sc.pay(2, "MAIN", main)
    elif total == 17:
        sc.give_back(2, "MAIN", main)
    else:
        sc.collect(2, "MAIN", main)
    sc.clear(2)
    sc.finish_round()
    return sc, placed


# --- compliant rounds -----------------------------------------------------------------------


def _even_money_free_double_dealer_22(sc: TableScript) -> None:
    """Seat 1 takes even money on a blackjack and keeps a Push 22 wager, so its cards
    stay tucked; seat 2 insures, loses it, free-doubles 6 + 4 to 20; the dealer makes 22:
    both Push 22 wagers win 11 to 1, seat 2's 20 pushes and its free double moves no
    money."""
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "PUSH22", 500)
    sc.wager(2, "MAIN", 2000)
    sc.wager(2, "PUSH22", 500)
    sc.deal({1: ("A", "K"), 2: ("6", "4")}, up="A", hole="5")
    sc.offer_insurance()
    sc.decide(1, "EVEN_MONEY")
    sc.pay(1, "MAIN", 2000)
    sc.wager(2, "INSURANCE", 1000)
    sc.insert_hole(False)
    sc.collect(2, "INSURANCE", 1000)
    sc.decide(2, "DOUBLE")
    sc.wager(2, "FREE_DOUBLE", 2000)
    sc.card(2, "10", "H")  # 20
    sc.reveal()  # A 5: soft 16
    sc.dealer("6", "C")  # hard 12
    sc.dealer("10", "D")  # 22
    sc.pay(2, "PUSH22", 5500)
    sc.give_back(2, "MAIN", 2000)
    sc.clear(2)
    sc.pay(1, "PUSH22", 5500)
    sc.clear(1)
    sc.finish_round()


def _free_split_and_win(sc: TableScript) -> None:
    """A free split of eights; one hand wins (its FREE_SPLIT paid 1 to 1), one loses
    (its marker moves no money); the dealer stands on 19."""
    sc.start(1, [3])
    sc.wager(3, "MAIN", 2000)
    sc.deal({3: ("8", "8")}, up="9", hole="10")
    sc.decide(3, "SPLIT")
    sc.wager(3, "FREE_SPLIT", 2000, hand=1)
    sc.card(3, "Q", "H", 0)  # 18
    sc.decide(3, "STAND", 0)
    sc.card(3, "3", "D", 1)  # 11
    sc.decide(3, "HIT", 1)
    sc.card(3, "9", "C", 1)  # 20
    sc.decide(3, "STAND", 1)
    sc.reveal()
    sc.collect(3, "MAIN", 2000, 0)
    sc.clear(3, 0)
    sc.pay(3, "FREE_SPLIT", 2000, 1)
    sc.clear(3, 1)
    sc.finish_round()


def _dealer_blackjack(sc: TableScript) -> None:
    """Dealer blackjack: seat 1 took even money (no Push 22: its cards go at once),
    seat 2's insurance is paid 2 to 1, its hand and Push 22 wager lose."""
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.wager(2, "PUSH22", 500)
    sc.deal({1: ("A", "Q"), 2: ("10", "9")}, up="A", hole="K")
    sc.offer_insurance()
    sc.decide(1, "EVEN_MONEY")
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.wager(2, "INSURANCE", 1000)
    sc.insert_hole(True)
    sc.reveal()
    sc.pay(2, "INSURANCE", 2000)
    sc.collect(2, "PUSH22", 500)
    sc.collect(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()


@pytest.mark.parametrize("play", [_even_money_free_double_dealer_22, _free_split_and_win,
                                  _dealer_blackjack])
def test_compliant_rounds_raise_nothing(play: Callable[[TableScript], None]) -> None:
    sc = table()
    play(sc)
    assert audit(sc.events) == []


@pytest.mark.parametrize("kwargs", [
    {}, {"hole": "4"}, {"hole": "Q", "amount": 500}, {"main": 2500, "amount": 1300},
])
def test_compliant_insurance_rounds_raise_nothing(kwargs: dict[str, object]) -> None:
    sc, _ = _insurance_round(**kwargs)  # type: ignore[arg-type]
    assert audit(sc.events) == []


# --- § 672a.8(a) ------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, why", [
    ({"up": "9", "hole": "8"}, "against a 9 up card"),
    ({"up": "K", "hole": "8"}, "against a K up card"),
])
def test_672a_8_a_insurance_only_against_an_ace(kwargs: dict[str, object], why: str) -> None:
    """58 Pa. Code § 672a.8(a)

    > If the first card dealt to the dealer is an ace, each player may make an Insurance
    > Wager which shall win if the dealer’s hole card is a king, queen, jack or 10.

    Against a 9 or a king: void, handed back at settlement. Against an ace: compliant
    rounds.
    """
    sc, bad = _insurance_round(**kwargs)  # type: ignore[arg-type]
    v = only(audit(sc.events), "INSURANCE_NOT_AVAILABLE")
    expect(v, code="INSURANCE_NOT_AVAILABLE", severity="HIGH", citation=f"{P}(a)", event=bad,
           seat=2, hand=0, pack=PACK)
    assert why in v.message


@pytest.mark.parametrize("posted_insurance", [True, False])
def test_672a_8_a_insurance_is_the_players_a_posting_cannot_take(posted_insurance: bool
                                                                 ) -> None:
    """58 Pa. Code § 672a.8(a)

    > If the first card dealt to the dealer is an ace, each player may make an Insurance
    > Wager which shall win if the dealer’s hole card is a king, queen, jack or 10.

    A table posting insurance off contradicts the text: a finding on its TableOpened;
    the player's insurance still stands (collected: the dealer holds A + 7).
    """
    sc, _ = _insurance_round(rules={"insurance": posted_insurance}, void=False)
    found = audit(sc.events)
    if posted_insurance:
        assert found == []
        return
    v = only(found, "POSTED_RULES_CONTRADICT_REGULATION")
    assert (v.severity, v.citation, v.event_id, v.round_id) == (
        "HIGH", f"{P}(a)", sc.events[0].event_id, "")


def test_672a_8_a_insurance_placed_before_the_deal_against_a_7() -> None:
    """58 Pa. Code § 672a.8(a)

    > If the first card dealt to the dealer is an ace, each player may make an Insurance
    > Wager

    An insurance wager placed with the blackjack wager, before any card: the dealer's
    first card turns out a 7, so it was never available.
    """
    sc, bad = _insurance_round(when="before", up="7", hole="10", void=True)
    v = only(audit(sc.events), "INSURANCE_NOT_AVAILABLE")
    expect(v, code="INSURANCE_NOT_AVAILABLE", severity="HIGH", citation=f"{P}(a)", event=bad,
           seat=2, hand=0, pack=PACK)


# --- § 672a.8(b) ------------------------------------------------------------------------------


@pytest.mark.parametrize("main, chip, amount, ok", [
    (2000, 100, 1000, True),
    (2000, 100, 1100, False),
    (2500, 100, 1300, True),  # half 1,250 cannot be bet in chips of 100
    (2500, 100, 1400, False),
    (2500, 500, 1500, True),  # half 1,250 cannot be bet in chips of 500
    (2500, 500, 2000, False),
])
def test_672a_8_b_insurance_amount(main: int, chip: int, amount: int, ok: bool) -> None:
    """58 Pa. Code § 672a.8(b)

    > An Insurance Wager may be made by placing a value chip on the insurance line of the
    > layout in an amount not more than 1/2 of the player’s initial Blackjack Wager. A
    > player may wager an amount in excess of 1/2 of the initial Blackjack Wager to the
    > next unit that can be wagered in chips when, because of the limitation of the value
    > of chip denominations, 1/2 the initial Blackjack Wager cannot be bet.
    """
    sc, bad = _insurance_round(main=main, amount=amount, rules={"chip_unit": chip},
                               void=not ok)
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = only(vs, "INSURANCE_OVER_LIMIT")
    expect(v, code="INSURANCE_OVER_LIMIT", severity="HIGH", citation=f"{P}(b)", event=bad,
           seat=2, hand=0, pack=PACK)
    assert (f"insurance {dollars(amount)} exceeds half of the {dollars(main)} initial wager"
            in v.message)


def test_672a_8_b_insurance_after_the_hole_card_went_into_the_reader() -> None:
    """58 Pa. Code § 672a.8(b)

    > Insurance Wagers shall be placed prior to the dealer inserting his hole card into
    > the card reader device.

    Before the insertion: compliant rounds; after it: void, handed back.
    """
    sc, bad = _insurance_round(when="inserted")
    v = only(audit(sc.events), "INSURANCE_TOO_LATE")
    expect(v, code="INSURANCE_TOO_LATE", severity="HIGH", citation=f"{P}(b)", event=bad,
           seat=2, hand=0, pack=PACK)
    assert "after the hole card went into the reader" in v.message


# --- § 672a.8(c), (d) -------------------------------------------------------------------------


@pytest.mark.parametrize("posted, odds, ok", [
    ((2, 1), (2, 1), True),
    ((2, 1), (1, 1), False),
    ((2, 1), (3, 2), False),
    ((3, 2), (3, 2), True),  # the odds of § 672a.11(b) as the table posts them
    ((3, 2), (2, 1), False),
])
def test_672a_8_c_winning_insurance_paid_at_the_posted_odds(
        posted: tuple[int, int], odds: tuple[int, int], ok: bool) -> None:
    """58 Pa. Code § 672a.8(c)

    > Winning Insurance Wagers shall be paid in accordance with the payout odds in
    > § 672a.11(b) (relating to payout odds).

    § 672a.11(b) is not in the files: the odds are the table's posted `insurance_pays`.
    """
    sc, _ = _insurance_round(hole="K", win_odds=odds, rules={"insurance_pays": Ratio(*posted)})
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    pay = next(e for e in sc.events if type(e.payload).__name__ == "PayoutMade")
    v = only(vs, "INSURANCE_SETTLEMENT_WRONG")
    expect(v, code="INSURANCE_SETTLEMENT_WRONG", severity="CRITICAL",
           citation=f"{P}(c); odds as posted, {POSTED} (b)", event=pay, seat=2, hand=0,
           pack=PACK)


def test_672a_8_c_winning_insurance_never_paid() -> None:
    """58 Pa. Code § 672a.8(c)

    > Winning Insurance Wagers shall be paid in accordance with the payout odds in
    > § 672a.11(b) (relating to payout odds).

    Left unpaid to the end: seen at RoundEnded.
    """
    sc = table()
    sc.start(1, [2])
    sc.wager(2, "MAIN", 2000)
    sc.deal({2: ("10", "7")}, up="A", hole="K")
    sc.offer_insurance()
    sc.wager(2, "INSURANCE", 1000)
    sc.insert_hole(True)
    sc.reveal()
    sc.collect(2, "MAIN", 2000)
    sc.clear(2)
    sc.clear()
    end = sc.end()
    v = only(audit(sc.events), "INSURANCE_SETTLEMENT_WRONG")
    expect(v, code="INSURANCE_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{P}(c)",
           event=end, seat=2, hand=0, pack=PACK)


@pytest.mark.parametrize("collect, hole", [("after draw", "5"), ("never", "8")])
def test_672a_8_d_losing_insurance_collected_late(collect: str, hole: str) -> None:
    """58 Pa. Code § 672a.8(d)

    > Losing Insurance Wagers shall be collected by the dealer immediately after the
    > dealer inserts his hole card into the card reader device and determines that he
    > does not have a Blackjack and before he draws any additional cards.

    Collected right after the insertion: compliant rounds. Left up while the player acts
    (collected only once the dealer draws, or never): INSURANCE_COLLECTION_LATE on the
    first event after the reader's answer, the player's decision.
    """
    sc, _ = _insurance_round(collect=collect, hole=hole)
    inserted = next(i for i, e in enumerate(sc.events) if type(e.payload).__name__
                    == "HoleCardInserted")
    shown = sc.events[inserted + 1]
    assert type(shown.payload).__name__ == "PlayerDecision"
    v = only(audit(sc.events), "INSURANCE_COLLECTION_LATE")
    expect(v, code="INSURANCE_COLLECTION_LATE", severity="MEDIUM", citation=f"{P}(d)",
           event=shown, seat=2, hand=0, pack=PACK)


# --- § 672a.8(e) even money ---------------------------------------------------------------------


def _even_money(*, rules: dict[str, object] | None = None, up: str = "A", hole: str = "9",
                ranks: tuple[str, str] = ("A", "K"), paid: int = 2000, push22: bool = False,
                clear: str = "at once") -> tuple[TableScript, Event, Event | None, Event | None]:
    """Seat 1 (2,000) asks for even money with `ranks` against `up`. `clear`: when its
    cards go ("at once", or "after push22": tucked until the Push 22 wager settles). A
    void even money changes nothing: the hand plays on. Returns the script, the
    decision, the even-money payment and the clearing of the cards right after it."""
    rules = rules or {}
    sc = table(**rules)
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    if push22:
        sc.wager(1, "PUSH22", 500)
    sc.deal({1: ranks}, up=up, hole=hole)
    if up == "A":
        sc.offer_insurance()
    decision = sc.decide(1, "EVEN_MONEY")
    blackjack = hand_total(list(ranks))[0] == 21
    valid = blackjack and up == "A" and rules.get("even_money", True)
    pay = cleared = None
    if valid:
        pay = sc.pay(1, "MAIN", paid)
        if clear == "at once":
            cleared = sc.clear(1)
    if up in ("A", "10", "J", "Q", "K"):
        sc.insert_hole(hand_total([up, hole])[0] == 21)
    if not blackjack:
        sc.decide(1, "STAND")
    sc.reveal()
    total = _dealer_out(sc, [up, hole], ["K"])
    if push22:
        if total == 22:
            sc.pay(1, "PUSH22", 5500)
        else:
            sc.collect(1, "PUSH22", 500)
    if not valid:
        mine = hand_total(list(ranks))[0]
        if blackjack:
            sc.pay(1, "MAIN", 3000)
        elif mine > total or total > 22:
            sc.pay(1, "MAIN", 2000)
        elif mine == total or total == 22:
            sc.give_back(1, "MAIN", 2000)
        else:
            sc.collect(1, "MAIN", 2000)
    if cleared is None:
        sc.clear(1)
    sc.finish_round()
    return sc, decision, pay, cleared


@pytest.mark.parametrize("kwargs", [
    {},  # no Push 22: the cards go at once
    {"push22": True, "clear": "after push22"},  # tucked under the Push 22 wager
    {"hole": "K"},  # even money stands whatever the hole card
])
def test_672a_8_e_even_money_compliant(kwargs: dict[str, object]) -> None:
    """58 Pa. Code § 672a.8(e)

    > If the player elects to be paid even money, the dealer shall pay out the Blackjack
    > Wager at odds of 1 to 1 and remove the player’s cards provided that if the player
    > also placed a Push 22 Wager, the dealer shall tuck the player’s cards under the
    > player’s Push 22 Wager until it is resolved
    """
    sc, _, _, _ = _even_money(**kwargs)  # type: ignore[arg-type]
    assert audit(sc.events) == []


@pytest.mark.parametrize("kwargs, why", [
    ({"rules": {"even_money": False}}, "does not offer even money"),
    ({"up": "10", "hole": "9"}, "not an ace"),
    ({"ranks": ("10", "Q")}, "not a blackjack"),
    ({"ranks": ("A", "9")}, "not a blackjack"),
])
def test_672a_8_e_even_money_not_available(kwargs: dict[str, object], why: str) -> None:
    """58 Pa. Code § 672a.8(e)

    > Notwithstanding the requirements of subsections (a)—(d), if selected in its Rules
    > Submission under § 601a.2 (relating to table games Rules Submissions), a
    > certificate holder may offer a player who has Blackjack the option to be paid even
    > money on the Blackjack Wager instead of making an Insurance Wager.

    Not selected by the table, not against an ace, not a blackjack: the decision is void
    and the hand plays on.
    """
    sc, decision, _, _ = _even_money(**kwargs)
    v = only(audit(sc.events), "EVEN_MONEY_NOT_AVAILABLE")
    expect(v, code="EVEN_MONEY_NOT_AVAILABLE", severity="HIGH", citation=f"{P}(e)",
           event=decision, seat=1, hand=0, pack=PACK)
    assert why in v.message


@pytest.mark.parametrize("paid", [3000, 1000])
def test_672a_8_e_even_money_paid_other_than_1_to_1(paid: int) -> None:
    """58 Pa. Code § 672a.8(e)

    > If the player elects to be paid even money, the dealer shall pay out the Blackjack
    > Wager at odds of 1 to 1
    """
    sc, _, pay, _ = _even_money(paid=paid)
    v = only(audit(sc.events), "EVEN_MONEY_SETTLEMENT_WRONG")
    expect(v, code="EVEN_MONEY_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{P}(e)",
           event=pay, seat=1, hand=0, pack=PACK)  # type: ignore[arg-type]
    assert "expected paid $20.00 (1 to 1)" in v.message


def test_672a_8_e_push_22_cards_removed_after_even_money() -> None:
    """58 Pa. Code § 672a.8(e)

    > provided that if the player also placed a Push 22 Wager, the dealer shall tuck the
    > player’s cards under the player’s Push 22 Wager until it is resolved in accordance
    > with § 672a.7(n)

    The cards removed at once although a Push 22 wager is open.
    """
    sc, _, _, cleared = _even_money(push22=True, clear="at once")
    v = only(audit(sc.events), "EVEN_MONEY_CARDS_REMOVED")
    expect(v, code="EVEN_MONEY_CARDS_REMOVED", severity="MEDIUM", citation=f"{P}(e)",
           event=cleared, seat=1, hand=0, pack=PACK)  # type: ignore[arg-type]
    assert "Push 22 wager of $5.00" in v.message


# --- posted rules (public summary) --------------------------------------------------------------


@pytest.mark.parametrize("ranks, move, amount, ok", [
    (("10", "Q"), "return", 2000, True),  # 20 pushes a dealer 22
    (("10", "Q"), "pay", 2000, False),
    (("A", "Q"), "pay", 3000, True),  # a blackjack still wins 3 to 2
    (("A", "Q"), "return", 2000, False),
])
def test_free_bet_dealer_22_pushes(ranks: tuple[str, str], move: str, amount: int,
                                   ok: bool) -> None:
    """Posted payouts (Free Bet Blackjack, public summary): a dealer 22 pushes the
    players' wagers; a blackjack still wins 3 to 2."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ranks}, up="6", hole="6")
    if ranks[0] != "A":
        sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("10", "C")  # 22
    ev = {"pay": sc.pay, "return": sc.give_back}[move](1, "MAIN", amount)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    expect(only(vs, "PAYOUT_WRONG"), code="PAYOUT_WRONG", severity="CRITICAL",
           citation=PAYOUT_CITATION, event=ev, seat=1, hand=0, pack=PACK)


@pytest.mark.parametrize("draws, move, ok", [
    (["9"], "pay", True),  # 20 beats 19: the free double is paid 1 to 1
    (["2", "K"], "none", True),  # dealer 22: a push, the marker moves no money
    (["2", "K"], "return", False),  # a marker "returned": money that is not money moved
    (["9"], "none", False),  # a winning free double never paid
])
def test_free_double_settles_as_the_house_marker(draws: list[str], move: str,
                                                 ok: bool) -> None:
    """Free Bet Blackjack (public summary): a free double is the house's marker, paid
    1 to 1 when the hand wins and otherwise just taken back with no money event (the one
    marker contract, `settle_free_wager`, which the simulator deals by too)."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("6", "4")}, up="6", hole="4")
    sc.decide(1, "DOUBLE")
    sc.wager(1, "FREE_DOUBLE", 2000)
    sc.card(1, "K", "H")  # 20
    sc.reveal()  # 10
    for card in draws:  # 19, or 12 and 22
        sc.dealer(card, "C")
    if draws == ["9"]:
        sc.pay(1, "MAIN", 2000)
    else:
        sc.give_back(1, "MAIN", 2000)
    if move == "pay":
        sc.pay(1, "FREE_DOUBLE", 2000)
    elif move == "return":
        sc.give_back(1, "FREE_DOUBLE", 2000)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = only(vs, "PAYOUT_WRONG")
    if move == "return":
        returned = next(e for e in sc.events if isinstance(e.payload, WagerReturned)
                        and e.payload.kind == "FREE_DOUBLE")
        expect(v, code="PAYOUT_WRONG", severity="CRITICAL", citation=PAYOUT_CITATION,
               event=returned, seat=1, hand=0, pack=PACK)
        assert "expected no money moved" in v.message
        return
    expect(v, code="PAYOUT_WRONG", severity="CRITICAL", citation=PAYOUT_CITATION,
           event=sc.events[-1], seat=1, hand=0, pack=PACK)
    assert "FREE_DOUBLE $20.00 never settled" in v.message


@pytest.mark.parametrize("dealer, won", [(["9"], True), (["2", "K"], False)])
def test_free_bet_markers_are_never_in_money_totals(dealer: list[str], won: bool) -> None:
    """A free double's marker is not the player's money: the round's total wagered is
    the 2,000 main wager alone; a winning marker's 1 to 1 is real money paid."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("6", "4")}, up="6", hole="4")
    sc.decide(1, "DOUBLE")
    sc.wager(1, "FREE_DOUBLE", 2000)
    sc.card(1, "K", "H")  # 20
    sc.reveal()
    for card in dealer:
        sc.dealer(card, "C")
    if won:
        sc.pay(1, "MAIN", 2000)
        sc.pay(1, "FREE_DOUBLE", 2000)
    else:
        sc.give_back(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    a = Audit().feed(sc.events)
    assert a.violations == []
    (summary,) = a.rounds
    assert summary.wagered == 2000
    assert (summary.paid, summary.returned) == ((4000, 0) if won else (0, 2000))


@pytest.mark.parametrize("draws, code", [(False, None), (True, "DEALER_DREW_WRONG")])
def test_free_bet_dealer_stands_on_soft_17(draws: bool, code: str | None) -> None:
    """Posted rule (Free Bet Blackjack, public summary): the dealer stands on all 17s."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="6", hole="A")
    sc.decide(1, "STAND")
    sc.reveal()
    if draws:
        first = sc.dealer("3", "C")
        sc.collect(1, "MAIN", 2000)
    else:
        first = sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if code is None:
        assert vs == []
        return
    expect(only(vs, code), code=code, severity="MEDIUM", citation=SOFT17_CITATION,
           event=first, seat=None, hand=None, pack=PACK)


def test_quotes_are_verbatim_and_every_cited_paragraph_is_tested() -> None:
    check_quotes_and_coverage(sys.modules[__name__], pa_free_bet.PACK)
