"""The console's round page, and its searches by round, dealer and code, read bounded
rows: "Move every console query that finds rows by round/dealer/code to
pitwatch/store/lookup.py's functions". Measured as tests/unit/test_store_lookups.py
does: every query under a bound of rows read that the floor's own history passes and
41 times the history is well over (chDB refuses a query past it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.data import ConsoleData, Filters
from pitwatch.audit.run import audit_events
from pitwatch.store.embedded import EmbeddedStore
from producers.history import copy_floor
from producers.simulate import simulate_floor

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
