"""What the worker does with offsets that hold no record, offsets Kafka deleted, and
partitions that changed (issues 39, 40, 43), without a broker: the read-back's start,
the loss note to the tables, the refusal of a table whose partition changed, /health,
the committed-read check and the topic metadata's partition counts."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from pitwatch.engine.violation import Violation
from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event
from pitwatch.packs.registry import select
from pitwatch.processors.catch_up import Record, Stretch
from pitwatch.processors.faust_batch import NotCommitted, require_committed
from pitwatch.processors.gaps import unread_before
from pitwatch.processors.metrics import Metrics
from pitwatch.processors.settings import Settings
from pitwatch.processors.state import Moved, TableStates
from pitwatch.producers.simulate import Floor
from pitwatch.topics import topic_partitions

TOPIC = "table-events"


def test_offsets_holding_no_record_are_handled_from_the_last_read() -> None:
    """"Offsets that hold no record (transaction markers, compacted offsets) are not
    holes": a read-back that finds nothing before the next record still reports the
    offsets after the last one read as handled, so the commit moves past them."""
    async def read(topic: str, partition: int, a: int, b: int) -> list[Record]:
        return Stretch(start=a)  # only markers between

    async def start_offset(topic: str, partition: int) -> int:
        return 0

    got = asyncio.run(unread_before({(TOPIC, 0): 49}, TOPIC, 0, 51, start_offset, read))
    assert got == [] and got.start == 50 and got.lost is None
    # the other side: nothing before the record at all, nothing read back
    same = asyncio.run(unread_before({(TOPIC, 0): 49}, TOPIC, 0, 50, start_offset, read))
    assert same == [] and same.start == 50


def _partition(events: list[Event]) -> list[Record]:
    return [(i, ev.table_id.encode(), encode_single(ev)) for i, ev in enumerate(events)]


def _feed(states: TableStates, events: list[Event], offsets: range, log: list[Record],
          lost: tuple[int, int] | None = None, partition: int = 0) -> list[Violation]:
    """Process events[offsets] as read at those offsets; the catch-up reads `log` and
    names `lost` (a stretch the broker deleted) when a read starts inside it."""
    found: list[Violation] = []

    async def catch_up(topic: str, p: int, a: int, b: int) -> list[Record]:
        gone = None
        if lost is not None and a <= lost[1] and lost[0] < b:
            gone, a = (a, lost[1]), lost[1] + 1
        return Stretch([m for m in log if a <= m[0] < b], a, gone)

    async def go() -> None:
        for i in offsets:
            out = await states.process(events[i], TOPIC, partition, i, catch_up)
            found.extend(out.violations)
            if states.due(events[i].table_id, events[i]):
                states.snapshot(events[i].table_id)

    asyncio.run(go())
    return found


def test_a_table_restored_past_deleted_events_reports_one_loss_and_no_cascade() -> None:
    """"Tables on that partition that the worker holds state for (including
    evicted/snapshotted ones and ones restored later) must get the note": a table
    restored from a snapshot taken before a deleted stretch reports the gap as one
    EVENTS_LOST naming the partition and offsets, with no card count, sequence or
    procedure finding from it."""
    events = list(Floor(1, 30, seed=43, inject=0.0).events())
    log = _partition(events)
    a, b = len(events) // 3, 2 * len(events) // 3
    table: dict[bytes, bytes] = {}
    before = _feed(TableStates(table, select, 15 * 60 * 1000), events, range(0, a), log)
    assert before == []
    after = _feed(TableStates(table, select, 15 * 60 * 1000), events,
                  range(b, len(events)), log, lost=(a, b - 1))
    codes = Counter(v.code for v in after)
    assert codes["EVENTS_LOST"] >= 1, codes  # one a break episode (the engine's rule)
    assert not {"CARD_COUNT_EXCEEDED", "SEQUENCE_GAP", "PROCEDURE_OUT_OF_ORDER"} & set(codes)
    first = next(v for v in after if v.code == "EVENTS_LOST")
    # from the first offset after its snapshot to the end of the deleted stretch
    assert re.search(rf"{re.escape(TOPIC)}\[0\] offsets \d+\.\.{b - 1} ", first.message)


def test_live_tables_of_the_partition_are_told_and_no_others() -> None:
    events = list(Floor(4, 3, seed=44, inject=0.0).events())
    states = TableStates({}, select, 15 * 60 * 1000)
    by_table = sorted({e.table_id for e in events})
    here = [i for i, e in enumerate(events) if e.table_id in by_table[:2]]
    there = [i for i, e in enumerate(events) if e.table_id in by_table[2:]]

    async def go() -> None:
        async def catch_up(topic: str, p: int, a: int, b: int) -> list[Record]:
            return Stretch(start=a)

        for i in here[:10]:
            await states.process(events[i], TOPIC, 0, i, catch_up)
        for i in there[:10]:
            await states.process(events[i], TOPIC, 1, i, catch_up)

    asyncio.run(go())
    assert sorted(states.lost(TOPIC, 0, "somewhere")) == by_table[:2]
    assert states.told_lost == 2


def test_a_table_whose_partition_changed_is_refused_not_folded() -> None:
    """"Tables whose key moves to another partition continue with their state ... or
    the worker visibly refuses": a live table or a snapshot of another partition
    raises Moved; the same partition goes on."""
    events = list(Floor(1, 3, seed=45, inject=0.0).events())
    log = _partition(events)
    table: dict[bytes, bytes] = {}
    states = TableStates(table, select, 15 * 60 * 1000)
    _feed(states, events, range(0, 20), log)
    with pytest.raises(Moved):
        _feed(states, events, range(20, 21), log, partition=5)
    fresh = TableStates(table, select, 15 * 60 * 1000)
    with pytest.raises(Moved):
        _feed(fresh, events, range(20, 21), log, partition=5)
    _feed(TableStates(table, select, 15 * 60 * 1000), events, range(20, 21), log)


def test_health_says_ok_lists_losses_and_refuses_with_503() -> None:
    m = Metrics(SimpleNamespace(), SimpleNamespace(), Settings(web_port=0, sink=False))  # type: ignore[arg-type]
    for check in m.readiness.names:  # Kafka answers, partitions held (tests/unit/test_metrics.py)
        m.readiness.report(check, True)
    assert m.health() == (200, "ok\n")
    m.lost("table-events[1] offsets 10..19 (10 offsets) were deleted", 10)
    status, text = m.health()
    assert status == 200 and text == "ok\nlost: table-events[1] offsets 10..19 (10 " \
        "offsets) were deleted\n"
    m.refusal = "table-events has 8 partitions, not the 4"
    assert m.health() == (503, "refusing: table-events has 8 partitions, not the 4\n")


def test_a_consumer_that_would_read_uncommitted_is_refused() -> None:
    """"Where a path cannot read committed, the worker refuses to start and says why.\""""
    from aiokafka.consumer.fetcher import READ_COMMITTED, READ_UNCOMMITTED

    require_committed(SimpleNamespace(_fetcher=SimpleNamespace(_isolation_level=READ_COMMITTED)))
    with pytest.raises(NotCommitted, match="read_committed"):
        require_committed(SimpleNamespace(
            _fetcher=SimpleNamespace(_isolation_level=READ_UNCOMMITTED)))
    with pytest.raises(NotCommitted):
        require_committed(SimpleNamespace())


def test_partition_counts_read_kafka_python_3_metadata() -> None:
    """The count check that crashed `produce` with KeyError 'topic': the broker's
    metadata names a topic "name" in kafka-python 3 ("topic" before)."""
    class Admin:
        def describe_topics(self, topics: list[str]) -> list[dict[str, Any]]:
            return [{"name": "a", "partitions": [{}] * 8},
                    {"topic": "b", "partitions": [{}] * 4},
                    {"name": "c", "partitions": []}]

    assert topic_partitions(Admin(), ["a", "b", "c"]) == {"a": 8, "b": 4}
