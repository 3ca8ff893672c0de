"""The quarantine in streaming, without servers (issue 36): the worker's fold leaves
the quarantine row of each event the record took in as refused, as the embedded audit
keeps it, and the sink writes a valid row of the refused topic to `refused_events` and
dead-letters anything else.

Issue 36: "A rejected event of the record must surface as what it is (a HIGH finding
naming the event and why it was refused), not as a gap", so a store the sink filled
keeps what a rebuild needs to find EVENT_REFUSED again, and a refused copy of another
event stays a dead letter only."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import orjson
import pytest

from pitwatch.events.avro import DecodeError, decode_single, encode_single
from pitwatch.events.model import Event
from pitwatch.packs.registry import select
from pitwatch.processors.catch_up import Record, Stretch
from pitwatch.processors.settings import Settings
from pitwatch.processors.sink import (
    ROW_TOPICS,
    Batches,
    Rejected,
    Source,
    Writer,
    row_topics,
    to_row,
)
from pitwatch.processors.state import TableStates
from pitwatch.producers.simulate import Floor
from pitwatch.store.rows import refused_row

TOPIC = "table-events"
S = Settings()
NOPOS: Any = None  # positions: only events need them


def _wire(ev: Event) -> Event:
    """`ev` as the worker has it from the topic: decoded from its bytes (a refused
    one is the DecodeError's event, as `pitwatch.processors.app.handle` takes it)."""
    try:
        return decode_single(encode_single(ev))
    except DecodeError as e:
        assert e.event is not None
        return e.event


@pytest.fixture(scope="module")
def floor() -> list[Event]:
    """A contract floor whose negative wagers the decoder refuses (one a table)."""
    events = [_wire(e) for e in Floor(2, 4, seed=2, inject=0.5, jurisdiction="NJ",
                                      game="BLACKJACK", contract=True).events()]
    assert [e for e in events if e.refused is not None]
    return events


def _quarantine(events: list[Event]) -> list[dict[str, Any]]:
    """The rows the embedded audit keeps (tests/unit/test_refused_quarantine.py)."""
    return [refused_row(e, e.refused) for e in events if e.refused is not None]


def _process(states: TableStates, events: list[Event], offsets: range
             ) -> list[dict[str, Any]]:
    """Process events[offsets] as read at those offsets; returns the quarantine rows
    found, in order."""
    log: list[Record] = [(i, e.table_id.encode(), encode_single(e))
                         for i, e in enumerate(events)]
    rows: list[dict[str, Any]] = []

    async def catch_up(topic: str, p: int, a: int, b: int) -> list[Record]:
        return Stretch([m for m in log if a <= m[0] < b], a, None)

    async def go() -> None:
        for i in offsets:
            rows.extend((await states.process(events[i], TOPIC, 0, i, catch_up)).refused)
            if states.due(events[i].table_id, events[i]):
                states.snapshot(events[i].table_id)

    asyncio.run(go())
    return rows


def test_the_fold_leaves_the_quarantine_row_the_embedded_audit_keeps(
        floor: list[Event]) -> None:
    got = _process(TableStates({}, select, 15 * 60 * 1000), floor, range(len(floor)))
    assert got == _quarantine(floor)


def test_a_refused_copy_is_a_dead_letter_only(floor: list[Event]) -> None:
    """"A refused COPY (a different copy of a stored event, not the record's) stays a
    dead letter only": a different copy of the refused wager and an identical one
    leave no quarantine row; the record's own does."""
    bad = next(i for i, e in enumerate(floor) if e.refused is not None)
    ev = floor[bad]
    other = _wire(replace(ev, payload=replace(ev.payload, amount=-1), raw=None))  # type: ignore[arg-type]
    assert other.refused is not None and encode_single(other) != encode_single(ev)
    events = [*floor[:bad + 1], other, ev, *floor[bad + 1:]]
    got = _process(TableStates({}, select, 15 * 60 * 1000), events, range(len(events)))
    assert got == _quarantine(floor)  # its own once, the copies none


def test_a_take_over_sends_the_row_again_from_its_fold(floor: list[Event]) -> None:
    """A worker that dies after the refused event, before a snapshot covers it: the
    next one folds it again from the partition and sends its row again (the store
    keeps one: the table's key)."""
    bad = next(i for i, e in enumerate(floor) if e.refused is not None)
    table: dict[bytes, bytes] = {}
    first = _process(TableStates(table, select, 15 * 60 * 1000), floor, range(bad + 1))
    assert first == [refused_row(floor[bad], floor[bad].refused or "")]
    key = floor[bad].table_id.encode()
    assert orjson.loads(table[key])["offset"] < bad  # mid-round: no snapshot covers it
    later = next(i for i in range(bad + 1, len(floor))
                 if floor[i].table_id == floor[bad].table_id)
    again = _process(TableStates(table, select, 15 * 60 * 1000), floor,
                     range(later, later + 1))
    assert again == first


def test_the_sink_reads_the_refused_topic_into_refused_events(floor: list[Event]) -> None:
    assert S.refused_topic in row_topics(S)
    assert S.with_prefix("t-").refused_topic == "t-refused"
    for row in _quarantine(floor):
        assert to_row(S.refused_topic, S, orjson.dumps(row), NOPOS) == ("refused_events", row)


def _bad_rows(floor: list[Event]) -> list[tuple[bytes | None, str]]:
    row = _quarantine(floor)[0]
    fine = next(e for e in floor if e.refused is None)
    return [
        (None, "tombstone: a null value is not a refused event"),
        (b"{not json", "not a refused event \\(JSON\\)"),
        (b"[1]", "not a refused event: fields missing"),
        (orjson.dumps({**row, "reason": 3}), "fields missing"),
        (orjson.dumps({**row, "raw": "zz"}), "not hex"),
        (orjson.dumps({**row, "seq": row["seq"] + 1}), "another event's"),
        (orjson.dumps({**row, "round_id": "elsewhere"}), "not its bytes' \\(round_id\\)"),
        (orjson.dumps({**row, "extra": 1}), "not its bytes' \\(extra\\)"),
        (orjson.dumps(refused_row(fine, "made up")), "decode within the contract"),
    ]


def test_a_message_that_is_no_quarantine_row_is_rejected_with_its_reason(
        floor: list[Event]) -> None:
    for value, why in _bad_rows(floor):
        with pytest.raises(Rejected, match=why):
            to_row(S.refused_topic, S, value, NOPOS)


class _Store:
    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        self.rows.setdefault(table, []).extend(rows)


def test_a_row_topic_is_one_entry_and_its_rows_land_in_its_table(
        floor: list[Event]) -> None:
    assert ("refused_topic", "refused_events") in {(t.setting, t.table) for t in ROW_TOPICS}
    store = _Store()

    async def go() -> None:
        b = Batches()
        for i, row in enumerate(_quarantine(floor)):
            b.add("refused_events", row, Source(S.refused_topic, 0, i, b"k", b"v"), 0.0)
        w = Writer(store, None, None, S, lambda: False)  # type: ignore[arg-type]
        assert await w.write(b) == len(_quarantine(floor))

    asyncio.run(go())
    assert store.rows == {"refused_events": _quarantine(floor)}
