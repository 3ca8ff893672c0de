"""A round's ROUND_INCOMPLETE has one violation id, whichever rule finds it
(docs/procedure.md, "When a round is incomplete": "rule 4 ... gives the same violation
id as rule 3"; every rule cites the round's last event). So a worker that sent a
processing-time verdict and died before its snapshot has a successor that, meeting the
table's next round, gives the same id: alert consumers see a copy, never a second
ROUND_INCOMPLETE. Uses the worker's own TableStates with a dict as the Faust table and
the events themselves as the partition."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from pitwatch.audit.run import audit_events
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event, RoundEnded
from pitwatch.packs.registry import select
from pitwatch.processors.state import Found, TableStates
from pitwatch.producers.simulate import Floor
from tests.rounds import never_sent

TOPIC, PARTITION = "table-events", 0


def _table_with_a_round_left_open() -> tuple[list[Event], str, int]:
    """One table's events with its second round's RoundEnded left out; the round id and
    the index of the next round's first event."""
    events = list(Floor(1, 3, seed=41, inject=0.0, sign=False).events())
    rid = sorted({e.round_id for e in events if e.round_id})[1]
    # the console never sent it (deleted from the stream, it would be events lost)
    cut = never_sent(events, lambda e: e.round_id == rid and type(e.payload) is RoundEnded)
    nxt = next(i for i, e in enumerate(cut) if e.round_id and e.round_id > rid)
    return cut, rid, nxt


def _worker(table: dict[bytes, bytes], events: list[Event]) -> tuple[TableStates, Any]:
    log = [(i, ev.table_id.encode(), encode_single(ev)) for i, ev in enumerate(events)]

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list[Any]:
        return [m for m in log if a <= m[0] < b]

    return TableStates(table, select, 15 * 60 * 1000), catch_up


def _feed(states: TableStates, catch_up: Any, events: list[Event], start: int, stop: int,
          snapshots: bool = True) -> list[Violation]:
    out: list[Violation] = []

    async def go() -> None:
        for i in range(start, stop):
            found: Found = await states.process(events[i], TOPIC, PARTITION, i, catch_up)
            out.extend(found.violations)
            if snapshots and states.due(events[i].table_id, events[i]):
                states.snapshot(events[i].table_id)

    asyncio.run(go())
    return out


def _incomplete(vs: list[Violation], rid: str) -> set[str]:
    return {v.violation_id for v in vs if v.code == "ROUND_INCOMPLETE" and v.round_id == rid}


def test_a_verdict_lost_in_a_crash_is_found_again_with_the_same_id() -> None:
    events, rid, nxt = _table_with_a_round_left_open()
    table: dict[bytes, bytes] = {}
    first, catch_up = _worker(table, events)
    _feed(first, catch_up, events, 0, nxt)
    # live, the table went quiet: the processing-time verdict goes out...
    verdict = first.expire_idle(lambda topic, partition: True, 0.0).violations
    assert len(_incomplete(verdict, rid)) == 1
    # ...and the worker dies before a snapshot holds it. Its successor restores the
    # table (the round open again) and meets the next round: the table moved on.
    second, catch_up = _worker(table, events)
    after = _feed(second, catch_up, events, nxt, len(events))
    assert _incomplete(after, rid) == _incomplete(verdict, rid)
    # and the embedded audit of the same events, rule 1 there too, agrees
    embedded = audit_events(events, keep_violations=True, finish=False).violations
    assert _incomplete(embedded, rid) == _incomplete(verdict, rid)


def test_every_rule_cites_the_rounds_last_event() -> None:
    """Rules 1 (the table moved on), 2 (the table's clock passed the time-out), 3 (the
    input ended) and 4 (live, the table went quiet): one id; only the evidence and the
    time differ."""
    events, rid, nxt = _table_with_a_round_left_open()
    # its last event (a device's checkpoint is part of its record, never of a round)
    last = [e for e in events[:nxt] if e.round_id == rid and e.type != "Checkpoint"][-1]
    moved_on = audit_events(events, keep_violations=True, finish=False).violations
    ended = audit_events(events[:nxt], keep_violations=True, finish=True).violations
    late = events[nxt]  # the next event, its device clock pushed past the time-out
    clock = audit_events([*events[:nxt], replace(late, ts=last.ts + 60_001, raw=None)],
                         keep_violations=True, finish=False, round_timeout_ms=60_000).violations
    table: dict[bytes, bytes] = {}
    worker, catch_up = _worker(table, events)
    _feed(worker, catch_up, events, 0, nxt)
    quiet = worker.expire_idle(lambda topic, partition: True, 0.0).violations
    by_rule = {name: [v for v in vs if v.code == "ROUND_INCOMPLETE" and v.round_id == rid]
               for name, vs in (("moved on", moved_on), ("input ended", ended),
                                ("clock", clock), ("quiet", quiet))}
    assert all(len(vs) == 1 for vs in by_rule.values()), by_rule
    assert {vs[0].event_id for vs in by_rule.values()} == {last.event_id}
    assert len({vs[0].violation_id for vs in by_rule.values()}) == 1
    assert by_rule["moved on"][0].evidence == (events[nxt].event_id,)
    assert by_rule["quiet"][0].evidence == ()
