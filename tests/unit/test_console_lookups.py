"""The console's round page, and its searches by round, dealer and code, read bounded
rows: "Move every console query that finds rows by round/dealer/code to
pitwatch/store/lookup.py's functions". Measured as tests/unit/test_store_lookups.py
does: every query under a bound of rows read that the floor's own history passes and
41 times the history is well over (chDB refuses a query past it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.console.data import SEVERITIES, ConsoleData, Filters
from pitwatch.producers.history import copy_floor
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store.base import StoreError
from pitwatch.store.embedded import EmbeddedStore

from .test_store_lookups import BOUND, COPIES, _bounded


def _pages(store: EmbeddedStore, rid: str, dealer: str, code: str) -> dict[str, Any]:
    data = ConsoleData(store)
    _bounded(store, BOUND)
    try:
        page = data.round(rid)
        return {
            "events": [e["event_id"] for e in page["events"]],
            "summary": page["summary"]["dealer_id"] if page["summary"] else None,
            "violations": [v["violation_id"] for v in page["violations"]],
            "by round": data.search(Filters(round=rid))["total"],
            "by dealer": {a["round_id"] for a in data.search(
                Filters(dealer=dealer), 0, 500)["alerts"] if "~" not in a["round_id"]},
            "by code": {a["round_id"] for a in data.search(
                Filters(code=code), 0, 500)["alerts"] if "~" not in a["round_id"]},
        }
    finally:
        _bounded(store, 0)


def test_the_round_page_and_round_dealer_code_searches_read_bounded_rows(
        tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        store.sync()
        r = store.query("SELECT table_id, round_id, dealer_id FROM rounds FINAL "
                        "WHERE violations > 0 AND position(round_id, '~') = 0 "
                        "ORDER BY table_id, started LIMIT 1")[0]
        code = store.query("SELECT code FROM violations FINAL WHERE round_id = "
                           "{r:String} LIMIT 1", {"r": r["round_id"]})[0]["code"]
        small = _pages(store, r["round_id"], r["dealer_id"], code)
        # the page as a scan of history reads it: the same events and violations
        assert small["events"] == [x["event_id"] for x in store.query(
            "SELECT event_id FROM events FINAL WHERE round_id = {r:String} "
            "ORDER BY pos, event_id", {"r": r["round_id"]})]
        assert sorted(small["violations"]) == sorted(x["violation_id"] for x in store.query(
            "SELECT violation_id FROM violations FINAL WHERE round_id = {r:String}",
            {"r": r["round_id"]}))
        assert small["violations"] and small["summary"] == r["dealer_id"]
        assert small["by round"] == len(small["violations"])
        assert r["round_id"] in small["by dealer"] and r["round_id"] in small["by code"]

        before = int(store.query("SELECT count() AS n FROM events")[0]["n"])
        copy_floor(store, 1, COPIES)
        assert int(store.query("SELECT count() AS n FROM events")[0]["n"]) > 2 * BOUND
        assert before * (COPIES + 1) > 2 * BOUND
        assert _pages(store, r["round_id"], r["dealer_id"], code) == small
    finally:
        store.close()


#: Rows a read of the violation and table pages may read: a few granules of 32 rows of
#: each table read (`_fine`), far less than the 41 copies' rounds or violations (a
#: month's partition each: `_MONTH`).
SMALL_BOUND = 190
_MONTH = 32 * 86_400
_FINE = ("violations", "rounds", "round_starts", "violation_ids", "round_violations",
         "violation_codes", "triage", "violation_times", "rounds_hourly")


def _fine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's `_FINE` tables made with granules of 32 rows (ClickHouse reads a
    whole granule: the floor's few hundred rounds and violations would be one), so that
    the rows read tell a read through the sort key from a scan."""
    from pitwatch.store import base, embedded

    def fine() -> list[str]:
        return [s + " SETTINGS index_granularity = 32"
                if re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", s)
                and re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", s).group(1) in _FINE  # type: ignore[union-attr]
                else s for s in base.ddl_statements()]

    monkeypatch.setattr(embedded, "ddl_statements", fine)


def _violation_and_table(store: EmbeddedStore, vid: str, table: str) -> dict[str, Any]:
    data = ConsoleData(store)
    try:
        # chDB's FINAL reads a table's granules in every partition, its months' alone
        # not: a table's rounds in `rounds FINAL` are read under the wider bound
        _bounded(store, BOUND)
        page = data.table(table, 20)
        _bounded(store, SMALL_BOUND)
        return {"violation": data.violation(vid),
                "stored": data.stored_ids([vid, "no-such-violation"]),
                "rounds": [(r["round_id"], r["started_at"], r["dealer_id"])
                           for r in page["rounds"]]}
    finally:
        _bounded(store, 0)


def test_a_violation_its_stored_check_and_a_tables_latest_rounds_read_bounded_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The violation page, "which of these does the store hold" and a table's latest
    rounds read through index tables (`violation_ids`, `round_starts`), not a scan of
    `violations` or `rounds`: the same answers as those scans, under the bound with
    41 times the history."""
    _fine(monkeypatch)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        store.sync()
        v = store.query("SELECT violation_id, table_id FROM violations FINAL "
                        "WHERE round_id != '' ORDER BY violation_id LIMIT 1")[0]
        small = _violation_and_table(store, v["violation_id"], v["table_id"])
        assert small["stored"] == {v["violation_id"]}
        assert small["violation"]["violation_id"] == v["violation_id"]
        copy_floor(store, 1, COPIES, _MONTH)
        for t in ("rounds", "violations"):
            assert int(store.query(f"SELECT count() AS n FROM {t}")[0]["n"]) > SMALL_BOUND
        big = _violation_and_table(store, v["violation_id"], v["table_id"])
        assert big["violation"] == small["violation"] and big["stored"] == small["stored"]
        # the latest rounds as the scan of `rounds` found them (the copies are later)
        assert big["rounds"] == [(r["round_id"], int(r["s"]), r["dealer_id"]) for r in
                                 store.query(
            "SELECT round_id, dealer_id, toUInt64(started) * 1000 + started_ms AS s "
            "FROM rounds FINAL WHERE table_id = {t:String} ORDER BY s DESC, round_id "
            "LIMIT 20", {"t": v["table_id"]})]
        assert big["rounds"] != small["rounds"]
        copy = f'{v["violation_id"]}~{COPIES}'
        got = _violation_and_table(store, copy, v["table_id"])
        assert got["violation"]["violation_id"] == copy and got["stored"] == {copy}
        # the bound is one the scans replaced fail
        _bounded(store, SMALL_BOUND)
        try:
            for sql in ("SELECT count() AS n FROM violations FINAL WHERE violation_id = "
                        "{v:String}", "SELECT count() AS n FROM rounds FINAL WHERE "
                        "table_id = {t:String} AND started > toDateTime(0)"):
                with pytest.raises(StoreError, match="Limit for rows"):
                    store.query(sql, {"v": copy, "t": v["table_id"]})
        finally:
            _bounded(store, 0)
    finally:
        store.close()


def test_the_audits_already_stored_label_reads_bounded_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-raised finding is labelled "already stored" when the store held its id
    before the run, as the read of every violation id of its table labelled it; with
    41 times the history, each check reads through `round_violations` (table, round) or
    `violation_ids` (id) under the bound a read of the table's violations fails."""
    from types import SimpleNamespace

    from pitwatch.audit.run import _Known

    _fine(monkeypatch)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        store.sync()
        copy_floor(store, 1, COPIES, _MONTH)
        store.sync()
        stored = store.query("SELECT DISTINCT table_id, round_id, violation_id FROM "
                             "violations WHERE position(violation_id, '~') = 0")
        tables = sorted({r["table_id"] for r in stored})
        asked = [SimpleNamespace(**r) for r in stored] + [
            SimpleNamespace(table_id=r["table_id"], round_id=r["round_id"],
                            violation_id=r["violation_id"] + "-new") for r in stored]
        old = {t: {r["violation_id"] for r in store.query(
            "SELECT DISTINCT violation_id FROM violations WHERE table_id = {t:String}",
            {"t": t})} for t in tables}
        known = _Known(store)
        known.load(tables[0])
        _bounded(store, SMALL_BOUND)
        try:
            got = [known.has(v) for v in asked]  # type: ignore[arg-type]
            with pytest.raises(StoreError, match="Limit for rows"):
                store.query("SELECT DISTINCT violation_id FROM violations")
        finally:
            _bounded(store, 0)
        assert got == [v.table_id == tables[0] and v.violation_id in old[tables[0]]
                       for v in asked]
        assert any(got) and not all(got)
    finally:
        store.close()


def test_the_pinned_unhandled_criticals_read_what_matches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned unhandled CRITICALs are found through `violation_codes` (severity
    first) and `triage` (violation id), then read by id: the same answer as the search
    over every violation, reading the CRITICALs alone with 41 times the history."""
    from pitwatch.console.triage import Change

    _fine(monkeypatch)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        # the floor raised no CRITICAL: one of its findings stored again as a CRITICAL
        store.query("INSERT INTO violations SELECT concat(violation_id, '-c'), code, "
                    "'CRITICAL', table_id, round_id, seat, hand, event_id, evidence, "
                    "citation, message, pack, pack_version, detected_at, detected_ms "
                    "FROM violations ORDER BY violation_id LIMIT 1")
        store.sync()
        copy_floor(store, 1, COPIES)
        store.sync()
        data = ConsoleData(store)
        crit = store.query("SELECT violation_id FROM violations FINAL WHERE severity = "
                           "'CRITICAL' ORDER BY violation_id")
        assert len(crit) > 2
        data.apply(crit[0]["violation_id"], Change("acknowledge"), "ann", "supervisor",
                   1_700_000_000_000)
        store.sync()
        old = data.search(Filters(severity="CRITICAL", unhandled=True), 0, 10)
        bound = 2 * len(crit) + 64  # the CRITICALs' rows, a few granules of 32 around them
        assert int(store.query("SELECT count() AS n FROM violations")[0]["n"]) > bound
        _bounded(store, bound)
        try:
            got = data.pinned(10)
            with pytest.raises(StoreError, match="Limit for rows"):  # the search it replaced
                data.search(Filters(severity="CRITICAL", unhandled=True), 0, 10)
        finally:
            _bounded(store, 0)
        assert got == {"total": old["total"], "alerts": old["alerts"]}
        assert got["total"] == len(crit) - 1 and len(got["alerts"]) == 10
    finally:
        store.close()


def test_the_shift_summary_selects_its_rounds_through_round_starts(tmp_path: Path) -> None:
    """A shift's rounds are those a scan of `rounds` by start finds, selected through
    `round_starts` (table, start), with 41 times the history."""
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        copy_floor(store, 1, COPIES)
        store.sync()
        first = int(store.query("SELECT toUInt64(min(started)) * 1000 AS s FROM rounds "
                                "WHERE position(round_id, '~') = 0")[0]["s"])
        lo, hi = first + 20 * 86_400_000 + 600_000, first + 20 * 86_400_000 + 1_800_000
        got = ConsoleData(store).shift(lo, hi)
        want = store.query(
            "SELECT table_id, dealer_id, count() AS n FROM rounds FINAL WHERE "
            "toUInt64(started) * 1000 + started_ms >= {lo:UInt64} AND "
            "toUInt64(started) * 1000 + started_ms < {hi:UInt64} "
            "GROUP BY table_id, dealer_id ORDER BY table_id, dealer_id", {"lo": lo, "hi": hi})
        assert want and [(r["table_id"], r["dealer_id"], r["rounds"]) for r in got] == \
            [(r["table_id"], r["dealer_id"], int(r["n"])) for r in want]
    finally:
        store.close()


def test_the_feeds_newest_violations_read_back_in_time_find_what_a_scan_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The feed's newest violations, with no filter or a table's, are read back in
    windows of detection time through `violation_times`: the same as the newest of a
    scan of `violations` at 41x history; a search's page is the same page. (The rows
    they read: `test_the_feed_searches_a_shift_the_floor_and_the_dealers_read_bounded_
    rows`.)"""
    _fine(monkeypatch)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        copy_floor(store, 1, COPIES, _MONTH)
        store.sync()
        data = ConsoleData(store)
        table = store.query("SELECT min(table_id) AS t FROM violations")[0]["t"]

        def scan(where: str) -> list[str]:
            return [r["violation_id"] for r in store.query(
                "SELECT violation_id, toUInt64(detected_at) * 1000 + detected_ms AS d "
                f"FROM violations FINAL WHERE {where} ORDER BY d DESC, violation_id "
                "LIMIT 8", {"t": table})]

        want = (scan("1"), scan("table_id = {t:String}"))
        got = ([a["violation_id"] for a in data.violations(Filters(), 8)],
               [a["violation_id"] for a in data.violations(Filters(table=table), 8)])
        assert got == want and len(want[0]) == 8 and want[0] != want[1]
        page = data.search(Filters(table=table), 3, 5)
        assert [a["violation_id"] for a in page["alerts"]] == want[1][3:8]
        # a recorded shift's floor: each table's violations of the day, by device time
        day = int(store.query("SELECT max(toUInt64(detected_at) * 1000) AS d FROM "
                              "violations")[0]["d"]) - 3 * _MONTH * 1000
        today = {r["table_id"]: {k: v for k, v in r["today"].items() if v}
                 for r in data.floor(day, 60_000, day, clock="store")}
        by_table: dict[str, dict[str, int]] = {}
        for r in store.query(
                "SELECT table_id, severity, count() AS n FROM violations FINAL WHERE "
                "toUInt64(detected_at) * 1000 + detected_ms >= {d:UInt64} "
                "GROUP BY table_id, severity", {"d": day}):
            by_table.setdefault(r["table_id"], {})[r["severity"]] = int(r["n"])
        assert by_table and {t: c for t, c in today.items() if c} == by_table
        # what the poll brings: every violation received since (all of them, here)
        assert [a["violation_id"] for a in data.found_since(0, 10)] == [
            r["violation_id"] for r in store.query(
                "SELECT violation_id, toUInt64(detected_at) * 1000 + detected_ms AS d "
                "FROM violations FINAL ORDER BY d DESC, violation_id LIMIT 10")]
        # a search's counts by severity, through violation_codes for a filter of
        # severity, code and table: those of the scan
        code = store.query("SELECT min(code) AS c FROM violations")[0]["c"]
        sev = store.query("SELECT min(severity) AS s FROM violations")[0]["s"]
        for f in (Filters(), Filters(table=table), Filters(code=code),
                  Filters(severity=sev, table=table)):
            where, params = f.where()
            scanned = {r["severity"]: int(r["n"]) for r in store.query(
                f"SELECT severity, count() AS n FROM violations FINAL WHERE {where} "
                "GROUP BY severity", params)}
            assert scanned and data.search(f, 0, 1)["counts"] == {
                s: scanned.get(s, 0) for s in SEVERITIES}
    finally:
        store.close()


#: Rows the feed, a search no index selects, a shift, the floor and the table page may
#: read at 41x history: the store's newest event (a row of `table_activity` a table and
#: month: 82) or a few granules of 32 rows of each table read, less than the copies'
#: violations (205) or rounds (984) that the reads they replaced read.
FEED_BOUND = 160


def _scan_newest(store: EmbeddedStore, where: str, params: dict[str, Any], n: int
                 ) -> list[str]:
    return [r["violation_id"] for r in store.query(
        "SELECT violation_id, toUInt64(detected_at) * 1000 + detected_ms AS d FROM "
        f"violations FINAL WHERE {where} ORDER BY d DESC, violation_id LIMIT {n}", params)]


def _scan_counts(store: EmbeddedStore, where: str, params: dict[str, Any]) -> dict[str, int]:
    got = {r["severity"]: int(r["n"]) for r in store.query(
        f"SELECT severity, count() AS n FROM violations FINAL WHERE {where} "
        "GROUP BY severity", params)}
    return {s: got.get(s, 0) for s in SEVERITIES}


def test_the_feed_searches_a_shift_the_floor_and_the_dealers_read_bounded_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 41 times the history, the feed's newest, a search no index selects (none, a
    table, a seat, a jurisdiction, unhandled), a recorded shift, the floor's counts of
    the day and a table's dealers read under `FEED_BOUND`, which the reads they replaced
    fail. A search no index selects reads back as far as its budget of violations
    examined (`lookup.BUDGET`), then says how far (`reached`, `exact` False): its counts
    and page are those of a scan of the violations detected since, and a search before
    that second reads on."""
    from pitwatch.store import lookup

    _fine(monkeypatch)
    monkeypatch.setattr(lookup, "BUDGET", 50)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=store)
        copy_floor(store, 1, COPIES, _MONTH)
        store.sync()
        data = ConsoleData(store)
        table = store.query("SELECT min(table_id) AS t FROM violations")[0]["t"]
        seat = int(store.query("SELECT max(seat) AS s FROM violations")[0]["s"])
        jur = sorted(set(data.jurisdictions.values()))[0]
        first = int(store.query("SELECT toUInt64(min(started)) * 1000 AS s FROM rounds "
                                "WHERE position(round_id, '~') = 0")[0]["s"])
        lo, hi = first + 20 * _MONTH * 1000 + 600_000, first + 20 * _MONTH * 1000 + 1_800_000
        day = int(store.query("SELECT max(toUInt64(detected_at) * 1000) AS d FROM "
                              "violations")[0]["d"]) - 3_600_000
        searches = (Filters(), Filters(table=table), Filters(seat=seat),
                    Filters(jurisdiction=jur), Filters(unhandled=True))
        _bounded(store, FEED_BOUND)
        try:
            feed = ([a["violation_id"] for a in data.violations(Filters(), 8)],
                    [a["violation_id"] for a in data.violations(Filters(table=table), 8)])
            found = [data.search(f, 0, 5) for f in searches]
            shift = data.shift(lo, hi)
            floor = data.floor(day, 60_000, day, clock="store")
            page = data.table(table, 20)
            for sql in (  # the reads replaced: a count, a shift, a day and dealers
                    "SELECT severity, count() AS n FROM violations FINAL GROUP BY severity",
                    "SELECT table_id, count() AS n FROM rounds FINAL WHERE toUInt64(started)"
                    " * 1000 + started_ms >= {lo:UInt64} AND toUInt64(started) * 1000 + "
                    "started_ms < {hi:UInt64} GROUP BY table_id",
                    "SELECT table_id, severity, count() AS n FROM violations FINAL WHERE "
                    "toUInt64(detected_at) * 1000 + detected_ms >= {day:UInt64} "
                    "GROUP BY table_id, severity",
                    "SELECT dealer_id, count() AS n FROM rounds_hourly FINAL WHERE "
                    "table_id = {t:String} GROUP BY dealer_id"):
                with pytest.raises(StoreError, match="Limit for rows"):
                    store.query(sql, {"lo": lo, "hi": hi, "day": day, "t": table})
        finally:
            _bounded(store, 0)
        assert feed == (_scan_newest(store, "1", {}, 8),
                        _scan_newest(store, "table_id = {t:String}", {"t": table}, 8))
        assert not found[0]["exact"] and found[0]["reached"]
        for f, got in zip(searches, found, strict=True):
            where, params = f.where()
            if got["reached"] is not None:  # what it says: those detected since then
                where += " AND detected_at >= toDateTime({r:UInt32})"
                params["r"] = got["reached"] // 1000
            assert got["counts"] == _scan_counts(store, where, params), f
            assert [a["violation_id"] for a in got["alerts"]] == \
                _scan_newest(store, where, params, 5), f
        # and a search before that second reads on, to the start of the store
        before = data.search(Filters(until=found[0]["reached"]), 0, 5)
        assert [a["violation_id"] for a in before["alerts"]] == _scan_newest(
            store, "toUInt64(detected_at) * 1000 + detected_ms < {u:UInt64}",
            {"u": found[0]["reached"]}, 5)
        # the shift's rounds, the floor's day and the dealers: those of the scans
        want = store.query(
            "SELECT table_id, dealer_id, count() AS n FROM rounds FINAL WHERE "
            "toUInt64(started) * 1000 + started_ms >= {lo:UInt64} AND "
            "toUInt64(started) * 1000 + started_ms < {hi:UInt64} "
            "GROUP BY table_id, dealer_id ORDER BY table_id, dealer_id", {"lo": lo, "hi": hi})
        assert want and [(r["table_id"], r["dealer_id"], r["rounds"]) for r in shift] == \
            [(r["table_id"], r["dealer_id"], int(r["n"])) for r in want]
        today: dict[str, dict[str, int]] = {}
        for r in store.query(
                "SELECT table_id, severity, count() AS n FROM violations FINAL WHERE "
                "toUInt64(detected_at) * 1000 + detected_ms >= {d:UInt64} "
                "GROUP BY table_id, severity", {"d": day}):
            today.setdefault(r["table_id"], {})[r["severity"]] = int(r["n"])
        assert today and {r["table_id"]: {k: v for k, v in r["today"].items() if v}
                          for r in floor if any(r["today"].values())} == today
        since, until = page["dealers_window"]
        assert until - since < 24 * 3_600_000 and page["dealers"] == store.query(
            "SELECT dealer_id, count() AS rounds, sum(violations) AS violations, "
            "sum(wagered) AS wagered, sum(paid) AS paid, sum(collected) AS collected, "
            "min(hour) AS first_hour, max(hour) AS last_hour FROM rounds_hourly FINAL "
            "WHERE table_id = {t:String} AND toUInt64(hour) * 1000 >= {a:UInt64} "
            "GROUP BY dealer_id ORDER BY rounds DESC, dealer_id", {"t": table, "a": since})
        assert page["dealers"]
    finally:
        store.close()
