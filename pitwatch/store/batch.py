"""Rows buffered per table and written to a store in batches."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sized
from typing import Any

from ..events.model import Event
from ..events.native import Clock
from .arrow import event_rows
from .base import TABLES, Store, column_names
from .rows import event_values

#: The tables a batch writer buffers rows of: the three of every audit, and the
#: quarantine of events the record refused yet took in (018_refused_events.sql).
ROW_TABLES = (*TABLES, "refused_events")


class BatchWriter:
    """Buffers rows per table and writes them in batches of `batch_rows`. `flush()`
    writes what is buffered; the caller decides when time is up (no clock here).

    A row is buffered as a tuple in DDL order (`add_values`; `add` takes a dict), and a
    batch goes to the store as one sequence per column (`zip(*rows)`, no dict a row)
    when the store has `insert_columns`, else as dicts to `insert`. An event is
    buffered as itself and its position (`add_event`) when the store has
    `insert_events`, which makes the rows of a whole batch at once (in C, for chDB); and
    when the store has `insert_event_rows`, each event's row is written in C as it is
    added (`arrow.event_rows`), while the event is still in the cache, and the event is
    not kept: only an event C does not write waits for `insert_events` (Python), which
    names the value its column refuses. A store that takes its events in a form of its
    own offers `event_rows()`, a writer that adds and takes as `arrow.event_rows`'s does
    (`process.StoreProcess`: the events' Avro bytes)."""

    def __init__(self, store: Store, batch_rows: int = 5000) -> None:
        self.store = store
        self.batch_rows = batch_rows
        self.buffers: dict[str, list[tuple[Any, ...]]] = {t: [] for t in ROW_TABLES}
        self.written: dict[str, int] = dict.fromkeys(ROW_TABLES, 0)
        self._columnar = getattr(store, "insert_columns", None)
        self._insert_events: Callable[[list[Event], list[int]], None] | None = getattr(
            store, "insert_events", None)
        self.events: list[Event] = []
        self.positions: list[int] = []
        self._insert_rows: Callable[[tuple[Any, ...], int], None] | None = getattr(
            store, "insert_event_rows", None)
        own_rows = getattr(store, "event_rows", None)  # a store's own form of them
        self.rows = (None if self._insert_rows is None
                     else own_rows() if own_rows is not None else event_rows())

    def add(self, table: str, row: Mapping[str, Any]) -> None:
        self.add_values(table, tuple(row[c] for c in column_names(table)))

    def add_values(self, table: str, values: tuple[Any, ...]) -> None:
        """A row as its values in DDL order."""
        buf = self.buffers[table]
        buf.append(values)
        if len(buf) >= self.batch_rows:
            self.flush_table(table)

    def add_event(self, ev: Event, pos: int) -> None:
        """An event of the `events` table, at its position in the order of record."""
        if self._insert_events is None:
            self.add_values("events", event_values(ev, pos))
            return
        rows = self.rows
        if rows is None or not rows.add(ev, pos):
            self.events.append(ev)
            self.positions.append(pos)
        if len(self.events) + (0 if rows is None else len(rows)) >= self.batch_rows:
            self.flush_table("events")

    def hand_over(self) -> tuple[Callable[[Clock, Event], int | None], Sized]:
        """The per-event hand-over of an audit, in one call where it can be: `add_at(clock,
        ev)` adds `ev` at its position on `clock` (which moves) as `add_event` adds it,
        and gives None; or, from the store's C rows (`EventBytes.add_at`), gives its
        position when they did not take it, for `add_event(ev, pos)`. `held` counts the
        events waiting in C: `flush_table("events")` once it reaches `batch_rows`."""
        add_at = getattr(self.rows, "add_at", None)
        if add_at is not None and self._insert_events is not None:
            return add_at, self.rows  # type: ignore[return-value]
        return self._add_at, ()

    def _add_at(self, clock: Clock, ev: Event) -> None:
        self.add_event(ev, clock.position(ev))

    def flush_table(self, table: str) -> None:
        if table == "events" and self.rows is not None and len(self.rows):
            n = len(self.rows)
            self._insert_rows(self.rows.take(), n)  # type: ignore[misc]
            self.written[table] += n
        if table == "events" and self.events and self._insert_events is not None:
            self._insert_events(self.events, self.positions)
            self.written[table] += len(self.events)
            self.events, self.positions = [], []
        buf = self.buffers[table]
        if buf:
            if self._columnar is not None:
                self._columnar(table, list(zip(*buf, strict=True)))
            else:
                names = column_names(table)
                self.store.insert(table, [dict(zip(names, v, strict=True)) for v in buf])
            self.written[table] += len(buf)
            self.buffers[table] = []

    def flush(self) -> None:
        """Write what is buffered, and (a store that inserts in the background) wait
        until it is stored: an insert that failed is raised here."""
        for t in ROW_TABLES:
            self.flush_table(t)
        sync = getattr(self.store, "sync", None)
        if sync is not None:
            sync()
