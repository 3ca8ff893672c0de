"""Where a triage change is stored: each row carries its violation's casino table
(schemas/clickhouse/024_triage_table.sql), so that on a cluster the change lands on the
violation's shard, beside the violation's row of `pinned_open` that its view cancels. A
store made before the column gets it at its next setup with its rows kept, and a store
whose triage has the first release's columns is still carried over."""

from __future__ import annotations

from pathlib import Path

from pitwatch.audit.run import audit_events
from pitwatch.console.data import ConsoleData, refresh_aggregates
from pitwatch.console.triage import Change
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store.base import ddl_statements
from pitwatch.store.embedded import EmbeddedStore, _created

AT = 1_764_547_200_000


def _floor(store: EmbeddedStore) -> dict[str, str]:
    audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
    store.sync()
    return {r["violation_id"]: r["table_id"] for r in store.query(
        "SELECT violation_id, table_id FROM violations ORDER BY violation_id")}


def test_a_change_carries_its_violations_table_looked_up_or_given(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        tables = _floor(store)
        (a, ta), (b, tb) = list(tables.items())[:2]
        data = ConsoleData(store)
        assert data.apply(a, Change("acknowledge"), "ann", "supervisor", AT)["table_id"] == ta
        # the console passes the table of an alert it holds (not yet stored, maybe)
        data.apply(b, Change("acknowledge"), "ann", "supervisor", AT, table_id=tb)
        # a violation the store does not hold: no table to name
        data.apply("f" * 32, Change("note", note="seen"), "ann", "supervisor", AT)
        store.sync()
        assert {(r["violation_id"], r["table_id"]) for r in store.query(
            "SELECT violation_id, table_id FROM triage")} == {(a, ta), (b, tb), ("f" * 32, "")}
        assert {r["violation_id"]: r["table_id"] for r in store.query(
            "SELECT violation_id, table_id FROM pinned_open")} == {}  # no CRITICAL here
    finally:
        store.close()


def test_a_store_made_before_the_column_gets_it_with_its_changes_kept(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "data")
    try:
        for stmt in ddl_statements():  # the store as made before 024_triage_table.sql
            stmt = stmt.replace(",\n    table_id String DEFAULT ''", "")
            if stmt.startswith("CREATE MATERIALIZED VIEW IF NOT EXISTS pinned_"):
                stmt = stmt.replace(" AS sign, table_id", " AS sign")
            store.query(_created(stmt))
        have = {r["table"] for r in store.query(
            "SELECT table FROM system.columns WHERE database = currentDatabase() "
            "AND name = 'table_id'")}
        assert not {"triage", "pinned_open"} & have
        tables = _floor(store)
        a, b = sorted(tables)[:2]
        store.query(  # a change as the console before the column wrote it
            "INSERT INTO triage (change_id, violation_id, action, status, prev_status, "
            "assignee, prev_assignee, disposition, amount, note, who, role, ts, ts_ms) "
            "SELECT 'c1', {v:String}, 'acknowledge', 'acknowledged', 'new', '', '', '', 0, "
            "'', 'ann', 'supervisor', toDateTime(1764547200), 0", {"v": a})
        assert refresh_aggregates(store) == []  # the console's setup: nothing made again
        ConsoleData(store).apply(b, Change("acknowledge"), "ann", "supervisor", AT)
        store.sync()
        assert {(r["violation_id"], r["table_id"]) for r in store.query(
            "SELECT violation_id, table_id FROM triage")} == {(a, ""), (b, tables[b])}
        assert ConsoleData(store).states([a, b]).keys() == {a, b}
    finally:
        store.close()


def test_a_first_release_triage_is_kept_and_carried_over(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        tables = _floor(store)
        a = sorted(tables)[0]
        for old in ("pinned_handled_mv", "triage"):  # a first-release store had neither
            store.query(f"DROP TABLE {old}")
        store.query("CREATE TABLE triage (triage_id String, violation_id String, "
                    "action String, note String, who String, ts DateTime, ts_ms UInt16) "
                    "ENGINE = MergeTree() ORDER BY (violation_id, ts)")
        store.query("INSERT INTO triage SELECT 'x1', {v:String}, 'ack', 'seen', 'ann', "
                    "toDateTime(1764547200), 5", {"v": a})
        done = refresh_aggregates(store)
        assert any("triage_v1" in line for line in done)
        store.sync()
        assert store.query("SELECT count() AS n FROM triage_v1")[0]["n"] == 1
        (row,) = store.query("SELECT change_id, violation_id, status, note, who, table_id "
                             "FROM triage")
        assert row == {"change_id": "x1", "violation_id": a, "status": "acknowledged",
                       "note": "seen", "who": "ann", "table_id": ""}
    finally:
        store.close()


def test_an_aggregate_of_an_earlier_schema_is_made_again_with_every_view_it_has(
        tmp_path: Path) -> None:
    """'An aggregate whose columns differ from the schema's (a store made by an earlier
    pitwatch) is dropped with its view and made again': `pinned_open` has two views, and
    the second, left at its earlier SELECT, would fail every triage change after."""
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        tables = _floor(store)
        for old in ("pinned_handled_mv", "pinned_open_mv", "pinned_open"):
            store.query(f"DROP TABLE {old}")
        store.query("CREATE TABLE pinned_open (violation_id String, sign Int8, "
                    "earlier UInt8) ENGINE = CollapsingMergeTree(sign) ORDER BY violation_id")
        for view, sign, source in (("pinned_open_mv", 1, "violations"),
                                   ("pinned_handled_mv", -1, "triage")):
            store.query(f"CREATE MATERIALIZED VIEW {view} TO pinned_open AS SELECT DISTINCT "
                        f"violation_id, toInt8({sign}) AS sign, toUInt8(0) AS earlier "
                        f"FROM {source} WHERE 0")
        assert refresh_aggregates(store)[:1] == ["pinned_open: made again to the current schema"]
        a = sorted(tables)[0]
        store.query(  # a CRITICAL, then handled: its two rows cancel
            "INSERT INTO violations SELECT * REPLACE ('CRITICAL' AS severity) "
            "FROM violations WHERE violation_id = {v:String}", {"v": a})
        ConsoleData(store).apply(a, Change("acknowledge"), "ann", "supervisor", AT)
        store.sync()
        assert store.query("SELECT sum(sign) AS s, count() AS n FROM pinned_open WHERE "
                           "violation_id = {v:String}", {"v": a}) == [{"s": 0, "n": 2}]
    finally:
        store.close()
