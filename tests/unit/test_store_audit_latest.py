"""Where each table's audit stands (the books an audit left open, the rounds it left
open, each table's latest state) is read through `audit_latest` (schemas/clickhouse/
020_audit_latest.sql), a row of states a table: "Every query ... finds its rows ...
through the sort key ... or through an index table", not by reading every stored audit
state, which grow with audit runs. The same answers as the reads of `audit_states`,
under a bound of rows those reads fail with 201 runs' states; and a store made before
the index is migrated in place ("lookups-5") with nothing lost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store import base, embedded, history, lookup
from pitwatch.store.base import StoreError, ddl_statements
from pitwatch.store.embedded import EmbeddedStore, _created

from .test_store_lookups import _bounded

RUNS = 200
#: Rows the reads may read: a granule of 32 rows of `audit_latest` a part, far less
#: than the states of 201 runs (granules of 32 rows too).
BOUND = 64

_OLD_OPEN = ("SELECT table_id FROM audit_states FINAL GROUP BY table_id "
             "HAVING argMax(closed, pos) = 0 ORDER BY table_id")
_OLD_ROUNDS = ("SELECT table_id, argMax(open_round, pos) AS r, argMax(open_since_ms, pos) "
               "AS since, argMax(closed, pos) AS c FROM audit_states FINAL GROUP BY "
               "table_id HAVING r != '' AND c = 0 ORDER BY since, table_id")


def _fine(monkeypatch: pytest.MonkeyPatch) -> None:
    """`audit_states` and `audit_latest` in granules of 32 rows, so that the rows read
    tell a read of a table's latest state from a read of all of them."""
    def fine() -> list[str]:
        return [s + " SETTINGS index_granularity = 32"
                if (m := re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", s))
                and m.group(1) in ("audit_states", "audit_latest") else s
                for s in base.ddl_statements()]

    monkeypatch.setattr(embedded, "ddl_statements", fine)


def _earlier_runs(store: EmbeddedStore) -> None:
    """`RUNS` earlier states of each table, before its latest one: alternately closed
    and open, each with a round of its own left open (none of them the latest); then a
    later state of the first table with a round left open."""
    store.query(
        "INSERT INTO audit_states SELECT table_id, pos - 1 - number, number % 2, '{}', "
        "concat('earlier-', toString(number)), number, '' FROM audit_states "
        "AS s CROSS JOIN numbers({n:UInt64}) AS k WHERE pos > {n:UInt64}", {"n": RUNS})
    # and the latest run left a round open at one table
    store.query("INSERT INTO audit_states SELECT table_id, max(pos) + 1, 0, '{}', "
                "'left-open', 5, '' FROM audit_states GROUP BY table_id "
                "ORDER BY table_id LIMIT 1")
    store.sync()


Answers = tuple[list[str], list[tuple[str, str, int]], dict[str, int]]


def _answers(store: EmbeddedStore) -> Answers:
    return (history.books_open(store),
            [(o.table_id, o.round_id, o.since) for o in history.open_rounds(store)],
            history.latest_positions(store))


def _old_answers(store: EmbeddedStore) -> Answers:
    return (
        [r["table_id"] for r in store.query(_OLD_OPEN)],
        [(r["table_id"], r["r"], int(r["since"])) for r in store.query(_OLD_ROUNDS)],
        {r["table_id"]: int(r["p"]) for r in store.query(
            "SELECT table_id, max(pos) AS p FROM audit_states GROUP BY table_id")})


def test_the_books_and_rounds_left_open_read_one_row_of_states_a_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fine(monkeypatch)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store, finish=False)
        store.sync()
        _earlier_runs(store)
        assert int(store.query("SELECT count() AS n FROM audit_states")[0]["n"]) > 2 * BOUND
        want = _old_answers(store)
        assert want[0] and [r for _, r, _ in want[1]] == ["left-open"]
        _bounded(store, BOUND)
        try:
            got = _answers(store)
            with pytest.raises(StoreError, match="Limit for rows"):  # the reads replaced
                store.query(_OLD_OPEN)
        finally:
            _bounded(store, 0)
        assert got == want
        # the books closed at a table's latest position: a closed state wins there
        t = want[0][0]
        store.query("INSERT INTO audit_states SELECT table_id, pos, 1, clock, open_round, "
                    "open_since_ms, state FROM audit_states WHERE table_id = {t:String} "
                    "ORDER BY pos DESC LIMIT 1", {"t": t})
        store.sync()
        assert t not in history.books_open(store)
        assert _answers(store) == _old_answers(store)
    finally:
        store.close()


def test_a_store_made_before_audit_latest_is_migrated_with_nothing_lost(
        tmp_path: Path) -> None:
    old = [s for s in ddl_statements() if "audit_latest" not in s]
    assert len(old) == len(ddl_statements()) - 2
    store = EmbeddedStore(tmp_path / "data")
    try:
        for stmt in old:
            store.query(_created(stmt))
        store.query("INSERT INTO store_migrations (name, done) SELECT name, now() FROM "
                    "(SELECT arrayJoin({n:Array(String)}) AS name)",
                    {"n": tuple(n for n in lookup.MIGRATIONS if n != "lookups-5")})
        audit_events(simulate_floor(2, 12, 7, 0.3)[0], store=store, finish=False)
        store.sync()
        _earlier_runs(store)
        want = _old_answers(store)
        assert want[0] and want[1]
        store.setup()
        assert "lookups-5" in {r["name"] for r in store.query(
            "SELECT name FROM store_migrations")}
        assert _answers(store) == want
        store.setup()  # again: nothing more to migrate, the same answers
        assert lookup.migrate(store) == []
        assert _answers(store) == want
    finally:
        store.close()
