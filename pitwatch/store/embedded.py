"""The embedded store: chDB, an in-process ClickHouse, in a data directory.

Rows go in as data, in columnar batches: each batch becomes an Arrow table (one typed
array per column, typed from the DDL), staged as an Arrow IPC file in the data directory
and inserted with `INSERT ... SELECT ... FROM file(..., Arrow)`; no value is ever spliced
into SQL text. (Measured in bench/audit.py's history, 5,000 rows a batch: the Arrow file
takes a third of the time of the JSONEachRow file it replaced, and chDB's `Python()`
table function over the same Arrow table takes longer than the file. The audit hands
its batches already as columns, `insert_columns`, with no dict a row, and its events as
themselves, `insert_events`: their Arrow buffers are written in C, `arrow_events`.)

The inserts run on a thread of the store's own (`_Inserter`), in order, at most one batch
waiting: chDB releases the GIL while it inserts, so the audit goes on in Python on one
core while chDB works on the other (bench/audit.py, 267k events: into chDB 2.21x the
`--no-store` time before, 1.73x after).
"""

from __future__ import annotations

import functools
import itertools
import os
import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..events import native
from ..events.avro import current_fingerprint
from ..events.jsonl import dumps
from ..events.model import Event
from .base import TABLES, Params, StoreError, column_types, columns, ddl_statements, to_columns
from .rows import event_values


def _arrow_type(ch: str) -> Any:
    """The Arrow type a ClickHouse column of type `ch` is sent as."""
    import pyarrow as pa

    if ch.startswith("Array("):
        return pa.list_(_arrow_type(ch[6:-1]))
    simple = {"String": pa.string(), "DateTime": pa.uint32(), "UInt8": pa.uint8(),
              "UInt16": pa.uint16(), "UInt32": pa.uint32(), "UInt64": pa.uint64(),
              "Int8": pa.int8(), "Int64": pa.int64()}
    return simple[ch]


@functools.cache
def _arrow_schema(table: str) -> Any:
    import pyarrow as pa

    return pa.schema([(n, _arrow_type(t)) for n, t in column_types(table)])


def arrow_table(table: str, rows: Sequence[dict[str, Any]]) -> Any:
    """The rows of `table` as an Arrow table, typed from the DDL."""
    return arrow_columns(table, to_columns(table, rows))


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
            arrays.append(pa.array(col, type=_arrow_type(t)))
        except (pa.ArrowException, OverflowError, TypeError) as e:
            raise StoreError(f"chDB: {table}.{name} ({t}): {e}") from e
    return pa.Table.from_arrays(arrays, schema=_arrow_schema(table))


def arrow_events(events: list[Event], positions: list[int]) -> Any:
    """A batch of the `events` table as an Arrow table, from buffers written in C
    (`native.event_columns`: the rows of 20,000 events in about the time Python takes
    for 3,000); where C refuses a value, row by row in Python (`rows.event_values`),
    which names the value its column refuses."""
    import pyarrow as pa

    types = column_types("events")
    raw = None
    if types == native.EVENT_COLUMNS:
        raw = native.event_columns(events, positions, current_fingerprint(), dumps)
    if raw is None:
        rows = [event_values(ev, pos) for ev, pos in zip(events, positions, strict=True)]
        return arrow_columns("events", list(zip(*rows, strict=True)))
    arrays = [pa.Array.from_buffers(_arrow_type(t), len(events),
                                    [None, *map(pa.py_buffer, col if isinstance(col, tuple)
                                                else (col,))])
              for (_, t), col in zip(types, raw, strict=True)]
    return pa.Table.from_arrays(arrays, schema=_arrow_schema("events"))


def _param_values(params: Params) -> dict[str, Any]:
    """chDB reads an array parameter from its text form: quote its strings."""

    def one(v: Any) -> Any:
        if isinstance(v, list | tuple):
            return "[" + ",".join(
                "'" + x.replace("\\", "\\\\").replace("'", "\\'") + "'"
                if isinstance(x, str) else str(x) for x in v) + "]"
        return v

    return {k: one(v) for k, v in params.items()}


_staged = itertools.count()


def stage(staging: Path, table: str, cols: Sequence[Sequence[Any]]) -> Path:
    """Write a batch of `table` (one sequence per column, DDL order) as an Arrow IPC file
    in `staging`; its path (named for this process, so the workers of `audit --jobs`
    never share one)."""
    return _write_staged(staging, table, arrow_columns(table, cols))


def stage_events(staging: Path, events: list[Event], positions: list[int]) -> Path:
    """`stage` for a batch of the `events` table given as its events (`arrow_events`)."""
    return _write_staged(staging, "events", arrow_events(events, positions))


def _write_staged(staging: Path, table: str, data: Any) -> Path:
    """An Arrow table of `table` as an IPC file in `staging`; its path."""
    import pyarrow.ipc

    path = staging / f"{table}-{os.getpid()}-{next(_staged)}.arrow"
    with pyarrow.ipc.new_file(path, data.schema) as w:
        w.write_table(data)
    return path


#: Batches that may wait for the inserter thread behind the one it is inserting: one,
#: so the audit runs ahead by a batch at most (its memory stays flat, and a store slower
#: than the audit holds it back).
WAITING_BATCHES = 1


def _run(session: Any, sql: str, fmt: str = "CSV", params: Params | None = None) -> str:
    try:
        res = session.query(sql, fmt, params=_param_values(params) if params else None)
    except Exception as e:  # chDB raises its own error types
        raise StoreError(f"chDB: {e}") from e
    return str(res)


def _insert_file(session: Any, table: str, staged: Path) -> None:
    """Insert a staged batch of `table`, then remove the file."""
    col_list = ", ".join(columns(table))
    try:
        _run(session, f"INSERT INTO {table} ({col_list}) SELECT {col_list} "
                      f"FROM file('{staged}', Arrow)")
    finally:
        staged.unlink()


def _insert_arrow(session: Any, staging: Path, table: str, data: Any) -> None:
    _insert_file(session, table, _write_staged(staging, table, data))


class _Inserter:
    """Inserts batches on a thread of its own, in the order handed over. chDB's `query`
    releases the GIL (measured: a Python loop ran at full speed beside a 14 s query), so
    the audit goes on in Python on one core while chDB inserts on the other. It holds no
    reference to the store: a store dropped without `close` is still collected, and its
    session closed, as before."""

    def __init__(self, insert: Callable[[str, Any], None]) -> None:
        self._insert = insert
        self._pending: queue.Queue[tuple[str, Any] | None] = queue.Queue(WAITING_BATCHES)
        self._thread: threading.Thread | None = None
        self.failed: StoreError | None = None
        self.reported = False

    def put(self, table: str, data: Any) -> None:
        self.check()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True,
                                            name="pitwatch-chdb-insert")
            self._thread.start()
        self._pending.put((table, data))  # blocks while WAITING_BATCHES wait

    def _loop(self) -> None:
        """After a failure nothing more is inserted (a later batch would land past a
        gap); `check` raises the failure in the caller's thread."""
        while (item := self._pending.get()) is not None:
            table, data = item
            del item  # the batch is freed once inserted, not when the next one comes
            try:
                if self.failed is None:
                    self._insert(table, data)
            except Exception as e:  # any: raised in the caller's thread by `check`
                self.failed = StoreError(
                    f"chDB: a background insert of {data.num_rows} rows into {table} "
                    f"failed, and nothing handed over after it was inserted: {e}")
                self.failed.__cause__ = e
            finally:
                del data
                self._pending.task_done()
        self._pending.task_done()

    def check(self) -> None:
        """Raise the failed insert, if one failed (every call after it too: the store
        holds a gap)."""
        if self.failed is not None:
            self.reported = True
            raise self.failed

    def sync(self) -> None:
        self._pending.join()
        self.check()

    def stop(self) -> None:
        """Wait for the batches handed over, and end the thread."""
        if self._thread is not None:
            self._pending.put(None)
            self._thread.join()
            self._thread = None


class EmbeddedStore:
    def __init__(self, path: str | Path) -> None:
        from chdb import session  # imported here: a heavy module, only when used

        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.staging = self.path / "staging"
        self.staging.mkdir(exist_ok=True)
        self._session = session.Session(str(self.path / "chdb"))  # type: ignore[no-untyped-call]
        self._inserter = _Inserter(functools.partial(_insert_arrow, self._session,
                                                     self.staging))
        weakref.finalize(self, self._inserter.stop)  # dropped unclosed: its rows still land

    def _run(self, sql: str, fmt: str = "CSV", params: Params | None = None) -> str:
        return _run(self._session, sql, fmt, params)

    def setup(self) -> None:
        for stmt in ddl_statements():
            self._run(stmt)

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.insert_columns(table, to_columns(table, rows))

    def insert_columns(self, table: str, cols: Sequence[Sequence[Any]]) -> None:
        """A batch as one sequence per column, in DDL order, inserted in the background:
        made an Arrow table here (a value its column refuses is a StoreError now), then
        staged and inserted by the inserter thread while the caller goes on. `sync`
        waits for it; every other statement syncs first."""
        if cols and len(cols[0]):
            self._inserter.put(table, arrow_columns(table, cols))

    def insert_events(self, events: list[Event], positions: list[int]) -> None:
        """A batch of the `events` table as its events and their positions, made an
        Arrow table here (`arrow_events`) and inserted as `insert_columns` does."""
        if events:
            self._inserter.put("events", arrow_events(events, positions))

    def sync(self) -> None:
        """Wait until every batch handed to `insert_columns` or `insert_events` is
        stored; the first that failed is raised here as a StoreError (and by every
        later statement)."""
        self._inserter.sync()

    def insert_staged(self, table: str, staged: Path) -> None:
        """Insert a batch `stage` wrote (by this process or another), then remove it."""
        self.sync()
        _insert_file(self._session, table, staged)

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        self.sync()
        out = self._run(sql, "JSONEachRow", params)
        return [orjson.loads(line) for line in out.splitlines() if line.strip()]

    def read_only(self) -> None:
        """From now on this session refuses anything but reading the store (DDL, DML,
        and table functions that reach files or the network)."""
        self.sync()
        self._run("SET readonly = 1")

    def dedupe(self) -> None:
        """Merge the replaced rows of each table that holds any. Whether it does is
        its row count with FINAL and without, which reads only the sorting key: an
        audit seldom repeats a row, and rewriting every column of a table it did not
        was a tenth of the whole audit into chDB."""
        self.sync()
        for t in TABLES:
            n = self._run(f"SELECT count() FROM {t}")
            if n != self._run(f"SELECT count() FROM {t} FINAL"):
                self._run(f"OPTIMIZE TABLE {t} FINAL")

    def close(self) -> None:
        """Wait for the background inserts, then close; a failed one nobody was told of
        yet is raised here (never lost with the thread)."""
        try:
            self._inserter.stop()
        finally:
            self._session.close()  # type: ignore[no-untyped-call]
        if not self._inserter.reported:
            self._inserter.check()
