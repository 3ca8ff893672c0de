"""Class 7 of issue 7: posted wager limits, WAGER_OUTSIDE_LIMITS (HIGH).

Each test quotes the paragraph of docs/regulations/posted-rules.txt it enforces (the
text of N.J.A.C. 13:69F-2.3 was not retrieved, so the posted rule is what is cited) and
plays rounds on both sides of it.
"""

from __future__ import annotations

import sys

import pytest

from pitwatch.engine.violation import Severity
from pitwatch.events.model import Event
from pitwatch.money import dollars
from pitwatch.packs.checks.limits import CITATION, CODE
from pitwatch.packs.registry import PACKS, RECORD_ONLY
from tests.rounds import (
    TableScript,
    audit,
    expect,
    only,
    quotes,
    regulation_tests,
    regulation_text,
)

GAMES = ("nj_blackjack", "nj_switch", "pa_free_bet", "nz_blackjack")
PACK_OF = {"nj_blackjack": "nj-blackjack", "nj_switch": "nj-blackjack-switch",
           "pa_free_bet": "pa-free-bet-blackjack", "nz_blackjack": "nz-blackjack"}


def _round(kind: str, stacks: tuple[int, ...], *, paid: int | None = None,
           hand_back: int = 0, side: tuple[str, int] | None = None) -> TableScript:
    """Seat 1 (hands 0 and 1 at Switch) places its main wager in `stacks`, then
    stands on 10 9 against 9 7; the dealer draws a 10 and busts; each hand is paid
    `paid` (the sum of the stacks unless told). `hand_back`: a void stack handed back
    before the deal. `side`: a side wager (kind, amount) after the main wager."""
    sc = TableScript.opened(kind, "T-LIM")
    hands = [0, 1] if kind == "nj_switch" else [0]
    sc.start(1, [1])
    for h in hands:
        for amount in stacks:
            sc.wager(1, "MAIN", amount, h)
    if side is not None:
        sc.wager(1, side[0], side[1])
    for h in hands:
        if hand_back:
            sc.give_back(1, "MAIN", hand_back, h)
    none = sc.rules.hole_card == "NONE"
    sc.deal({(1, h): ("10", "9") for h in hands}, up="9", hole=None if none else "7")
    if kind == "nj_switch":
        sc.offer_switch(1)
    for h in hands:
        sc.decide(1, "STAND", h)
    if none:
        sc.dealer("7", "C")
    else:
        sc.reveal()
    sc.dealer("10", "C")
    if side is not None and side[0] == "BONUS" and side[1] > 0:
        sc.pay(1, "BONUS", side[1] * 3)  # 9 7 10: bust on a 10-value third card, 3 to 1
    standing = sum(stacks) - hand_back
    for h in hands:
        sc.pay(1, "MAIN", standing if paid is None else paid, h)
        sc.clear(1, h)
    sc.finish_round()
    return sc


def _wagers(sc: TableScript, amount: int) -> list[Event]:
    return [e for e in sc.events if e.type == "WagerPlaced"
            and getattr(e.payload, "amount", None) == amount]


@pytest.mark.parametrize("kind", GAMES)
def test_a_main_wager_within_the_posted_limits_raises_nothing(kind: str) -> None:
    """> A main wager (`MAIN`) is at least the posted minimum (`rules.min_wager`) and at
    > most the posted maximum (`rules.max_wager`).

    Exactly the minimum and exactly the maximum stand."""
    assert audit(_round(kind, (1000,)).events) == []
    assert audit(_round(kind, (500_000,)).events) == []


@pytest.mark.parametrize("kind", GAMES)
def test_a_main_wager_under_the_minimum_is_found_on_its_first_card(kind: str) -> None:
    """> A main wager (`MAIN`) is at least the posted minimum (`rules.min_wager`)

    999 cents at a 1,000 minimum: found on the first card dealt to each hand, when
    wagering has closed."""
    sc = _round(kind, (999,))
    found = audit(sc.events)
    firsts = {}
    for e in sc.events:
        p = e.payload
        if e.type == "CardDealt" and getattr(p, "to", "") == "PLAYER":
            firsts.setdefault(getattr(p, "hand", 0), e)
    assert [v.code for v in found] == [CODE] * len(firsts)
    for v, (h, ev) in zip(found, sorted(firsts.items()), strict=True):
        expect(v, code=CODE, severity="HIGH", citation=CITATION, event=ev, seat=1, hand=h,
               pack=PACK_OF[kind])
        assert f"{dollars(999)}" in v.message and f"minimum of {dollars(1000)}" in v.message


@pytest.mark.parametrize("kind", GAMES)
def test_a_main_wager_over_the_maximum_is_void_when_placed(kind: str) -> None:
    """> A main wager (`MAIN`) is at least the posted minimum (`rules.min_wager`) and at
    > most the posted maximum (`rules.max_wager`).

    500,001 cents at a 500,000 maximum, handed back before the deal: found on the wager
    itself, and the void wager's hand-back is not judged as a settlement."""
    sc = TableScript.opened(kind, "T-LIM")
    sc.start(1, [1])
    bad = sc.wager(1, "MAIN", 500_001)
    sc.give_back(1, "MAIN", 500_001)
    sc.end()
    v = only(audit(sc.events), CODE)
    expect(v, code=CODE, severity="HIGH", citation=CITATION, event=bad, seat=1, hand=0,
           pack=PACK_OF[kind])
    assert f"maximum of {dollars(500_000)}" in v.message


def test_the_standing_wager_is_judged_not_the_stack() -> None:
    """> What is judged is the standing wager: the sum of every stack placed on that hand
    > and wager kind before the first card.

    Two stacks of 600 stand as 1,200 (over the 1,000 minimum) and are paid 1 to 1 on
    1,200; two stacks of 300,000 go over the maximum on the second, which is void and
    handed back, so 300,000 stands and is paid."""
    assert audit(_round("nj_blackjack", (600, 600)).events) == []
    sc = _round("nj_blackjack", (300_000, 300_000), hand_back=300_000)
    v = only(audit(sc.events), CODE)
    second = _wagers(sc, 300_000)[1]
    expect(v, code=CODE, severity="HIGH", citation=CITATION, event=second, seat=1, hand=0,
           pack="nj-blackjack")
    assert f"{dollars(600_000)} (this stack {dollars(300_000)})" in v.message


@pytest.mark.parametrize("amount", [0, -500])
def test_a_wager_of_zero_or_less_is_void(amount: int) -> None:
    """> Every wager is an amount of more than zero cents.

    A main stack of zero or less, and a side wager of zero or less (found as this code,
    not as the bonus wager's own amount code)."""
    sc = _round("nj_blackjack", (2000, amount), paid=2000)
    v = only(audit(sc.events), CODE)
    expect(v, code=CODE, severity="HIGH", citation=CITATION, event=_wagers(sc, amount)[0],
           seat=1, hand=0, pack="nj-blackjack")
    sc = _round("nj_blackjack", (2000,), side=("BONUS", amount))
    v = only(audit(sc.events), CODE)
    assert v.event_id == _wagers(sc, amount)[0].event_id
    assert "BONUS wager of" in v.message


def test_side_wagers_keep_their_own_limits() -> None:
    """> A side wager keeps its own limits (such as N.J.A.C. 13:69F-2.25(c) for the bonus
    > wager), not these.

    A 500-cent bonus wager is under the table's 1,000 minimum for main wagers but within
    its own ($1.00 up to the main wager and the posted bonus maximum)."""
    assert audit(_round("nj_blackjack", (2000,), side=("BONUS", 500)).events) == []


def test_every_game_pack_judges_limits() -> None:
    for pack in PACKS.values():
        rules = [r for r in pack.rules if r.code == CODE]
        assert len(rules) == 2, pack.name
        assert {r.severity for r in rules} == {Severity.HIGH}
        assert {r.citation for r in rules} == {CITATION}
    assert CODE not in RECORD_ONLY.codes()


def test_quotes_are_the_posted_rules_text() -> None:
    text = regulation_text()
    assert text is not None
    tests = regulation_tests(sys.modules[__name__])
    assert len(tests) == 6
    for name, doc in tests.items():
        for q in quotes(doc):
            assert q in text, f"{name} quotes text that is not in docs/regulations: {q!r}"
