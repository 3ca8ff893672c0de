"""A store made before the index of violations by id and time (schemas/clickhouse/
019_violation_ids.sql) is migrated in place when it is next set up ("lookups-4"), with
nothing lost: the index names every stored violation, and a violation found through it
is the row a scan of `violations` finds; a second setup changes nothing."""

from __future__ import annotations

from pathlib import Path

from pitwatch.audit.run import audit_events
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store import lookup
from pitwatch.store.base import ddl_statements
from pitwatch.store.embedded import EmbeddedStore, _created


def test_a_store_made_before_violation_ids_is_migrated_with_nothing_lost(
        tmp_path: Path) -> None:
    old = [s for s in ddl_statements()
           if "violation_ids" not in s and "violation_times" not in s]
    assert len(old) == len(ddl_statements()) - 4
    store = EmbeddedStore(tmp_path / "data")
    try:
        for stmt in old:
            store.query(_created(stmt))
        store.query("INSERT INTO store_migrations (name, done) SELECT name, now() FROM "
                    "(SELECT arrayJoin({n:Array(String)}) AS name)",
                    {"n": tuple(n for n in lookup.MIGRATIONS if n != "lookups-4")})
        audit_events(simulate_floor(2, 12, 7, 0.3)[0], store=store)
        store.sync()
        cols = "violation_id, table_id, round_id, code, detected_at, detected_ms"
        before = store.query(f"SELECT {cols} FROM violations FINAL ORDER BY violation_id")
        assert before and "violation_ids" not in {r["name"] for r in store.query(
            "SELECT name FROM system.tables WHERE database = currentDatabase()")}

        store.setup()
        assert "lookups-4" in {r["name"] for r in store.query(
            "SELECT name FROM store_migrations")}
        ids = [r["violation_id"] for r in before]
        assert lookup.stored_violations(store, [*ids, "no-such"]) == set(ids)
        got = sorted(lookup.violations_by_id(store, ids, cols),
                     key=lambda r: r["violation_id"])
        assert got == before
        store.setup()  # again: nothing more to migrate, nothing doubled
        assert lookup.migrate(store) == []
        assert int(store.query("SELECT count() AS n FROM violation_ids FINAL")[0]["n"]) \
            == len(before)
        assert int(store.query("SELECT count() AS n FROM violation_times FINAL")[0]["n"]) \
            == int(store.query("SELECT count() AS n FROM (SELECT DISTINCT detected_at, "
                               "table_id, round_id FROM violations)")[0]["n"])
    finally:
        store.close()
