"""The devices of a table: where events get their envelopes, and the only place events
are built.

Each device keeps its `seq` (1, 2, 3, ...) and the digest of its previous event, which
the next event carries as `prev_digest` (docs/procedure.md, "Devices of a table").
`TableDevices.render` turns a round's steps into events: a device clock gives `ts`,
a seeded `random.Random` gives the event ids, and the steps' fault flags break the
record on purpose.

A device that holds a key signs its chain (docs/events.md, "Signed checkpoints"): a
`Checkpoint` after every `checkpoint_every` events and at the end of every `render`
(so after its last event of each round, and of the table events between rounds).
Checkpoints take their event ids from a random source of their own and a ts 1 ms after
the event before them, so the other events keep the ids they had unsigned. Given a
heartbeat interval, the order signer signs a heartbeat through each pause of the table
longer than it (`pause`).
A step with `forged` set is the forgery fault: the device records and signs the honest
payload, and what goes out is the forged one with the rest of the chain recomputed
(every digest right, the signatures not). `restarted` is the restart fault: a device
that loses its counter mid-shift and starts a new chain at seq 1.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Iterable
from typing import Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pitwatch.events.avro import digest, encode, writer_schema_sha256
from pitwatch.events.keys import (
    CHECKPOINT_EVERY,
    DeviceKey,
    order_digest,
    public_bytes,
    sign_checkpoint,
)
from pitwatch.events.model import Checkpoint, Event, Payload

from .script import CONSOLE, DEVICES, Step

#: Milliseconds between two events of a table, drawn uniformly.
EVENT_GAP_MS: Final = (150, 650)
#: Seconds of device time a live table's console lets pass in silence before it signs a
#: heartbeat (`TableDevices.pause`): well below the worker's round time-out (900 s).
HEARTBEAT_S: Final = 60.0


def key_id(device_id: str) -> str:
    """The id of a simulated device's (only) key."""
    return f"{device_id}/1"


def device_key(secret: str, device_id: str) -> Ed25519PrivateKey:
    """A device's signing key, a function of a secret (the simulator's seed) and its id."""
    seed = hashlib.sha256(f"{secret}/{device_id}/key".encode()).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


class Device:
    """One device's record: its id, the last seq it used and its last event's digest,
    and when it signs, its key and how many events it sent since its checkpoint."""

    __slots__ = ("device_id", "honest_digest", "keep_raw", "key", "key_id", "last",
                 "last_digest", "seq", "table_id", "unsigned")

    def __init__(self, table_id: str, device_id: str,
                 key: Ed25519PrivateKey | None = None) -> None:
        self.table_id = table_id
        self.device_id = device_id
        self.seq = 0
        self.last_digest: bytes | None = None
        self.last: Event | None = None
        self.key = key
        self.key_id = key_id(device_id)
        self.unsigned = 0
        #: the digest of the device's own last event, when a forger changed what went out
        self.honest_digest: bytes | None = None
        #: keep each event's Avro bytes as its `raw` (the one encoding its digest needs),
        #: so a reader in the same process hashes them without encoding the event again
        self.keep_raw = False

    def emit(self, payload: Payload, round_id: str | None, ts: int, event_id: str, *,
             skip_seq: bool = False, bad_digest: bool = False,
             forged: Payload | None = None) -> Event:
        """The device's next event. `skip_seq` leaves one seq number out (the digest
        chain stays whole); `bad_digest` sends a wrong `prev_digest` (the next event
        chains to what was sent); `forged` is what a forger sends instead of `payload`
        (the device's own chain, the one it signs, goes on with `payload`)."""
        self.seq += 2 if skip_seq else 1
        prev = self.last_digest
        if bad_digest:
            if prev is None:
                raise ValueError(f"{self.device_id}: its first event has no digest to alter")
            prev = bytes([prev[0] ^ 0xFF]) + prev[1:]
        ev = Event(event_id, self.table_id, self.device_id, self.seq, ts, round_id, prev,
                   payload if forged is None else forged)
        if forged is not None or self.honest_digest is not None:
            own = Event(event_id, self.table_id, self.device_id, self.seq, ts, round_id,
                        prev if self.honest_digest is None else self.honest_digest, payload)
            self.honest_digest = digest(own)
        self.last = ev
        if self.keep_raw:
            ev.raw = encode(ev)
        self.last_digest = digest(ev)
        if type(ev.payload) is not Checkpoint:
            self.unsigned += 1
        return ev

    def checkpoint(self, round_id: str | None, ts: int, event_id: str, *,
                   order: bytes | None = None, end: bool = False) -> Event:
        """The device signs its chain head, sealed: with the SHA-256 of the schema its
        events are written under, and, for the table's order signer, the table's order
        (`order`) and whether its record ends here. After a forgery the signature is over
        the device's own head, and the checkpoint that goes out names the forged one."""
        assert self.key is not None and self.last_digest is not None and self.last
        own = self.honest_digest or self.last_digest
        schema = writer_schema_sha256(self.last)
        sig = sign_checkpoint(self.key, self.table_id, self.device_id, self.seq, own, schema,
                              order, end)
        honest = Checkpoint(self.seq, own, self.key_id, sig, schema, order, end)
        sent = Checkpoint(self.seq, self.last_digest, self.key_id, sig, schema, order, end)
        self.unsigned = 0
        return self.emit(honest, round_id, ts, event_id,
                         forged=None if own == self.last_digest else sent)

    @property
    def forged(self) -> bool:
        return self.honest_digest is not None and self.honest_digest != self.last_digest

    def registry_key(self) -> DeviceKey:
        assert self.key is not None
        return DeviceKey(self.key_id, public_bytes(self.key))

    def conflicting(self, payload: Payload, ts: int, event_id: str) -> Event:
        """A second, different event with the seq of the last one (SEQUENCE_CONFLICT).
        The device's record does not move: its next event chains to the real one."""
        last = self.last
        if last is None:
            raise ValueError(f"{self.device_id}: no event to conflict with")
        return Event(event_id, self.table_id, self.device_id, last.seq, ts, last.round_id,
                     last.prev_digest, payload)


def restarted(events: Iterable[Event], device_id: str, at: str,
              key: Ed25519PrivateKey | None = None, key_id: str | None = None
              ) -> list[Event]:
    """The restart fault: the events with `device_id` restarted just before its event
    `at` (an event id). From there the device's seq starts again at 1 and its chain
    anew (prev_digest null), as a device that lost its counter sends them; nothing is
    lost and every other device is unchanged. Its checkpoints after the restart are
    signed again with `key` over the new chain (what an honest device does); without
    a key they go out as they were, signed over the old chain (what a forger who
    fakes a restart can send). A replacement device signs with its own key, named
    `key_id` in the key registry."""
    out: list[Event] = []
    seq = 0
    prev: bytes | None = None
    on = False
    for ev in events:
        if ev.device_id != device_id or not (on or ev.event_id == at):
            out.append(ev)
            continue
        on = True
        seq += 1
        p = ev.payload
        if type(p) is Checkpoint and key is not None and prev is not None:
            sig = sign_checkpoint(key, ev.table_id, device_id, seq - 1, prev, p.schema_sha256,
                                  p.order, p.end)
            p = Checkpoint(seq - 1, prev, key_id or p.key_id, sig, p.schema_sha256, p.order,
                           p.end)
        new = Event(ev.event_id, ev.table_id, device_id, seq, ev.ts, ev.round_id, prev, p)
        prev = digest(new)
        out.append(new)
    if not on:
        raise ValueError(f"{device_id} has no event {at}")
    return out


class TableDevices:
    """A table's devices, its clock and its source of event ids."""

    def __init__(self, table_id: str, ids: random.Random, clock: random.Random,
                 start_ms: int, *, secret: str | None = None,
                 checkpoint_every: int = CHECKPOINT_EVERY, keep_raw: bool = False) -> None:
        """With a `secret`, every device signs with a key made from it and its id; with
        `keep_raw`, every event carries its Avro bytes as `raw` (for a reader in the same
        process: the events must not be changed after)."""
        self.table_id = table_id
        self.devices = {
            kind: Device(table_id, f"{table_id}-{kind}",
                         None if secret is None else device_key(secret, f"{table_id}-{kind}"))
            for kind in DEVICES}
        for dev in self.devices.values():
            dev.keep_raw = keep_raw
        self.ids = ids
        self.clock = clock
        self.now = start_ms
        self.checkpoint_every = checkpoint_every
        self.checkpoint_ids = random.Random(f"{secret}/{table_id}/checkpoints")
        #: (event id, round id) of each checkpoint whose signature does not match what
        #: went out (after a forgery): the simulator's ground truth
        self.bad_checkpoints: list[tuple[str, str | None]] = []
        #: the device that signs the table's order across devices (the dealer's console)
        self.order_signer = self.devices[CONSOLE]
        #: the device ids of the table's events since the order signer's last checkpoint,
        #: in the order they went out (what the table records; a conflicting copy of a
        #: recorded seq is not recorded)
        self.order: list[str] = []
        #: device-clock ms the table may be silent before its order signer sends a
        #: heartbeat (`pause`); 0: none
        self.heartbeat_ms = 0
        #: heartbeats take their ids from a source of their own, so every other event
        #: keeps the id it has without them
        self.heartbeat_ids = random.Random(f"{secret}/{table_id}/heartbeats")

    def _checkpoint(self, dev: Device, round_id: str | None, end: bool = False,
                    ids: random.Random | None = None) -> Event:
        self.now += 1  # a table's events keep rising in ts
        event_id = str(uuid.UUID(int=(ids or self.checkpoint_ids).getrandbits(128),
                                 version=4))
        if dev is self.order_signer:
            ev = dev.checkpoint(round_id, self.now, event_id, order=order_digest(self.order),
                                end=end)
            self.order = []
        else:
            ev = dev.checkpoint(round_id, self.now, event_id)
            self.order.append(dev.device_id)
        if dev.forged:
            self.bad_checkpoints.append((ev.event_id, round_id))
        return ev

    def close(self) -> list[Event]:
        """The end of the table's shift: every device signs what it has not, and the
        order signer signs the table's order and that its record ends here (so a record
        cut short, or cut at a checkpoint, shows it)."""
        if self.order_signer.key is None or self.order_signer.last is None:
            return []
        out = [self._checkpoint(dev, None) for dev in self.devices.values()
               if dev.key is not None and dev.unsigned and dev is not self.order_signer]
        out.append(self._checkpoint(self.order_signer, None, end=True))
        return out

    def pause(self, until_ms: int) -> list[Event]:
        """The table is silent until `until_ms` (device clock): every `heartbeat_ms` of
        it the order signer signs a heartbeat, a sealed checkpoint of its head with the
        table's order and no end (docs/events.md, "Signed checkpoints": "A live table
        that pauses longer than the time-out signs an end (or a checkpoint with its
        order, a heartbeat, which the worker sees arrive) before it does"), so a worker
        that hears them knows the record goes on, and one that hears nothing for its
        time-out knows it was cut. None without a heartbeat interval or a signing
        console that has sent anything."""
        signer = self.order_signer
        if not self.heartbeat_ms or signer.key is None or signer.last is None:
            return []
        out: list[Event] = []
        # the first event after the pause comes up to one gap after `until_ms`
        while until_ms + EVENT_GAP_MS[1] - self.now > self.heartbeat_ms:
            self.now += self.heartbeat_ms - 1  # `_checkpoint` moves the clock 1 ms on
            out.append(self._checkpoint(signer, None, ids=self.heartbeat_ids))
        return out

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
                          skip_seq=step.skip_seq, bad_digest=step.bad_digest,
                          forged=step.forged)
            step.event_id = ev.event_id
            out.append(ev)
            self.order.append(dev.device_id)
            if step.conflict is not None:
                twin = dev.conflicting(step.conflict, self.tick(cap), self.new_id())
                step.conflict_id = twin.event_id
                out.append(twin)
            if dev.key is not None and dev.unsigned >= self.checkpoint_every:
                out.append(self._checkpoint(dev, round_id))
        for dev in self.devices.values():  # every device signs what it sent
            if dev.key is not None and dev.unsigned:
                out.append(self._checkpoint(dev, round_id))
        return out
