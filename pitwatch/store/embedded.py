"""The embedded store: chDB, an in-process ClickHouse, in a data directory.

Rows go in as data: each batch is written as a JSONEachRow file in the data directory
and inserted with `INSERT ... SELECT * FROM file(...)`; no value is ever spliced into
SQL text.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from .base import TABLES, Params, StoreError, columns, ddl_statements


def _param_values(params: Params) -> dict[str, Any]:
    """chDB reads an array parameter from its text form: quote its strings."""

    def one(v: Any) -> Any:
        if isinstance(v, list | tuple):
            return "[" + ",".join(
                "'" + x.replace("\\", "\\\\").replace("'", "\\'") + "'"
                if isinstance(x, str) else str(x) for x in v) + "]"
        return v

    return {k: one(v) for k, v in params.items()}


class EmbeddedStore:
    def __init__(self, path: str | Path) -> None:
        from chdb import session  # imported here: a heavy module, only when used

        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._staging = self.path / "staging"
        self._staging.mkdir(exist_ok=True)
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
        if not rows:
            return
        cols = columns(table)
        staged = self._staging / f"{table}-{os.getpid()}.jsonl"
        with open(staged, "wb") as f:
            f.write(b"\n".join(orjson.dumps(r) for r in rows))
            f.write(b"\n")
        col_list = ", ".join(cols)
        self._run(f"INSERT INTO {table} ({col_list}) SELECT {col_list} "
                  f"FROM file('{staged}', JSONEachRow)")
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
