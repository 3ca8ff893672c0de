"""The `events` table's row, defined once: its columns in order, each one's ClickHouse
type and what it holds of an event, and the row of an event as Python writes it.

Three things follow this definition, and tests/unit/test_events_row.py fails when one
drifts from it: the DDL that creates the table (schemas/clickhouse/001_events.sql), the
C writer (the extension's `EVENT_COLUMNS`, which `event_columns`, `EventRows` and
`write_rows` write; `store/native.py`), and the Python writer here
(`event_values`, which the C writer's rows equal value for value).

An event's row holds its JSON Lines form whole: the fields its columns hold
(`ROW_FIELDS`) there, and the rest (the prev_digest, the payload) as the row's `body`,
about 150 bytes rather than the whole form's 330, so every insert and merge of `events`
handles 40% fewer bytes. A row whose body is the whole JSON Lines form (as older stores
hold) reads back as it is (`rows.stored_json`).
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import orjson

from ..events.avro import writer_fingerprint
from ..events.jsonl import to_json
from ..events.model import Event
from . import native


class Column(NamedTuple):
    """A column of `events`: its name, its ClickHouse type, and what of the event (or of
    its place in the order of record) it holds."""

    name: str
    type: str
    holds: str


#: The `events` table's columns, in DDL order.
EVENTS: Final = (
    Column("event_id", "String", "the event's id"),
    Column("table_id", "String", "its table's id"),
    Column("device_id", "String", "the id of the device that sent it"),
    Column("seq", "UInt64", "its device's sequence number"),
    Column("ts", "DateTime", "its time's whole seconds (ts // 1000)"),
    Column("ts_ms", "UInt16", "its time's milliseconds (ts % 1000)"),
    Column("round_id", "String", "its round's id, '' for none"),
    Column("type", "String", "its payload's type name"),
    Column("seat", "UInt8", "the payload's seat, 0 for none"),
    Column("hand", "Int8", "the payload's hand, -1 for none"),
    Column("kind", "String", "the payload's kind, '' for none"),
    Column("amount", "Int64", "the payload's amount in cents, 0 for none"),
    Column("pos", "UInt64", "its position in its table's order of record (store.order)"),
    Column("body", "String", "its JSON Lines form less ROW_FIELDS (`row_body`)"),
    Column("writer", "String", "the hex fingerprint of the Avro schema its device wrote"),
)
#: (name, ClickHouse type) of each column, in order: what the DDL and the C writer hold.
EVENT_TYPES: Final = tuple((c.name, c.type) for c in EVENTS)
#: The columns' names, in order.
EVENT_NAMES: Final = tuple(c.name for c in EVENTS)

#: The fields of an event's JSON Lines form that its row holds in columns of its own
#: (its time as `ts` and `ts_ms`, no round as ''), left out of the row's body.
ROW_FIELDS: Final = ("type", "event_id", "table_id", "device_id", "seq", "ts", "round_id")


def row_body(ev: Event) -> bytes:
    """The body of the event's row: its JSON Lines form without `ROW_FIELDS`, written in
    C (`native.row_body`, the same bytes), else by orjson."""
    body = native.row_body(ev)
    if body is None:
        d = to_json(ev)
        for name in ROW_FIELDS:
            del d[name]
        body = orjson.dumps(d)
    return body


def event_values(ev: Event, pos: int) -> tuple[Any, ...]:
    """The event's row as a tuple of `EVENTS`'s values, in order: what a batch writer
    transposes into columns, with no dict a row."""
    p = ev.payload
    hand = getattr(p, "hand", None)
    ts = ev.ts
    return (ev.event_id, ev.table_id, ev.device_id, ev.seq, ts // 1000, ts % 1000,
            ev.round_id or "", type(p).__name__, getattr(p, "seat", None) or 0,
            -1 if hand is None else hand, getattr(p, "kind", ""), getattr(p, "amount", 0),
            pos, row_body(ev).decode(), writer_fingerprint(ev))


def event_row(ev: Event, pos: int) -> dict[str, Any]:
    """The event's row as a dict of `EVENTS`'s names (the sink's and the first-copy
    check's form)."""
    return dict(zip(EVENT_NAMES, event_values(ev, pos), strict=True))
