"""Rebuild rounds from the store, event by event, with what the engine found at each
step, and check them against what was stored when they were first audited.

The events are the only truth: a round is re-derived from its table's stored stream in
the order of record (`pitwatch.store.order`), through the same engine, with the table
context it had (`pitwatch.store.history.context`: the posted rules, the shoe's counts,
each device's previous event), and no further than it takes the auditor to close it: its
`RoundEnded`, the table's next round, or the end of what is stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pitwatch.engine.auditor import PackSelector, RoundSummary, TableAuditor
from pitwatch.engine.rulepack import RulePack
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import digest
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Checkpoint, Event, Rules
from pitwatch.packs.registry import select
from pitwatch.store.base import Store
from pitwatch.store.history import context, round_span, stream


@dataclass
class Step:
    pos: int
    event: Event
    violations: list[Violation] = field(default_factory=list)


@dataclass
class DeviceChain:
    """One device's digest chain over a round's events."""

    device_id: str
    first_seq: int
    last_seq: int
    events: int = 0
    linked: bool = False  # its first event in the round checked against the one before
    breaks: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.breaks:
            return "BROKEN: " + "; ".join(self.breaks)
        back = " (linked to the event before the round)" if self.linked else ""
        return f"VERIFIED: seq {self.first_seq}–{self.last_seq}, {self.events} events{back}"


@dataclass
class Rebuilt:
    round_id: str
    table_id: str
    steps: list[Step] = field(default_factory=list)
    #: findings of the round raised on an event of another round (ROUND_INCOMPLETE on
    #: the table's next event) or at the end of the stored stream
    closing: list[Violation] = field(default_factory=list)
    summary: RoundSummary | None = None
    rules: Rules | None = None
    pack: str = ""
    chains: dict[str, DeviceChain] = field(default_factory=dict)
    stored_violation_ids: set[str] = field(default_factory=set)

    @property
    def violations(self) -> list[Violation]:
        return [v for s in self.steps for v in s.violations] + self.closing

    @property
    def matches_store(self) -> bool:
        return {v.violation_id for v in self.violations} == self.stored_violation_ids

    @property
    def chain_verified(self) -> bool:
        return all(not c.breaks for c in self.chains.values())

    @property
    def checkpoints(self) -> int:
        """The devices' signed checkpoints in the round's record."""
        return sum(type(st.event.payload) is Checkpoint for st in self.steps)

    @property
    def bad_signatures(self) -> list[Violation]:
        return [v for v in self.violations if v.code == "SIGNATURE_INVALID"]


def signature_verdict(rounds: list[Rebuilt], keys: KeyRegistry | None) -> str:
    """Whether the rounds' signatures hold, as a case file and replay state it: checked
    only against a key registry (a rebuild without one judges no signature)."""
    if keys is None:
        return ("signatures NOT CHECKED: no key registry given (--keys FILE or "
                "PITWATCH_KEYS)")
    signing = {d for rb in rounds for d in rb.chains if keys.signs(d)}
    bad = [(rb.round_id, v) for rb in rounds for v in rb.bad_signatures]
    if bad:
        return (f"signatures FAIL: {len(bad)} SIGNATURE_INVALID finding(s), in "
                + ", ".join(sorted({r for r, _ in bad})))
    if not signing:
        return "signatures NOT CHECKED: no device of these rounds is in the key registry"
    checkpoints = sum(rb.checkpoints for rb in rounds)
    return (f"signatures HOLD: {checkpoints} checkpoint(s) of {len(signing)} signing "
            "device(s) verified against the key registry")


def pinned(pack: RulePack | None) -> PackSelector:
    """The registry's choice, except that a table of `pack`'s jurisdiction and game is
    judged by `pack` (re-audit under another version)."""
    if pack is None:
        return select

    def choose(jurisdiction: str, game: str) -> RulePack:
        if (jurisdiction, game) == (pack.jurisdiction, pack.game):
            return pack
        return select(jurisdiction, game)

    return choose


class _Chains:
    """Each device's last event, to check every next one against."""

    def __init__(self) -> None:
        self.last: dict[str, Event] = {}
        self.seen: dict[tuple[str, int], str] = {}  # (device, seq) -> event id

    def see(self, ev: Event, into: Rebuilt | None) -> None:
        prev = self.last.get(ev.device_id)
        if into is not None:
            c = into.chains.get(ev.device_id)
            if c is None:
                c = into.chains[ev.device_id] = DeviceChain(ev.device_id, ev.seq, ev.seq)
                c.linked = prev is not None
            c.events += 1
            c.last_seq = max(c.last_seq, ev.seq)
            if prev is None:
                if ev.seq == 1 and ev.prev_digest is not None:
                    c.breaks.append("seq 1 carries a prev_digest")
            elif ev.seq <= prev.seq:
                if self.seen.get((ev.device_id, ev.seq)) != ev.event_id:  # not a redelivery
                    c.breaks.append(f"seq {ev.seq} sent again as a different event")
                return
            elif ev.seq != prev.seq + 1:
                c.breaks.append(f"seq {prev.seq + 1}–{ev.seq - 1} missing")
            elif ev.prev_digest != digest(prev):
                c.breaks.append(f"seq {ev.seq} prev_digest does not match seq {prev.seq}")
        if prev is None or ev.seq > prev.seq:
            self.last[ev.device_id] = ev
            self.seen[(ev.device_id, ev.seq)] = ev.event_id


def rebuild_span(store: Store, table_id: str, first: int, last: int,
                 wanted: Iterable[str] | None = None, pack: RulePack | None = None,
                 keys: KeyRegistry | None = None) -> dict[str, Rebuilt]:
    """Rebuild the rounds of `table_id` whose events lie in positions first..last (or
    only those `wanted`), each with its table context, under the registry's packs or
    `pack` for its own jurisdiction and game, verifying the devices' signatures against
    `keys` when given. Rounds come back in order."""
    want = None if wanted is None else set(wanted)
    out: dict[str, Rebuilt] = {}
    live = False  # past the context: findings now count
    chains = _Chains()

    def violation(v: Violation) -> None:
        rb = out.get(v.round_id) if live else None
        if rb is None:
            return
        for st in reversed(rb.steps):
            if st.event.event_id == v.event_id:
                st.violations.append(v)
                return
        rb.closing.append(v)

    def round_done(s: RoundSummary) -> None:
        rb = out.get(s.round_id) if live else None
        if rb is not None:
            rb.summary = s

    auditor = TableAuditor(table_id, pinned(pack), violation, round_done, keys=keys)
    for st in context(store, table_id, first):
        chains.see(st.event, None)
        auditor.feed(st.event)
    live = True
    for st in stream(store, table_id, first):
        ev, rid = st.event, st.event.round_id
        if st.pos > last and all(rb.summary is not None for rb in out.values()):
            break
        rb = None
        if rid is not None and ((want is None and st.pos <= last) or (want and rid in want)):
            rb = out.get(rid)
            if rb is None:
                rb = out[rid] = Rebuilt(rid, table_id)
        chains.see(ev, rb)
        if rb is not None:
            rb.steps.append(Step(st.pos, ev))
        auditor.feed(ev)
        if rb is not None and rb.rules is None and auditor.round is not None \
                and auditor.round.round_id == rid:
            rb.rules = auditor.table.rules
            rb.pack = auditor.pack.label
    else:
        _end_of_stored_stream(store, auditor)
    _stored(store, out)
    return out


def _end_of_stored_stream(store: Store, auditor: TableAuditor) -> None:
    """The stored stream ends with a round open. If the store holds its summary, the
    audit that stored it closed it there (its input ended): close it the same way. If
    not, it is still open where it was audited (a stream goes on): leave it open."""
    r = auditor.round
    if r is not None and not r.ended and store.query(
            "SELECT round_id FROM rounds FINAL WHERE round_id = {r:String}",
            {"r": r.round_id}):
        auditor.finish()


def _stored(store: Store, rounds: dict[str, Rebuilt]) -> None:
    if not rounds:
        return
    rows = store.query("SELECT round_id, violation_id FROM violations FINAL "
                       "WHERE has({ids:Array(String)}, round_id)", {"ids": list(rounds)})
    for r in rows:
        rounds[r["round_id"]].stored_violation_ids.add(r["violation_id"])


def rebuild(store: Store, round_id: str, pack: RulePack | None = None,
            keys: KeyRegistry | None = None) -> Rebuilt:
    """One round, rebuilt with its table context."""
    span = round_span(store, round_id)
    if span is None:
        raise LookupError(f"no events of round {round_id} in the store")
    table_id, first, last = span
    return rebuild_span(store, table_id, first, last, [round_id], pack, keys)[round_id]
