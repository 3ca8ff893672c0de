"""Redelivery substitution on the real broker and ClickHouse (issue 35 item 2): the
sink never sees the audit's verdict, yet the first copy of every event stays in
ClickHouse. docs/events.md, "The record": "A copy whose content differs from what was
recorded for its device and seq is a substitution (SEQUENCE_CONFLICT, HIGH): it is not
applied and the first copy stands."

A copy of a PayoutMade with 10x the amount (same event id and seq) arrives with the
floor (in the same batch as its original, or the next) and another after the floor has
landed; the first round is appended again under a new round id. ClickHouse keeps the
originals, holds the audit's findings (the embedded audit's answer), and each copy is a
dead letter naming what differs. Every wait is on a condition with a deadline."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from pitwatch.events.model import Event, PayoutMade
from pitwatch.producers.simulate import Floor

from .conftest import Expected, Pipeline, read_topic, wait_until

PHANTOM = "PHANTOM-000001"


def _forged(events: list[Event], table_id: str) -> tuple[Event, Event]:
    """The table's first PayoutMade and a copy of it with 10x the amount."""
    p = next(e for e in events if e.table_id == table_id and type(e.payload) is PayoutMade)
    assert isinstance(p.payload, PayoutMade) and p.payload.amount > 0
    return p, replace(p, payload=replace(p.payload, amount=p.payload.amount * 10), raw=None)


def test_forged_copies_never_replace_what_clickhouse_holds(pipeline: Pipeline) -> None:
    events = list(Floor(2, 6, 23, 0.0).events())  # an honest floor of two tables
    tables = sorted({e.table_id for e in events})
    first, forged_first = _forged(events, tables[0])
    second, forged_second = _forged(events, tables[1])
    phantom = [replace(e, round_id=PHANTOM, raw=None) for e in events
               if e.round_id == second.round_id]
    copies = [forged_first, forged_second, *phantom]
    pipeline.start_worker()
    pipeline.produce([*events, forged_first])  # with the floor: its original just before
    pipeline.wait_for(Expected([*events, forged_first]))
    pipeline.produce([forged_second, *phantom])  # the originals stored by earlier batches
    exp = Expected([*events, *copies])
    counts = pipeline.wait_for(exp)
    assert counts == (len(events), exp.rounds, len(exp.violation_ids))
    assert pipeline.violation_ids() == exp.violation_ids
    found = {(r["event_id"], r["severity"]) for r in pipeline.store.query(
        "SELECT event_id, severity FROM violations FINAL WHERE code = 'SEQUENCE_CONFLICT'")}
    assert {(forged_first.event_id, "HIGH"), (forged_second.event_id, "HIGH")} <= found
    # the store keeps the originals
    for ev in (first, second):
        amounts = [int(r["amount"]) for r in pipeline.store.query(
            "SELECT amount FROM events WHERE event_id = {e:String}", {"e": ev.event_id})]
        assert amounts == [ev.payload.amount]  # type: ignore[union-attr]
    assert not pipeline.store.query(
        "SELECT event_id FROM events WHERE round_id = {r:String} LIMIT 1", {"r": PHANTOM})
    assert {r["round_id"] for r in pipeline.store.query(
        "SELECT DISTINCT round_id FROM events FINAL WHERE event_id IN {ids:Array(String)}",
        {"ids": tuple(e.event_id for e in phantom)})} == {second.round_id}
    # each copy is a dead letter that names what differs
    def letters() -> list[dict[str, Any]]:
        return [orjson.loads(m.value) for m in read_topic(pipeline.prefix + "dead-letters")]

    wait_until("every copy dead-lettered by the sink", lambda: len(letters()) >= len(copies),
               120)
    dead = letters()
    assert len(dead) == len(copies)
    reasons = sorted(d["reason"] for d in dead)
    assert sum("its amount differs from the copy stored first" in r for r in reasons) == 2
    assert sum("its round_id differs from the copy stored first" in r
               for r in reasons) == len(phantom)
    assert "exited with code" not in pipeline.logs()
