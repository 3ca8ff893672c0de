"""The order of record of a table's events, as a number that is the same wherever the
events are stored from: an audit of files (one run or many), the streaming sink, or
both into one store.

docs/events.md: one table's events arrive in the order they happened, and that order
is the order of record (`ts` never orders anything). Each device numbers its own events
(`seq` 1, 2, 3, …), so what the arrival order adds is only how the devices interleave.
The position of an event is the table's *record clock* when it arrives: the sum, over
the table's devices, of the last `seq` each has sent (a device's step forward adds what
it stepped). For honest devices that is exactly the event's place in the table's stream,
counted from 1, and it depends only on the events themselves and the order they came in,
not on where a file starts, how many runs an audit took or on Kafka offsets.

An event that moves no device forward (a conflicting copy of a seq, a late one) comes
right after the event the clock stands at: `pos = clock * STRIDE + k`, the k-th such
event since. A redelivered event (an event id seen lately) keeps the position it had.

A writer that starts in the middle of a table's history (a second audit run, a sink
restarted from its committed offsets) resumes the clock from the store (`resume`): at
the event's own stored position when the event is there already, else after the table's
latest stored event, so a re-read batch gets the positions it had the first time.
"""

from __future__ import annotations

import time

from ..events.model import Event
from .base import Store, StoreError
from .native import Clock, recent_ids, record_clock

#: Positions per record-clock tick: room for this many non-advancing events in a row.
STRIDE = 1024
#: Recent event ids per table remembered, so a redelivery keeps its position (in C, 28
#: bytes an id: `native.recent_ids`).
WINDOW = 4096


class _PyTableClock:
    """The record clock of one table, in Python (where the extension is not built; the
    C one, `native.record_clock`, does the same in a fifth of the time)."""

    __slots__ = ("behind", "extra", "last", "recent", "total")

    def __init__(self) -> None:
        self.last: dict[str, int] = {}
        self.total = 0
        self.extra = 0
        self.behind = 0
        self.recent = recent_ids(WINDOW)

    def position(self, ev: Event) -> int:
        known = self.recent.get(ev.event_id)
        if known is not None:
            self.behind += 1
            return known
        last = self.last.get(ev.device_id, 0)
        if ev.seq > last:
            self.total += ev.seq - last
            self.last[ev.device_id] = ev.seq
            self.extra = 0
        else:
            self.extra = min(self.extra + 1, STRIDE - 1)
            self.behind += 1
        pos = self.total * STRIDE + self.extra
        self.recent.add(ev.event_id, pos)
        return pos


def table_clock() -> Clock:
    """A new record clock of one table: `position(event)`, and `total`, `extra` and
    `last` (each device's last seq) where it stands, and `behind`: how many events moved
    no device forward (0: none came twice)."""
    return record_clock(WINDOW, STRIDE) or _PyTableClock()


def resume_at(clock: Clock, pos: int, last: dict[str, int]) -> None:
    """Stand `clock` where the stored history stands at `pos`, with each device's last
    seq."""
    clock.total, clock.extra = divmod(pos, STRIDE)
    clock.last = dict(last)


class Positions:
    """Record clocks of every table of a stream, created on first sight, resumed from
    `store` when one is given."""

    def __init__(self, store: Store | None = None, *, wait_for_store: bool = False) -> None:
        self.store = store
        #: a streaming writer waits (0.5 s doubling to 10 s) while the store is down,
        #: rather than guess a position; an audit run fails at once
        self.wait_for_store = wait_for_store
        self.tables: dict[str, Clock] = {}

    def of(self, ev: Event) -> int:
        """The position of `ev` in its table's order of record; events must come in
        that order."""
        return self.clock(ev).position(ev)

    def clock(self, ev: Event) -> Clock:
        """The record clock of `ev`'s table: on the table's first event, a new one,
        resumed from the store when there is one."""
        clock = self.tables.get(ev.table_id)
        if clock is None:
            clock = table_clock()
            if self.store is not None:
                self._resume(self.store, clock, ev)
            self.tables[ev.table_id] = clock
        return clock

    def _resume(self, store: Store, clock: Clock, ev: Event) -> None:
        delay = 0.5
        while True:
            try:
                resume(store, clock, ev)
                return
            except StoreError:
                if not self.wait_for_store:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 10.0)


def resume(store: Store, clock: Clock, ev: Event) -> None:
    """Set `clock` to where `ev`'s table stands in `store` when `ev` comes in: the event
    found by its id (`event_ids`), each device's seq before it by position (`lookup`)."""
    from .lookup import seqs_upto, table_extent  # lookup reads positions by STRIDE

    at = [int(r["pos"]) for r in store.query(
        "SELECT pos FROM event_ids WHERE table_id = {t:String} AND event_id = {e:String} "
        "ORDER BY pos LIMIT 1", {"t": ev.table_id, "e": ev.event_id})]
    if at:
        pos = at[0]
        rows = seqs_upto(store, ev.table_id, pos - 1) if pos else {}
        # stand just before it: the event itself then takes the position it had
        resume_at(clock, pos, rows)
        if ev.seq > rows.get(ev.device_id, 0):
            clock.total -= ev.seq - rows.get(ev.device_id, 0)
            clock.extra = 0
        else:
            clock.extra -= 1
        return
    extent = table_extent(store, ev.table_id)
    if extent is not None:
        resume_at(clock, extent[1], seqs_upto(store, ev.table_id, extent[1]))
