"""The lookups replay, investigate and reaudit make read as many rows with 41 times the
history as with the floor alone: issue 33, "Tests check that the rows a round lookup
reads (ClickHouse reports them) stay bounded as history grows".

ClickHouse counts the rows a query reads and refuses one that reads more than
`max_rows_to_read` (chDB and the 18.16 server alike): every lookup runs under a bound
that the floor's own history passes and 41 times the history is well over, so a lookup
that read the history (a scan of `events FINAL WHERE round_id = ...`) is
refused there, and one that reads through a sort key passes both. On chDB always, and
on a ClickHouse server too when PITWATCH_TEST_CLICKHOUSE names one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pitwatch.address import host_port
from pitwatch.audit.run import audit_events
from pitwatch.engine.auditor import TableAuditor
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.history import copy_floor
from pitwatch.producers.simulate import simulate_floor
from pitwatch.replay.case import Selection
from pitwatch.replay.rebuild import rebuild
from pitwatch.store import history, lookup
from pitwatch.store.base import Store, StoreError
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.first_copy import stored_copies
from pitwatch.store.order import Positions
from pitwatch.store.rows import EVENT_COLUMNS, stored_event

#: Rows a query may read: more than a few granules of each table (events 2,048 rows a
#: granule in chDB, the index tables 8,192), far less than 41 floors' events.
BOUND = 20_000
COPIES = 40


#: A ClickHouse server to run the same test against too (HOST:PORT; a database of its
#: own is made and dropped), e.g. one started by deploy/clickhouse.sh.
SERVER = os.environ.get("PITWATCH_TEST_CLICKHOUSE", "")


@pytest.fixture(params=["chDB", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "chDB":
        s: Store = EmbeddedStore(tmp_path / "data")
    else:
        if not SERVER:
            pytest.skip("PITWATCH_TEST_CLICKHOUSE=HOST:PORT names no server")
        from pitwatch.store.server import ServerStore

        host, port = host_port(SERVER)
        s = ServerStore(host, port, "pitwatch_test_lookups")
        s._admin.execute("DROP DATABASE IF EXISTS pitwatch_test_lookups")
    s.setup()
    audit_events(simulate_floor(2, 12, 11, 0.3)[0], store=s)
    getattr(s, "sync", lambda: None)()
    yield s
    if request.param == "server":
        s._admin.execute("DROP DATABASE IF EXISTS pitwatch_test_lookups")  # type: ignore[attr-defined]
    s.close()


def _bounded(store: Store, rows: int) -> None:
    """Every later query of `store` refused past `rows` rows read (0: no bound): chDB
    refuses it itself (`max_rows_to_read`); the 18.16 server does not apply that limit
    to a FINAL read, so there each query's rows read, as the server reports them in its
    progress packets, are checked after it."""
    if isinstance(store, EmbeddedStore):
        store.sync()
        store._run(f"SET max_rows_to_read = {rows}")
        return
    cls_query = type(store).query
    if not rows:
        store.__dict__.pop("query", None)
        return

    def query(sql: str, params: Any = None) -> list[dict[str, Any]]:
        out = cls_query(store, sql, params)
        read = store.client.last_query.progress.rows  # type: ignore[attr-defined]
        if read > rows:
            raise StoreError(f"Limit for rows to read exceeded: {read} rows read, "
                             f"maximum {rows}: {sql}")
        return out

    store.query = query  # type: ignore[method-assign]


def _lookups(store: Store) -> dict[str, object]:
    """What a replay of three rounds, a one-table-hour investigation, a dealer's and a
    code's selection find, each under `BOUND`."""
    rounds = [r["round_id"] for r in store.query(
        "SELECT round_id FROM rounds FINAL WHERE position(round_id, '~') = 0 "
        "ORDER BY table_id, started LIMIT 3 OFFSET 8")]
    first = store.query("SELECT table_id, dealer_id, toUInt64(started) * 1000 AS s FROM "
                        "rounds FINAL WHERE round_id = {r:String}", {"r": rounds[0]})[0]
    code = store.query("SELECT code FROM violations FINAL WHERE position(round_id, '~') = 0 "
                       "ORDER BY code LIMIT 1")[0]["code"]
    tid = first["table_id"]
    mid = store.query("SELECT pos, event_id, device_id, seq FROM events FINAL WHERE "
                      "table_id = {t:String} AND position(event_id, '~') = 0 ORDER BY pos "
                      "LIMIT 1 OFFSET 200", {"t": tid})[0]
    state = int(store.query("SELECT max(pos) AS p FROM audit_states WHERE table_id = "
                            "{t:String}", {"t": tid})[0]["p"])
    ev = stored_event(store.query(f"SELECT {EVENT_COLUMNS} FROM events FINAL WHERE "
                                  "event_id = {e:String}", {"e": mid["event_id"]})[0])
    _bounded(store, BOUND)
    try:
        rebuilt = {r: rebuild(store, r) for r in rounds}
        hour = Selection(table=first["table_id"], start_ms=int(first["s"]),
                         end_ms=int(first["s"]) + 3_600_000)
        return {
            "spans": lookup.round_spans(store, rounds),
            "replayed": {r: (rb.matches_store, sorted(v.violation_id for v in rb.violations))
                         for r, rb in rebuilt.items()},
            "round rows": [(int(r["pos"]), r["event_id"])
                           for r in lookup.round_rows(store, rounds[0])],
            "hour": hour.round_ids(store),
            "dealer": [p for p in lookup.select_rounds(store, lookup.RoundQuery(
                dealer=first["dealer_id"], start_ms=int(first["s"]),
                end_ms=int(first["s"]) + 3_600_000))],
            "code": sorted(p for p in lookup.select_rounds(store, lookup.RoundQuery(
                code=code)) if "~" not in p[1]),
            # the audit's and the writers' own reads of the history
            "context": history.context_of(store, tid, int(mid["pos"])),
            "last seqs": history.last_seqs(store, tid, int(mid["pos"])),
            "recent": history.recent_positions(store, tid, int(mid["pos"]), 300),
            "at seq": lookup.at_seq(store, tid, mid["device_id"], int(mid["seq"])),
            "copies": stored_copies(store, tid, [mid["event_id"]]),
            "clock": _clock(store, ev),
            "state": history.resume_state(store, TableAuditor(
                tid, select, lambda v: None, lambda r: None, released=released_writers()),
                tid, state + 1),
        }
    finally:
        _bounded(store, 0)


def _clock(store: Store, ev: Event) -> tuple[int, int, dict[str, int]]:
    """Where a writer resuming at `ev` (stored already) stands its table's record clock."""
    clock = Positions(store).clock(ev)
    return clock.total, clock.extra, dict(clock.last)


def test_round_and_table_hour_lookups_read_no_more_rows_with_41_times_the_history(
        store: Store) -> None:
    small = _lookups(store)
    assert all(ok for ok, _ in small["replayed"].values())  # type: ignore[attr-defined]
    assert small["hour"] and small["dealer"] and small["code"]
    rid = next(iter(small["spans"]))  # type: ignore[call-overload]
    assert small["round rows"] == [(int(r["pos"]), r["event_id"]) for r in store.query(
        "SELECT pos, event_id FROM events FINAL WHERE round_id = {r:String} "
        "ORDER BY pos, event_id", {"r": rid})]
    before = int(store.query("SELECT count() AS n FROM events")[0]["n"])

    copy_floor(store, 1, COPIES)
    assert int(store.query("SELECT count() AS n FROM events")[0]["n"]) == \
        before * (COPIES + 1) > 2 * BOUND
    big = _lookups(store)
    assert big == small
    assert small["last seqs"] and small["recent"] and small["at seq"] and small["copies"]
    assert small["state"] is not None
    # the bound is one the scan of the history fails: the round lookup replaced
    _bounded(store, BOUND)
    try:
        with pytest.raises(StoreError, match="Limit for rows"):
            store.query("SELECT min(pos) AS a FROM events FINAL WHERE round_id = {r:String}",
                        {"r": rid})
    finally:
        _bounded(store, 0)
