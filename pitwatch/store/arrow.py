"""Batches of the store's tables as Arrow tables (one typed array per column, typed from
the DDL) and as staged Arrow IPC files, which the embedded store inserts with
`INSERT ... SELECT ... FROM file(..., Arrow)`: no value is ever spliced into SQL text.

Every array is made from its buffers (`pa.Array.from_buffers`), never with `pa.array`:
pyarrow's `pa.array` imports pandas to ask whether a list is pandas-like, and pandas
alone is about 47 MB of the audit's peak memory over chDB opened. The
buffers of an `events` batch are written in C (`native.event_columns`); the other
tables' few rows, and an events batch C refuses, are packed here with `array.array`,
which refuses what a column's type cannot hold, as `pa.array` would.
"""

from __future__ import annotations

import functools
import itertools
import os
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..events.avro import current_fingerprint
from ..events.model import Event
from . import native
from .base import StoreError, column_types, to_columns
from .columns import EVENT_TYPES, event_values, row_body

#: The Arrow type of each simple column type (DateTime is seconds, an unsigned 32-bit
#: int), and the `array.array` type code of each numeric one.
_ARROW_NAMES = {"String": "string", "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32",
                "UInt64": "uint64", "Int8": "int8", "Int64": "int64", "DateTime": "uint32",
                "Float64": "float64"}
_INT_CODES = {"UInt8": "B", "UInt16": "H", "UInt32": "I", "UInt64": "Q", "Int8": "b",
              "Int64": "q", "DateTime": "I", "Float64": "d"}


def arrow_type(ch: str) -> Any:
    """The Arrow type a ClickHouse column of type `ch` is sent as."""
    import pyarrow as pa

    if ch.startswith("Array("):
        return pa.list_(arrow_type(ch[6:-1]))
    return getattr(pa, _ARROW_NAMES[ch])()


@functools.cache
def arrow_schema(table: str) -> Any:
    import pyarrow as pa

    return pa.schema([(n, arrow_type(t)) for n, t in column_types(table)])


def _offsets(lengths: Iterable[int]) -> array[int]:
    """Arrow's int32 offsets of items of these lengths (past 2**31-1: OverflowError)."""
    return array("i", itertools.accumulate(lengths, initial=0))


def _array(ch: str, values: Sequence[Any]) -> Any:
    """One column of values as an Arrow array of ClickHouse type `ch`; what the type
    cannot hold is a TypeError, an OverflowError or a ValueError."""
    import pyarrow as pa

    typ, n = arrow_type(ch), len(values)
    if ch.startswith("Array("):
        if not all(isinstance(v, list | tuple) for v in values):
            raise TypeError(f"expected a list for {ch}")
        child = _array(ch[6:-1], [x for v in values for x in v])
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(_offsets(map(len, values)))],
                                     children=[child])
    if ch == "String":
        if not all(isinstance(v, str) for v in values):
            bad = next(v for v in values if not isinstance(v, str))
            raise TypeError(f"expected str, got {type(bad).__name__}")
        data = [v.encode() for v in values]  # a lone surrogate: UnicodeEncodeError
        bufs = [_offsets(map(len, data)), b"".join(data)]
    else:
        if any(v.__class__ is bool for v in values):
            raise TypeError("expected an integer, got bool")
        bufs = [array(_INT_CODES[ch], values)]
    return pa.Array.from_buffers(typ, n, [None, *map(pa.py_buffer, bufs)])


def arrow_columns(table: str, cols: Sequence[Sequence[Any]]) -> Any:
    """A batch of `table` given as one sequence per column (DDL order) as an Arrow table,
    one typed array a column; a value a column refuses is a StoreError naming it."""
    import pyarrow as pa

    types = column_types(table)
    if len(cols) != len(types):
        raise StoreError(f"chDB: {len(cols)} columns for {table}, which has {len(types)}")
    arrays = []
    for col, (name, t) in zip(cols, types, strict=True):
        try:
            arrays.append(_array(t, col))
        except (OverflowError, TypeError, ValueError) as e:
            raise StoreError(f"chDB: {table}.{name} ({t}): {e}") from e
    return pa.Table.from_arrays(arrays, schema=arrow_schema(table))


def arrow_table(table: str, rows: Sequence[dict[str, Any]]) -> Any:
    """The rows of `table` as an Arrow table, typed from the DDL."""
    return arrow_columns(table, to_columns(table, rows))


def arrow_events(events: list[Event], positions: list[int]) -> Any:
    """A batch of the `events` table as an Arrow table, from buffers written in C
    (`native.event_columns`: the rows of 20,000 events in about the time Python takes
    for 3,000); where C refuses a value, or the extension built writes other columns
    than `columns.EVENTS` (a build older than the source), row by row in Python
    (`columns.event_values`), which names the value its column refuses."""
    raw = None
    if native.EVENT_COLUMNS == EVENT_TYPES:
        raw = native.event_columns(events, positions, current_fingerprint(), row_body)
    if raw is None:
        rows = [event_values(ev, pos) for ev, pos in zip(events, positions, strict=True)]
        return arrow_columns("events", list(zip(*rows, strict=True)))
    return arrow_event_rows(raw, len(events))


def event_rows() -> native.EventRows | None:
    """A writer of `events` rows an event at a time, in C (`native.event_rows`), for
    `arrow_event_rows`; None where C does not write `columns.EVENTS` or is not built."""
    if native.EVENT_COLUMNS != EVENT_TYPES:
        return None
    return native.event_rows(current_fingerprint(), row_body)


def arrow_event_rows(raw: tuple[Any, ...], rows: int) -> Any:
    """`rows` rows of the `events` table as C wrote them (`native.event_columns`,
    `EventRows.take`) as an Arrow table."""
    import pyarrow as pa

    types = column_types("events")
    arrays = [pa.Array.from_buffers(arrow_type(t), rows,
                                    [None, *map(pa.py_buffer, col if isinstance(col, tuple)
                                                else (col,))])
              for (_, t), col in zip(types, raw, strict=True)]
    return pa.Table.from_arrays(arrays, schema=arrow_schema("events"))


_staged = itertools.count()


class StagedFile:
    """Batches of one table appended to an Arrow IPC file in `staging` as they come, so
    that none waits in memory for the insert; `close` gives the file to insert. Named for
    this process, so two processes staging into one store never share one."""

    def __init__(self, staging: Path, table: str) -> None:
        import pyarrow.ipc

        self.path = staging / f"{table}-{os.getpid()}-{next(_staged)}.arrow"
        self.rows = 0
        self._writer = pyarrow.ipc.new_file(self.path, arrow_schema(table))

    def append(self, data: Any) -> None:
        """An Arrow table of the file's table (`arrow_columns`, `arrow_events`)."""
        self._writer.write_table(data)
        self.rows += data.num_rows

    def close(self) -> Path:
        self._writer.close()
        return self.path


def orphans(staging: Path) -> list[Path]:
    """Staged files of processes no longer running: what an audit that was killed left
    behind (its rows are not in the store; auditing the input again stores them)."""
    found = []
    for f in staging.glob("*-*-*.arrow"):
        pid = f.stem.rsplit("-", 2)[1]
        if pid.isdigit() and not _running(int(pid)):
            found.append(f)
    return sorted(found)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's, or no pid at all
        return True
    try:  # a killed process not yet reaped (a zombie) answers, but runs no more
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
