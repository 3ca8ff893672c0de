"""Both stores refuse a query with an empty sequence as a parameter (`base.check_params`):
"Refuse a statement with a parameter that is an empty sequence, on every store:
ClickHouse 18.16 has no typed parameters (the driver writes the value as a literal) and
refuses an empty one where it is used, `x IN ()` as a syntax error (so any empty tuple),
`x IN []` and `has([], x)` as type errors, while chDB answers them all". A caller that
forgets to skip an empty id set fails on chDB too, where the unit tests run. On chDB
always, and on a ClickHouse server too when PITWATCH_TEST_CLICKHOUSE names one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pitwatch.address import host_port
from pitwatch.store.base import Store, StoreError, check_params
from pitwatch.store.embedded import EmbeddedStore

from .test_store_lookups import SERVER

#: Three rows whose `s` is '0', '1', '2'.
ROWS = "SELECT toString(number) AS s FROM system.numbers LIMIT 3"


@pytest.fixture(scope="module", params=["chDB", "server"])
def store(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    if request.param == "chDB":
        s: Store = EmbeddedStore(tmp_path_factory.mktemp("params") / "data")
    else:
        if not SERVER:
            pytest.skip("PITWATCH_TEST_CLICKHOUSE=HOST:PORT names no server")
        from pitwatch.store.server import ServerStore

        host, port = host_port(SERVER)
        s = ServerStore(host, port, "default")  # reads no table: no database of its own
    yield s
    s.close()


def _count(store: Store, where: str, params: dict[str, Any]) -> int:
    return int(store.query(f"SELECT count() AS n FROM ({ROWS}) WHERE {where}", params)[0]["n"])


@pytest.mark.parametrize("where", [
    "s IN {ids:Array(String)}",
    "s NOT IN {ids:Array(String)}",
    "s GLOBAL IN {ids:Array(String)}",
    "s = '1' OR s IN ({ids:Array(String)})",
    "has({ids:Array(String)}, s)",
])
@pytest.mark.parametrize("empty", [(), [], frozenset()])
def test_an_empty_sequence_is_refused(store: Store, where: str, empty: Any) -> None:
    with pytest.raises(StoreError, match=r"'ids' is an empty sequence.*ask nothing"):
        _count(store, where, {"ids": empty})


def test_values_are_still_asked(store: Store) -> None:
    assert _count(store, "s IN {ids:Array(String)}", {"ids": ("0", "2", "9")}) == 2
    assert _count(store, "s NOT IN {ids:Array(String)}", {"ids": ("0",)}) == 2
    assert _count(store, "s GLOBAL IN {ids:Array(String)}", {"ids": ("1",)}) == 1
    assert _count(store, "has({packs:Array(String)}, s)", {"packs": ["1", "2"]}) == 2
    # an empty string is a value, not an empty set of them
    assert _count(store, "s != {x:String}", {"x": ""}) == 3


@pytest.mark.parametrize(("sql", "params"), [
    ("SELECT count() FROM system.one WHERE toString(dummy) IN %(p)s", {"p": ()}),
    ("SELECT count() FROM system.one WHERE toString(dummy) IN %(p)s", {"p": []}),
    ("SELECT has(%(p)s, toString(dummy)) FROM system.one", {"p": []}),
])
def test_the_server_refuses_an_empty_sequence_itself(store: Store, sql: str,
                                                     params: dict[str, Any]) -> None:
    """Why the check is there: what the driver writes for an empty sequence, `()` or
    `[]` (an `Array(Nothing)`), 18.16 refuses as a syntax (62) or type (43, 53) error."""
    if isinstance(store, EmbeddedStore):
        pytest.skip("chDB answers an empty sequence: the check alone refuses it there")
    with pytest.raises(Exception, match=r"Code: (62|43|53)\b"):
        store.client.execute(sql, params)  # type: ignore[attr-defined]


def test_the_check_looks_at_values_only_when_one_is_empty() -> None:
    check_params("SELECT 1", None)
    check_params("SELECT 1", {})
    check_params("SELECT {a:String}, {b:UInt8}, {c:Array(String)}", {"a": "", "b": 0, "c": ("x",)})
    with pytest.raises(StoreError, match="'b'"):
        check_params("SELECT 1 WHERE x IN {a:Array(String)} AND has({b:Array(String)}, x)",
                     {"a": ("1",), "b": set()})
