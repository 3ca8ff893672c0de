"""The feed's pinned CRITICALs (console/data.py `pinned`: "CRITICAL violations no one has
handled yet") are read from `pinned_open` (schemas/clickhouse/023_pinned.sql), which once
merged holds the unhandled CRITICALs alone: issue 33, "Lookups independent of history".
The same list as a scan of every violation and of triage (a CRITICAL handled drops out,
one unhandled stays, a non-CRITICAL never appears, a redelivery or a repeated change is
not counted twice), its reads under a bound with 41 times the history on chDB that the
read it replaced fails, on chDB always and on a ClickHouse server too when
PITWATCH_TEST_CLICKHOUSE names one. A store made before the index is migrated in place."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.console.data import ConsoleData
from pitwatch.console.triage import Change
from pitwatch.producers.history import copy_floor
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store import lookup
from pitwatch.store.base import Store, StoreError, ddl_statements
from pitwatch.store.embedded import EmbeddedStore

from .lookup_stores import Counting, floor_store
from .test_console_lookups import _MONTH
from .test_store_lookups import COPIES, _bounded

#: Rows a query of `pinned` may read at 41x history on chDB (granules of 32 rows, of 4
#: for `triage` and `pinned_open`): a few granules around the floor's unhandled
#: CRITICALs, less than the 205 CRITICALs of the 41 copies that the read it replaced
#: (every CRITICAL, then their triage) reads.
PIN_BOUND = 150

_COLUMNS = ("violation_id, code, severity, table_id, round_id, seat, hand, event_id, "
            "evidence, citation, message, pack, pack_version, detected_at, detected_ms")


@pytest.fixture(params=["chDB", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    yield from floor_store(request, tmp_path, monkeypatch, "pitwatch_test_pinned",
                           ("triage", "pinned_open"), _floor)


def _sync(store: Store) -> None:
    getattr(store, "sync", lambda: None)()


def _floor(store: Store) -> None:
    """A floor whose findings are each stored again as a CRITICAL (the floor raises
    none), so that a CRITICAL and a non-CRITICAL share a round and a second."""
    audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
    store.query(f"INSERT INTO violations ({_COLUMNS}) SELECT concat(violation_id, '-c'), "
                "code, 'CRITICAL', table_id, round_id, seat, hand, event_id, evidence, "
                "citation, message, pack, pack_version, detected_at, detected_ms "
                "FROM violations")
    _sync(store)


def _change(store: Store, where: str, changes: int = 1) -> None:
    """`changes` triage changes (notes) of each violation `where` selects, in one insert,
    as the console writes them."""
    store.query(
        "INSERT INTO triage (change_id, violation_id, action, status, prev_status, "
        "assignee, prev_assignee, disposition, amount, note, who, role, ts, ts_ms) "
        "SELECT concat(toString(k), violation_id), violation_id, 'note', 'new', 'new', "
        "'', '', '', 0, 'seen', 'tester', 'operator', toDateTime('2026-12-01 00:00:00'), k "
        f"FROM violations FINAL ARRAY JOIN range({changes}) AS k WHERE {where}")
    _sync(store)


def _scan(store: Store) -> list[str]:
    """The unhandled CRITICALs, newest first, as a scan of every violation finds them."""
    return [r["violation_id"] for r in store.query(
        "SELECT violation_id, toUInt64(detected_at) * 1000 + detected_ms AS d FROM "
        "violations FINAL WHERE severity = 'CRITICAL' AND violation_id NOT IN "
        "(SELECT violation_id FROM triage) ORDER BY d DESC, violation_id")]


def _pinned(store: Store, limit: int = 50) -> tuple[int, list[str]]:
    got = ConsoleData(store).pinned(limit)
    return got["total"], [a["violation_id"] for a in got["alerts"]]


def _merged(store: Store) -> list[dict[str, Any]]:
    """`pinned_open` once merged (as ClickHouse merges it in the background)."""
    store.query("OPTIMIZE TABLE pinned_open FINAL")
    _sync(store)
    return store.query("SELECT violation_id, sign FROM pinned_open ORDER BY violation_id")


def test_the_pinned_list_is_the_scans_over_a_floor(store: Store) -> None:
    crit = [r["violation_id"] for r in store.query(
        "SELECT violation_id FROM violations FINAL WHERE severity = 'CRITICAL' "
        "ORDER BY violation_id")]
    low = store.query("SELECT violation_id FROM violations FINAL WHERE severity != "
                      "'CRITICAL' ORDER BY violation_id LIMIT 1")[0]["violation_id"]
    assert len(crit) >= 3 and _pinned(store) == (len(crit), _scan(store))
    data = ConsoleData(store)
    # a CRITICAL handled drops out, through the console and again through it
    data.apply(crit[0], Change("acknowledge"), "ann", "supervisor", 1_764_547_200_000)
    data.apply(crit[0], Change("note", note="seen"), "ann", "supervisor", 1_764_547_201_000)
    # a change of a non-CRITICAL, and two changes at once of another CRITICAL
    data.apply(low, Change("acknowledge"), "ann", "supervisor", 1_764_547_202_000)
    _change(store, f"violation_id = '{crit[1]}'", 2)
    # a CRITICAL stored again (a redelivery), one unhandled and one handled
    store.query(f"INSERT INTO violations ({_COLUMNS}) SELECT {_COLUMNS} FROM violations "
                "FINAL WHERE violation_id IN {v:Array(String)}", {"v": (crit[0], crit[2])})
    _sync(store)
    total, shown = _pinned(store)
    assert shown == _scan(store) and total == len(crit) - 2
    assert crit[2] in shown and not {crit[0], crit[1], low} & set(shown)
    assert all(a["severity"] == "CRITICAL" for a in ConsoleData(store).pinned()["alerts"])
    assert _pinned(store, 1) == (total, shown[:1])
    # once merged: a row an unhandled CRITICAL, nothing doubled, and the same list (the
    # handled one stored again after its change stays out: `triage` says so)
    merged = _merged(store)
    assert {r["violation_id"] for r in merged if r["sign"] == 1} - {crit[0]} == set(shown)
    assert len(merged) <= len(shown) + 1
    assert _pinned(store) == (total, shown)
    # its next change takes its row out for good
    _change(store, f"violation_id = '{crit[0]}'")
    assert {r["violation_id"] for r in _merged(store)} == set(shown)
    assert _pinned(store) == (total, shown)


def test_the_pinned_list_reads_the_unhandled_alone_with_41_times_the_history(
        store: Store) -> None:
    """Every copy's CRITICALs handled (each in two changes) and one of the floor's: the
    list is the scan's, in as many store calls as over the floor, its reads under
    `PIN_BOUND` on chDB (the read it replaced fails it), and once merged `pinned_open`
    holds the floor's unhandled CRITICALs alone, whatever the history."""
    short = Counting(store)
    before = ConsoleData(cast(Store, short)).pinned()
    copy_floor(store, 1, COPIES, _MONTH)
    _sync(store)
    first = _scan(store)[-1]
    _change(store, f"severity = 'CRITICAL' AND (position(violation_id, '~') > 0 "
                   f"OR violation_id = '{first}')", 2)
    want = _scan(store)
    assert len(want) == before["total"] - 1 and first not in want
    assert int(store.query("SELECT count() AS n FROM violations FINAL WHERE severity = "
                           "'CRITICAL'")[0]["n"]) == (COPIES + 1) * before["total"]
    assert {r["violation_id"] for r in _merged(store)} == set(want)
    counting = Counting(store)
    chdb = isinstance(store, EmbeddedStore)
    if chdb:
        _bounded(store, PIN_BOUND)
    try:
        got = ConsoleData(cast(Store, counting)).pinned()
        if chdb:
            with pytest.raises(StoreError, match="Limit for rows"):  # the read replaced
                store.query("SELECT DISTINCT violation_id FROM violation_codes "
                            "WHERE severity = 'CRITICAL'")
    finally:
        if chdb:
            _bounded(store, 0)
    assert got["total"] == len(want) and [a["violation_id"] for a in got["alerts"]] == want
    assert counting.calls == short.calls


def test_a_store_made_before_the_index_is_migrated_with_nothing_lost(
        tmp_path: Path) -> None:
    old = [s for s in ddl_statements() if " pinned_open " not in s]
    assert len(old) == len(ddl_statements()) - 3
    store = EmbeddedStore(tmp_path / "data")
    try:
        for stmt in old:
            store.query(stmt)
        store.query("INSERT INTO store_migrations (name, done) SELECT name, now() FROM "
                    "(SELECT arrayJoin({n:Array(String)}) AS name)",
                    {"n": tuple(n for n in lookup.MIGRATIONS if n != "lookups-7")})
        _floor(store)
        crit = [r["violation_id"] for r in store.query(
            "SELECT violation_id FROM violations FINAL WHERE severity = 'CRITICAL' "
            "ORDER BY violation_id")]
        _change(store, f"violation_id = '{crit[0]}'", 3)
        _change(store, "severity != 'CRITICAL'")
        store.setup()
        assert "lookups-7" in {r["name"] for r in store.query(
            "SELECT name FROM store_migrations")}
        want = _scan(store)
        assert _pinned(store) == (len(crit) - 1, want) and crit[0] not in want
        assert {r["violation_id"] for r in _merged(store)} == set(want)
        # and the index goes on as rows land
        _change(store, f"violation_id = '{crit[1]}'")
        assert _pinned(store) == (len(crit) - 2, [v for v in want if v != crit[1]])
    finally:
        store.close()
