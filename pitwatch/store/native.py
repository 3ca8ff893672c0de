"""The store's part of pitwatch's C extension (`pitwatch.events._native`, one library
built by hatch_build.py): the `events` rows written in C, a table's record clock and its
window of recent event ids, each with what stands in for it where the extension is not
built.

- `row_body` writes the body of an event's row (`columns.row_body`) ten times faster
  than building its dict for orjson;
- `event_columns` writes a whole batch of `events` rows as Arrow buffers, `event_rows`
  an event at a time while the event is still in the cache, and `write_rows` the rows
  of a batch straight from its Avro bytes, with no event built (the store process's:
  `store/process.py`); each gives None (or False) for what it does not write, and the
  caller writes that in Python (`columns.event_values`). They write the columns of
  `EVENT_COLUMNS`, which tests/unit/test_events_row.py checks against `columns.EVENTS`;
- `record_clock` is a table's whole record clock (`store.order`) in C, and
  `recent_ids` keeps a table's last event ids and their positions as 96 bits of their
  hashes, a seventh of the memory of a dict of the ids.

The C source is pitwatch/store/native.c, which pitwatch/events/_native.c includes, so
the extension is one library: the rows written from Avro bytes walk the reader's compiled
programs, and the body writer is the JSON Lines writer.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any, Final, Protocol, cast

from ..events.native import Program

try:
    from ..events import _native
except ImportError:  # built at install; without it Python writes every row
    _native = None  # type: ignore[assignment]


def row_body(event: Any) -> bytes | None:
    """The body of the event's `events` row written in C: its JSON Lines form without
    "type" and the envelope fields the row's columns hold (`columns.row_body`), byte for
    byte; None for what the C writer does not write (a TableOpened's rules, or no
    extension built)."""
    return None if _native is None else _native.row_body(event)


#: The `events` table's columns as the C writer writes them: (name, ClickHouse type);
#: () without the extension.
EVENT_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    () if _native is None else _native.EVENT_COLUMNS)


def event_columns(events: list[Any], positions: list[int], fingerprint: str,
                  body_of: Callable[[Any], bytes]) -> tuple[Any, ...] | None:
    """A batch of the store's `events` rows as Arrow buffers written in C, a String
    column as (int32 offsets, UTF-8 data) and an integer column as its little-endian
    values, in `EVENT_COLUMNS` order: the values `columns.event_values` gives, with
    `fingerprint` the writer of an event that names none and `body_of` the body
    (`columns.row_body`) of one the C writer does not write. None for a value a
    column cannot hold, or no extension built: the caller then builds the batch in
    Python."""
    if _native is None:
        return None
    return _native.event_columns(events, positions, fingerprint, body_of)


class Clock(Protocol):
    """A table's record clock (`store.order`), in C where the extension is built."""

    total: int
    extra: int
    last: dict[str, int]
    #: events that moved no device forward, a redelivered one among them (0: no event
    #: came twice)
    behind: int

    def position(self, event: Any, /) -> int: ...


class EventRows(Protocol):
    """The `events` table's rows written in C an event at a time (`_native.EventRows`):
    `add` writes one (False: it does not, and writes nothing: the caller writes it in
    Python), `add_at` adds an event at its position on a clock in one call (None: added;
    else its position, and the event is the caller's), `take` gives the rows so far as
    `event_columns` gives a batch's."""

    def add(self, event: Any, position: int, /) -> bool: ...
    def add_at(self, clock: Clock, event: Any, /) -> int | None: ...
    def add_avro(self, code: bytes, consts: tuple[Any, ...], data: bytes, lengths: bytes,
                 positions: bytes, /) -> list[tuple[Any, int]] | None: ...
    def take(self) -> tuple[Any, ...]: ...
    def __len__(self) -> int: ...


class RowWriter(Protocol):
    """What writes a batch's `events` rows in C an event at a time: an `EventRows`, or
    an `EventBytes` (a store process's: the events as their Avro bytes)."""

    def add(self, event: Any, position: int, /) -> bool: ...
    def add_at(self, clock: Clock, event: Any, /) -> int | None: ...
    def take(self) -> Any: ...
    def __len__(self) -> int: ...


def event_rows(fingerprint: str, body_of: Callable[[Any], bytes]) -> EventRows | None:
    """A writer of `events` rows an event at a time as they come, while each is in the
    cache the audit just read it into (`event_columns` reads a batch's long after), or
    None without the extension."""
    return None if _native is None else cast(EventRows, _native.EventRows(fingerprint, body_of))


def write_rows(program: Program, rows: EventRows, data: bytes, lengths: bytes,
               positions: bytes) -> list[tuple[Any, int]] | None:
    """The `events` rows of the records in `data` (each one's length a uint32 in
    `lengths`, its position a uint64 in `positions`: an `EventBytes` batch) written by
    `rows` straight from the bytes, with no event built: each the row `rows.add` writes
    of the event `program.build` makes, its body byte for byte. A record the walk does
    not write (a TableOpened's rules...) is built and given to `rows.add`; one that
    refuses too is returned with its position, for the caller to write in Python. None,
    with nothing written, when the bytes are not records of the program's schema."""
    if not program.buildable:
        return None
    return rows.add_avro(program.code, program.consts, data, lengths, positions)


#: A batch of events as `EventBytes.take` gives it: this schema's Avro bytes joined,
#: their lengths (uint32) and positions (uint64) as bytes, how many, and the others' rows
#: as `EventRows.take` gives them (or None) and how many.
EventBytesBatch = tuple[bytes, bytes, bytes, int, "tuple[Any, ...] | None", int]


class EventBytes(Protocol):
    """The events of a batch as their Avro bytes and positions, the others as their rows
    (`_native.EventBytes`; `store/process.py`)."""

    def add(self, event: Any, position: int, /) -> bool: ...
    def add_at(self, clock: Clock, event: Any, /) -> int | None: ...
    def take(self) -> EventBytesBatch: ...
    def __len__(self) -> int: ...


class _PyEventBytes:
    """`_native.EventBytes` in Python, where the extension is not built (then there are
    no rows in C: an event without this schema's bytes is the caller's)."""

    def __init__(self) -> None:
        self.raws: list[bytes] = []
        self.positions: list[int] = []

    def add(self, event: Any, position: int, /) -> bool:
        if isinstance(event.raw, bytes) and event.writer is None:
            self.raws.append(event.raw)
            self.positions.append(position)
            return True
        return False

    def add_at(self, clock: Clock, event: Any, /) -> int | None:
        pos = clock.position(event)
        return None if self.add(event, pos) else pos

    def take(self) -> EventBytesBatch:
        raws, positions = self.raws, self.positions
        self.raws, self.positions = [], []
        return (b"".join(raws), array("I", map(len, raws)).tobytes(),
                array("Q", positions).tobytes(), len(raws), None, 0)

    def __len__(self) -> int:
        return len(self.raws)


def event_bytes(rows: EventRows | None) -> EventBytes:
    """A batch's events as their Avro bytes where they were decoded from this schema's,
    the others written by `rows` (`EventBytes`): in C where the extension is built."""
    if _native is None:
        return _PyEventBytes()
    return _native.EventBytes(cast("_native.EventRows | None", rows))


class RecentIds(Protocol):
    """The last ids of a table's events and their positions (`store.order`)."""

    def get(self, event_id: str, /) -> int | None: ...
    def add(self, event_id: str, pos: int, /) -> None: ...
    def __len__(self) -> int: ...


class _PyRecent:
    """`RecentIds` in Python, where the extension is not built: the ids themselves in a
    dict in the order they came (a C `Recent` keeps 128-bit hashes of them)."""

    __slots__ = ("_capacity", "_pos")

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._pos: dict[str, int] = {}

    def get(self, event_id: str, /) -> int | None:
        return self._pos.get(event_id)

    def add(self, event_id: str, pos: int, /) -> None:
        self._pos[event_id] = pos
        if len(self._pos) > self._capacity:
            del self._pos[next(iter(self._pos))]

    def __len__(self) -> int:
        return len(self._pos)


def record_clock(window: int, stride: int) -> Clock | None:
    """A record clock in C (`_native.Clock`), or None without the extension."""
    return None if _native is None else _native.Clock(window, stride)


def recent_ids(capacity: int) -> RecentIds:
    """The last `capacity` ids added, and their positions: in C (28 bytes an id) where
    the extension is built."""
    return _PyRecent(capacity) if _native is None else _native.Recent(capacity)
