"""Rebuild rounds from the store, event by event, with what the engine found at each
step, and check them against what was stored when they were first audited.

The events are the only truth: a round is re-derived from its table's stored stream in
the order of record (`pitwatch.store.order`), through the same engine, with the table
context it had (`pitwatch.store.history`: the posted rules, the shoe's counts, each
device's previous event), and no further than it takes the auditor to close it: its
`RoundEnded`, the table's next round, or the end of what is stored. With a key registry
each signing device's chain is also read back to its last checkpoint before the context
and on to the checkpoint that covers its last event of the rounds (`chains.py`). What was
read, by role (`Fed`), is a case's evidence, and `TableRebuild` feeds it again the same
way from a case folder (`pitwatch verify`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pitwatch.engine.auditor import PackSelector, RoundSummary, TableAuditor
from pitwatch.engine.rulepack import RulePack
from pitwatch.engine.state import Round
from pitwatch.engine.violation import Violation
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Checkpoint, Event, Rules
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.store.base import Store
from pitwatch.store.history import (
    Context,
    Quarantine,
    Stored,
    context_of,
    primers,
    seed,
    stream,
)
from pitwatch.store.lookup import (
    checkpoints_before,
    device_events_back,
    device_firsts,
    fetch,
    round_closed,
    round_spans,
    violations_of,
)

from .chains import Chains, DeviceChain, seq_ranges


@dataclass
class Step:
    pos: int
    event: Event
    violations: list[Violation] = field(default_factory=list)


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
    game: str = ""
    #: the round as the engine folded it (its hands, wagers and dealer cards)
    state: Round | None = None
    pack: str = ""
    chains: dict[str, DeviceChain] = field(default_factory=dict)
    stored_violation_ids: set[str] = field(default_factory=set)
    #: of those, the findings on events the record refused (`REFUSAL_CODES`): the store
    #: never holds those events (they are in the audit's rejects or the dead letters),
    #: so no rebuild raises them; they stand as stored-only findings
    refused_violation_ids: set[str] = field(default_factory=set)

    @property
    def violations(self) -> list[Violation]:
        return [v for s in self.steps for v in s.violations] + self.closing

    @property
    def matches_store(self) -> bool:
        return {v.violation_id for v in self.violations} | self.refused_violation_ids \
            == self.stored_violation_ids

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


RECORD_RULE = "pitwatch record rule"
#: How many event ids a one-line verdict names before it says how many more.
VERDICT_IDS = 12


def record_breaks(violations: Iterable[Violation]) -> list[Violation]:
    """The HIGH findings about the record itself (events lost, a copy that differs, a
    chain rewritten): beside any of them, no signature verdict can hold. EVENT_REFUSED
    is not one: the refused event keeps its place in its device's record, its digest in
    the chain the signatures cover, so the record stays continuous."""
    return [v for v in violations if v.severity == "HIGH"
            and v.code not in ("SIGNATURE_INVALID", "EVENT_REFUSED")
            and v.citation.startswith(RECORD_RULE)]


def _ids(ids: list[str]) -> str:
    more = len(ids) - VERDICT_IDS
    return ", ".join(ids[:VERDICT_IDS]) + (f" and {more} more" if more > 0 else "")


def signature_verdict(rounds: list[Rebuilt], keys: KeyRegistry | None,
                      stored_only: Iterable[Violation] = ()) -> str:
    """Whether the rounds' signatures hold, as a case file and replay state it: checked
    only against a key registry (a rebuild without one judges no signature). HOLD only
    when every chain is unbroken, every event of a signing device is covered by a valid
    checkpoint, and no finding says the record itself was broken; otherwise FAIL, with
    what fails and the events no signature covers."""
    if keys is None:
        return ("signatures NOT CHECKED: no key registry given (--keys FILE or "
                "PITWATCH_KEYS)")
    found = [(rb.round_id, v) for rb in rounds for v in rb.violations]
    found += [(v.round_id, v) for v in stored_only]
    why: list[str] = []
    bad = sorted({r for r, v in found if v.code == "SIGNATURE_INVALID"})
    if bad:
        n = sum(v.code == "SIGNATURE_INVALID" for _, v in found)
        why.append(f"{n} SIGNATURE_INVALID finding(s), in {', '.join(bad)}")
    for rb in rounds:
        for c in rb.chains.values():
            if c.breaks:
                why.append(f"the chain of {c.device_id} is broken in {rb.round_id} "
                           f"({'; '.join(c.breaks)})")
            if c.uncovered:
                why.append(f"no signature covers {c.device_id} seq "
                           f"{seq_ranges(c.uncovered)} in {rb.round_id} (events "
                           f"{_ids(c.uncovered_ids)})")
    record = record_breaks(v for _, v in found)
    if record:
        why.append("the record is broken: " + ", ".join(
            f"{v.code} in {v.round_id or v.table_id}" for v in record))
    if why:
        return "signatures FAIL: " + "; ".join(why)
    signing = {d for rb in rounds for d in rb.chains if keys.signs(d)}
    if not signing:
        return "signatures NOT CHECKED: no device of these rounds is in the key registry"
    checkpoints = sum(rb.checkpoints for rb in rounds)
    return (f"signatures HOLD: {checkpoints} checkpoint(s) of {len(signing)} signing "
            "device(s) verified against the key registry, every event of theirs covered")


def pinned(*packs: RulePack | None) -> PackSelector:
    """The registry's choice, except that a table of a given pack's jurisdiction and
    game is judged by that pack (a re-audit under another version, or a case verified
    under the versions it was made with)."""
    by_game = {(p.jurisdiction, p.game): p for p in packs if p is not None}
    if not by_game:
        return select

    def choose(jurisdiction: str, game: str) -> RulePack:
        return by_game.get((jurisdiction, game)) or select(jurisdiction, game)

    return choose


#: How far past the rounds a rebuild reads a signing device's chain for the checkpoint
#: that covers its last event (a device checkpoints after every round and every
#: `checkpoint_every` events, so this is many times what an honest record needs).
AFTER_LIMIT = 4096


@dataclass
class Fed:
    """What a rebuild of one table read, in the order of record, by role: the case
    folder's evidence for the table, and what `pitwatch verify` feeds again."""

    table_id: str
    #: the posted rules read ahead of the context (`history.Context.rules`): the
    #: TableOpened, after its device's event before it; fed, findings not counted
    rules: list[Event] = field(default_factory=list)
    #: read before the context: each device's last event (the auditor is primed with
    #: it) and, for a signing device, its chain back to its last checkpoint
    before: list[Event] = field(default_factory=list)
    #: the table context (posted rules, shoe), fed with findings not counted
    context: list[Event] = field(default_factory=list)
    #: the rounds' events and what closed them, fed with findings counted
    rounds: list[Event] = field(default_factory=list)
    #: read past the rounds for the chains alone, up to each signing device's checkpoint
    after: list[Event] = field(default_factory=list)
    #: the quarantined events fed back at their place (`history.Quarantine`), each
    #: through `TableAuditor.refused`: a case's evidence of them, never of play
    refused: list[Event] = field(default_factory=list)
    #: the rebuild closed the round open at the end of what it read, as the audit had
    finished: bool = False

    def events(self) -> list[Event]:
        """Every event read, by role; the quarantined ones last (each in its JSON Lines
        form, which a reader takes as refused again: `verify`)."""
        return (self.rules + self.before + self.context + self.rounds + self.after
                + self.refused)

    def counts(self) -> dict[str, int]:
        """Events a role (a case's manifest); `rules` and `refused` only when read."""
        out = {"rules": len(self.rules)} if self.rules else {}
        refused = {"refused": len(self.refused)} if self.refused else {}
        return {**out, "before": len(self.before), "context": len(self.context),
                "rounds": len(self.rounds), "after": len(self.after), **refused}


def primed(before: list[Event]) -> list[Event]:
    """Each device's last event of `before`, in order: what an auditor is primed with."""
    last = {ev.device_id: i for i, ev in enumerate(before)}
    return [ev for i, ev in enumerate(before) if last[ev.device_id] == i]


class TableRebuild:
    """One table's rebuild, fed a role at a time (`rules`, `before`, `warm`, `step`,
    `after`, `end`): the one path for a rebuild from the store and one from a case's evidence."""

    def __init__(self, table_id: str, wanted: Iterable[str] | None = None,
                 select_pack: PackSelector = select, keys: KeyRegistry | None = None
                 ) -> None:
        self.want = None if wanted is None else set(wanted)
        self.out: dict[str, Rebuilt] = {}
        self.live = False  # past the context: findings now count
        self.chains = Chains(table_id, keys)
        self.fed = Fed(table_id)
        self.keys = keys
        self.auditor = TableAuditor(table_id, select_pack, self._violation,
                                    self._round_done, keys=keys, released=released_writers())
        #: the events the record took in as refused, fed back at their place (`_due`)
        self.held = Quarantine(None, table_id)

    def _violation(self, v: Violation) -> None:
        rb = self.out.get(v.round_id) if self.live else None
        if rb is None:
            return
        for st in reversed(rb.steps):
            if st.event.event_id == v.event_id:
                st.violations.append(v)
                return
        rb.closing.append(v)

    def _round_done(self, s: RoundSummary) -> None:
        rb = self.out.get(s.round_id) if self.live else None
        if rb is not None:
            rb.summary = s

    def rules(self, events: list[Event]) -> None:
        """The posted rules read ahead of the context (`history.seed`): neither a
        finding nor a chain is read from them."""
        self.fed.rules += events
        seed(self.auditor, events)

    def before(self, events: list[Event]) -> None:
        """Events before the context, in order: each device's last one primes the
        auditor; all are read by the chains."""
        self.fed.before += events
        for ev in events:
            self.chains.see(ev, None)
            self.held.saw(ev)
        for ev in primed(events):
            self.auditor.prime(ev)

    def warm(self, ev: Event) -> None:
        """A context event: fed, its findings not counted."""
        self.fed.context.append(ev)
        self._due(ev, None)
        self.chains.see(ev, None)
        self.auditor.feed(ev)
        self._due(ev, None, after=True)

    def _due(self, ev: Event, rb: Rebuilt | None, after: bool = False) -> None:
        """The quarantined events of `ev`'s device due before it (`Quarantine.due`), or
        with `after` right after it (`Quarantine.after`), each through
        `TableAuditor.refused` at its place and read by the chains (its digest is of
        its bytes as sent); one of a rebuilt round is a step of it."""
        for q in self.held.after(ev) if after else self.held.due(ev):
            self._refused(q, rb if rb is not None and rb.round_id == q.round_id
                          else self.out.get(q.round_id or "") if self.live else None)

    def _refused(self, q: Event, rb: Rebuilt | None) -> None:
        self.fed.refused.append(q)
        self.chains.see(q, None if rb is None else rb.chains)
        if rb is not None:
            rb.steps.append(Step(rb.steps[-1].pos if rb.steps else 0, q))
        self.auditor.refused(q, q.refused or "")

    def step(self, ev: Event, pos: int, in_range: bool = True) -> None:
        """An event of the rounds (or what closes them), its findings counted; with no
        rounds wanted by id, a round is rebuilt when its event is `in_range`."""
        self.live = True
        self.fed.rounds.append(ev)
        rid = ev.round_id
        rb = None
        if rid is not None and ((self.want is None and in_range)
                                or (self.want and rid in self.want)):
            rb = self.out.get(rid)
            if rb is None:
                rb = self.out[rid] = Rebuilt(rid, self.fed.table_id)
        self._due(ev, rb)
        self.chains.see(ev, None if rb is None else rb.chains)
        if rb is not None:
            rb.steps.append(Step(pos, ev))
        self.auditor.feed(ev)
        self._due(ev, rb, after=True)
        a = self.auditor
        if rb is not None and rb.rules is None and a.round is not None \
                and a.round.round_id == rid:
            rb.rules = a.table.rules
            rb.game = a.table.game
            rb.state = a.round
            rb.pack = a.pack.label

    def done(self) -> bool:
        return all(rb.summary is not None for rb in self.out.values())

    def pending(self) -> dict[str, int]:
        """Signing devices of the rounds whose last event no checkpoint read so far
        covers: device -> the seq a checkpoint must reach."""
        return self.chains.pending()

    def after(self, ev: Event) -> None:
        self.fed.after.append(ev)
        self.chains.hold(ev)

    def end(self, finish: bool) -> dict[str, Rebuilt]:
        """What was read ends here; `finish`: close the open round as the audit did
        (its input ended there). The rounds, in order."""
        for q in self.held.trailing(set(self.out)):
            self._refused(q, self.out.get(q.round_id or ""))
        if finish:
            self.auditor.finish()
            self.fed.finished = True
        self.chains.cover()
        return self.out


def rebuild_span(store: Store, table_id: str, first: int, last: int,
                 wanted: Iterable[str] | None = None, pack: RulePack | None = None,
                 keys: KeyRegistry | None = None, fed: list[Fed] | None = None,
                 context: Context | None = None) -> dict[str, Rebuilt]:
    """Rebuild the rounds of `table_id` whose events lie in positions first..last (or
    only those `wanted`), each with its table context, under the registry's packs or
    `pack` for its own jurisdiction and game, verifying the devices' signatures against
    `keys` when given. Rounds come back in order; `fed` gets what was read. The table
    context is `history.context_of` the first position (`context`: another one, e.g.
    the whole stretch from the last TableOpened, to compare with)."""
    tr = TableRebuild(table_id, wanted, pinned(pack), keys)
    tr.held = Quarantine(store, table_id)
    ctx = context_of(store, table_id, first) if context is None else context
    begin = ctx.begin
    tr.rules([st.event for st in ctx.rules])
    tr.before(before(store, table_id, begin, keys))
    for st in stream(store, table_id, begin, first - 1) if first > 0 else ():
        tr.warm(st.event)
    tail: tuple[int, str] | None = None
    for st in stream(store, table_id, first):
        if st.pos > last and tr.done():
            break
        tr.step(st.event, st.pos, st.pos <= last)
        tail = st.pos, st.event.event_id
    else:
        r = tr.auditor.round
        tr.fed.finished = r is not None and not r.ended and round_closed(
            store, table_id, r.round_id)
    if keys is not None and tail is not None:
        _read_after(store, tr, tail)
    out = tr.end(tr.fed.finished)
    _stored(store, out)
    if fed is not None:
        fed.append(tr.fed)
    return out


def _read_after(store: Store, tr: TableRebuild, tail: tuple[int, str]) -> None:
    """Past the rounds, for the chains alone: up to the checkpoint of each signing
    device that covers its last event of the rounds (AFTER_LIMIT events at most)."""
    need = tr.pending()
    n = 0
    for st in stream(store, tr.fed.table_id, tail[0]):
        if not need or n >= AFTER_LIMIT:
            return
        if (st.pos, st.event.event_id) <= tail:
            continue
        ev, n = st.event, n + 1
        tr.after(ev)
        p = ev.payload
        if type(p) is Checkpoint and need.get(ev.device_id, -1) <= p.head_seq:
            need.pop(ev.device_id, None)


def before(store: Store, table_id: str, begin: int, keys: KeyRegistry | None
           ) -> list[Event]:
    """The events read before a context that starts at `begin`, in order: each
    device's last one, and for a device in `keys` its chain back to the head of its
    last checkpoint before `begin`."""
    if begin == 0:
        return []
    got: dict[str, Stored] = {s.event.event_id: s for s in primers(store, table_id, begin)}
    if keys is not None:
        signing = [d for d in device_firsts(store, table_id) if keys.signs(d)]
        for s in chain_back(store, table_id, begin, signing):
            got.setdefault(s.event.event_id, s)
    return [s.event for s in sorted(got.values(), key=lambda s: (s.pos, s.event.event_id))]


def chain_back(store: Store, table_id: str, begin: int,
               devices: Iterable[str] | None = None) -> list[Stored]:
    """Each device's (of `devices`, else every device's) events before `begin` from the
    head of its last checkpoint there."""
    wanted = list(device_firsts(store, table_id)) if devices is None else devices
    marks = fetch(store, table_id, checkpoints_before(store, table_id, begin, wanted))
    out: list[Stored] = []
    for pos, cp in marks:
        assert isinstance(cp.payload, Checkpoint)
        at = device_events_back(store, table_id, cp.device_id, cp.payload.head_seq, pos,
                                begin)
        out += [Stored(p, ev) for p, ev in fetch(store, table_id, at)]
    return sorted(out, key=lambda s: (s.pos, s.event.event_id))


#: The findings raised on an event the record refused (`engine.record.Fed.REFUSED`),
#: which the store never holds.
REFUSAL_CODES = frozenset({"SEQUENCE_CONFLICT", "DEVICE_LIMIT_EXCEEDED", "EVENT_REFUSED"})


def _stored(store: Store, rounds: dict[str, Rebuilt]) -> None:
    if not rounds:
        return
    rows = violations_of(store, ((rb.table_id, rid) for rid, rb in rounds.items()),
                         "table_id, round_id, violation_id, code")
    for r in rows:
        rb = rounds[r["round_id"]]
        rb.stored_violation_ids.add(r["violation_id"])
        if r["code"] in REFUSAL_CODES:
            rb.refused_violation_ids.add(r["violation_id"])


def rebuild(store: Store, round_id: str, pack: RulePack | None = None,
            keys: KeyRegistry | None = None) -> Rebuilt:
    """One round, rebuilt with its table context."""
    span = round_spans(store, [round_id]).get(round_id)
    if span is None:
        raise LookupError(f"no events of round {round_id} in the store")
    return rebuild_span(store, span.table_id, span.first, span.last, [round_id], pack,
                        keys)[round_id]
