"""A store filled by streaming (Kafka, the Faust worker, the ClickHouse sink) replays
round by round exactly as stored, with the positions an embedded audit gives the same
events; and a case is made from the ClickHouse server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pitwatch.events.model import RoundEnded
from pitwatch.replay.rebuild import rebuild, rebuild_span
from pitwatch.store.order import Positions

from .conftest import CH_HOST, CH_PORT, Expected, Pipeline


def test_a_streamed_store_replays_every_round_as_stored(pipeline: Pipeline, floor: object,
                                                        tmp_path: Path) -> None:
    events, _ = floor(tables=4, rounds=20, seed=26, inject=0.3)  # type: ignore[operator]
    # two rounds left incomplete whatever the seed deals: their RoundEnded never came
    ended = [e for e in events if isinstance(e.payload, RoundEnded)]
    lost = {ended[3].event_id, ended[len(ended) // 2].event_id}
    events = [e for e in events if e.event_id not in lost]
    expected = Expected(events)
    pipeline.start_worker()
    pipeline.produce(events)
    pipeline.wait_for(expected)
    store = pipeline.store
    # the sink's positions are the order of record, as an embedded audit gives them
    clock = Positions()
    want = {e.event_id: clock.of(e) for e in events}
    got = {r["event_id"]: int(r["pos"]) for r in
           store.query("SELECT event_id, pos FROM events FINAL")}
    assert got == want
    ids = [r["round_id"] for r in store.query(
        "SELECT DISTINCT round_id FROM events FINAL WHERE round_id != '' ORDER BY round_id")]
    rebuilt = {}
    for t in store.query("SELECT table_id, min(pos) AS a, max(pos) AS z FROM events FINAL "
                         "GROUP BY table_id"):
        rebuilt.update(rebuild_span(store, t["table_id"], int(t["a"]), int(t["z"])))
    assert sorted(rebuilt) == ids
    assert [r for r in ids if not rebuilt[r].matches_store] == []
    incomplete = [r["round_id"] for r in store.query(
        "SELECT round_id FROM rounds FINAL WHERE complete = 0")]
    assert incomplete, "the floor has rounds left incomplete"
    for rid in incomplete:
        assert rebuild(store, rid).matches_store
    # the case, from the server
    rid = store.query("SELECT round_id FROM violations FINAL ORDER BY round_id LIMIT 1"
                      )[0]["round_id"]
    out = tmp_path / "case"
    r = subprocess.run([sys.executable, "-m", "pitwatch.cli", "investigate", rid,
                        "--clickhouse", f"{CH_HOST}:{CH_PORT}", "--clickhouse-db",
                        pipeline.id, "--out", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["store"]["identity"] == f"clickhouse://{CH_HOST}:{CH_PORT}/{pipeline.id}"
    assert m["rounds"] == [rid]
    assert "rebuilt from its events to exactly the findings stored" in m["replay"]


def test_selections_and_reaudit_on_the_clickhouse_server(pipeline: Pipeline) -> None:
    from pitwatch.audit.run import audit_events
    from pitwatch.packs.registry import get
    from pitwatch.producers.simulate import simulate_floor
    from pitwatch.replay.case import Selection
    from pitwatch.replay.reaudit import reaudit

    store = pipeline.store
    events, _ = simulate_floor(2, 15, 26, 0.3)
    audit_events(events, store=store)  # the embedded audit's path, into the server
    rows = store.query("SELECT table_id, round_id, dealer_id, toUInt64(toUnixTimestamp("
                       "started)) * 1000 + started_ms AS t FROM rounds FINAL "
                       "ORDER BY table_id, t")
    table = rows[0]["table_id"]
    mine = [r for r in rows if r["table_id"] == table]
    got = Selection(table=table, start_ms=int(mine[2]["t"]),
                    end_ms=int(mine[5]["t"])).round_ids(store)
    assert [r for _, r in got] == [r["round_id"] for r in mine[2:5]]
    sev = {r for _, r in Selection(severity="HIGH").round_ids(store)}
    assert sev == {r["round_id"] for r in store.query(
        "SELECT DISTINCT round_id FROM violations FINAL WHERE severity IN "
        "('CRITICAL', 'HIGH')")}
    # the stored findings, re-audited under the version that made them: no change
    nj = store.query("SELECT DISTINCT pack_version FROM rounds FINAL "
                     "WHERE pack = 'nj-blackjack'")
    assert len(nj) == 1  # the floor's first table is New Jersey blackjack
    rounds, changes = reaudit(store, Selection(), get("nj-blackjack", nj[0]["pack_version"]))
    assert len(rounds) == 15 and changes == []
