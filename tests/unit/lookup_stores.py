"""What the console's lookup tests share: a store over a floor, on chDB always and on a
ClickHouse server too when PITWATCH_TEST_CLICKHOUSE names one; a store that counts its
round trips; and tables made with finer granules, so that the rows a query reads tell a
read of a few ids from a read of all."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pitwatch.address import host_port
from pitwatch.store.base import Store
from pitwatch.store.embedded import EmbeddedStore

from .test_console_lookups import _fine
from .test_store_lookups import SERVER


class Counting:
    """A store that counts the queries made through it (each one round trip)."""

    def __init__(self, store: Store) -> None:
        self.store, self.calls = store, 0

    def query(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        self.calls += 1
        return self.store.query(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def finer(monkeypatch: pytest.MonkeyPatch, tables: tuple[str, ...]) -> None:
    """`tables` made with granules of 4 rows (after `_fine`'s 32 for the others): a
    violation's rows there are looked up by its id, which is no order of time, so a
    window's few ids are each in a granule of their own."""
    from pitwatch.store import embedded

    made: Callable[[], list[str]] = embedded.__dict__["ddl_statements"]
    names = "|".join(tables)
    monkeypatch.setattr(embedded, "ddl_statements", lambda: [
        re.sub(r"(SETTINGS index_granularity = 32)?$", " SETTINGS index_granularity = 4",
               s, count=1)
        if re.match(rf"CREATE TABLE IF NOT EXISTS ({names}) ", s) else s for s in made()])


def floor_store(request: pytest.FixtureRequest, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch, database: str, fine_tables: tuple[str, ...],
                fill: Callable[[Store], None]) -> Iterator[Store]:
    """The body of a fixture with params ["chDB", "server"]: a store set up and filled
    by `fill`; on chDB with `fine_tables` in granules of 4 rows, on the server in a
    database of its own (a test process's: xdist's workers share the server), dropped
    after."""
    if request.param == "chDB":
        _fine(monkeypatch)
        finer(monkeypatch, fine_tables)
        s: Store = EmbeddedStore(tmp_path / "data")
    else:
        if not SERVER:
            pytest.skip("PITWATCH_TEST_CLICKHOUSE=HOST:PORT names no server")
        from pitwatch.store.server import ServerStore

        host, port = host_port(SERVER)
        database = f"{database}_{os.getpid()}"
        s = ServerStore(host, port, database)
        s._admin.execute(f"DROP DATABASE IF EXISTS {database}")
    s.setup()
    fill(s)
    getattr(s, "sync", lambda: None)()
    yield s
    if request.param == "server":
        s._admin.execute(f"DROP DATABASE IF EXISTS {database}")  # type: ignore[attr-defined]
    s.close()
