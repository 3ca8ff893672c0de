"""A refused event the record took in is kept in the store's quarantine, so a rebuild
sees what the live audit saw (issues 35 and 36).

Issue 35: "An event the record refused is never stored as evidence: it goes to the dead
letters, or to a quarantine table with its reason." Issue 36: "A rejected event of the
record must surface as what it is (a HIGH finding naming the event and why it was
refused), not as a gap." So a replay, reaudit or investigation of its round raises
EVENT_REFUSED again, not EVENTS_LOST, and its device's signed chain verifies across it;
a store with no quarantine row for it (made before the quarantine) rebuilds as before;
a real lost event is still EVENTS_LOST."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import pitwatch.audit.run as run
from pitwatch.audit.run import audit_events
from pitwatch.events.avro import digest
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Event
from pitwatch.producers.simulate import Floor
from pitwatch.replay.case import Selection
from pitwatch.replay.reaudit import reaudit
from pitwatch.replay.rebuild import Rebuilt, rebuild, rebuild_span, signature_verdict
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.history import Quarantine


def _floor() -> tuple[list[Event], KeyRegistry]:
    """A signed contract floor: a table carries a negative wager its
    decoder refused (`pitwatch.producers.inject`, REFUSED), in round 3 of each table."""
    f = Floor(2, 4, seed=2, inject=0.5, jurisdiction="NJ", game="BLACKJACK",
              contract=True)
    events = list(f.events())
    keys = f.registry()
    assert keys is not None
    return events, keys


def _audited(path: Path, events: list[Event], keys: KeyRegistry) -> EmbeddedStore:
    store = EmbeddedStore(path)
    store.setup()
    audit_events(events, store=store, keys=keys)
    store.sync()
    return store


@pytest.fixture(scope="module")
def floor() -> tuple[list[Event], KeyRegistry]:
    return _floor()


@pytest.fixture
def store(floor: tuple[list[Event], KeyRegistry], tmp_path: Path
          ) -> Iterator[EmbeddedStore]:
    # one chDB store open in a process at a time: a store a test
    s = _audited(tmp_path / "data", *floor)
    yield s
    s.close()


def _refused(events: list[Event]) -> list[Event]:
    out = [e for e in events if e.refused is not None]
    assert out, "the contract floor injects a refused event"
    return out


def _codes(rb: Rebuilt) -> set[str]:
    return {v.code for v in rb.violations}


def test_the_record_s_refused_event_is_quarantined_with_its_bytes_and_reason(
        store: EmbeddedStore, floor: tuple[list[Event], KeyRegistry]) -> None:
    refused = _refused(floor[0])
    rows = store.query("SELECT * FROM refused_events FINAL ORDER BY table_id, device_id, seq")
    assert [(r["event_id"], int(r["seq"]), r["reason"]) for r in rows] == sorted(
        ((e.event_id, e.seq, e.refused) for e in refused),
        key=lambda x: next(e.table_id + e.device_id for e in refused if e.event_id == x[0]))
    back = Quarantine(store, refused[0].table_id).held[refused[0].device_id][refused[0].seq][0]
    assert digest(back) == digest(refused[0])  # the bytes its digest is of
    assert back.refused == refused[0].refused
    # never evidence of play
    ids = [e.event_id for e in refused]
    assert not store.query("SELECT event_id FROM events WHERE event_id IN {ids:Array(String)}",
                           {"ids": ids})


def test_a_copy_of_the_audit_keeps_one_quarantine_row(
        floor: tuple[list[Event], KeyRegistry], tmp_path: Path) -> None:
    events, keys = floor
    store = _audited(tmp_path / "data", events, keys)
    try:
        audit_events(events, store=store, keys=keys)  # the same input again
        store.sync()
        store.dedupe()
        n = store.query("SELECT count() AS n FROM refused_events FINAL")[0]["n"]
        assert int(n) == len(_refused(events))
    finally:
        store.close()


def test_replay_of_the_round_finds_the_refusal_not_a_loss_and_the_chain_holds(
        store: EmbeddedStore, floor: tuple[list[Event], KeyRegistry]) -> None:
    events, keys = floor
    for bad in _refused(events):
        assert bad.round_id is not None
        rb = rebuild(store, bad.round_id, keys=keys)
        assert "EVENT_REFUSED" in _codes(rb)
        assert "EVENTS_LOST" not in _codes(rb)
        assert rb.matches_store
        assert rb.chains[bad.device_id].verdict.startswith("VERIFIED"), \
            rb.chains[bad.device_id].verdict
        if rb.chain_verified and not rb.bad_signatures:
            assert signature_verdict([rb], keys).startswith("signatures HOLD")


def test_a_table_rebuilt_in_one_pass_matches_the_live_audit(
        store: EmbeddedStore, floor: tuple[list[Event], KeyRegistry]) -> None:
    for t in store.query("SELECT table_id, min(pos) AS a, max(pos) AS z FROM events FINAL "
                         "GROUP BY table_id"):
        got = rebuild_span(store, t["table_id"], int(t["a"]), int(t["z"]),
                           keys=floor[1])
        assert got
        assert all(rb.matches_store for rb in got.values())
        assert not any("EVENTS_LOST" in _codes(rb) for rb in got.values())


def test_reaudit_under_the_same_pack_changes_nothing(
        store: EmbeddedStore, floor: tuple[list[Event], KeyRegistry]) -> None:
    from pitwatch.packs.registry import select
    bad = _refused(floor[0])[0]
    pack = select("NJ", "BLACKJACK")
    rounds, changes = reaudit(store, Selection(round_id=bad.round_id), pack,
                              keys=floor[1])
    assert rounds and not changes


def test_a_store_with_no_quarantine_rebuilds_as_before(
        floor: tuple[list[Event], KeyRegistry], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    events, keys = floor
    monkeypatch.setattr(run, "taken", lambda auditor, ev: False)  # nothing quarantined
    store = _audited(tmp_path / "data", events, keys)
    try:
        assert not store.query("SELECT event_id FROM refused_events")
        bad = _refused(events)[0]
        assert bad.round_id is not None
        rb = rebuild(store, bad.round_id, keys=keys)
        assert "EVENTS_LOST" in _codes(rb)  # the seq it held is missing from the store
    finally:
        store.close()


def test_a_real_lost_event_is_still_events_lost(
        floor: tuple[list[Event], KeyRegistry], tmp_path: Path) -> None:
    events, keys = floor
    bad = _refused(events)[0]
    # the device's next event after the refused one, lost in transit
    lost = next(e for e in events if e.device_id == bad.device_id and e.seq == bad.seq + 1)
    store = _audited(tmp_path / "data", [e for e in events if e is not lost], keys)
    try:
        assert bad.round_id is not None
        rb = rebuild(store, bad.round_id, keys=keys)
        assert "EVENT_REFUSED" in _codes(rb)
        assert "EVENTS_LOST" in _codes(rb)
        assert rb.matches_store
    finally:
        store.close()


def _pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PITWATCH_KEYS", "PITWATCH_SITE_KEY")}
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_case_folder_carries_the_refused_event_and_verifies_alone(tmp_path: Path) -> None:
    r = _pitwatch("simulate", "--contract", "--tables", "2", "--rounds", "4", "--seed", "2",
                  "--inject", "0.5", "--jurisdiction", "NJ", "--game", "BLACKJACK",
                  "--out", "floor", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _pitwatch("audit", "floor", "--data", "data", "--keys", "floor/keys.json",
                  "--format", "jsonl", cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    refused = [json.loads(line) for line in r.stdout.splitlines()
               if '"EVENT_REFUSED"' in line]
    assert refused
    rid = refused[0]["round_id"]
    r = _pitwatch("investigate", rid, "--out", "case", "--data", "data", "--keys",
                  "floor/keys.json", "--generated-at", "2026-12-01T09:30:00Z", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "case" / "manifest.json").read_text())
    assert doc["evidence"]["tables"][0]["refused"] >= 1
    assert any(f["code"] == "EVENT_REFUSED" and f["status"] != "stored only"
               for f in doc["findings"])
    assert not any(f["code"] == "EVENTS_LOST" for f in doc["findings"])
    away = tmp_path / "elsewhere"
    away.mkdir()
    shutil.copytree(tmp_path / "case", away / "case")
    r = _pitwatch("verify", "case", cwd=away)
    assert "findings REPRODUCED exactly" in r.stdout, r.stdout + r.stderr
    assert "signatures HOLD" in r.stdout, r.stdout


def test_a_quarantined_event_is_placed_only_where_its_chain_links(
        floor: tuple[list[Event], KeyRegistry]) -> None:
    events = floor[0]
    bad = _refused(events)[0]
    prev = next(e for e in events if e.device_id == bad.device_id and e.seq == bad.seq - 1)
    nxt = next(e for e in events if e.device_id == bad.device_id and e.seq == bad.seq + 1)
    other = replace(bad, event_id="another-chain", prev_digest=bytes(32), raw=None)
    q = Quarantine.of([other, bad])
    assert [e.event_id for e in q.after(prev)] == [bad.event_id]
    assert q.due(nxt) == []  # fed already, once
    q = Quarantine.of([other, bad])
    q.saw(prev)  # read before the context: not fed, so due before its next event
    assert [e.event_id for e in q.due(nxt)] == [bad.event_id]
    q = Quarantine.of([other])
    assert q.after(prev) == [] and q.due(nxt) == []  # another chain's: nowhere here
