"""The rules, third pass (issue 36): classes of defect, each judged on both sides.

Each test quotes the sentence it enforces: a regulation text (lines starting with `> `,
checked verbatim against docs/regulations by `test_quotes_are_regulation_text`) or,
where no text fixes the rule, pitwatch's reading in docs/procedure.md (quoted as
`procedure: "..."` and checked against that page).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pitwatch.blackjack import Ratio, same_odds
from pitwatch.engine.violation import Violation
from tests.rounds import TableScript, audit, codes, quotes, regulation_tests, regulation_text

PROCEDURE = Path(__file__).resolve().parents[2] / "docs" / "procedure.md"


def _by_code(vs: list[Violation]) -> dict[str, Violation]:
    out = {v.code: v for v in vs}
    assert len(out) == len(vs), [(v.code, v.message) for v in vs]
    return out


# --- 1. a payment judged against a dealer total that is not final -------------------------


def _paid_on_16(*, third: str | None, amount: int = 2000) -> tuple[TableScript, dict[str, object]]:
    """NJ: seat 1 stands on 18; the dealer reveals 10 6 and the hand is paid `amount`
    while the posted rule still obliges the dealer to draw; the dealer then draws `third`
    (or stops)."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-31")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    ev: dict[str, object] = {"pay": sc.pay(1, "MAIN", amount)}
    if third is not None:
        ev["card"] = sc.dealer(third, "C")
    sc.clear(1)
    sc.finish_round()
    return sc, ev


def test_a_hand_paid_before_the_dealer_drew_is_judged_against_the_final_hand() -> None:
    """procedure: "Any other hand is decided only by the dealer's final hand"

    An 18 paid 1 to 1 while the dealer holds 10 6 (the rule draws on 16); the dealer then
    draws a 5 (21): the payment was wrong, and the dealer did not stand on 16."""
    sc, ev = _paid_on_16(third="5")
    v = _by_code(audit(sc.events))
    assert set(v) == {"PAYOUT_WRONG"}
    assert v["PAYOUT_WRONG"].event_id == ev["pay"].event_id  # type: ignore[attr-defined]
    assert v["PAYOUT_WRONG"].severity == "CRITICAL"
    assert "expected collected $20.00" in v["PAYOUT_WRONG"].message


def test_an_early_payment_right_for_the_final_hand_is_the_procedure_only() -> None:
    """procedure: "Any other hand is decided only by the dealer's final hand"

    The same payment, and the dealer busts (10 6 K): the money was right, paid out of
    order: one MEDIUM finding, no money finding, no "dealer stood"."""
    sc, ev = _paid_on_16(third="K")
    v = _by_code(audit(sc.events))
    assert set(v) == {"PROCEDURE_OUT_OF_ORDER"}
    assert v["PROCEDURE_OUT_OF_ORDER"].severity == "MEDIUM"
    assert v["PROCEDURE_OUT_OF_ORDER"].event_id == ev["pay"].event_id  # type: ignore[attr-defined]


def test_a_dealer_who_stops_on_16_after_a_payment_stood() -> None:
    """procedure: "then cards per the posted soft-17 rule"

    Paid, and the dealer never draws: the dealer stood on 16 (one finding, on the
    payment that showed it), and the 18 was rightly paid against 16."""
    sc, ev = _paid_on_16(third=None)
    v = _by_code(audit(sc.events))
    assert set(v) == {"DEALER_DREW_WRONG"}
    assert v["DEALER_DREW_WRONG"].event_id == ev["pay"].event_id  # type: ignore[attr-defined]


def test_the_compliant_order_raises_nothing() -> None:
    """procedure: "Settlement, seats descending, hands ascending, each wager of each live
    hand once"

    The dealer draws first (10 6 K), then the 18 is paid: nothing."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-32")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("K", "C")
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    assert audit(sc.events) == []


@pytest.mark.parametrize("third", ["9", None])
def test_2_25_d_a_hand_paid_before_the_third_card_is_not_the_dealer_stopping(
        third: str | None) -> None:
    """N.J.A.C. 13:69F-2.25(d)

    > If the dealer's first two cards have a point total of less than 17 and any player
    > has placed an optional bonus wager under this section, the dealer shall be required
    > to draw a third card

    A bonus wager stands and the dealer holds 10 6; seat 1's 20 is paid before the third
    card. If the dealer then draws (a 9: 25, the bonus wins 5 to 1), the payment was
    early and right, not a stop; if the dealer never draws, the stop is the finding, on
    the payment that showed it."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-34")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.deal({1: ("10", "K")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    pay = sc.pay(1, "MAIN", 2000)
    if third is not None:
        sc.dealer(third, "C")
        sc.pay(1, "BONUS", 2500)
    else:
        sc.collect(1, "BONUS", 500)
    sc.clear(1)
    sc.finish_round()
    v = _by_code(audit(sc.events))
    if third is not None:
        assert set(v) == {"PROCEDURE_OUT_OF_ORDER"}  # paid before the dealer finished
        assert v["PROCEDURE_OUT_OF_ORDER"].event_id == pay.event_id
    else:
        assert set(v) == {"BONUS_THIRD_CARD_NOT_DRAWN"}
        assert v["BONUS_THIRD_CARD_NOT_DRAWN"].event_id == pay.event_id


def _nz_early(*, second: str, paid: int) -> tuple[TableScript, dict[str, object]]:
    """NZ: seat 1's blackjack against a 10 is paid `paid` before the dealer's second card;
    seat 2 stands on 19."""
    sc = TableScript.opened("nz_blackjack", "NZ-BJ-31")
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("A", "K"), 2: ("10", "9")}, up="10")
    ev: dict[str, object] = {"pay": sc.pay(1, "MAIN", paid)}
    sc.clear(1)
    sc.decide(2, "STAND")
    ev["second"] = sc.dealer(second, "D")
    if second == "A":  # a dealer blackjack takes seat 2
        sc.collect(2, "MAIN", 2000)
    else:  # 10 7: seat 2's 19 wins
        sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return sc, ev


@pytest.mark.parametrize("second, paid, money_ok", [
    ("7", 3000, True), ("A", 3000, False), ("A", 2000, False), ("7", 2000, False),
])
def test_8_2_an_early_payment_is_judged_for_its_amount_too(second: str, paid: int,
                                                           money_ok: bool) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.2

    > If the dealer’s second card gives a blackjack, the wager of any player having a
    > blackjack shall constitute a stand off.

    A blackjack paid before the dealer's second card is early (BLACKJACK_PAID_EARLY);
    its amount is judged once that card is known: a stand-off paid 3 to 2 is money moved
    wrongly, a 3 to 2 against a 17 is right."""
    sc, ev = _nz_early(second=second, paid=paid)
    v = _by_code(audit(sc.events))
    want = {"BLACKJACK_PAID_EARLY"} | (set() if money_ok else {"PAYOUT_WRONG"})
    assert set(v) == want
    if not money_ok:
        assert v["PAYOUT_WRONG"].event_id == ev["pay"].event_id  # type: ignore[attr-defined]


# --- 2. an election never settled -----------------------------------------------------------


@pytest.mark.parametrize("paid", [True, False])
def test_672a_8_e_even_money_elected_is_paid(paid: bool) -> None:
    """58 Pa. Code § 672a.8(e)

    > If the player elects to be paid even money, the dealer shall pay out the Blackjack
    > Wager at odds of 1 to 1

    Elected and never paid: at the round's end, a finding with the amount owed."""
    sc = TableScript.opened("pa_free_bet", "PA-FB-31")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "K")}, up="A", hole="9")
    sc.offer_insurance()
    sc.decide(1, "EVEN_MONEY")
    if paid:
        sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.insert_hole(False)
    sc.reveal()
    sc.finish_round()
    vs = audit(sc.events)
    if paid:
        assert vs == []
        return
    v = _by_code(vs)["EVEN_MONEY_SETTLEMENT_WRONG"]
    assert len(vs) == 1 and v.severity == "CRITICAL" and v.event_id == sc.events[-1].event_id
    assert "never paid: owed $20.00" in v.message


# --- 3. conditions judged on every event that can breach them ----------------------------


@pytest.mark.parametrize("pay, clear, found", [
    ("at once", "at once", None),
    ("at the end", "at once", "not paid"),  # removed at once, paid only at the end
    ("at once", "at the end", "not removed"),
    ("at the end", "at the end", "not paid and not removed"),
])
def test_8_1_blackjack_paid_and_removed(pay: str, clear: str, found: str | None) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1

    > the dealer shall announce and pay the blackjack at odds of three to two and shall
    > remove the player's cards to the discard rack before any player receives a third
    > card.

    Both: paid and removed. Cards removed but the money left for later breaks it too."""
    from tests.unit.test_packs_nz_blackjack import _blackjack_against_low_card

    sc, ev = _blackjack_against_low_card(pay=pay, clear=clear)
    vs = audit(sc.events)
    if found is None:
        assert vs == []
        return
    v = _by_code(vs)["BLACKJACK_PAID_LATE"]
    assert len(vs) == 1 and v.event_id == ev["third card"].event_id
    assert found in v.message


def _nz_even_money(*, paid: str, cleared: str) -> tuple[TableScript, dict[str, object]]:
    """NZ: seat 1's blackjack takes even money against an ace; seat 2 (10 6) hits. The
    even money is paid and the cards removed "at once" or "late" (after seat 2's card)."""
    sc = TableScript.opened("nz_blackjack", "NZ-BJ-32")
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("A", "K"), 2: ("10", "6")}, up="A")
    sc.offer_insurance()
    sc.decide(1, "EVEN_MONEY")
    ev: dict[str, object] = {}
    for when in ("at once", "late"):
        if paid == when:
            sc.pay(1, "MAIN", 2000)
        if cleared == when:
            sc.clear(1)
        if when == "at once":
            sc.decide(2, "HIT")
            ev["card"] = sc.card(2, "2", "C")  # 18
    sc.decide(2, "STAND")
    sc.dealer("7", "D")  # A 7: soft 18, the dealer stands
    sc.give_back(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return sc, ev


@pytest.mark.parametrize("paid, cleared, found", [
    ("at once", "at once", None),
    ("at once", "late", "its cards not removed"),
    ("late", "at once", "not paid"),
])
def test_8_3_even_money_paid_and_cards_removed_before_further_cards(
        paid: str, cleared: str, found: str | None) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.3

    > The dealer shall then collect the cards of the player and place them in the
    > discard rack before any further cards are dealt,
    """
    sc, ev = _nz_even_money(paid=paid, cleared=cleared)
    vs = audit(sc.events)
    if found is None:
        assert vs == []
        return
    v = _by_code(vs)["EVEN_MONEY_CARDS_REMOVED"]
    assert len(vs) == 1 and v.event_id == ev["card"].event_id  # type: ignore[attr-defined]
    assert found in v.message and v.citation.endswith("8.3")


@pytest.mark.parametrize("late", [False, True])
def test_2_8_a_1_surrender_against_2_to_9_settled_before_the_reveal(late: bool) -> None:
    """N.J.A.C. 13:69F-2.8(a)1

    > Should the first card dealt to the dealer be other than an ace or 10-value card,
    > the dealer shall immediately collect one-half of the wager and return one-half to
    > the player.

    The only player surrenders against a 9; the hole card is revealed before the
    surrender is settled: the reveal shows it late."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-36")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "6")}, up="9", hole="8")
    sc.insert_hole(False)
    sc.decide(1, "SURRENDER")
    if not late:
        sc.collect(1, "MAIN", 1000)
        sc.give_back(1, "MAIN", 1000)
        sc.clear(1)
    reveal = sc.reveal()
    if late:
        sc.collect(1, "MAIN", 1000)
        sc.give_back(1, "MAIN", 1000)
        sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if not late:
        assert vs == []
        return
    v = _by_code(vs)["SURRENDER_SETTLEMENT_WRONG"]
    assert len(vs) == 1 and v.event_id == reveal.event_id


# --- 4. stacks judged as wagers ------------------------------------------------------------


@pytest.mark.parametrize("stacks, ok", [((500, 500), True), ((1000,), True), ((400, 500), False)])
def test_9_3_insurance_minimum_is_per_wager_not_per_stack(stacks: tuple[int, ...],
                                                          ok: bool) -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.3

    > at least the minimum permissible wager,

    Two stacks of 500 are one insurance wager of 1,000, the table minimum: compliant.
    400 + 500 is under it: void when insurance closes (the first card after the initial
    deal), and handed back."""
    sc = TableScript.opened("nz_blackjack", "NZ-BJ-37")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="A")
    sc.offer_insurance()
    for amount in stacks:
        sc.wager(1, "INSURANCE", amount)
    sc.decide(1, "STAND")
    closing = sc.dealer("7", "D")  # A 7: soft 18
    if ok:
        sc.collect(1, "INSURANCE", sum(stacks))
    sc.give_back(1, "MAIN", 2000)
    if not ok:
        sc.give_back(1, "INSURANCE", sum(stacks))
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = _by_code(vs)["INSURANCE_UNDER_MINIMUM"]
    assert len(vs) == 1 and v.event_id == closing.event_id and "$9.00" in v.message


@pytest.mark.parametrize("order, ok", [
    (("MAIN", "BONUS", "MAIN"), True),  # 1,000 + bonus 2,000 + 1,000: level at the close
    (("MAIN", "BONUS"), False),  # 1,000 and a bonus of 2,000
])
def test_2_25_c_bonus_cap_judged_when_bets_close(order: tuple[str, ...], ok: bool) -> None:
    """N.J.A.C. 13:69F-2.25(c)

    > shall not exceed the lesser of the player's wager pursuant to 13:69F-2.3(a)

    The blackjack wager is the sum of its stacks when bets close (the seat's first card):
    a main stack placed after the bonus counts."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-38", bonus_wager_max=None)
    sc.start(1, [1])
    for kind in order:
        sc.wager(1, kind, 2000 if kind == "BONUS" else 1000)
    main = 1000 * order.count("MAIN")
    first = sc.card(1, "10", "S")
    sc.dealer("10", "H")
    sc.card(1, "8", "D")
    sc.dealer("7", "C", face_up=False)
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    if ok:
        sc.collect(1, "BONUS", 2000)
    else:
        sc.give_back(1, "BONUS", 2000)
    sc.pay(1, "MAIN", main)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = _by_code(vs)["BONUS_WAGER_AMOUNT"]
    assert len(vs) == 1 and v.event_id == first.event_id


# --- 5. ratios compared by value ----------------------------------------------------------


def test_ratios_are_compared_by_value() -> None:
    """procedure: "Odds are compared by value" (12 to 10 is 6 to 5)."""
    assert same_odds(Ratio(12, 10), Ratio(6, 5)) and same_odds(Ratio(6, 4), Ratio(3, 2))
    assert not same_odds(Ratio(7, 5), Ratio(6, 5))


@pytest.mark.parametrize("pays, barred", [
    (Ratio(12, 10), True), (Ratio(6, 5), True), (Ratio(3, 2), False), (Ratio(6, 4), False),
    (Ratio(7, 5), False),
])
def test_2_8_c_surrender_barred_at_6_to_5_however_it_is_written(pays: Ratio,
                                                                barred: bool) -> None:
    """N.J.A.C. 13:69F-2.8(c)

    > table which offers the 6 to 5 blackjack variation

    12 to 10 is 6 to 5: the posting is a finding and a surrender there is void."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-33", blackjack_pays=pays)
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "6")}, up="9", hole="7")
    sc.insert_hole(False)
    sc.decide(1, "SURRENDER")
    sc.collect(1, "MAIN", 1000)
    sc.give_back(1, "MAIN", 1000)
    sc.clear(1)
    sc.reveal()
    sc.finish_round()
    found = codes(audit(sc.events))
    if barred:
        assert "POSTED_RULES_CONTRADICT_REGULATION" in found
        assert "SURRENDER_NOT_AVAILABLE" in found
    else:
        assert found == []


@pytest.mark.parametrize("kind, field, value", [
    ("nz_blackjack", "blackjack_pays", Ratio(6, 4)),
    ("nj_switch", "insurance_pays", Ratio(4, 2)),
])
def test_postings_equal_in_value_to_the_text_do_not_contradict_it(
        kind: str, field: str, value: Ratio) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1

    > pay the blackjack at odds of three to two

    6 to 4 is three to two (and 4 to 2 is the 2 to 1 of 13:69F-2A.8(d)): no finding; a
    posting of other odds is one."""
    sc = TableScript.opened(kind, "T-34", **{field: value})
    assert audit(sc.events) == []
    other = TableScript.opened(kind, "T-35", **{field: Ratio(value.num + 1, value.den)})
    assert codes(audit(other.events)) == ["POSTED_RULES_CONTRADICT_REGULATION"]


# --- 6. inferred procedure ----------------------------------------------------------------


def _switch_then_insurance(*, offered: bool) -> tuple[TableScript, dict[str, object]]:
    """Switch: seat 1 (two hands of 2,000) switches before insurance, with or without a
    SwitchOffered; then insures 1,000 against the ace, which the dealer rightly hands back
    (too late: after the switch); the reader finds no blackjack."""
    sc = TableScript.opened("nj_switch", "NJ-SW-41")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000, 0)
    sc.wager(1, "MAIN", 2000, 1)
    sc.deal({(1, 0): ("10", "9"), (1, 1): ("8", "K")}, up="A", hole="7")
    ev: dict[str, object] = {}
    if offered:
        sc.offer_switch(1)
    ev["switch"] = sc.decide(1, "SWITCH", 0)  # hand 0: 10 K, hand 1: 8 9
    sc.offer_insurance()
    ev["insurance"] = sc.wager(1, "INSURANCE", 1000)
    sc.insert_hole(False)
    sc.give_back(1, "INSURANCE", 1000)
    sc.decide(1, "STAND", 0)
    sc.decide(1, "STAND", 1)
    sc.reveal()  # A 7: soft 18, the dealer stands (hits soft 17 only)
    sc.pay(1, "MAIN", 2000, 0)  # 20 beats 18
    sc.clear(1, 0)
    sc.collect(1, "MAIN", 2000, 1)  # 17 loses
    sc.clear(1, 1)
    sc.finish_round()
    return sc, ev


@pytest.mark.parametrize("offered", [True, False])
def test_2a_8_a_a_switch_without_its_offer_closes_insurance(offered: bool) -> None:
    """N.J.A.C. 13:69F-2A.8(a)2

    > Any insurance bets shall be placed only after the first four cards are dealt to
    > all players, before any players are offered the opportunity to switch cards

    A SWITCH with no SwitchOffered shows the offer was made: the engine
    says so (PROCEDURE_OUT_OF_ORDER) and closes insurance, so the insurance after it is
    void and its hand-back is right (no CRITICAL)."""
    sc, ev = _switch_then_insurance(offered=offered)
    v = _by_code(audit(sc.events))
    assert set(v) == ({"INSURANCE_TOO_LATE"} if offered
                      else {"INSURANCE_TOO_LATE", "PROCEDURE_OUT_OF_ORDER"})
    assert v["INSURANCE_TOO_LATE"].event_id == ev["insurance"].event_id  # type: ignore[attr-defined]
    if not offered:
        assert v["PROCEDURE_OUT_OF_ORDER"].event_id == ev["switch"].event_id  # type: ignore[attr-defined]


@pytest.mark.parametrize("revealed", [True, False])
def test_a_dealer_card_without_the_reveal_takes_the_hand_as_revealed(revealed: bool) -> None:
    """procedure: "The dealer: `HoleCardRevealed` (READER/PEEK) or the second `CardDealt DEALER`"

    The dealer draws on 10 6 with no HoleCardRevealed: said once, and the hand is then
    judged as revealed (the 18 loses to 21, no other finding)."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-42")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    if revealed:
        sc.reveal()
    card = sc.dealer("5", "C")  # 21
    sc.collect(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if revealed:
        assert vs == []
        return
    v = _by_code(vs)["PROCEDURE_OUT_OF_ORDER"]
    assert len(vs) == 1 and v.event_id == card.event_id and "HoleCardRevealed" in v.message


# --- 7. rounding as a posted rule -----------------------------------------------------------


@pytest.mark.parametrize("paid, ok", [(1502, True), (1501, False), (1503, False)])
def test_rounding_is_one_stated_rule_judged_both_ways(paid: int, ok: bool) -> None:
    """procedure: "Rounding is one stated rule"

    A blackjack on 1,001 cents at 3 to 2 is 1,501.5 cents: the odd cent goes to the
    player, and a cent either side of 1,502 is PAYOUT_WRONG alike (the house's cent no
    longer passes)."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-51")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 1001)
    sc.deal({1: ("A", "K")}, up="9", hole="8")
    sc.insert_hole(False)
    pay = sc.pay(1, "MAIN", paid)
    sc.clear(1)
    sc.reveal()
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = _by_code(vs)["PAYOUT_WRONG"]
    assert len(vs) == 1 and v.event_id == pay.event_id and v.severity == "CRITICAL"


# --- the quotations -----------------------------------------------------------------------


def test_quotes_are_regulation_text_or_procedure() -> None:
    text = regulation_text()
    if text is None:
        pytest.skip("docs/regulations is not at hand")
    page = re.sub(r"\s+", " ", PROCEDURE.read_text(encoding="utf-8"))
    module = sys.modules[__name__]
    for name, doc in regulation_tests(module).items():
        for q in quotes(doc):
            assert q in text, f"{name} quotes text that is not in the regulations: {q!r}"
    for name, f in vars(module).items():
        if name.startswith("test_") and f.__doc__:
            for q in re.findall(r'procedure: "([^"]+)"', re.sub(r"\s+", " ", f.__doc__)):
                assert q in page, f"{name} quotes text not in docs/procedure.md: {q!r}"
