"""The worker's durable table state: a worker that takes a table over mid-round (from
its last snapshot plus the partition after it, however far its snapshot is ahead of
the committed offset) finds exactly what one uninterrupted worker finds. Uses the
worker's own TableStates with a dict as the Faust table and the events themselves as
the partition."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from pitwatch.engine.auditor import STATE_VERSION, StateError, TableAuditor
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import decode_single, encode_single
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.processors.gaps import unread_before
from pitwatch.processors.state import TableStates
from pitwatch.producers.simulate import Floor

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


def test_a_snapshot_far_ahead_of_the_committed_offset_invents_nothing() -> None:
    """The worker died long after its last commit: the next one re-reads hundreds of
    events its snapshots already cover. They are skipped by offset: no SEQUENCE_CONFLICT
    or anything else invented, nothing lost."""
    events = list(Floor(2, 25, seed=32, inject=0.3).events())
    whole: list[Violation] = []
    whole_rounds = _run(events, {}, 0, len(events), whole)
    table: dict[bytes, bytes] = {}
    parts: list[Violation] = []
    first = _run(events, table, 0, 700, parts)
    second = _run(events, table, 100, len(events), parts)  # committed offset 100
    assert {v.violation_id for v in parts} == {v.violation_id for v in whole}
    assert set(first) | set(second) == set(whole_rounds)


def test_snapshots_are_versioned_json_and_an_unknown_version_refolds_the_partition() -> None:
    """No pickle: a snapshot is JSON with its format version; a worker that meets
    another version drops it and folds the table from the start of the partition."""
    events = list(Floor(2, 10, seed=33, inject=0.3).events())
    whole: list[Violation] = []
    _run(events, {}, 0, len(events), whole)
    table: dict[bytes, bytes] = {}
    parts: list[Violation] = []
    _run(events, table, 0, 250, parts)
    assert table
    for key, raw in table.items():
        snap = orjson.loads(raw)  # plain JSON, nothing executable
        assert snap["state"]["version"] == STATE_VERSION and isinstance(snap["offset"], int)
        snap["state"]["version"] = STATE_VERSION + 1
        table[key] = orjson.dumps(snap)
    _run(events, table, 250, len(events), parts)
    assert {v.violation_id for v in parts} == {v.violation_id for v in whole}


def test_damaged_snapshot_bytes_refold_the_partition() -> None:
    events = list(Floor(1, 8, seed=34, inject=0.3).events())
    whole: list[Violation] = []
    _run(events, {}, 0, len(events), whole)
    table: dict[bytes, bytes] = {}
    parts: list[Violation] = []
    _run(events, table, 0, 90, parts)
    for key in table:
        table[key] = b"\x80\x04garbage"  # e.g. a pickle someone wrote to the changelog
    _run(events, table, 90, len(events), parts)
    assert {v.violation_id for v in parts} == {v.violation_id for v in whole}


def test_export_import_keeps_the_open_round_the_shoe_and_the_records() -> None:
    """An auditor restored mid-round from its exported state judges the rest of the
    round exactly as the original: card counts, the round's violations, seq windows."""
    events = list(Floor(1, 12, seed=35, inject=0.5).events())
    for cut in (40, 97, 151):
        a_found: list[Violation] = []
        a = TableAuditor(events[0].table_id, select, a_found.append, lambda s: None,
                         released=released_writers())
        for ev in events[:cut]:
            a.feed(ev)
        state = orjson.loads(orjson.dumps(a.export_state()))
        b_found: list[Violation] = []
        b_rounds: list = []
        b = TableAuditor(events[0].table_id, select, b_found.append, b_rounds.append,
                         released=released_writers())
        b.import_state(state)
        a_rounds: list = []
        a.on_round = a_rounds.append
        del a_found[:]
        for ev in events[cut:]:
            a.feed(ev)
            b.feed(ev)
        assert b_found == a_found and b_rounds == a_rounds


def test_an_unknown_state_version_is_refused() -> None:
    a = TableAuditor("T", select, lambda v: None, lambda s: None, released=released_writers())
    with pytest.raises(StateError):
        a.import_state({"version": 99})


def _delivered_with_holes(events: list, holes: list[range], committed: int | None,
                          read_back: bool) -> set[str]:
    """A worker whose consumer delivers `events` (offset = index) except the offsets in
    `holes`, with the group's committed offset `committed` (None: nothing committed)
    when the partition was assigned; with `read_back`, it handles what
    processors/gaps.py says was skipped before each message, as the agent does."""
    log = [(i, ev.table_id.encode(), encode_single(ev)) for i, ev in enumerate(events)]
    states = TableStates({}, select, 15 * 60 * 1000)
    position: dict[tuple[str, int], int] = {}
    found: list[Violation] = []

    async def read(topic: str, partition: int, a: int, b: int) -> list:
        return [m for m in log if a <= m[0] < b]

    async def start_offset(topic: str, partition: int) -> int:
        return 0 if committed is None else committed

    async def handle(i: int, value: bytes) -> None:
        position[(TOPIC, PARTITION)] = i
        ev = decode_single(value)
        found.extend((await states.process(ev, TOPIC, PARTITION, i, read)).violations)
        if states.due(ev.table_id, ev):
            states.snapshot(ev.table_id)

    async def go() -> None:
        for i, _, value in log:
            if any(i in h for h in holes) or (committed is not None and i < committed):
                continue
            if read_back:
                for o, _, v in await unread_before(position, TOPIC, PARTITION, i,
                                                   start_offset, read):
                    await handle(o, v)
            await handle(i, value)

    asyncio.run(go())
    return {v.violation_id for v in found}


def test_offsets_skipped_mid_stream_are_read_back_and_lose_nothing() -> None:
    """The consumer moved past records it had fetched (a rebalance): offsets 150..399
    never reach the agent. Reading them back before offset 400, the worker finds what
    one uninterrupted worker finds; without that, the skipped events are lost."""
    events = list(Floor(3, 25, seed=33, inject=0.3).events())
    whole: list[Violation] = []
    _run(events, {}, 0, len(events), whole)
    want = {v.violation_id for v in whole}
    assert _delivered_with_holes(events, [range(150, 400)], None, read_back=True) == want
    assert _delivered_with_holes(events, [range(150, 400)], None, read_back=False) != want


def test_a_partition_handed_over_from_its_middle_reads_its_start_back() -> None:
    """Nothing committed, and the consumer's first message is not the partition's first
    (Faust resumes from its fetch position, dropping what it fetched while the flow
    was stopped): the tables' TableOpened and first events are read back from the
    partition's start, so no table is judged without its posted rules."""
    events = list(Floor(3, 4, seed=34, inject=0.0).events())
    assert _delivered_with_holes(events, [range(0, 40)], None, read_back=True) == set()
    assert _delivered_with_holes(events, [range(0, 40)], None, read_back=False) != set()


def test_a_committed_offset_is_where_reading_back_starts() -> None:
    """With the group's offset committed at 30 (what was before it is audited and in
    the snapshots), a first message at 60 reads back 30..59 only."""
    seen: list[tuple[int, int]] = []

    async def read(topic: str, partition: int, a: int, b: int) -> list:
        seen.append((a, b))
        return []

    async def start_offset(topic: str, partition: int) -> int:
        return 30

    async def go() -> None:
        assert await unread_before({}, TOPIC, PARTITION, 30, start_offset, read) == []
        await unread_before({}, TOPIC, PARTITION, 60, start_offset, read)
        await unread_before({(TOPIC, PARTITION): 70}, TOPIC, PARTITION, 71, start_offset,
                            read)
        await unread_before({(TOPIC, PARTITION): 70}, TOPIC, PARTITION, 75, start_offset,
                            read)

    asyncio.run(go())
    assert seen == [(30, 60), (71, 75)]

