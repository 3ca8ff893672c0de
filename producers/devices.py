"""The devices of a table: where events get their envelopes, and the only place events
are built.

Each device keeps its `seq` (1, 2, 3, ...) and the digest of its previous event, which
the next event carries as `prev_digest` (docs/procedure.md, "Devices of a table").
`TableDevices.render` turns a round's steps into events: a device clock gives `ts`,
a seeded `random.Random` gives the event ids, and the steps' fault flags break the
record on purpose.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import Final

from pitwatch.events.avro import digest
from pitwatch.events.model import Event, Payload

from .script import DEVICES, Step

#: Milliseconds between two events of a table, drawn uniformly.
EVENT_GAP_MS: Final = (150, 650)


class Device:
    """One device's record: its id, the last seq it used and its last event's digest."""

    __slots__ = ("device_id", "last", "last_digest", "seq", "table_id")

    def __init__(self, table_id: str, device_id: str) -> None:
        self.table_id = table_id
        self.device_id = device_id
        self.seq = 0
        self.last_digest: bytes | None = None
        self.last: Event | None = None

    def emit(self, payload: Payload, round_id: str | None, ts: int, event_id: str, *,
             skip_seq: bool = False, bad_digest: bool = False) -> Event:
        """The device's next event. `skip_seq` leaves one seq number out (the digest
        chain stays whole); `bad_digest` sends a wrong `prev_digest` (the next event
        chains to what was sent)."""
        self.seq += 2 if skip_seq else 1
        prev = self.last_digest
        if bad_digest:
            if prev is None:
                raise ValueError(f"{self.device_id}: its first event has no digest to alter")
            prev = bytes([prev[0] ^ 0xFF]) + prev[1:]
        ev = Event(event_id, self.table_id, self.device_id, self.seq, ts, round_id, prev,
                   payload)
        self.last = ev
        self.last_digest = digest(ev)
        return ev

    def conflicting(self, payload: Payload, ts: int, event_id: str) -> Event:
        """A second, different event with the seq of the last one (SEQUENCE_CONFLICT).
        The device's record does not move: its next event chains to the real one."""
        last = self.last
        if last is None:
            raise ValueError(f"{self.device_id}: no event to conflict with")
        return Event(event_id, self.table_id, self.device_id, last.seq, ts, last.round_id,
                     last.prev_digest, payload)


class TableDevices:
    """A table's devices, its clock and its source of event ids."""

    def __init__(self, table_id: str, ids: random.Random, clock: random.Random,
                 start_ms: int) -> None:
        self.table_id = table_id
        self.devices = {kind: Device(table_id, f"{table_id}-{kind}") for kind in DEVICES}
        self.ids = ids
        self.clock = clock
        self.now = start_ms

    def new_id(self) -> str:
        return str(uuid.UUID(int=self.ids.getrandbits(128), version=4))

    def tick(self, cap_ms: int) -> int:
        self.now += min(self.clock.randint(*EVENT_GAP_MS), cap_ms)
        return self.now

    def render(self, steps: Iterable[Step], round_id: str | None, *,
               not_before: int = 0, budget_ms: int = 0) -> list[Event]:
        """Events of the steps (markers skipped), in order. The clock moves on to
        `not_before` first; with a `budget_ms`, the gaps shrink so the events fit in it."""
        todo = [s for s in steps if not s.is_marker]
        self.now = max(self.now, not_before)
        cap = EVENT_GAP_MS[1]
        if budget_ms:
            n = len(todo) + sum(1 for s in todo if s.conflict is not None)
            cap = max(5, min(cap, budget_ms // max(n, 1)))
        out: list[Event] = []
        for step in todo:
            assert step.payload is not None
            dev = self.devices[step.device]
            ev = dev.emit(step.payload, round_id, self.tick(cap), self.new_id(),
                          skip_seq=step.skip_seq, bad_digest=step.bad_digest)
            step.event_id = ev.event_id
            out.append(ev)
            if step.conflict is not None:
                twin = dev.conflicting(step.conflict, self.tick(cap), self.new_id())
                step.conflict_id = twin.event_id
                out.append(twin)
        return out
