"""The `events` row is defined once (pitwatch/store/columns.py: `EVENTS`), and the three
things that follow it do: the DDL that makes the table, the C writer (its exported
`EVENT_COLUMNS` and the values it writes, from events and from their Avro bytes) and
the Python writer (`event_values`, `event_row`). Each test fails when one drifts."""

from __future__ import annotations

from array import array
from dataclasses import replace
from typing import Any

import pytest

from pitwatch.events import avro
from pitwatch.events.model import Event
from pitwatch.producers.simulate import Floor
from pitwatch.store import native
from pitwatch.store.arrow import event_rows
from pitwatch.store.base import column_types
from pitwatch.store.batch import BatchWriter
from pitwatch.store.columns import EVENT_NAMES, EVENT_TYPES, EVENTS, event_row, event_values
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.server import ServerStore

#: What each ClickHouse type of `EVENTS` holds: a Python type, and an integer's range.
RANGES: dict[str, tuple[type, int, int]] = {
    "String": (str, 0, 0), "UInt8": (int, 0, 2**8 - 1), "Int8": (int, -(2**7), 2**7 - 1),
    "UInt16": (int, 0, 2**16 - 1), "DateTime": (int, 0, 2**32 - 1),
    "UInt64": (int, 0, 2**64 - 1), "Int64": (int, -(2**63), 2**63 - 1)}
#: The `array` code of each integer type, as the C writer lays its values out.
CODES = {"UInt8": "B", "Int8": "b", "UInt16": "H", "DateTime": "I", "UInt64": "Q",
         "Int64": "q"}


def _events() -> tuple[list[Event], list[int]]:
    """A simulated floor with faults (every payload type, cards without seats), an event
    under another schema version and one with no round: with their positions."""
    evs = list(Floor(3, 4, seed=4, inject=0.3).events())
    evs[5] = replace(evs[5], writer=bytes(range(8)))
    evs[6] = replace(evs[6], round_id=None)
    return evs, [i * 1024 + i % 3 for i in range(len(evs))]


def _values(raw: tuple[Any, ...], rows: int) -> list[tuple[Any, ...]]:
    """The rows C wrote as Arrow buffers (`native.event_columns`), as tuples of values
    read back by each column's type in `EVENTS`."""
    cols: list[list[Any]] = []
    for col, (name, typ) in zip(raw, EVENT_TYPES, strict=True):
        if typ == "String":
            offsets, data = array("i", col[0]), col[1]
            cols.append([bytes(data[offsets[i]:offsets[i + 1]]).decode() for i in range(rows)])
        else:
            cols.append(list(array(CODES[typ], col)))
        assert len(cols[-1]) == rows, name
    return list(zip(*cols, strict=True))


def test_the_ddl_makes_the_columns_of_the_definition() -> None:
    """schemas/clickhouse/001_events.sql makes `events` with `EVENTS`'s columns: names,
    order and ClickHouse types."""
    assert column_types("events") == EVENT_TYPES
    assert len(set(EVENT_NAMES)) == len(EVENTS)


def test_the_c_writer_writes_the_columns_of_the_definition() -> None:
    """The extension exports the columns it writes (`EVENT_COLUMNS`, the table in
    pitwatch/store/native.c), and they are `EVENTS`'s: else every row would be written
    in Python."""
    assert native._native is not None  # built at install by hatch_build.py
    assert native.EVENT_COLUMNS == EVENT_TYPES


def test_the_python_writer_gives_each_column_a_value_of_its_type() -> None:
    """`event_values` gives one value a column, in `EVENTS`'s order, each of the Python
    type its ClickHouse type takes and within its range; `event_row` names them."""
    evs, positions = _events()
    for ev, pos in zip(evs, positions, strict=True):
        values = event_values(ev, pos)
        assert len(values) == len(EVENTS)
        for v, col in zip(values, EVENTS, strict=True):
            kind, lo, hi = RANGES[col.type]
            assert type(v) is kind, (col.name, v)
            assert kind is str or lo <= v <= hi, (col.name, v)
        assert tuple(event_row(ev, pos)) == EVENT_NAMES
        assert tuple(event_row(ev, pos).values()) == values


def test_every_c_writer_writes_the_python_writers_values() -> None:
    """The rows of a batch written in C (`event_columns`), an event at a time
    (`EventRows.add`) and straight from the events' Avro bytes (`write_rows`, no event
    built) hold, value for value, what `event_values` gives of each event."""
    evs, positions = _events()
    fingerprint = avro.current_fingerprint()
    from pitwatch.store.columns import row_body

    want = [event_values(ev, pos) for ev, pos in zip(evs, positions, strict=True)]
    batch = native.event_columns(evs, positions, fingerprint, row_body)
    assert batch is not None
    assert _values(batch, len(evs)) == want

    one_by_one = event_rows()
    assert one_by_one is not None
    assert all(one_by_one.add(ev, pos) for ev, pos in zip(evs, positions, strict=True))
    assert _values(one_by_one.take(), len(evs)) == want

    plain = [i for i, ev in enumerate(evs) if ev.writer is None]  # this schema's bytes
    from_bytes, program = event_rows(), avro._current_program()
    assert from_bytes is not None and program is not None
    raws = [avro.encode(evs[i]) for i in plain]
    left = native.write_rows(program, from_bytes, b"".join(raws),
                             array("I", map(len, raws)).tobytes(),
                             array("Q", [positions[i] for i in plain]).tobytes())
    assert left == []
    assert _values(from_bytes.take(), len(plain)) == [want[i] for i in plain]


class _Columns:
    """A store that takes `events` as columns, as every table (a server's way)."""

    def __init__(self) -> None:
        self.got: list[tuple[str, list[tuple[Any, ...]]]] = []
        self.synced = 0

    def insert_columns(self, table: str, cols: list[tuple[Any, ...]]) -> None:
        self.got.append((table, list(zip(*cols, strict=True))))

    def events_insert(self) -> None:
        return None

    def sync(self) -> None:
        self.synced += 1


class _InC(_Columns):
    """A store that takes `events` rows written in C (the embedded store's way)."""

    def events_insert(self) -> _InC:
        return self

    def row_writer(self) -> native.EventRows | None:
        return event_rows()

    def insert_event_rows(self, taken: Any, rows: int) -> None:
        self.got.append(("rows", _values(taken, rows)))

    def insert_events(self, events: list[Event], positions: list[int]) -> None:
        self.got.append(("objects", [event_values(e, p)
                                     for e, p in zip(events, positions, strict=True)]))


def test_a_store_says_how_it_takes_events_and_the_batch_writer_goes_that_way() -> None:
    """A store declares how it takes `events` rows (`Store.events_insert`): a server
    as columns (None), the embedded store and the store process written in C (their
    own `EventsInsert`). The batch writer hands each event over that way, and the rows
    are the same: an event C does not write goes as itself."""
    server = object.__new__(ServerStore)  # no connection: what it declares is its class's
    assert server.events_insert() is None
    assert EmbeddedStore.events_insert(object.__new__(EmbeddedStore)) is not None
    evs, positions = _events()
    seated = next(e for e in evs if getattr(e.payload, "seat", None))
    evs.append(replace(seated, payload=replace(seated.payload, seat=300)))  # type: ignore[type-var]
    positions.append(positions[-1] + 1)
    want = [event_values(ev, pos) for ev, pos in zip(evs, positions, strict=True)]
    columns, in_c = _Columns(), _InC()
    for store in (columns, in_c):
        w = BatchWriter(store, batch_rows=10_000)  # type: ignore[arg-type]
        for ev, pos in zip(evs, positions, strict=True):
            w.add_event(ev, pos)
        w.flush()
        assert w.written["events"] == len(evs) and store.synced == 1
    assert columns.got == [("events", want)]
    assert in_c.got == [("rows", want[:-1]), ("objects", want[-1:])]


@pytest.mark.parametrize("column", ["seat", "hand"])
def test_a_value_its_column_cannot_hold_is_left_to_python_by_every_c_writer(
        column: str) -> None:
    """A value outside its column's type (a seat past 255, a hand past 127) is written by
    no C writer (None, False): the row is the Python writer's, which names the column
    where the store refuses it."""
    evs, _ = _events()
    ev = next(e for e in evs if hasattr(e.payload, column) and getattr(e.payload, column))
    bad = replace(ev, payload=replace(ev.payload, **{column: 300}))  # type: ignore[type-var]
    assert native.event_columns([bad], [1], "00" * 8, lambda e: b"{}") is None
    rows = event_rows()
    assert rows is not None and rows.add(bad, 1) is False and len(rows) == 0
