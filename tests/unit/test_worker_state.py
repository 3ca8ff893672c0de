"""The worker's durable table state: a worker that takes a table over mid-round (from
its last snapshot plus the partition after it) finds exactly what one uninterrupted
worker finds. Uses the worker's own TableStates with a dict as the Faust table and the
events themselves as the partition."""

from __future__ import annotations

import asyncio

import pytest

from pitwatch.engine.violation import Violation
from pitwatch.events.avro import encode_single
from pitwatch.packs.registry import select
from processors.state import TableStates
from producers.simulate import Floor

TOPIC, PARTITION = "table-events", 0


def _run(events: list, table: dict, start: int, stop: int,
         found: list[Violation]) -> list[str]:
    """Process events[start:stop] in a fresh worker, snapshotting when due; returns
    the round ids it closed."""
    rounds: list[str] = []
    states = TableStates(table, select, 15 * 60 * 1000)
    log = [(i, ev.table_id.encode(), encode_single(ev)) for i, ev in enumerate(events)]

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list:
        assert (topic, partition) == (TOPIC, PARTITION)
        return [m for m in log if a <= m[0] < b]

    async def go() -> None:
        for i in range(start, stop):
            out = await states.process(events[i], TOPIC, PARTITION, i, catch_up)
            found.extend(out.violations)
            rounds.extend(r.round_id for r in out.rounds)
            if states.due(events[i].table_id, events[i]):
                states.snapshot(events[i].table_id)

    asyncio.run(go())
    return rounds


@pytest.mark.parametrize("cut", [137, 401, 655])
def test_take_over_mid_round_finds_the_same(cut: int) -> None:
    floor = Floor(2, 25, seed=31, inject=0.5)
    events = list(floor.events())
    whole: list[Violation] = []
    whole_rounds = _run(events, {}, 0, len(events), whole)

    table: dict[bytes, bytes] = {}
    parts: list[Violation] = []
    first_rounds = _run(events, table, 0, cut, parts)  # the first worker dies at `cut`
    # the second resumes a little earlier (offsets committed before the crash)
    resume = cut - 9
    second_rounds = _run(events, table, resume, len(events), parts)

    assert {v.violation_id for v in parts} == {v.violation_id for v in whole}
    assert set(first_rounds) | set(second_rounds) == set(whole_rounds)
    assert len(whole) > 5
