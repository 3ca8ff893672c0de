"""Class 6 of issue 7: a bug in a check is an engine error, never a violation.

A check raises `Undecidable` when the record cannot decide an event: the auditor reports
PROCEDURE_OUT_OF_ORDER "cannot be judged" and keeps the event out of the fold. Anything
else a check (or the fold) raises is an engine error: counted, logged with the event,
handed to `on_engine_error`, reported apart from violations, and the stream goes on.
"""

from __future__ import annotations

import io
import logging
from dataclasses import replace

import pytest

from pitwatch.audit import report, run
from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.errors import FOLD, EngineError
from pitwatch.engine.rulepack import Check, Finding, RulePack, Undecidable
from pitwatch.engine.state import Round
from pitwatch.engine.violation import Violation
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs import nj_blackjack
from pitwatch.packs.base import RECORD_CITATIONS
from pitwatch.packs.checks import bonus, hands
from pitwatch.packs.registry import select
from tests.rounds import TableScript


def _typo(r: Round, ev: Event) -> Finding | None:
    """A check with the kind of bug issue 7 planted: a TypeError on every event."""
    return len(None)  # type: ignore[arg-type]


def _undecidable(r: Round, ev: Event) -> Finding | None:
    raise Undecidable("the hole card of this round was never seen")


def _with(check: Check, instead_of: Check) -> RulePack:
    """The New Jersey blackjack pack with one check replaced."""
    p = nj_blackjack.PACK
    assert any(r.check is instead_of for r in p.rules)
    return replace(p, rules=tuple(replace(r, check=check) if r.check is instead_of else r
                                  for r in p.rules))


class Run:
    def __init__(self, pack: RulePack | None = None) -> None:
        self.violations: list[Violation] = []
        self.rounds: list[RoundSummary] = []
        self.errors: list[EngineError] = []

        def pick(jurisdiction: str, game: str) -> RulePack:
            chosen = select(jurisdiction, game)
            return pack if pack is not None and chosen.name == pack.name else chosen

        self.auditor = Auditor(pick, self.violations.append, self.rounds.append,
                               self.errors.append, released=released_writers())

    def feed(self, events: list[Event]) -> Run:
        for ev in events:
            self.auditor.feed(ev)
        self.auditor.finish()
        return self


def _two_rounds() -> tuple[TableScript, list[Event], Event]:
    """Round 1 is compliant (a win, a push and a bonus wager lost); round 2 has one fault:
    the dealer draws on a hard 18. Returns the script, the events and round 2's fault."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-11")
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.wager(2, "MAIN", 1000)
    sc.deal({1: ("10", "9"), 2: ("10", "7")}, up="7", hole="K")
    sc.decide(1, "STAND")
    sc.decide(2, "STAND")
    sc.reveal()
    sc.collect(1, "BONUS", 500)  # 17 on two cards: the bonus loses, settled first
    sc.give_back(2, "MAIN", 1000)  # 17 against 17: a push
    sc.clear(2)
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    sc.start(2, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="8", hole="K")
    sc.decide(1, "STAND")
    sc.reveal()
    fault = sc.dealer("2", "H")  # the dealer draws on a hard 18
    sc.collect(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return sc, sc.events, fault


def test_the_unchanged_pack_finds_only_the_planted_fault() -> None:
    """The baseline the planted bugs are measured against."""
    _, events, fault = _two_rounds()
    run = Run().feed(events)
    assert [(v.code, v.event_id) for v in run.violations] == [
        ("DEALER_DREW_WRONG", fault.event_id)]
    assert run.errors == [] and run.auditor.engine_errors == 0


def test_a_type_error_in_a_check_is_an_engine_error_not_a_violation(
        engine_errors: list[logging.LogRecord]) -> None:
    """A TypeError planted in the payout check: no violation for it, every error counted,
    logged with its event and handed to on_engine_error, and the stream goes on (the
    dealer's fault in the next round is still found)."""
    sc, events, fault = _two_rounds()
    run = Run(_with(_typo, hands.payout_wrong)).feed(events)
    assert [(v.code, v.event_id) for v in run.violations] == [
        ("DEALER_DREW_WRONG", fault.event_id)]
    money = [e for e in events if e.type in ("PayoutMade", "WagerCollected", "WagerReturned")]
    assert [e.event_id for e in run.errors] == [e.event_id for e in money]
    assert run.auditor.engine_errors == len(money) == 4
    first = run.errors[0]
    assert first.where == "PAYOUT_WRONG tests.unit.test_engine_errors._typo"
    assert first.error.startswith("TypeError: ")
    assert (first.table_id, first.round_id, first.event_type, first.device_id) == (
        "NJ-BJ-11", "NJ-BJ-11-000001", "WagerCollected", "NJ-BJ-11-rfid")
    assert (first.pack, first.pack_version) == ("nj-blackjack", nj_blackjack.PACK.version)
    assert first.to_json()["event_id"] == money[0].event_id
    assert len(engine_errors) == 4
    assert all(r.name == "pitwatch.engine" and r.exc_info is not None for r in engine_errors)
    assert money[0].event_id in engine_errors[0].getMessage()
    assert engine_errors[0].pitwatch_event is money[0]  # type: ignore[attr-defined]
    # the rounds close as usual, with every event folded in and the money counted
    assert [(s.round_id, s.complete, s.violations) for s in run.rounds] == [
        ("NJ-BJ-11-000001", True, 0), ("NJ-BJ-11-000002", True, 1)]
    assert run.rounds[0].paid == 2000 and run.rounds[0].returned == 1000
    assert sc.table_id in run.auditor.tables


def test_a_bug_in_a_voiding_check_does_not_void_the_event(
        engine_errors: list[logging.LogRecord]) -> None:
    """The bonus-amount check (a HIGH check, whose findings void the wager; it looks at
    every wager placed) fails: each wager is still taken into the round, so the bonus
    wager's settlement and the main wagers' payouts raise nothing further."""
    _, events, _fault = _two_rounds()
    run = Run(_with(_typo, bonus.amount)).feed(events)
    assert [v.code for v in run.violations] == ["DEALER_DREW_WRONG"]
    wagers = [e.event_id for e in events if e.type == "WagerPlaced"]
    assert [e.event_id for e in run.errors] == wagers
    assert len(engine_errors) == len(wagers) == 4
    assert run.rounds[0].wagered == 3500


def test_a_bug_in_the_fold_is_an_engine_error(engine_errors: list[logging.LogRecord]) -> None:
    """An exception out of `Round.apply` is reported with `where` = fold; the auditor
    keeps going with the next events."""
    _, events, _fault = _two_rounds()
    run = Run()
    broken = next(e for e in events if e.type == "WagerPlaced"
                  and getattr(e.payload, "kind", "") == "BONUS")

    original = Round.apply

    def apply(self: Round, ev: Event, void: bool = False,
              cause: tuple[str, str] | None = None) -> None:
        if ev is broken:
            raise KeyError("planted")
        original(self, ev, void, cause)

    Round.apply = apply  # type: ignore[method-assign]
    try:
        run.feed(events)
    finally:
        Round.apply = original  # type: ignore[method-assign]
    assert [e.where for e in run.errors] == [FOLD]
    assert run.errors[0].event_id == broken.event_id
    assert "DEALER_DREW_WRONG" in [v.code for v in run.violations]
    assert len(engine_errors) == 1


def test_undecidable_is_reported_as_cannot_be_judged_and_the_event_kept_out() -> None:
    """A check that raises Undecidable: PROCEDURE_OUT_OF_ORDER "cannot be judged" on that
    event, the event is not folded (the payout is not counted in the round), and no
    engine error is reported."""
    _, events, _fault = _two_rounds()
    round_1 = [e for e in events if e.round_id in (None, "NJ-BJ-11-000001")]
    run = Run(_with(_undecidable, hands.payout_wrong)).feed(round_1)
    first_money = next(e for e in events if e.type == "WagerCollected")
    procedure = [v for v in run.violations if v.code == "PROCEDURE_OUT_OF_ORDER"]
    assert procedure[0].event_id == first_money.event_id
    assert "cannot be judged" in procedure[0].message
    assert "the hole card of this round was never seen" in procedure[0].message
    assert procedure[0].citation == RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1]
    assert run.errors == []
    assert run.rounds[0].collected == 0  # the collections were kept out of the fold


def test_the_audit_report_shows_engine_errors_apart(
        engine_errors: list[logging.LogRecord], monkeypatch: pytest.MonkeyPatch) -> None:
    """`pitwatch audit` counts engine errors in its report and prints them on a line of
    their own, apart from the violations."""
    planted = _with(_typo, hands.payout_wrong)

    def pick(jurisdiction: str, game: str) -> RulePack:
        chosen = select(jurisdiction, game)
        return planted if chosen.name == planted.name else chosen

    monkeypatch.setattr(run, "select", pick)
    _, events, _fault = _two_rounds()
    rep = run.audit_events(events)
    assert [v.code for v in rep.violations] == ["DEALER_DREW_WRONG"]
    assert len(rep.engine_errors) == len(engine_errors) == 4
    out = io.StringIO()
    report.summary(rep, out)
    lines = out.getvalue().splitlines()
    assert "violations: 1 (MEDIUM 1)" in lines
    errors = [line for line in lines if line.startswith("engine errors: 4 ")]
    assert len(errors) == 1 and "PAYOUT_WRONG" in errors[0]


def test_a_clean_report_says_nothing_of_engine_errors() -> None:
    _, events, _fault = _two_rounds()
    rep = run.audit_events(events)
    out = io.StringIO()
    report.summary(rep, out)
    assert rep.engine_errors == [] and "engine error" not in out.getvalue()


def test_a_bug_in_a_posting_check_is_an_engine_error(
        engine_errors: list[logging.LogRecord]) -> None:
    """A check of the posted rules (run on each TableOpened) that fails: an engine error
    on the TableOpened, the table still opens under its pack, and its rounds are judged."""
    p = nj_blackjack.PACK
    broken = p.posting[0]

    def _bad_posting(rules: object) -> str | None:
        raise AttributeError("planted")

    planted = replace(p, posting=(replace(broken, check=_bad_posting), *p.posting[1:]))
    _, events, fault = _two_rounds()
    run_ = Run(planted).feed(events)
    opened = next(e for e in events if e.type == "TableOpened")
    assert [e.event_id for e in run_.errors] == [opened.event_id]
    assert run_.errors[0].where.startswith("POSTED_RULES_CONTRADICT_REGULATION ")
    assert [(v.code, v.event_id) for v in run_.violations] == [
        ("DEALER_DREW_WRONG", fault.event_id)]
    assert len(engine_errors) == 1
