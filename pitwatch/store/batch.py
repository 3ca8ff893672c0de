"""Rows buffered per table and written to a store in batches."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sized
from typing import Any

from ..events.model import Event
from .base import TABLES, Store, column_names
from .columns import event_values
from .native import Clock

#: The tables a batch writer buffers rows of: the three of every audit, and the
#: quarantine of events the record refused yet took in (018_refused_events.sql).
ROW_TABLES = (*TABLES, "refused_events")


class BatchWriter:
    """Buffers rows per table and writes them in batches of `batch_rows`. `flush()`
    writes what is buffered and waits until it is stored; the caller decides when time
    is up (no clock here).

    A row is buffered as a tuple in DDL order (`add_values`; `add` takes a dict), and a
    batch goes to the store as one sequence per column (`insert_columns`). An event goes
    the way its store says (`Store.events_insert`): as a row of values like any other
    (`columns.event_values`), or into the store's C writer as it is added
    (`EventsInsert.row_writer`), while the event is in the cache; only an event that
    writer does not write is kept as itself, for `insert_events`."""

    def __init__(self, store: Store, batch_rows: int = 5000) -> None:
        self.store = store
        self.batch_rows = batch_rows
        self.buffers: dict[str, list[tuple[Any, ...]]] = {t: [] for t in ROW_TABLES}
        self.written: dict[str, int] = dict.fromkeys(ROW_TABLES, 0)
        self.into = store.events_insert()
        #: the store's C writer of `events` rows (None: the store takes columns, or no
        #: extension is built)
        self.rows = None if self.into is None else self.into.row_writer()
        self.events: list[Event] = []
        self.positions: list[int] = []

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
        if self.into is None:
            self.add_values("events", event_values(ev, pos))
            return
        rows = self.rows
        if rows is None or not rows.add(ev, pos):
            self.events.append(ev)
            self.positions.append(pos)
        if len(self.events) + (0 if rows is None else len(rows)) >= self.batch_rows:
            self.flush_table("events")

    def hand_over(self) -> tuple[Callable[[Clock, Event], int | None], Sized]:
        """The per-event hand-over of an audit: `add_at(clock, ev)` adds `ev` at its
        position on `clock` (which moves) and gives None, or gives its position when
        the store's C writer did not take it, for `add_event(ev, pos)`. `held` counts the
        events waiting in C: `flush_table("events")` once it reaches `batch_rows`."""
        if self.rows is not None:
            return self.rows.add_at, self.rows
        return self._add_at, ()

    def _add_at(self, clock: Clock, ev: Event) -> None:
        self.add_event(ev, clock.position(ev))

    def flush_table(self, table: str) -> None:
        if table == "events" and self.into is not None:
            if self.rows is not None and len(self.rows):
                n = len(self.rows)
                self.into.insert_event_rows(self.rows.take(), n)
                self.written[table] += n
            if self.events:
                self.into.insert_events(self.events, self.positions)
                self.written[table] += len(self.events)
                self.events, self.positions = [], []
        buf = self.buffers[table]
        if buf:
            self.store.insert_columns(table, list(zip(*buf, strict=True)))
            self.written[table] += len(buf)
            self.buffers[table] = []

    def flush(self) -> None:
        """Write what is buffered, and wait until it is stored (`Store.sync`): an insert
        that failed is raised here."""
        for t in ROW_TABLES:
            self.flush_table(t)
        self.store.sync()
