"""The console's first pages (the feed, a table's page, the unhandled filter) cost a
small, fixed number of store round trips whatever the history's length: issue 33, "A
first page (the feed, a table page, the unhandled filter) in a small, fixed number of
round trips whatever the history's length", and "The unhandled filter reads only the
unhandled (an index or a bounded read)". Counted by a store that counts its calls, over
a floor and over 41 times its history (a month apart each), on chDB always and on a
ClickHouse server too when PITWATCH_TEST_CLICKHOUSE names one. A store made before the
span index (schemas/clickhouse/022_spans.sql) is migrated in place."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.console.data import SEVERITIES, ConsoleData, Filters
from pitwatch.producers.history import copy_floor
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store import lookup
from pitwatch.store.base import Store, StoreError, ddl_statements
from pitwatch.store.embedded import EmbeddedStore

from .lookup_stores import Counting, floor_store
from .test_console_lookups import _MONTH, FEED_BOUND
from .test_store_lookups import COPIES, _bounded

#: Store calls a first page may make: the feed's first poll (its clock, the span, one
#: window, the triage of what it shows and of the last day), a table's page, an
#: unhandled search (span, counts, rows and the triage each asks).
MOST_CALLS = 12


@pytest.fixture(params=["chDB", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    yield from floor_store(request, tmp_path, monkeypatch, "pitwatch_test_first_page",
                           ("triage",), lambda s: audit_events(
                               simulate_floor(2, 12, 11, 0.3)[0], store=s))


def _first_pages(store: Store, table: str) -> tuple[list[int], dict[str, Any]]:
    """The store calls of each first page, and what each showed."""
    counting = Counting(store)
    data = ConsoleData(cast(Store, counting))
    calls, shown = [], {}
    for name, page in (
            ("feed", lambda: [a["violation_id"] for a in data.poll(None, None).alerts]),
            ("feed 8", lambda: [a["violation_id"] for a in data.violations(Filters(), 8)]),
            ("table", lambda: [r["round_id"] for r in data.table(table, 20)["rounds"]]),
            ("table 300", lambda: len(data.table(table)["rounds"])),
            ("unhandled", lambda: data.search(Filters(unhandled=True), 0, 5))):
        counting.calls = 0
        shown[name] = page()
        calls.append(counting.calls)
    return calls, shown


def _newest(store: Store, where: str, n: int) -> list[str]:
    return [r["violation_id"] for r in store.query(
        "SELECT violation_id, toUInt64(detected_at) * 1000 + detected_ms AS d FROM "
        f"violations FINAL WHERE {where} ORDER BY d DESC, violation_id LIMIT {n}")]


def test_a_first_page_costs_the_same_few_round_trips_with_41_times_the_history(
        store: Store) -> None:
    table = store.query("SELECT min(table_id) AS t FROM rounds")[0]["t"]
    short, small = _first_pages(store, table)
    copy_floor(store, 1, COPIES, _MONTH)
    getattr(store, "sync", lambda: None)()
    long, large = _first_pages(store, table)
    assert long == short and max(long) <= MOST_CALLS, (short, long)
    # what they showed: what a scan shows
    assert large["feed"] == _newest(store, "1", 200) and len(large["feed"]) == 200
    assert large["feed 8"] == _newest(store, "1", 8)
    assert large["table"] == [r["round_id"] for r in store.query(
        "SELECT round_id FROM rounds FINAL WHERE table_id = {t:String} ORDER BY started "
        "DESC, started_ms DESC, round_id LIMIT 20", {"t": table})]
    assert large["table 300"] == 300 and small["table 300"] < 20
    assert small["feed"] == _newest(store, "position(violation_id, '~') = 0", 200)


def test_the_unhandled_filter_reads_the_triage_of_what_it_examines_alone(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change for most violations, then an unhandled search at 41x history: its counts
    and page are a scan's of the violations detected since the second it reached (its
    budget: `lookup.BUDGET`), read under `FEED_BOUND` on chDB, which a read of all of
    triage fails, in a few round trips (the budget's windows, each with its triage)."""
    monkeypatch.setattr(lookup, "BUDGET", 10)
    copy_floor(store, 1, COPIES, _MONTH)
    store.query(  # every violation but each fifth handled, in three changes made this
        # week (the console's clock: one month's partition)
        "INSERT INTO triage (change_id, violation_id, action, status, prev_status, "
        "assignee, prev_assignee, disposition, amount, note, who, role, ts, ts_ms) "
        "SELECT concat(toString(k), violation_id), violation_id, 'note', 'acknowledged', "
        "'acknowledged', '', '', '', 0, 'seen', 'tester', 'operator', "
        "toDateTime('2026-12-01 00:00:00'), k "
        "FROM violations ARRAY JOIN [1, 2, 3] AS k "
        "WHERE cityHash64(violation_id) % 5 != 0")
    getattr(store, "sync", lambda: None)()
    counting = Counting(store)
    data = ConsoleData(cast(Store, counting))
    chdb = isinstance(store, EmbeddedStore)
    if chdb:
        _bounded(store, FEED_BOUND)
    try:
        got = data.search(Filters(unhandled=True), 0, 5)
        if chdb:
            with pytest.raises(StoreError, match="Limit for rows"):  # the read replaced
                store.query("SELECT count() AS n FROM violations FINAL WHERE violation_id "
                            "NOT IN (SELECT violation_id FROM triage)")
    finally:
        if chdb:
            _bounded(store, 0)
    assert counting.calls <= MOST_CALLS
    where = ("violation_id NOT IN (SELECT violation_id FROM triage)" + (
        "" if got["reached"] is None
        else f" AND detected_at >= toDateTime({got['reached'] // 1000})"))
    counted = {r["severity"]: int(r["n"]) for r in store.query(
        f"SELECT severity, count() AS n FROM violations FINAL WHERE {where} "
        "GROUP BY severity")}
    assert got["counts"] == {s: counted.get(s, 0) for s in SEVERITIES}
    assert sum(counted.values()) and got["total"] < store.query(
        "SELECT count() AS n FROM violations")[0]["n"] // 2
    assert [a["violation_id"] for a in got["alerts"]] == _newest(store, where, 5)
    # the feed's first read brings the changes of the violations it shows (by their
    # ids: these were made days before the store's clock), not the newest of all triage
    polled = data.poll(None, None)
    shown = tuple(sorted({a["violation_id"] for a in polled.alerts}))
    assert polled.changes and {c["change_id"] for c in polled.changes} == {
        r["change_id"] for r in store.query(
            "SELECT change_id FROM triage WHERE violation_id IN {v:Array(String)}",
            {"v": shown})}


def test_a_store_made_before_the_span_index_is_migrated_with_nothing_lost(
        tmp_path: Path) -> None:
    spans = ("table_span", "round_start_span", "violation_span", "table_opened")
    old = [s for s in ddl_statements()
           if not any(f" {t} " in s for t in (*spans, "table_arrived"))]
    assert len(old) == len(ddl_statements()) - 10
    store = EmbeddedStore(tmp_path / "data")
    try:
        for stmt in old:
            store.query(stmt)
        store.query("INSERT INTO store_migrations (name, done) SELECT name, now() FROM "
                    "(SELECT arrayJoin({n:Array(String)}) AS name)",
                    {"n": tuple(n for n in lookup.MIGRATIONS if n != "lookups-6")})
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        store.sync()
        table = store.query("SELECT min(table_id) AS t FROM rounds")[0]["t"]
        store.setup()
        assert "lookups-6" in {r["name"] for r in store.query(
            "SELECT name FROM store_migrations")}
        _, shown = _first_pages(store, table)
        assert shown["feed"] == _newest(store, "1", 200) and shown["feed"]
        assert shown["table"] == [r["round_id"] for r in store.query(
            "SELECT round_id FROM rounds FINAL WHERE table_id = {t:String} ORDER BY "
            "started DESC, started_ms DESC, round_id LIMIT 20", {"t": table})]
        posted = store.query("SELECT table_id, argMaxIfMerge(jurisdiction) AS j, "
                             "argMaxIfMerge(game) AS g FROM table_posted GROUP BY table_id "
                             "ORDER BY table_id")
        assert posted and [(r["table_id"], r["jurisdiction"], r["game"]) for r in ConsoleData(
            store).floor(0, 60_000, 0, clock="store")] == [
            (r["table_id"], r["j"], r["g"]) for r in posted]
        spans_now = [store.query(f"SELECT count() AS n FROM {t}")[0]["n"] for t in spans]
        store.setup()  # again: nothing more to migrate, nothing written twice
        assert lookup.migrate(store) == []
        assert [store.query(f"SELECT count() AS n FROM {t}")[0]["n"] for t in spans] \
            == spans_now
    finally:
        store.close()
