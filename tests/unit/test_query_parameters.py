"""Values go into SQL as parameters on both back ends, never spliced into the text:
chDB takes `{name:Type}` itself; for ClickHouse 18.16 (no server-side parameters) the
same statement is handed to clickhouse-driver, which quotes each value as a literal."""

from __future__ import annotations

from pathlib import Path

from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.server import driver_placeholders


def test_placeholders_become_the_drivers_and_percent_signs_stay_literal() -> None:
    sql = ("SELECT * FROM events WHERE table_id = {t:String} AND pos > {p:UInt64} "
           "AND has({ids:Array(String)}, round_id) AND type LIKE 'Wager%'")
    assert driver_placeholders(sql) == (
        "SELECT * FROM events WHERE table_id = %(t)s AND pos > %(p)s "
        "AND has(%(ids)s, round_id) AND type LIKE 'Wager%%'")


def test_embedded_parameters_carry_quotes_and_arrays_as_data(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "d")
    try:
        hostile = "x' OR 1 = 1 --"
        rows = store.query("SELECT {s:String} AS s, has({ids:Array(String)}, {s:String}) AS h, "
                           "length({ids:Array(String)}) AS n",
                           {"s": hostile, "ids": [hostile, "a\\b", "c'd"]})
        assert rows == [{"s": hostile, "h": 1, "n": 3}]
    finally:
        store.close()
