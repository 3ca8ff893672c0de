"""docs/procedure.md, "When a round is incomplete (time)": a round is incomplete when the
table's own stream shows it, never by the wall clock. The same rule in the engine for
the embedded audit and the worker."""

from __future__ import annotations

from pitwatch.audit.run import audit_events
from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.violation import Violation
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.simulate import Floor
from tests.rounds import TableScript, only
from tests.unit.test_record_checks import plain_round

MINUTE = 60_000


def _audit(events: list, timeout: int | None) -> tuple[list[Violation], list[RoundSummary]]:
    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    a = Auditor(select, found.append, rounds.append, round_timeout_ms=timeout,
                released=released_writers())
    for ev in events:
        a.feed(ev)
    return found, rounds


def test_a_later_event_of_the_table_past_the_time_out_ends_the_round() -> None:
    """"the device clock of later events on that table passes the time-out": the open
    round is incomplete, evidenced by its own last event."""
    sc = TableScript.opened("nj_blackjack", "T-01")
    plain_round(sc, 1, end=False)
    last = sc.events[-1]
    sc.ts = last.ts + 15 * MINUTE + 1
    shoe = sc.shoe()
    found, rounds = _audit(sc.events, 15 * MINUTE)
    v = only(found, "ROUND_INCOMPLETE")
    assert (v.event_id, v.round_id, v.detected_at) == (last.event_id, "T-01-000001", shoe.ts)
    assert v.message.endswith("the table's clock passed 900 s after its last event")
    assert [(r.round_id, r.complete) for r in rounds] == [("T-01-000001", False)]


def test_at_exactly_the_time_out_the_round_is_still_open() -> None:
    sc = TableScript.opened("nj_blackjack", "T-01")
    plain_round(sc, 1, end=False)
    sc.ts = sc.events[-1].ts + 15 * MINUTE
    sc.end()
    found, rounds = _audit(sc.events, 15 * MINUTE)
    assert found == [] and [r.complete for r in rounds] == [True]


def test_another_tables_clock_never_ends_a_round() -> None:
    """Only the table's own events count: a table whose clock is hours ahead changes
    nothing for another one."""
    slow = TableScript.opened("nj_blackjack", "T-01")
    plain_round(slow, 1, end=False)
    fast = TableScript.opened("nz_blackjack", "T-02")
    fast.ts = slow.ts + 10 * 60 * MINUTE
    plain_round(fast, 1)
    ended = slow.end()
    found, rounds = _audit(slow.events[:-1] + fast.events + [ended], 15 * MINUTE)
    assert found == []
    assert sorted(r.complete for r in rounds) == [True, True]


def test_the_embedded_audit_does_not_depend_on_interleaving_or_on_how_old_the_clock_is(
        ) -> None:
    """A floor's answer is the same table by table or interleaved: no clock is shared
    between tables, and none is compared with the wall clock."""
    events = list(Floor(6, 12, seed=41, inject=0.3).events())
    by_table = sorted(events, key=lambda e: e.table_id)  # stable: each table keeps its order
    a = {v.violation_id for v in audit_events(events, finish=False).violations}
    b = {v.violation_id for v in audit_events(by_table, finish=False).violations}
    assert a == b and a


def test_expire_idle_closes_the_open_round_with_the_id_the_end_of_input_gives() -> None:
    """The worker's processing-time rule names the round's last event, as the end of
    the input does, so streamed and embedded answers agree."""
    sc = TableScript.opened("pa_free_bet", "T-01")
    plain_round(sc, 1, end=False)
    ended, _ = _audit(sc.events, None)
    idle: list[Violation] = []
    a = Auditor(select, idle.append, lambda s: None, round_timeout_ms=15 * MINUTE,
                released=released_writers())
    for ev in sc.events:
        a.feed(ev)
    assert a.table("T-01").expire_idle(15 * MINUTE)
    assert not a.table("T-01").expire_idle(15 * MINUTE)  # once
    fin: list[Violation] = []
    b = Auditor(select, fin.append, lambda s: None, released=released_writers())
    for ev in sc.events:
        b.feed(ev)
    b.finish()
    assert ended == []
    assert [v.violation_id for v in idle] == [v.violation_id for v in fin]
    assert idle[0].detected_at == sc.events[-1].ts + 15 * MINUTE
