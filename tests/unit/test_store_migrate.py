"""A store made before the index tables (schemas/clickhouse/005_lookups.sql) is migrated
in place when it is next set up, with nothing lost: every row of its base tables is
still there, and every lookup through the index tables finds what a scan of the base
tables finds; a second setup changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitwatch.audit import run
from pitwatch.audit.run import audit_events
from pitwatch.producers.simulate import simulate_floor
from pitwatch.replay.rebuild import rebuild
from pitwatch.store import lookup
from pitwatch.store.base import ddl_statements
from pitwatch.store.embedded import EmbeddedStore, _created
from pitwatch.store.history import context_start, primers, round_span, stream

#: The base tables and their rows, which a migration must leave as they were.
BASE = ("events", "rounds", "violations", "audit_states")


def _old_ddl() -> list[str]:
    """The schema as a store made before the index tables has it: every statement but
    those of 005_lookups.sql (kept here, so the fixture stays what such a store was)."""
    new = set(Path(__file__).parents[2].joinpath(
        "schemas/clickhouse/005_lookups.sql").read_text().split(";"))
    new_stmts = {" ".join(ln for ln in s.splitlines() if not ln.lstrip().startswith("--"))
                 .strip() for s in new}
    return [s for s in ddl_statements() if " ".join(s.splitlines()).strip() not in new_stmts]


def _counts(store: EmbeddedStore) -> dict[str, int]:
    return {t: int(store.query(f"SELECT count() AS n FROM {t} FINAL")[0]["n"]) for t in BASE}


def test_a_store_made_before_the_index_tables_is_migrated_with_nothing_lost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _old_ddl()
    assert old and not any("event_positions" in s or "round_violations" in s for s in old)
    events = simulate_floor(2, 12, 7, 0.3)[0]
    store = EmbeddedStore(tmp_path / "data")
    for stmt in old:
        store.query(_created(stmt))
    # the old store is filled as its own version filled it: its audit read no index
    with monkeypatch.context() as m:
        m.setattr(run, "stored_tables", lambda _store: set())
        audit_events(events, store=store)
    store.sync()
    tables = {r["name"] for r in store.query(
        "SELECT name FROM system.tables WHERE database = currentDatabase()")}
    assert "event_positions" not in tables and "round_index" not in tables
    before = _counts(store)
    assert before["events"] == len(events) and before["rounds"] and before["violations"]

    store.setup()
    assert _counts(store) == before
    assert {r["name"] for r in store.query("SELECT name FROM store_migrations")} == \
        set(lookup.MIGRATIONS)

    # every round's span through round_index is the span a scan of events finds
    scanned = {r["round_id"]: (r["t"], int(r["a"]), int(r["z"])) for r in store.query(
        "SELECT round_id, any(table_id) AS t, min(pos) AS a, max(pos) AS z FROM events "
        "FINAL WHERE round_id != '' GROUP BY round_id")}
    assert scanned and {r: round_span(store, r) for r in scanned} == scanned
    # every table's events stream back in the order of record, all of them
    for t in store.query("SELECT DISTINCT table_id FROM events"):
        tid = t["table_id"]
        want = [(int(r["pos"]), r["event_id"]) for r in store.query(
            "SELECT pos, event_id FROM events FINAL WHERE table_id = {t:String} "
            "ORDER BY pos, event_id", {"t": tid})]
        assert [(s.pos, s.event.event_id) for s in stream(store, tid, 0)] == want
        mid = want[len(want) // 2][0]
        begin = context_start(store, tid, mid)
        last = {r["device_id"]: int(r["p"]) for r in store.query(
            "SELECT device_id, max(pos) AS p FROM events FINAL WHERE table_id = {t:String} "
            "AND pos < {b:UInt64} GROUP BY device_id", {"t": tid, "b": begin})}
        assert sorted((s.event.device_id, s.pos) for s in primers(store, tid, begin)) == \
            sorted(last.items())
    # the selections replay and investigate make find what a scan of the base tables finds
    code = store.query("SELECT code, count() AS n FROM violations FINAL GROUP BY code "
                       "ORDER BY n DESC, code LIMIT 1")[0]["code"]
    with_code = {(r["table_id"], r["round_id"]) for r in store.query(
        "SELECT DISTINCT table_id, round_id FROM violations FINAL WHERE code = {c:String} "
        "AND round_id IN (SELECT round_id FROM rounds FINAL)", {"c": code})}
    assert set(lookup.select_rounds(store, lookup.RoundQuery(code=code))) == with_code
    dealer = store.query("SELECT dealer_id FROM rounds FINAL LIMIT 1")[0]["dealer_id"]
    of_dealer = [(r["table_id"], r["round_id"]) for r in store.query(
        "SELECT table_id, round_id FROM rounds FINAL WHERE dealer_id = {d:String} "
        "ORDER BY table_id, started, started_ms, round_id", {"d": dealer})]
    assert lookup.select_rounds(store, lookup.RoundQuery(dealer=dealer)) == of_dealer
    # and the rounds replay as they were stored
    assert all(rebuild(store, r).matches_store for r in list(scanned)[:6])

    store.setup()  # again: nothing more to migrate, nothing doubled
    assert _counts(store) == before
    assert lookup.migrate(store) == []
    assert int(store.query("SELECT count() AS n FROM event_positions FINAL")[0]["n"]) == \
        before["events"]
    store.close()
