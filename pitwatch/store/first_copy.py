"""The first copy of an event wins in the store: before a batch of events is inserted,
the rows the store already holds under the batch's event ids are read (by table, their
device times from the `event_ids` index, then through `events`' sort key), and each
event of the batch is sorted against them and against the batch's own earlier events:
new (insert it), the same event again (an identical copy: nothing to insert, the first
row stays) or a different copy under a recorded event id (never inserted: the caller
sends it to its dead letters with the reason given here).

`events` is a ReplacingMergeTree whose last row of a key wins a merge, and a copy with
another device time is another key altogether: without this check a later copy would
replace or shadow the stored event. Both the embedded audit (for the tables whose
history the store held before the run) and the streaming sink (which never sees the
audit's verdict) store through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..events.jsonl import InvalidEvent, to_json
from ..events.model import Event
from .base import Store
from .lookup import rows_by_id
from .rows import EVENT_COLUMNS, stored_event

T = TypeVar("T")

#: Event ids asked of the store in one query.
IDS_A_QUERY = 4000


@dataclass
class Sorted(Generic[T]):
    """A batch sorted against the store: the items to insert, the identical copies
    (dropped), and the different copies, each with why it is not stored."""

    new: list[T] = field(default_factory=list)
    same: list[T] = field(default_factory=list)
    different: list[tuple[T, str]] = field(default_factory=list)


def stored_copies(store: Store, table_id: str, event_ids: Sequence[str]
                  ) -> dict[str, Event | InvalidEvent]:
    """The events the store holds under `event_ids` of table `table_id` (a row that does
    not read back as an event: its InvalidEvent)."""
    out: dict[str, Event | InvalidEvent] = {}
    ids = sorted(set(event_ids))
    for i in range(0, len(ids), IDS_A_QUERY):
        for r in rows_by_id(store, table_id, ids[i:i + IDS_A_QUERY], EVENT_COLUMNS):
            try:
                out[r["event_id"]] = stored_event(r)
            except InvalidEvent as e:
                out[r["event_id"]] = e
    return out


def first_copies(store: Store, batch: Sequence[tuple[Event, T]]) -> Sorted[T]:
    """Sort `batch` ((event, item) in arrival order) against what the store holds and
    against the batch's earlier events (see the module's note)."""
    out: Sorted[T] = Sorted()
    by_table: dict[str, list[str]] = {}
    for ev, _ in batch:
        by_table.setdefault(ev.table_id, []).append(ev.event_id)
    held = {t: stored_copies(store, t, ids) for t, ids in by_table.items()}
    for ev, item in batch:
        known = held[ev.table_id]
        first = known.get(ev.event_id)
        if first is None:
            known[ev.event_id] = ev  # a later copy in the batch meets this one
            out.new.append(item)
        elif isinstance(first, InvalidEvent):
            out.different.append((item, f"event {ev.event_id} of table {ev.table_id}: the "
                                  f"store holds a row of it that does not read back ({first})"
                                  ": not stored over it"))
        elif first == ev:
            out.same.append(item)
        else:
            out.different.append((item, differs(first, ev)))
    return out


def row_event(row: Mapping[str, Any]) -> Event:
    """The event of a row of `events` as a writer made it (`columns.event_row`: its columns
    by name), read back as a stored row is."""
    return stored_event({**row, "at_ms": int(row["ts"]) * 1000 + int(row["ts_ms"])})


def differs(first: Event, copy: Event) -> str:
    """Why `copy` is not stored: the fields in which it differs from the first copy."""
    a, b = to_json(first), to_json(copy)
    fields = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    return (f"a different copy of event {copy.event_id} of table {copy.table_id} "
            f"({copy.device_id} seq {copy.seq}): its {', '.join(fields)} "
            f"{'differs' if len(fields) == 1 else 'differ'} from the "
            "copy stored first, which stands; this one is not stored")
