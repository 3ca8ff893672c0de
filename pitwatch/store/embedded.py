"""The embedded store: chDB, an in-process ClickHouse, in a data directory.

Rows go in as data, in columnar batches: each batch becomes an Arrow table (one typed
array per column, typed from the DDL), staged as an Arrow IPC file in the data directory
and inserted with `INSERT ... SELECT ... FROM file(..., Arrow)`; no value is ever spliced
into SQL text. (Measured in bench/audit.py's history, 5,000 rows a batch: the Arrow file
takes a third of the time of the JSONEachRow file it replaced, and chDB's `Python()`
table function over the same Arrow table takes longer than the file. The audit hands
its batches already as columns, `insert_columns`, with no dict a row.)
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from .base import TABLES, Params, StoreError, column_types, columns, ddl_statements, to_columns


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
    import pyarrow.ipc

    data = arrow_columns(table, cols)
    path = staging / f"{table}-{os.getpid()}-{next(_staged)}.arrow"
    with pyarrow.ipc.new_file(path, data.schema) as w:
        w.write_table(data)
    return path


class EmbeddedStore:
    def __init__(self, path: str | Path) -> None:
        from chdb import session  # imported here: a heavy module, only when used

        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.staging = self.path / "staging"
        self.staging.mkdir(exist_ok=True)
        self._session = session.Session(str(self.path / "chdb"))  # type: ignore[no-untyped-call]

    def _run(self, sql: str, fmt: str = "CSV", params: Params | None = None) -> str:
        try:
            res = self._session.query(sql, fmt,  # type: ignore[no-untyped-call]
                                      params=_param_values(params) if params else None)
        except Exception as e:  # chDB raises its own error types
            raise StoreError(f"chDB: {e}") from e
        return str(res)

    def setup(self) -> None:
        for stmt in ddl_statements():
            self._run(stmt)

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.insert_columns(table, to_columns(table, rows))

    def insert_columns(self, table: str, cols: Sequence[Sequence[Any]]) -> None:
        """A batch as one sequence per column, in DDL order."""
        if cols and len(cols[0]):
            self.insert_staged(table, stage(self.staging, table, cols))

    def insert_staged(self, table: str, staged: Path) -> None:
        """Insert a batch `stage` wrote (by this process or another), then remove it."""
        col_list = ", ".join(columns(table))
        try:
            self._run(f"INSERT INTO {table} ({col_list}) SELECT {col_list} "
                      f"FROM file('{staged}', Arrow)")
        finally:
            staged.unlink()

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        out = self._run(sql, "JSONEachRow", params)
        return [orjson.loads(line) for line in out.splitlines() if line.strip()]

    def read_only(self) -> None:
        """From now on this session refuses anything but reading the store (DDL, DML,
        and table functions that reach files or the network)."""
        self._run("SET readonly = 1")

    def dedupe(self) -> None:
        for t in TABLES:
            self._run(f"OPTIMIZE TABLE {t} FINAL")

    def close(self) -> None:
        self._session.close()  # type: ignore[no-untyped-call]
