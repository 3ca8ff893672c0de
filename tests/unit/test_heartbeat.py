"""Heartbeats (docs/events.md, "Signed checkpoints"): "A live table that pauses longer
than the time-out signs an end (or a checkpoint with its order, a heartbeat, which the
worker sees arrive) before it does." The dealer's console signs one through every pause
of its table longer than the heartbeat interval; the worker raises no "no signed end"
for a paused table that heartbeats, and raises it for one that stops without an end or
a heartbeat."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections import Counter
from typing import Any

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import encode_single
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Checkpoint, Event
from pitwatch.packs.registry import select
from pitwatch.processors.state import TableStates
from pitwatch.producers.devices import HEARTBEAT_S
from pitwatch.producers.produce import command as produce
from pitwatch.producers.simulate import Floor

HEARTBEAT_MS = 5_000
TIMEOUT_S = 3600


def _floor(heartbeat_ms: int, inject: float = 0.0) -> tuple[list[Event], KeyRegistry]:
    f = Floor(1, 5, seed=7, inject=inject, jurisdiction="NJ", game="BLACKJACK",
              heartbeat_ms=heartbeat_ms)
    events = list(f.events())
    keys = f.registry()
    assert keys is not None
    return events, keys


def _is_heartbeat(ev: Event) -> bool:
    p = ev.payload
    return (type(p) is Checkpoint and ev.device_id.endswith("-console") and ev.round_id is None
            and p.order is not None and p.schema_sha256 is not None and not p.end)


# --- the producer --------------------------------------------------------------------


def test_the_console_signs_a_heartbeat_through_every_pause_longer_than_the_interval() -> None:
    plain, _ = _floor(0)
    beating, keys = _floor(HEARTBEAT_MS)
    heartbeats = [e for e in beating if e.event_id not in {p.event_id for p in plain}]
    assert heartbeats and all(_is_heartbeat(e) for e in heartbeats)
    # no silence longer than the interval from the table's first event to its end
    gaps = [b.ts - a.ts for a, b in itertools.pairwise(beating)]
    assert max(gaps) <= HEARTBEAT_MS
    assert max(b.ts - a.ts for a, b in itertools.pairwise(plain)) > HEARTBEAT_MS
    # every other event keeps its id, and the same seed gives the same heartbeats
    assert [e.event_id for e in beating if e not in heartbeats] == [e.event_id for e in plain]
    again, _ = _floor(HEARTBEAT_MS)
    assert [encode_single(e) for e in again] == [encode_single(e) for e in beating]
    # signed and in order: the audit finds what it finds without them, and nothing more
    assert audit_events(beating, keys=keys).violations == []
    with_faults = Counter(v.code for v in audit_events(_floor(HEARTBEAT_MS, 0.4)[0],
                                                       keys=keys).violations)
    assert with_faults == Counter(v.code for v in audit_events(_floor(0, 0.4)[0],
                                                               keys=keys).violations)


def test_produce_heartbeats_in_live_pacing_by_default() -> None:
    p = argparse.ArgumentParser()
    produce.configure(p)

    def interval(*argv: str) -> int:
        floor = produce.floor(p.parse_args(list(argv)))
        return floor._runs[0].devices.heartbeat_ms

    assert interval("--live") == HEARTBEAT_S * 1000
    assert interval() == 0  # as fast as possible: the stream as the floor dealt it
    assert interval("--live", "--heartbeat", "0") == 0
    assert interval("--heartbeat", "2.5") == 2500


# --- the worker ----------------------------------------------------------------------


def _worker(events: list[Event], keys: KeyRegistry, *, stopped: bool,
            then: list[Event] | None = None) -> list[str]:
    """Feed the events to the worker's table states; then the partition is caught up
    and the table either went silent for longer than the time-out (`stopped`) or its
    last event just arrived; `then`: events that arrive after that silence (before the
    rule runs). The messages of what the processing-time rule finds."""
    log = [(i, e.table_id.encode(), encode_single(e))
           for i, e in enumerate([*events, *(then or [])])]
    states = TableStates({}, select, TIMEOUT_S * 1000, keys)

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list[Any]:
        return [m for m in log if a <= m[0] < b]

    async def go() -> list[str]:
        for i, ev in enumerate(events):
            assert (await states.process(ev, "t", 0, i, catch_up)).violations == []
        if stopped:
            for t in states.tables.values():
                t.arrived = time.monotonic() - TIMEOUT_S - 1
        for i, ev in enumerate(then or [], len(events)):
            assert (await states.process(ev, "t", 0, i, catch_up)).violations == []
        return [v.message for v in states.expire_idle(lambda t, p: True,
                                                      TIMEOUT_S).violations]

    return asyncio.run(go())


def test_the_worker_hears_a_paused_table_heartbeat_and_a_stopped_one_end_unsigned() -> None:
    events, keys = _floor(HEARTBEAT_MS)
    plain, _ = _floor(0)
    dealt = {e.event_id for e in plain}
    beats = {i for i, e in enumerate(events) if e.event_id not in dealt}
    last = max(i for i in beats if i + 1 in beats)
    paused = events[:last + 1]  # in a pause between rounds, its heartbeats arriving
    assert not any(type(e.payload) is Checkpoint and e.payload.end for e in paused)
    assert _worker(paused, keys, stopped=False) == []
    # a pause as long as the time-out, through which the next heartbeat arrives
    assert _worker(paused, keys, stopped=True, then=[events[last + 1]]) == []
    # the heartbeats stop, and no end came: the record was cut
    cut = _worker(paused, keys, stopped=True)
    assert len(cut) == 1 and "record has no signed end" in cut[0]
    # a table that stops without an end or a heartbeat
    silent = [e for e in plain if e.ts <= paused[-1].ts]  # the same floor, no heartbeats
    assert [e.event_id for e in silent] == [e.event_id for e in paused if e.event_id in dealt]
    found = _worker(silent, keys, stopped=True)
    assert len(found) == 1 and "record has no signed end" in found[0]
    # one that signed its end is done, however long it is silent
    assert type(events[-1].payload) is Checkpoint and events[-1].payload.end
    assert _worker(events, keys, stopped=True) == []
