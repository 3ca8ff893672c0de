"""The store keeps only what the record accepted, and the first copy of an event wins
(issue 35 item 2, "Redelivery substitution"). docs/events.md, "The record": "A copy
whose content differs from what was recorded for its device and seq is a substitution
(SEQUENCE_CONFLICT, HIGH): it is not applied and the first copy stands." and "a store
keeps only what was accepted".

The two forgeries measured: a copy of a PayoutMade with 10x the amount (same event id
and seq), and a round appended again under a new round id. Each is checked in the
events table, in investigate's evidence, in the findings and in the dead letters (the
rejects), embedded with --jobs 1 and 2 and into a store that already holds the
original from an earlier run; and through the streaming sink's writer, which never
sees the audit's verdict."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from pitwatch.audit.parallel import audit_parallel
from pitwatch.audit.run import REFUSED_SOURCE, AuditReport, audit_events, audit_paths
from pitwatch.events import jsonl
from pitwatch.events.files import Rejected
from pitwatch.events.model import Event, PayoutMade
from pitwatch.processors.settings import Settings
from pitwatch.processors.sink import Batches, Source, Writer
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store.columns import event_row
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.order import Positions


@pytest.fixture(scope="module")
def events() -> list[Event]:
    return simulate_floor(1, 4, 41, 0.0)[0]  # one honest table


def _payout(events: list[Event]) -> int:
    return next(i for i, e in enumerate(events) if type(e.payload) is PayoutMade)


def forged_payout(events: list[Event]) -> tuple[Event, Event]:
    """A PayoutMade and its copy with 10x the amount (same event id, seq, digest link)."""
    p = events[_payout(events)]
    assert isinstance(p.payload, PayoutMade) and p.payload.amount > 0
    return p, replace(p, payload=replace(p.payload, amount=p.payload.amount * 10), raw=None)


def phantom_round(events: list[Event]) -> list[Event]:
    """The first round's events again, each under a new round id (same ids and seqs)."""
    rid = events[_payout(events)].round_id
    return [replace(e, round_id="PHANTOM-000001", raw=None) for e in events
            if e.round_id == rid]


def _amounts(store: EmbeddedStore, event_id: str) -> list[int]:
    return [int(r["amount"]) for r in store.query(
        "SELECT amount FROM events WHERE event_id = {e:String}", {"e": event_id})]


def _round_ids(store: EmbeddedStore) -> set[str]:
    return {r["round_id"] for r in store.query("SELECT DISTINCT round_id FROM events")}


def _audit(path: Path, data: Path, jobs: int) -> tuple[AuditReport, list[Rejected]]:
    rejects: list[Rejected] = []
    if jobs == 1:
        store = EmbeddedStore(data)
        store.setup()
        try:
            rep = audit_paths([path], store=store, on_reject=rejects.append,
                              on_refused=rejects.append)
        finally:
            store.close()
    else:
        rep = audit_parallel([path], jobs, data=data, on_reject=rejects.append,
                             on_refused=rejects.append)
    return rep, rejects


def _write(path: Path, events: list[Event]) -> Path:
    path.write_bytes(b"".join(jsonl.dumps(e) + b"\n" for e in events))
    return path


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_forged_payout_copy_is_found_refused_and_never_stored(
        events: list[Event], tmp_path: Path, jobs: int) -> None:
    original, forged = forged_payout(events)
    path = _write(tmp_path / "floor.jsonl", [*events, forged])
    rep, rejects = _audit(path, tmp_path / "data", jobs)
    found = [v for v in rep.violations if v.event_id == forged.event_id]
    assert [(v.code, v.severity) for v in found] == [("SEQUENCE_CONFLICT", "HIGH")]
    assert (rep.refused, rep.rejected) == (1, 0)
    [r] = rejects
    assert r.source == REFUSED_SOURCE and "SEQUENCE_CONFLICT" in r.reason
    assert forged.event_id in r.reason and jsonl.loads(r.raw.encode()) == forged
    store = EmbeddedStore(tmp_path / "data")
    try:
        assert _amounts(store, original.event_id) == [original.payload.amount]  # type: ignore[union-attr]
        assert int(store.query("SELECT count() AS n FROM events")[0]["n"]) == len(events)
    finally:
        store.close()
    # investigate's evidence holds the original amount (the case is written; its
    # replay cannot rebuild the finding on the copy, which the store does not hold)
    out = tmp_path / "case"
    run = subprocess.run([sys.executable, "-m", "pitwatch.cli", "investigate",
                          str(original.round_id), "--data", str(tmp_path / "data"),
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert (out / "evidence.jsonl").exists(), run.stdout + run.stderr
    lines = [json.loads(x) for x in (out / "evidence.jsonl").read_text().splitlines()]
    mine = [x for x in lines if x.get("event_id") == original.event_id]
    assert [x["amount"] for x in mine] == [original.payload.amount]  # type: ignore[union-attr]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_round_appended_again_under_a_new_round_id_moves_nothing(
        events: list[Event], tmp_path: Path, jobs: int) -> None:
    phantom = phantom_round(events)
    path = _write(tmp_path / "floor.jsonl", [*events, *phantom])
    rep, rejects = _audit(path, tmp_path / "data", jobs)
    assert rep.refused == len(phantom) == len(rejects)
    # the record refuses the copies of its chains' recorded seqs (HIGH); the devices
    # whose copies start again at seq 1 look restarted to it (DEVICE_RESTARTED), and
    # their copies are refused by the store's first copy of each event id
    high = {v.event_id for v in rep.violations if v.code == "SEQUENCE_CONFLICT"
            and v.severity == "HIGH"}
    restarted = {v.event_id for v in rep.violations if v.code == "DEVICE_RESTARTED"}
    assert high and restarted and (high | restarted) <= {e.event_id for e in phantom}
    assert all("PHANTOM-000001" in r.raw for r in rejects)
    assert all("SEQUENCE_CONFLICT" in r.reason or "its round_id differs" in r.reason
               for r in rejects)
    store = EmbeddedStore(tmp_path / "data")
    try:
        assert "PHANTOM-000001" not in _round_ids(store)
        assert {r["round_id"] for r in store.query(
            "SELECT round_id FROM events WHERE event_id IN {ids:Array(String)}",
            {"ids": tuple(e.event_id for e in phantom)})} == {events[_payout(events)].round_id}
    finally:
        store.close()


def test_jobs_1_and_2_store_and_set_aside_the_same(events: list[Event], tmp_path: Path
                                                   ) -> None:
    _, forged = forged_payout(events)
    path = _write(tmp_path / "floor.jsonl", [*events, forged, *phantom_round(events)])
    got = []
    for jobs in (1, 2):
        data = tmp_path / f"data{jobs}"
        _, rejects = _audit(path, data, jobs)
        store = EmbeddedStore(data)
        try:
            rows = store.query("SELECT event_id, round_id, amount, pos FROM events FINAL "
                               "ORDER BY pos, event_id")
        finally:
            store.close()
        got.append((rows, [r.to_json() for r in rejects]))
    assert got[0] == got[1]


def test_a_store_that_holds_the_original_keeps_it_against_a_later_run(
        events: list[Event], tmp_path: Path) -> None:
    """A later run resumes the table before the copy, so its record accepts the copy:
    the store's own copy decides, and the forged one goes to the rejects."""
    original, forged = forged_payout(events)
    k = events.index(original)
    store = EmbeddedStore(tmp_path / "data")
    store.setup()
    try:
        audit_events(events, store=store)
        rejects: list[Rejected] = []
        again = [forged if e is original else e for e in events[k:]]
        rep = audit_events(again, store=store, on_refused=rejects.append)
        assert rep.refused == 1
        [r] = rejects
        assert "amount differs from the copy stored first" in r.reason
        assert jsonl.loads(r.raw.encode()) == forged
        assert _amounts(store, original.event_id) == [original.payload.amount]  # type: ignore[union-attr]
        rejects.clear()
        rep = audit_events(phantom_round(events), store=store, on_refused=rejects.append)
        assert rep.refused == len(rejects) == len(phantom_round(events))
        assert "PHANTOM-000001" not in _round_ids(store)
    finally:
        store.close()


# --- the streaming sink's writer: it never sees the audit's verdict --------------------


class _Producer:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send_and_wait(self, topic: str, key: bytes | None, value: bytes) -> None:
        self.sent.append(orjson.loads(value))


class _Consumer:
    def assignment(self) -> set[str]:
        return set()


def _sink_batch(store: EmbeddedStore, evs: list[Event], first_offset: int,
                positions: Positions) -> list[dict[str, Any]]:
    """Land `evs` through the sink's writer as one batch; the dead letters it sent."""
    producer = _Producer()

    async def go() -> None:
        b = Batches()
        for i, ev in enumerate(evs):
            b.add("events", event_row(ev, positions.of(ev)),
                  Source("table-events", 0, first_offset + i, ev.table_id.encode(),
                         jsonl.dumps(ev)), 0.0)
        w = Writer(store, _Consumer(), producer, Settings(), lambda: False)
        assert await w.write(b) == len(evs)

    asyncio.run(go())
    return producer.sent


def test_the_sink_keeps_the_first_copy_across_batches_and_within_one(
        events: list[Event], tmp_path: Path) -> None:
    original, forged = forged_payout(events)
    phantom = phantom_round(events)
    store = EmbeddedStore(tmp_path / "data")
    store.setup()
    try:
        positions = Positions(store)
        assert _sink_batch(store, events, 0, positions) == []
        # the original stored by an earlier batch: the forged copy and the phantom round
        # are dead letters, an identical copy is dropped
        dead = _sink_batch(store, [forged, original, *phantom], 1000, positions)
        assert [d["offset"] for d in dead] == [1000, *range(1002, 1002 + len(phantom))]
        assert "its amount differs from the copy stored first" in dead[0]["reason"]
        assert all("its round_id differs" in d["reason"] for d in dead[1:])
        assert _amounts(store, original.event_id) == [original.payload.amount]  # type: ignore[union-attr]
        assert "PHANTOM-000001" not in _round_ids(store)
        # two copies of a new event in one batch: the first lands, the second is refused
        later = replace(events[-1], event_id="new-event", seq=events[-1].seq + 1, raw=None)
        twin = replace(later, ts=later.ts + 5)
        dead = _sink_batch(store, [later, twin], 2000, positions)
        assert [d["offset"] for d in dead] == [2001] and "its ts differs" in dead[0]["reason"]
        assert [int(r["ts_ms"]) for r in store.query(
            "SELECT ts_ms FROM events WHERE event_id = 'new-event'")] == [later.ts % 1000]
    finally:
        store.close()
