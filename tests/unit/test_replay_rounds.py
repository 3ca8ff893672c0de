"""Replay is right: every round of a store rebuilds to exactly the violations stored
when it was audited, whatever filled the store (one audit run, the same input twice, a
shift audited in two parts), incomplete rounds included; and the order of record is one
number the same from every writer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.files import Rejected
from pitwatch.events.model import Event
from pitwatch.producers.simulate import simulate_floor
from pitwatch.replay.rebuild import rebuild, rebuild_span
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.history import HistoryConflict
from pitwatch.store.order import STRIDE, Positions


def _floor(seed: int) -> list[Event]:
    return simulate_floor(3, 24, seed, 0.3)[0]


@pytest.fixture(scope="module")
def events() -> list[Event]:
    return _floor(31)  # a seed whose faults include incomplete rounds


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    s.setup()
    yield s
    s.close()


def _round_ids(store: EmbeddedStore) -> list[str]:
    return [r["round_id"] for r in store.query(
        "SELECT DISTINCT round_id FROM events FINAL WHERE round_id != '' ORDER BY round_id")]


def _mismatches(store: EmbeddedStore, one_by_one: bool = False) -> list[str]:
    """Rounds whose rebuilt violations differ from the stored ones: each rebuilt alone
    (as `pitwatch replay` does) or each table's in one pass (as investigations do)."""
    ids = _round_ids(store)
    assert ids
    if one_by_one:
        return [r for r in ids if not rebuild(store, r).matches_store]
    rebuilt = {}
    for t in store.query("SELECT table_id, min(pos) AS a, max(pos) AS z FROM events FINAL "
                         "GROUP BY table_id"):
        rebuilt.update(rebuild_span(store, t["table_id"], int(t["a"]), int(t["z"])))
    assert sorted(rebuilt) == ids
    return [r for r in ids if not rebuilt[r].matches_store]


def test_every_round_of_one_audit_replays_as_stored(store: EmbeddedStore,
                                                    events: list[Event]) -> None:
    rep = audit_events(events, store=store)
    assert rep.incomplete >= 2  # incomplete rounds are part of what must replay
    incomplete = [r["round_id"] for r in store.query(
        "SELECT round_id FROM rounds FINAL WHERE complete = 0")]
    assert incomplete
    assert _mismatches(store, one_by_one=True) == []
    assert _mismatches(store) == []
    for rid in incomplete:
        rb = rebuild(store, rid)
        # no RoundEnded, or a break in the record cut through it
        assert {"ROUND_INCOMPLETE", "EVENTS_LOST"} & {v.code for v in rb.violations}
        # the round and nothing after it: every step is the round's own
        assert {s.event.round_id for s in rb.steps} == {rid}


def test_the_same_input_twice_replays_as_stored(store: EmbeddedStore,
                                                events: list[Event]) -> None:
    audit_events(events, store=store)
    first = store.query("SELECT event_id, pos FROM events FINAL ORDER BY event_id")
    audit_events(events, store=store)
    assert store.query("SELECT event_id, pos FROM events FINAL ORDER BY event_id") == first
    assert _mismatches(store) == []


def test_a_shift_audited_in_two_runs_replays_and_judges_as_one(
        store: EmbeddedStore, events: list[Event]) -> None:
    refused: list[Rejected] = []
    whole = audit_events(events, on_refused=refused.append)  # one run, nothing stored
    expected = sorted({v.violation_id for v in whole.violations})
    # an event the record refused is never stored and takes no place in the order
    gone = {orjson.loads(r.raw)["event_id"] for r in refused}
    assert gone
    clock = Positions()
    positions = sorted((e.event_id, clock.of(e)) for e in events if e.event_id not in gone)
    # each table's rounds 1-12 in one run, the rest in another
    later: set[str] = set()
    first_part, second_part = [], []
    for ev in events:
        if ev.round_id is not None and int(ev.round_id[-6:]) > 12:
            later.add(ev.table_id)
        (second_part if ev.table_id in later else first_part).append(ev)
    audit_events(first_part, store=store)
    audit_events(second_part, store=store)
    assert [r["violation_id"] for r in store.query(
        "SELECT violation_id FROM violations FINAL ORDER BY 1")] == expected
    assert [(r["event_id"], int(r["pos"])) for r in store.query(
        "SELECT event_id, pos FROM events FINAL ORDER BY event_id")] == positions
    assert _mismatches(store) == []


def test_another_floor_with_the_same_ids_is_refused(store: EmbeddedStore,
                                                    events: list[Event]) -> None:
    audit_events(events, store=store)
    with pytest.raises(HistoryConflict, match="another history of table"):
        audit_events(_floor(27), store=store)


def _ev(events: list[Event], **kw: object) -> Event:
    from dataclasses import replace

    return replace(events[0], **kw)  # type: ignore[arg-type]


def test_positions_are_the_record_clock() -> None:
    # honest devices (no faults): the n-th event of a table is at n * STRIDE
    p = Positions()
    mine = simulate_floor(1, 4, 3, 0.0)[0]
    got = [p.of(e) for e in mine]
    assert got == [STRIDE * n for n in range(1, len(mine) + 1)]
    # a redelivery keeps its place; a conflicting copy comes right after its seq
    again = p.of(mine[10])
    assert again == got[10]
    twin = _ev(mine, event_id="twin", device_id=mine[-1].device_id, seq=mine[-1].seq)
    assert p.of(twin) == got[-1] + 1
    nxt = _ev(mine, event_id="next", device_id=mine[-1].device_id, seq=mine[-1].seq + 1)
    assert p.of(nxt) == got[-1] + STRIDE  # moves on from the clock, not from the twin
    skip = _ev(mine, event_id="skip", device_id=mine[-1].device_id, seq=mine[-1].seq + 3)
    assert p.of(skip) == got[-1] + 3 * STRIDE  # a gap of two counts what it skipped


def test_positions_resume_from_the_store(store: EmbeddedStore, events: list[Event]) -> None:
    audit_events(events, store=store)
    stored = {r["event_id"]: int(r["pos"]) for r in store.query(
        "SELECT event_id, pos FROM events FINAL")}
    # a writer restarted mid-stream (a sink re-reading after its last commit) gives
    # every event the position it had
    for start in (1, len(events) // 2, len(events) - 5):
        p = Positions(store)
        kept = [e for e in events[start:start + 40] if e.event_id in stored]  # not refused
        assert [p.of(e) for e in kept] == [stored[e.event_id] for e in kept]


def test_each_device_chain_gets_its_verdict(store: EmbeddedStore, events: list[Event]) -> None:
    audit_events(events, store=store)
    rows = store.query("SELECT code, round_id, message FROM violations FINAL WHERE code IN "
                       "('DIGEST_MISMATCH', 'EVENTS_LOST', 'SEQUENCE_CONFLICT')")
    assert {r["code"] for r in rows} == {"DIGEST_MISMATCH", "EVENTS_LOST",
                                         "SEQUENCE_CONFLICT"}
    words = {"DIGEST_MISMATCH": "prev_digest does not match",
             "EVENTS_LOST": "missing", "SEQUENCE_CONFLICT": "sent again as a different event"}
    for r in rows:
        rb = rebuild(store, r["round_id"])
        device = r["message"].split()[0]
        if r["code"] == "SEQUENCE_CONFLICT":  # the copy was refused, never stored: the
            # stored chain holds the first copy, and the finding stands as stored-only
            assert rb.refused_violation_ids and rb.matches_store
            continue
        assert not rb.chain_verified
        assert rb.chains[device].verdict.startswith("BROKEN: ")
        assert words[r["code"]] in rb.chains[device].verdict
    flagged = {r["round_id"] for r in rows}
    clean = next(r for r in _round_ids(store) if r not in flagged)
    rb = rebuild(store, clean)
    assert rb.chain_verified and rb.chains
    assert all(c.verdict.startswith("VERIFIED: seq ") for c in rb.chains.values())
