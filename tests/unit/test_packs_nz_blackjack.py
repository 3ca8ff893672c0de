"""The New Zealand blackjack pack (NZ Gazette 1996 No 7: 8.1–8.3 payment of blackjack,
9.1–9.4 insurance), judged on hand-built rounds.

The deal has no hole card: the dealer's second card comes after the players act. Each
regulation test quotes the sentence it enforces (lines starting with `> `, checked
verbatim against docs/regulations by the last test) and plays rounds on both
sides of it: a compliant round raises nothing at all, a faulty one exactly its code.
The table: 6 decks, dealer stands on all 17s, blackjack 3 to 2, insurance 2 to 1,
even money, no surrender, table minimum 1,000, chips of 100.
"""

from __future__ import annotations

import sys

import pytest

from pitwatch.blackjack import Ratio, dealer_must_draw, hand_total
from pitwatch.events.model import CardDealt, Event
from pitwatch.packs import nz_blackjack
from pitwatch.packs.base import POSTED
from tests.rounds import TableScript, audit, check_quotes_and_coverage, codes, expect, only

PACK = "nz-blackjack"
G = "NZ Gazette 1996 No 7, Blackjack"
PAYOUT_CITATION = (f"{G} 8.1–8.2 (blackjack 3 to 2, stand-off against a dealer blackjack); "
                   f"other wins 1 to 1 as posted, {POSTED} (b)")


def table(**rules: object) -> TableScript:
    return TableScript.opened("nz_blackjack", "NZ-BJ-02", **rules)


# --- 8.1 a blackjack against 2–9 ---------------------------------------------------------------


def _blackjack_against_low_card(*, pay: str, clear: str, seat2_hits: bool = True
                                ) -> tuple[TableScript, dict[str, Event]]:
    """Seat 1 has a blackjack against a 6; seat 2 (10 + 2) hits to 17 and stands, or
    stands on 12. The blackjack is paid `pay` and cleared `clear`: "at once" (before
    any further card), "after dealer" (after the dealer's second card) or "at the end".
    Returns the script and its landmark events."""
    sc = table()
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("A", "K"), 2: ("10", "2")}, up="6")
    ev: dict[str, Event] = {}

    def settle(when: str) -> None:
        if pay == when:
            ev["pay"] = sc.pay(1, "MAIN", 3000)
        if clear == when:
            ev["clear"] = sc.clear(1)

    settle("at once")
    if seat2_hits:
        sc.decide(2, "HIT")
        ev["third card"] = sc.card(2, "5", "C")  # 17
    sc.decide(2, "STAND")
    ev["dealer"] = sc.dealer("10", "C")  # 16
    settle("after dealer")
    sc.dealer("9", "C")  # 25
    settle("at the end")
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return sc, ev


def test_8_1_blackjack_against_2_to_9_paid_and_removed_at_once() -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1

    > If the first face up card dealt to the dealer is two, three, four, five, six,
    > seven, eight or nine and a player has blackjack, the dealer shall announce and pay
    > the blackjack at odds of three to two and shall remove the player's cards to the
    > discard rack before any player receives a third card.
    """
    sc, _ = _blackjack_against_low_card(pay="at once", clear="at once")
    assert audit(sc.events) == []


@pytest.mark.parametrize("pay, clear, state", [
    ("at the end", "at the end", "not paid"),
    ("at once", "at the end", "not removed"),
])
def test_8_1_blackjack_against_2_to_9_paid_late(pay: str, clear: str, state: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1

    > the dealer shall announce and pay the blackjack at odds of three to two and shall
    > remove the player's cards to the discard rack before any player receives a third
    > card.

    Not paid, or paid but not removed, when seat 2 receives its third card: seen on that
    card.
    """
    sc, ev = _blackjack_against_low_card(pay=pay, clear=clear)
    v = only(audit(sc.events), "BLACKJACK_PAID_LATE")
    expect(v, code="BLACKJACK_PAID_LATE", severity="MEDIUM", citation=f"{G} 8.1",
           event=ev["third card"], seat=1, hand=0, pack=PACK)
    assert state in v.message


def test_8_1_blackjack_paid_after_the_dealer_second_card_when_no_player_drew() -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1

    > shall remove the player's cards to the discard rack before any player receives a
    > third card.

    Seat 2 stands on 12, so no player receives a third card; the blackjack is paid and
    removed after the dealer's second card: within the letter of 8.1.
    """
    sc, _ = _blackjack_against_low_card(pay="after dealer", clear="after dealer",
                                        seat2_hits=False)
    assert audit(sc.events) == []


@pytest.mark.parametrize("paid", [2000, 3100])
def test_8_1_blackjack_paid_other_than_3_to_2(paid: int) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1–8.2

    > the dealer shall announce and pay the blackjack at odds of three to two

    A blackjack paid 1 to 1 (or a chip over 3 to 2): PAYOUT_WRONG, with 8.1–8.2's
    citation.
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "K")}, up="6")
    pay = sc.pay(1, "MAIN", paid)
    sc.clear(1)
    sc.dealer("10", "C")
    sc.finish_round()
    v = only(audit(sc.events), "PAYOUT_WRONG")
    expect(v, code="PAYOUT_WRONG", severity="CRITICAL", citation=PAYOUT_CITATION, event=pay,
           seat=1, hand=0, pack=PACK)
    assert "expected paid $30.00" in v.message


# --- 8.2 a blackjack against an ace or a 10 ----------------------------------------------------


def _blackjack_against_high_card(*, up: str, second: str, early: str | None = None,
                                 settle: str = "right") -> tuple[TableScript, dict[str, Event]]:
    """Seat 1 has a blackjack against `up` (A or 10-value); seat 2 (10 + 8) stands.
    `early`: what is done to the blackjack before the dealer's second card ("pay",
    "clear", "collect"). After the dealer's `second` card the blackjack is settled
    `settle` ("right": 3 to 2, or a stand-off against a dealer blackjack; "paid": 3 to 2
    whatever the dealer holds)."""
    sc = table()
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("A", "K"), 2: ("10", "8")}, up=up)
    if up == "A":
        sc.offer_insurance()
    ev: dict[str, Event] = {}
    if early == "pay":
        ev["early"] = sc.pay(1, "MAIN", 3000)
    elif early == "clear":
        ev["early"] = sc.clear(1)
    elif early == "collect":
        ev["early"] = sc.collect(1, "MAIN", 2000)
    sc.decide(2, "STAND")
    ev["dealer"] = sc.dealer(second, "C")
    dealer_bj = {up, second} & {"A"} and {up, second} & {"10", "J", "Q", "K"}
    if early != "pay" and early != "collect":
        if dealer_bj and settle == "right":
            ev["settle"] = sc.give_back(1, "MAIN", 2000)
        else:
            ev["settle"] = sc.pay(1, "MAIN", 3000)
    if early != "clear":
        sc.clear(1)
    if dealer_bj:
        sc.collect(2, "MAIN", 2000)
    else:  # A + 7 = 18 or 10 + 7 = 17 against seat 2's 18
        if up == "A":
            sc.give_back(2, "MAIN", 2000)
        else:
            sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return sc, ev


@pytest.mark.parametrize("up, second", [("A", "7"), ("K", "7"), ("A", "Q"), ("10", "A")])
def test_8_2_blackjack_against_ace_or_ten_waits_for_the_dealer_second_card(
        up: str, second: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.2

    > If the dealer’s second card does not give the dealer a blackjack, the dealer shall
    > complete his/her hand and any player having blackjack shall be paid at the odds of
    > three to two. If the dealer’s second card gives a blackjack, the wager of any player
    > having a blackjack shall constitute a stand off.
    """
    sc, _ = _blackjack_against_high_card(up=up, second=second)
    assert audit(sc.events) == []


@pytest.mark.parametrize("up, early, what", [
    ("A", "pay", "paid $30.00"), ("10", "pay", "paid $30.00"),
    ("Q", "clear", "its cards removed"),
])
def test_8_2_blackjack_against_ace_or_ten_paid_early(up: str, early: str, what: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.2

    > If the first face up card dealt to the dealer is an ace, king, queen, jack or ten
    > and a player has a blackjack, the dealer shall announce the blackjack but shall make
    > no payment nor remove any cards until all other cards have been dealt to the players
    > and the dealer has received his/her second card.
    """
    sc, ev = _blackjack_against_high_card(up=up, second="7", early=early)
    v = only(audit(sc.events), "BLACKJACK_PAID_EARLY")
    expect(v, code="BLACKJACK_PAID_EARLY", severity="MEDIUM", citation=f"{G} 8.2",
           event=ev["early"], seat=1, hand=0, pack=PACK)
    assert what in v.message


def test_8_2_blackjack_stake_collected_before_the_dealer_second_card() -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.2

    > the dealer shall announce the blackjack but shall make no payment nor remove any
    > cards until all other cards have been dealt to the players and the dealer has
    > received his/her second card.

    The blackjack's stake taken before the dealer's second card: money moved wrongly
    (a blackjack at worst stands off).
    """
    sc, ev = _blackjack_against_high_card(up="10", second="7", early="collect")
    v = only(audit(sc.events), "PAYOUT_WRONG")
    expect(v, code="PAYOUT_WRONG", severity="CRITICAL", citation=PAYOUT_CITATION,
           event=ev["early"], seat=1, hand=0, pack=PACK)


def test_8_2_blackjack_paid_against_a_dealer_blackjack() -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1–8.2

    > If the dealer’s second card gives a blackjack, the wager of any player having a
    > blackjack shall constitute a stand off.
    """
    sc, ev = _blackjack_against_high_card(up="A", second="K", settle="paid")
    v = only(audit(sc.events), "PAYOUT_WRONG")
    expect(v, code="PAYOUT_WRONG", severity="CRITICAL", citation=PAYOUT_CITATION,
           event=ev["settle"], seat=1, hand=0, pack=PACK)
    assert "expected returned $20.00" in v.message


@pytest.mark.parametrize("double_move, ok", [("collect", True), ("return", False)])
def test_dealer_blackjack_takes_doubles_too(double_move: str, ok: bool) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1–8.2 (and docs/procedure.md step 10: the
    Gazette is silent on the extra stakes; pitwatch follows the usual no-hole-card rule:
    a dealer blackjack takes doubles and splits too)."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("6", "5")}, up="10")
    sc.decide(1, "DOUBLE")
    sc.wager(1, "DOUBLE", 2000)
    sc.card(1, "9", "C")  # 20
    sc.dealer("A", "C")  # blackjack
    sc.collect(1, "MAIN", 2000)
    ev = (sc.collect if double_move == "collect" else sc.give_back)(1, "DOUBLE", 2000)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    expect(only(vs, "PAYOUT_WRONG"), code="PAYOUT_WRONG", severity="CRITICAL",
           citation=PAYOUT_CITATION, event=ev, seat=1, hand=0, pack=PACK)


# --- 8.3 even money ---------------------------------------------------------------------------


def _even_money(*, up: str = "A", ranks: tuple[str, str] = ("A", "K"), paid: int = 2000,
                rules: dict[str, object] | None = None) -> tuple[TableScript, Event, Event]:
    """Seat 1 (2,000, `ranks`) asks for even money against `up`; seat 2 stands on 19.
    A valid request is paid `paid` and the cards cleared at once; a void one changes
    nothing and the hand plays on. Returns the script, the decision and the payment (or
    the decision again)."""
    rules = rules or {}
    sc = table(**rules)
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ranks, 2: ("10", "9")}, up=up)
    if up == "A":
        sc.offer_insurance()
    decision = sc.decide(1, "EVEN_MONEY")
    blackjack = set(ranks) & {"A"} and set(ranks) & {"10", "J", "Q", "K"}
    valid = blackjack and up == "A" and rules.get("even_money", True)
    pay = decision
    if valid:
        pay = sc.pay(1, "MAIN", paid)
        sc.clear(1)
    elif not blackjack:
        sc.decide(1, "STAND")
    sc.decide(2, "STAND")
    sc.dealer("7", "C")  # A 7 = 18 or 10 7 = 17
    total = 18 if up == "A" else 17
    if not valid:
        if blackjack:
            sc.pay(1, "MAIN", 3000)
        else:
            mine = hand_total(list(ranks))[0]
            if mine > total:
                sc.pay(1, "MAIN", 2000)
            else:
                sc.give_back(1, "MAIN", 2000)
        sc.clear(1)
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return sc, decision, pay


def test_8_3_even_money_paid_1_to_1_and_cards_removed() -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.3

    > When a player has blackjack and the dealer's first card is an ace, the dealer shall
    > pay the player immediately at odds of one to one in full settlement of the player's
    > wager if requested by the player,
    """
    sc, _, _ = _even_money()
    assert audit(sc.events) == []


@pytest.mark.parametrize("paid", [3000, 1000])
def test_8_3_even_money_paid_other_than_1_to_1(paid: int) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.3

    > the dealer shall pay the player immediately at odds of one to one in full
    > settlement of the player's wager if requested by the player,
    """
    sc, _, pay = _even_money(paid=paid)
    v = only(audit(sc.events), "EVEN_MONEY_SETTLEMENT_WRONG")
    expect(v, code="EVEN_MONEY_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{G} 8.3",
           event=pay, seat=1, hand=0, pack=PACK)


@pytest.mark.parametrize("kwargs, why", [
    ({"up": "K"}, "not an ace"),
    ({"ranks": ("10", "Q")}, "not a blackjack"),
])
def test_8_3_even_money_not_available(kwargs: dict[str, object], why: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.3

    > When a player has blackjack and the dealer's first card is an ace, the dealer shall
    > pay the player immediately at odds of one to one

    Against a king, or on a hand that is not a blackjack: void, and the hand plays on.
    (A table posting even money off: `test_8_1_8_3_9_1_the_text_fixes_what_a_table_posts`.)
    """
    sc, decision, _ = _even_money(**kwargs)  # type: ignore[arg-type]
    v = only(audit(sc.events), "EVEN_MONEY_NOT_AVAILABLE")
    expect(v, code="EVEN_MONEY_NOT_AVAILABLE", severity="HIGH", citation=f"{G} 8.3",
           event=decision, seat=1, hand=0, pack=PACK)
    assert why in v.message


# --- 9.1–9.4 insurance ------------------------------------------------------------------------


def _insurance(*, main: int = 2000, amount: int = 1000, up: str = "A", second: str = "7",
               when: str = "offered", void: bool | None = None, settle: str = "right",
               rules: dict[str, object] | None = None,
               hits: bool = True) -> tuple[TableScript, dict[str, Event]]:
    """Seat 1 plays `main` on 10 + 6 (hitting a 2 to 18 if `hits`) and insures
    `amount`, placed `when`: "early" (after the up card, before the players' second
    cards), "offered" (after the announcement), "card" (after a player's further
    card) or "dealer" (after the dealer's second card). A void insurance (by default
    one not placed "offered" against an ace) is handed back at the end. The insurance
    settles right after the dealer's second card: `settle` "right" (2 to 1 on a
    ten-value second card, else collected), "early" (collected before the second
    card), "wrong" (paid 1 to 1 or collected against a blackjack, paid when it loses)
    or "never"."""
    rules = rules or {}
    if void is None:
        void = not (when == "offered" and up == "A" and rules.get("insurance", True))
    sc = table(**rules)
    sc.start(1, [1])
    sc.wager(1, "MAIN", main)
    ev: dict[str, Event] = {}
    sc.card(1, "10", "S")
    sc.dealer(up, "D")
    if when == "early":
        ev["insurance"] = sc.wager(1, "INSURANCE", amount)
    sc.card(1, "6", "H")  # 16
    if up == "A":
        sc.offer_insurance()
    if when == "offered":
        ev["insurance"] = sc.wager(1, "INSURANCE", amount)
    if settle == "early" and not void:
        ev["settle"] = sc.collect(1, "INSURANCE", amount)
    if hits:
        sc.decide(1, "HIT")
        sc.card(1, "2", "C")  # 18
    if when == "card":
        ev["insurance"] = sc.wager(1, "INSURANCE", amount)
    sc.decide(1, "STAND")
    ev["dealer"] = sc.dealer(second, "C")
    if when == "dealer":
        ev["insurance"] = sc.wager(1, "INSURANCE", amount)
    dealer_bj = {up, second} & {"A"} and {up, second} & {"10", "J", "Q", "K"}
    if not void and settle in ("right", "wrong"):
        if dealer_bj:
            odds = 2 if settle == "right" else 1
            ev["settle"] = sc.pay(1, "INSURANCE", amount * odds)
        elif settle == "right":
            ev["settle"] = sc.collect(1, "INSURANCE", amount)
        else:
            ev["settle"] = sc.pay(1, "INSURANCE", amount * 2)
    if void:
        sc.give_back(1, "INSURANCE", amount)
    dealer = [up, second]
    if dealer_must_draw(dealer, hits_soft_17=False):
        sc.dealer("K", "H")
        dealer.append("K")
    total, mine = hand_total(dealer)[0], 18 if hits else 16
    if mine < total <= 21:
        sc.collect(1, "MAIN", main)
    elif total == mine:
        sc.give_back(1, "MAIN", main)
    else:
        sc.pay(1, "MAIN", main)
    sc.clear(1)
    sc.clear()
    ev["end"] = sc.end()
    return sc, ev


@pytest.mark.parametrize("kwargs", [
    {}, {"second": "K"}, {"second": "Q", "main": 3000, "amount": 1500},
    {"main": 2500, "amount": 1200}, {"main": 2500, "amount": 1250},
])
def test_9_compliant_insurance_rounds_raise_nothing(kwargs: dict[str, object]) -> None:
    sc, _ = _insurance(**kwargs)  # type: ignore[arg-type]
    assert audit(sc.events) == []


@pytest.mark.parametrize("kwargs, why", [
    ({"up": "10"}, "against a 10 up card"),
    ({"up": "9"}, "against a 9 up card"),
])
def test_9_1_insurance_only_against_an_ace(kwargs: dict[str, object], why: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.1

    > Whenever the first card dealt to the dealer is an ace, each player may make an
    > insurance wager in accordance with these rules,
    """
    sc, ev = _insurance(when="offered", void=True, **kwargs)  # type: ignore[arg-type]
    v = only(audit(sc.events), "INSURANCE_NOT_AVAILABLE")
    expect(v, code="INSURANCE_NOT_AVAILABLE", severity="HIGH", citation=f"{G} 9.1",
           event=ev["insurance"], seat=1, hand=0, pack=PACK)
    assert why in v.message


@pytest.mark.parametrize("second, settle", [
    ("K", "wrong"),  # paid 1 to 1
    ("9", "wrong"),  # a losing insurance paid
    ("9", "early"),  # collected before the dealer's second card
])
def test_9_1_insurance_wins_on_a_ten_value_second_card_only(second: str, settle: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.1

    > each player may make an insurance wager in accordance with these rules, which shall
    > win if the dealer's second card is a king, queen, jack or ten and shall lose if the
    > dealer's second card is an ace, two, three, four, five, six, seven, eight or nine.

    Settled right (compliant rounds): paid 2 to 1, or collected. Paid at other odds,
    paid when it loses, or settled before the second card decides it: wrong.
    """
    sc, ev = _insurance(second=second, settle=settle)
    v = only(audit(sc.events), "INSURANCE_SETTLEMENT_WRONG")
    expect(v, code="INSURANCE_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{G} 9.1",
           event=ev["settle"], seat=1, hand=0, pack=PACK)


def test_9_1_winning_insurance_never_paid() -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.1

    > which shall win if the dealer's second card is a king, queen, jack or ten

    Left unpaid: seen at RoundEnded.
    """
    sc, ev = _insurance(second="J", settle="never")
    v = only(audit(sc.events), "INSURANCE_SETTLEMENT_WRONG")
    expect(v, code="INSURANCE_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{G} 9.1",
           event=ev["end"], seat=1, hand=0, pack=PACK)


def test_9_1_losing_insurance_never_collected() -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.1

    > and shall lose if the dealer's second card is an ace, two, three, four, five, six,
    > seven, eight or nine.

    The losing insurance is left with the player to the end: money moved wrongly.
    """
    sc, ev = _insurance(second="9", settle="never")
    v = only(audit(sc.events), "INSURANCE_SETTLEMENT_WRONG")
    expect(v, code="INSURANCE_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{G} 9.1",
           event=ev["end"], seat=1, hand=0, pack=PACK)


def test_9_2_9_3_insurance_before_the_initial_deal_is_complete() -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.2–9.3

    > If the first card dealt to the dealer is an ace, the dealer shall first complete
    > the initial deal, and then: (a) announce the word "Insurance" in a clearly audible
    > voice; and

    > Players may then make an insurance wager

    Placed after the dealer's ace and before the players' second cards: void.
    """
    sc, ev = _insurance(when="early")
    v = only(audit(sc.events), "INSURANCE_TOO_EARLY")
    expect(v, code="INSURANCE_TOO_EARLY", severity="HIGH", citation=f"{G} 9.2–9.3",
           event=ev["insurance"], seat=1, hand=0, pack=PACK)


@pytest.mark.parametrize("when, why", [
    ("card", "after a player got a further card"),
    ("dealer", "after the dealer's second card"),
])
def test_9_3_insurance_after_a_further_card(when: str, why: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.3

    > which shall be accomplished prior to any additional cards being dealt after the
    > initial deal.
    """
    sc, ev = _insurance(when=when, hits=when == "card")
    v = only(audit(sc.events), "INSURANCE_TOO_LATE")
    expect(v, code="INSURANCE_TOO_LATE", severity="HIGH", citation=f"{G} 9.3",
           event=ev["insurance"], seat=1, hand=0, pack=PACK)
    assert why in v.message


@pytest.mark.parametrize("main, amount, ok", [
    (2000, 1000, True), (2000, 1100, False),
    (3000, 1500, True), (3000, 1600, False),
    (2500, 1250, True),
])
def test_9_3_insurance_at_most_half_the_original_wager(main: int, amount: int,
                                                       ok: bool) -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.3

    > Players may then make an insurance wager by placing on the insurance line an
    > amount, being not more than half the amount staked in the player’s original wager
    """
    sc, ev = _insurance(main=main, amount=amount, void=not ok)
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = only(vs, "INSURANCE_OVER_LIMIT")
    expect(v, code="INSURANCE_OVER_LIMIT", severity="HIGH", citation=f"{G} 9.3",
           event=ev["insurance"], seat=1, hand=0, pack=PACK)


def test_9_3_no_chip_allowance_over_half() -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.3

    > being not more than half the amount staked in the player’s original wager

    Unlike 13:69F-2A.8(b) and § 672a.8(b), 9.3 has no "next unit that can be wagered in
    chips" exception: 1,300 on 2,500 (half 1,250) is over the limit.
    """
    sc, ev = _insurance(main=2500, amount=1300, void=True)
    v = only(audit(sc.events), "INSURANCE_OVER_LIMIT")
    expect(v, code="INSURANCE_OVER_LIMIT", severity="HIGH", citation=f"{G} 9.3",
           event=ev["insurance"], seat=1, hand=0, pack=PACK)


@pytest.mark.parametrize("main, amount, chip, ok", [
    (2000, 1000, 100, True),  # the table minimum
    (2000, 900, 100, False),  # under it
    (3000, 1500, 500, True),  # wins 3,000: payable in chips of 500
    (3000, 1250, 500, True),  # wins 2,500: payable
    (3000, 1100, 500, False),  # wins 2,200: not payable in chips of 500
    (2100, 1050, 100, True),  # wins 2,100
    (2100, 1025, 25, True),
    (2100, 1025, 100, False),  # wins 2,050: not payable in chips of 100
])
def test_9_3_9_4_insurance_minimum_and_payable_in_chips(main: int, amount: int, chip: int,
                                                        ok: bool) -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.3, 9.4

    > being not more than half the amount staked in the player’s original wager but at
    > least the minimum permissible wager,

    > The amount of an insurance wager shall be such that, if the wager wins, the dealer
    > will be able to effect payment in chips.

    Judged on the wager (its stacks together) when insurance closes: the first card after
    the initial deal.
    """
    sc, ev = _insurance(main=main, amount=amount, rules={"chip_unit": chip}, void=not ok)
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = only(vs, "INSURANCE_UNDER_MINIMUM")
    after = sc.events[sc.events.index(ev["insurance"]) + 1:]
    closing = next(e for e in after if isinstance(e.payload, CardDealt))
    expect(v, code="INSURANCE_UNDER_MINIMUM", severity="HIGH", citation=f"{G} 9.3, 9.4",
           event=closing, seat=1, hand=0, pack=PACK)
    assert ("below the table minimum" if amount < 1000 else "cannot be paid in chips") \
        in v.message


def test_quotes_are_verbatim_and_every_cited_paragraph_is_tested() -> None:
    check_quotes_and_coverage(sys.modules[__name__], nz_blackjack.PACK)


# --- what the text fixes, whatever the table posts ------------------------------------------


@pytest.mark.parametrize("posted, paid, found", [
    ({}, 3000, []),
    ({"blackjack_pays": Ratio(6, 5)}, 3000, ["POSTED_RULES_CONTRADICT_REGULATION"]),
    ({"blackjack_pays": Ratio(6, 5)}, 2400,
     ["PAYOUT_WRONG", "POSTED_RULES_CONTRADICT_REGULATION"]),
    ({"even_money": False}, 3000, ["POSTED_RULES_CONTRADICT_REGULATION"]),
    ({"insurance": False}, 3000, ["POSTED_RULES_CONTRADICT_REGULATION"]),
])
def test_8_1_8_3_9_1_the_text_fixes_what_a_table_posts(posted: dict[str, object], paid: int,
                                                       found: list[str]) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1–8.2

    > the dealer shall announce and pay the blackjack at odds of three to two

    > When a player has blackjack and the dealer's first card is an ace, the dealer shall
    > pay the player immediately at odds of one to one in full settlement of the player's
    > wager if requested by the player,

    > Whenever the first card dealt to the dealer is an ace, each player may make an
    > insurance wager

    The odds (8.1) and the player's rights (8.3 even money, 9.1 insurance) are the
    text's: a table posting otherwise is a finding on its TableOpened, and the round is
    judged by the text (a blackjack paid 3 to 2 is right at a table posting 6 to 5).
    """
    sc = table(**posted)
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "K")}, up="6")
    pay = sc.pay(1, "MAIN", paid)
    sc.clear(1)
    sc.dealer("10", "C")
    sc.dealer("5", "C")
    sc.clear()
    sc.end()
    vs = audit(sc.events)
    assert codes(vs) == found, vs
    for v in vs:
        if v.code == "POSTED_RULES_CONTRADICT_REGULATION":
            assert v.event_id == sc.events[0].event_id and v.round_id == ""
            assert v.citation == {"blackjack_pays": f"{G} 8.1–8.2", "even_money": f"{G} 8.3",
                                  "insurance": f"{G} 9.1"}[next(iter(posted))]
        else:
            assert v.event_id == pay.event_id and "expected paid $30.00" in v.message
