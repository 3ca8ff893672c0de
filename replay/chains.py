"""Each device's digest chain over what a rebuild read, and what its signatures cover.

A checkpoint signs only its head (`docs/events.md § Signed checkpoints`): the event at
`head_seq`, by its digest. An earlier event is covered by that signature only through
an unbroken run of `prev_digest` links up to the head. So an event is covered when a
valid checkpoint's head lies at or after it on the device's chain with every link in
between held and matching; an event before a break, or after a device's last checkpoint
in the record read, is covered by nothing, and a verdict says so by seq.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pitwatch.events.avro import digest
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Checkpoint, Event


def seq_ranges(seqs: list[int]) -> str:
    """`3–5, 9` for [3, 4, 5, 9]."""
    out: list[str] = []
    run: list[int] = []
    for s in sorted(seqs):
        if run and s == run[-1] + 1:
            run.append(s)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}")
        run = [s]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}–{run[-1]}")
    return ", ".join(out)


@dataclass
class DeviceChain:
    """One device's digest chain over a round's events."""

    device_id: str
    first_seq: int
    last_seq: int
    events: int = 0
    linked: bool = False  # its first event in the round checked against the one before
    breaks: list[str] = field(default_factory=list)
    #: whether the device signs (it is in the key registry the rebuild had)
    signs: bool = False
    #: seqs of the round's events of a signing device that no valid signature covers
    uncovered: list[int] = field(default_factory=list)
    #: their event ids, in seq order
    uncovered_ids: list[str] = field(default_factory=list)
    #: (chain, seq, event id) of the round's events of the device other than
    #: checkpoints; the chain counts the device's restarts
    members: list[tuple[int, int, str]] = field(default_factory=list, repr=False)

    @property
    def verdict(self) -> str:
        no_sig = ("; no signature covers seq " + seq_ranges(self.uncovered)
                  if self.uncovered else "")
        if self.breaks:
            return "BROKEN: " + "; ".join(self.breaks) + no_sig
        if no_sig:
            return f"UNSIGNED: seq {self.first_seq}–{self.last_seq}{no_sig}"
        back = " (linked to the event before the round)" if self.linked else ""
        signed = ", covered by its signatures" if self.signs else ""
        return (f"VERIFIED: seq {self.first_seq}–{self.last_seq}, {self.events} events"
                f"{back}{signed}")


@dataclass
class _Link:
    event_id: str
    digest: bytes
    prev_digest: bytes | None
    checkpoint: bool


class Chains:
    """Each device's events as the rebuild reads them, checked one after another
    (`see`), and, with a key registry, which of them a valid signature covers
    (`cover`, once everything is read). A device that restarts (seq 1 again with no
    prev_digest, `docs/events.md § The record`) starts a new chain: its links and
    checkpoints are kept apart from the old chain's, and the restart is a break."""

    def __init__(self, table_id: str, keys: KeyRegistry | None) -> None:
        self.table_id = table_id
        self.keys = keys
        self.last: dict[str, Event] = {}
        self.seen: dict[tuple[str, int], str] = {}  # (device, seq) -> event id, this chain
        #: device -> how many times it started a new chain
        self.gen: dict[str, int] = {}
        #: (device, chain) -> seq -> what the chain needs of the event there
        self.links: dict[tuple[str, int], dict[int, _Link]] = {}
        #: (device, chain) -> heads of checkpoints whose signature the registry accepts
        self.heads: dict[tuple[str, int], list[tuple[int, bytes]]] = {}
        #: the chains of the rounds being rebuilt, to fill in at `cover`
        self.judged: list[DeviceChain] = []

    def _restarts(self, ev: Event) -> bool:
        """Whether `ev` starts the device's record again: seq 1 with no prev_digest,
        after another event than this one at seq 1."""
        if ev.seq != 1 or ev.prev_digest is not None:
            return False
        links = self.links.get((ev.device_id, self.gen.get(ev.device_id, 0)), {})
        first = links.get(1)
        return bool(links) and (first is None or first.event_id != ev.event_id)

    def see(self, ev: Event, into: dict[str, DeviceChain] | None) -> None:
        """Check `ev` against its device's previous event; `into`, the chains of the
        round it belongs to (None for an event read only as context)."""
        restart = self._restarts(ev)
        prev = self.last.get(ev.device_id)
        if restart:
            self._new_chain(ev.device_id)
        gen = self.gen.get(ev.device_id, 0)
        self.hold(ev)
        if into is not None:
            c = into.get(ev.device_id)
            if c is None:
                c = into[ev.device_id] = DeviceChain(ev.device_id, ev.seq, ev.seq)
                c.linked = prev is not None
                c.signs = self.keys is not None and self.keys.signs(ev.device_id)
                self.judged.append(c)
            c.events += 1
            c.last_seq = max(c.last_seq, ev.seq)
            if type(ev.payload) is not Checkpoint:
                c.members.append((gen, ev.seq, ev.event_id))
            if restart:
                c.breaks.append(f"restarted: seq 1 again, a new chain, after seq "
                                f"{0 if prev is None else prev.seq}")
            elif prev is None:
                if ev.seq == 1 and ev.prev_digest is not None:
                    c.breaks.append("seq 1 carries a prev_digest")
                elif ev.seq > 1:
                    c.breaks.append(f"its first event is seq {ev.seq}, and nothing read "
                                    f"before it: seq 1–{ev.seq - 1} not in the record")
            elif ev.seq <= prev.seq:
                if self.seen.get((ev.device_id, ev.seq)) != ev.event_id:  # not a redelivery
                    c.breaks.append(f"seq {ev.seq} sent again as a different event")
                return
            elif ev.seq != prev.seq + 1:
                c.breaks.append(f"seq {seq_ranges(list(range(prev.seq + 1, ev.seq)))} "
                                "missing")
            elif ev.prev_digest != digest(prev):
                c.breaks.append(f"seq {ev.seq} prev_digest does not match seq {prev.seq}")
        if restart or prev is None or ev.seq > prev.seq:
            self.last[ev.device_id] = ev
            self.seen[(ev.device_id, ev.seq)] = ev.event_id

    def _new_chain(self, device_id: str) -> None:
        self.gen[device_id] = self.gen.get(device_id, 0) + 1
        for k in [k for k in self.seen if k[0] == device_id]:
            del self.seen[k]

    def hold(self, ev: Event) -> None:
        """Keep what the chains need of `ev` (also for an event read for the chains
        alone: before the context, or after the rounds up to the device's next
        checkpoint): its link, and its signature if it is a checkpoint."""
        if self._restarts(ev):
            self._new_chain(ev.device_id)
        key = ev.device_id, self.gen.get(ev.device_id, 0)
        links = self.links.setdefault(key, {})
        if ev.seq in links:  # the first copy read stands; a different one is a break above
            return
        p = ev.payload
        links[ev.seq] = _Link(ev.event_id, digest(ev), ev.prev_digest, type(p) is Checkpoint)
        if type(p) is Checkpoint and self.keys is not None and self.keys.check_checkpoint(
                self.table_id, ev.device_id, p) is None:
            self.heads.setdefault(key, []).append((p.head_seq, p.head_digest))

    def covered(self, device_id: str, gen: int) -> set[int]:
        """The seqs of the device's events in its `gen`th chain a valid checkpoint
        covers."""
        links = self.links.get((device_id, gen), {})
        out: set[int] = set()
        for head, head_digest in self.heads.get((device_id, gen), []):
            at = links.get(head)
            if at is None or at.digest != head_digest:
                continue
            s = head
            while s not in out:
                out.add(s)
                below = links.get(s - 1)
                if below is None or links[s].prev_digest != below.digest:
                    break
                s -= 1
        return out

    def pending(self) -> dict[str, int]:
        """Signing devices of the judged chains with an event no valid checkpoint read
        so far covers: device -> its last such seq."""
        out: dict[str, int] = {}
        for c in self.judged:
            gen = self.gen.get(c.device_id, 0)
            mine = [s for g, s, _ in c.members if g == gen]
            if c.signs and mine:
                covered = self.covered(c.device_id, gen)
                if any(s not in covered for s in mine):
                    out[c.device_id] = max(out.get(c.device_id, 0), max(mine))
        return out

    def cover(self) -> None:
        """Once everything is read: fill in each judged chain of a signing device with
        its round's events that no valid signature covers."""
        known: dict[tuple[str, int], set[int]] = {}
        for c in self.judged:
            if not c.signs:
                continue
            for g in {g for g, _, _ in c.members}:
                if (c.device_id, g) not in known:
                    known[c.device_id, g] = self.covered(c.device_id, g)
            missing = [(s, e) for g, s, e in c.members if s not in known[c.device_id, g]]
            c.uncovered = [s for s, _ in missing]
            c.uncovered_ids = [e for _, e in missing]
