"""A table's stored history, read back in its order of record (`order.py`): what a
round needs around it to be judged again exactly as it was.

A round is judged with the table context it had: the posted rules (the last
`TableOpened` before it), the shoe's card counts (everything dealt since the last
`ShoeLoaded`), and each device's record (its last event before, for the seq and digest
checks). `bring_up_to(store, auditor, table_id, pos)` brings an auditor to the event at
`pos`: it reads the posted rules (the last TableOpened, by its position alone), primes
each device with its last event before the context starts, then feeds everything from
the last ShoeLoaded on (`context_of`): what it reads is bounded by the shoe, not by how
long the table has been open.

An audit run into the store also leaves each table's engine state there (`audit_states`,
written by `pitwatch.audit.run` after the run's events): the next run continues the
table from that state (`resume_state`), exactly where the last one stopped: its open
round, each device's seq window, chain and unsigned tail, the recently closed rounds,
the shoe and the posted rules. The context above is the way back for a table with no
state that agrees with its stored events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson

from ..engine.auditor import StateError, TableAuditor
from ..events.avro import digest
from ..events.model import Event
from . import lookup
from .base import Store
from .rows import quarantined_event


@dataclass(frozen=True, slots=True)
class Stored:
    pos: int
    event: Event


@dataclass(frozen=True, slots=True)
class Context:
    """Where the table context of an event starts (`begin`: its events are fed from
    there), and the posted rules read ahead of it (`rules`)."""

    begin: int
    #: the table's last TableOpened when it lies before the shoe `begin` starts:
    #: [its device's event before it, if any (primes the device), the TableOpened (fed)]
    rules: tuple[Stored, ...] = ()


def context_of(store: Store, table_id: str, before: int) -> Context:
    """The table context of the event at `before`, bounded by its shoe whatever the
    table's history: the events from the last ShoeLoaded on, and the last TableOpened
    before them read alone (by `event_marks`' sort key) when the table opened before
    that shoe (a table open for weeks). From the table's first event (0) when either
    never came: the rules or the counts then go back to the start."""
    found = lookup.mark_before(store, table_id, ("TableOpened", "ShoeLoaded"), before)
    if len(found) < 2:
        return Context(0)
    opened, shoe = found["TableOpened"], found["ShoeLoaded"]
    if opened >= shoe:
        return Context(shoe)
    at = lookup.marks_at(store, table_id, "TableOpened", opened)[-1:]
    ev = lookup.fetch(store, table_id, at)
    if not ev:  # the index names none there: the context from the TableOpened on
        return Context(opened)
    prev = lookup.last_before(store, table_id, opened, [ev[0][1].device_id])
    return Context(shoe, tuple(Stored(p, e) for p, e in lookup.fetch(store, table_id, prev)
                               + ev))


def context_start(store: Store, table_id: str, before: int) -> int:
    """Where the table context of the event at `before` starts (`context_of`)."""
    return context_of(store, table_id, before).begin


def seed(auditor: TableAuditor, rules: Sequence[Event]) -> None:
    """Give `auditor` the posted rules read ahead of a context (`Context.rules`): each
    event but the last primes its device, the last (the TableOpened) is fed."""
    for ev in rules[:-1]:
        auditor.prime(ev)
    for ev in rules[-1:]:
        auditor.feed(ev)


def primers(store: Store, table_id: str, begin: int) -> list[Stored]:
    """Each device's last event before `begin`, in order: an auditor fed these first
    checks the seq and digest of each device's next event as it was checked then."""
    if begin == 0:
        return []
    at = lookup.last_before(store, table_id, begin)
    return [Stored(p, ev) for p, ev in lookup.fetch(store, table_id, at)]


def stream(store: Store, table_id: str, begin: int, end: int | None = None
           ) -> Iterator[Stored]:
    """The table's events from position `begin` (to `end` inclusive), in order, a page
    at a time (the caller may stop early)."""
    return (Stored(p, ev) for p, ev in lookup.stream(store, table_id, begin, end))


def bring_up_to(store: Store, auditor: TableAuditor, table_id: str, before: int) -> None:
    """Bring `auditor` to where the audit stood at the event at `before` (see the
    module's note), raising nothing: each device primed with its last event before the
    context, then the context's events fed; nothing for a table's first event."""
    ctx = context_of(store, table_id, before)
    begin = ctx.begin
    held = Quarantine(store, table_id)
    with _quiet(auditor):
        seed(auditor, [st.event for st in ctx.rules])
        for st in primers(store, table_id, begin):
            auditor.prime(st.event)
            held.saw(st.event)
        for st in stream(store, table_id, begin, before - 1) if before > 0 else ():
            held.feed(auditor, st.event)


def round_span(store: Store, round_id: str) -> tuple[str, int, int] | None:
    """(table, first position, last position) of a round's stored events."""
    span = lookup.round_spans(store, [round_id]).get(round_id)
    return None if span is None else (span.table_id, span.first, span.last)


class HistoryConflict(ValueError):
    """The store holds another history under the same table and device ids."""


def continue_history(store: Store, auditor: TableAuditor, ev: Event) -> None:
    """Before a table's first event in an audit run: bring `auditor` (fresh, for the
    table) to where the stored history stands, so a second run continues the first (a
    shift audited in two files judges its second part with the rules, counts and
    records of the first). Findings and rounds of the history are not raised again.
    Refuses (`HistoryConflict`) when the store holds a different event under this
    event's device and seq: another floor's history with the same ids."""
    rows = lookup.at_seq(store, ev.table_id, ev.device_id, ev.seq)
    if any(e != ev.event_id for e, _ in rows):
        raise HistoryConflict(
            f"the store already holds another history of table {ev.table_id}: "
            f"{ev.device_id} seq {ev.seq} is event {rows[0][0]} there and "
            f"{ev.event_id} here (another floor with the same ids?); audit it into its "
            "own store with --data DIR")
    extent = lookup.table_extent(store, ev.table_id)
    if extent is None:
        return
    before = rows[0][1] if rows else extent[1] + 1
    if resume_state(store, auditor, ev.table_id, before) is not None:
        return
    bring_up_to(store, auditor, ev.table_id, before)
    r = auditor.round
    if r is not None and not r.ended and lookup.round_closed(store, ev.table_id, r.round_id):
        # the run that stored it closed it (its input ended there): it stays closed
        r.ended = True
        auditor.closed[r.round_id] = None


@contextmanager
def _quiet(auditor: TableAuditor) -> Iterator[None]:
    """What `auditor` finds meanwhile is history: neither findings nor rounds go out."""
    sinks = auditor.on_violation, auditor.on_round
    auditor.on_violation, auditor.on_round = (lambda v: None), (lambda s: None)
    try:
        yield
    finally:
        auditor.on_violation, auditor.on_round = sinks


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a table's audit stands in the store: the position its record clock stood
    at, and each device's last seq there."""

    pos: int
    clock: dict[str, int]


def last_seqs(store: Store, table_id: str, upto: int) -> dict[str, int]:
    """Each device's last seq among the table's stored events up to position `upto`."""
    return lookup.seqs_upto(store, table_id, upto)


def resume_state(store: Store, auditor: TableAuditor, table_id: str,
                 before: int | None = None) -> Standing | None:
    """Bring `auditor` (fresh, for the table) to the table's latest stored audit state
    before position `before` (None: the latest of all), then fold the table's stored
    events after that state and before `before` as history (nothing goes out). Where
    it then stands, or None, `auditor` untouched, when no state is stored there or
    the stored events disagree with it (each device's last seq at its position: a run
    that stored its state but not all its events, or events another writer stored
    since): the caller then replays the history (`context`)."""
    rows = _state_before(store, table_id, before)
    if not rows:
        return None
    pos = int(rows[0]["pos"])
    try:
        clock = {str(d): int(s) for d, s in orjson.loads(rows[0]["clock"]).items()}
        state = orjson.loads(rows[0]["state"])
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return None
    if last_seqs(store, table_id, pos) != clock:
        return None
    try:
        auditor.import_state(state)
    except StateError:
        return None
    if before is None or before > pos + 1:
        with _quiet(auditor):
            for st in stream(store, table_id, pos + 1, None if before is None else before - 1):
                auditor.feed(st.event)
                if st.pos > pos:
                    pos, clock[st.event.device_id] = st.pos, max(
                        st.event.seq, clock.get(st.event.device_id, 0))
    return Standing(pos, clock)


def _state_before(store: Store, table_id: str, before: int | None) -> list[dict[str, Any]]:
    """The table's latest stored audit state before position `before` (None: of all),
    read in windows of positions back from there through `audit_states`' sort key."""
    extent = lookup.table_extent(store, table_id)
    top = store.query("SELECT max(pos) AS p, count() AS n FROM audit_states "
                      "WHERE table_id = {t:String} AND pos >= {a:UInt64}",
                      {"t": table_id, "a": 0 if extent is None else extent[1]})
    hi = (int(top[0]["p"]) + 1 if top and int(top[0]["n"]) else
          0 if extent is None else extent[1] + 1) if before is None else before
    width = lookup.WINDOW
    while hi > 0:
        lo = max(0, hi - width)
        rows = store.query("SELECT pos, clock, state FROM audit_states FINAL WHERE "
                           "table_id = {t:String} AND pos >= {a:UInt64} AND pos < {b:UInt64} "
                           "ORDER BY pos DESC LIMIT 1", {"t": table_id, "a": lo, "b": hi})
        if rows:
            return rows
        hi, width = lo, width * 4
    return []


def books_open(store: Store) -> list[str]:
    """The tables whose latest audit state is not closed, in table order: an audit
    left them with the books open (`pitwatch audit` without `--final`). Read through
    `audit_latest` (a row of states a table), not every stored state."""
    return [r["table_id"] for r in store.query(
        "SELECT table_id FROM audit_latest GROUP BY table_id "
        "HAVING argMaxMerge(last_closed) = 0 ORDER BY table_id")]


def latest_positions(store: Store) -> dict[str, int]:
    """Each table's position of its latest stored audit state, through `audit_latest`."""
    return {r["table_id"]: int(r["p"]) for r in store.query(
        "SELECT table_id, maxMerge(last_pos) AS p FROM audit_latest GROUP BY table_id")}


@dataclass(frozen=True, slots=True)
class OpenRound:
    table_id: str
    round_id: str
    #: device time (ms since the epoch, UTC) of its RoundStarted, else of its last event
    since: int


def open_rounds(store: Store) -> list[OpenRound]:
    """The rounds the store's audit states leave open (a table's latest state, the
    books not closed after it), the oldest first, through `audit_latest`."""
    return [OpenRound(r["table_id"], r["r"], int(r["since"])) for r in store.query(
        "SELECT table_id, argMaxMerge(last_round) AS r, argMaxMerge(last_since_ms) AS "
        "since, argMaxMerge(last_closed) AS c FROM audit_latest GROUP BY table_id "
        "HAVING r != '' AND c = 0 ORDER BY since, table_id")]


def recent_positions(store: Store, table_id: str, upto: int, n: int) -> dict[str, int]:
    """The positions of the table's last `n` stored events up to position `upto`, by
    event id: what a record clock that had met them would hold in its window of recent
    ids (`order.WINDOW`), so that a redelivery of one of them in a later run keeps its
    place, as in one run."""
    return lookup.recent(store, table_id, upto, n)


#: Seqs of a device's quarantine read at once: a rebuild reads the blocks of the seqs it
#: meets, through `refused_events`' sort key (table, device, seq), never a table's whole
#: quarantine.
SEQ_BLOCK = 4096


class _Seqs(dict[int, list[Event]]):
    """One device's quarantined events by seq; with `load`, read from the store a block
    of `SEQ_BLOCK` seqs at a time, the first time a seq of the block is asked for."""

    def __init__(self, load: Callable[[int, int], Iterable[Event]] | None = None) -> None:
        super().__init__()
        self._load = load
        self._blocks: set[int] = set()

    def add(self, ev: Event) -> None:
        at = self.setdefault(ev.seq, [])
        if all(e.event_id != ev.event_id for e in at):
            at.append(ev)

    def __missing__(self, seq: int) -> list[Event]:
        block = seq // SEQ_BLOCK
        if self._load is None or block in self._blocks:
            return []
        self._blocks.add(block)
        for ev in self._load(block * SEQ_BLOCK, (block + 1) * SEQ_BLOCK):
            self.add(ev)
        return dict.get(self, seq, [])


class _Devices(dict[str, _Seqs]):
    """device -> its `_Seqs`; with `load`, every device's, read as asked for."""

    def __init__(self, load: Callable[[str, int, int], Iterable[Event]] | None = None
                 ) -> None:
        super().__init__()
        self._load = load

    def __missing__(self, device: str) -> _Seqs:
        if self._load is None:
            raise KeyError(device)
        load = self._load
        self[device] = got = _Seqs(lambda lo, hi: load(device, lo, hi))
        return got


class Quarantine:
    """A table's quarantined events (`refused_events`: each taken into its device's
    record as refused, never stored as play), fed back at their place by a rebuild
    from the store, each through `TableAuditor.refused`: right after its device's
    previous event (`after(ev)`, once `ev` is fed: the table's order as the device sent
    them, which a signed order covers), else, when that event was not fed (read before
    the context, or not stored), right before its device's next event (`due(ev)`). One
    is placed only where its chain links (its seq after the event's, its prev_digest
    the event's digest, or the next event's prev_digest its digest), so a device that
    restarted its seqs gets each chain's own. Read from the store a block of seqs of a
    device at a time, as the rebuild meets them (`SEQ_BLOCK`): a rebuild reads the
    quarantine around what it reads, not the table's whole quarantine. A store made
    before the quarantine has none: its rebuild is as it was."""

    def __init__(self, store: Store | None, table_id: str) -> None:
        #: device -> seq -> the quarantined events there (one a chain)
        self.held = _Devices(None if store is None else self._reader(store, table_id))
        #: device -> its last event read (seq, the event or its digest), of a device
        #: that may have any held
        self.tip: dict[str, tuple[int, bytes | Event]] = {}
        self.done: set[str] = set()
        self._lazy = store is not None

    @staticmethod
    def _reader(store: Store, table_id: str) -> Callable[[str, int, int], list[Event]]:
        def read(device: str, lo: int, hi: int) -> list[Event]:
            return [quarantined_event(r) for r in store.query(
                "SELECT DISTINCT table_id, device_id, seq, event_id, writer, raw, reason "
                "FROM refused_events WHERE table_id = {t:String} AND device_id = {d:String} "
                "AND seq >= {a:UInt64} AND seq < {b:UInt64} ORDER BY seq, event_id",
                {"t": table_id, "d": device, "a": lo, "b": hi})]
        return read

    def _has(self, device: str) -> bool:
        """Whether `device` may have quarantined events (any, read as asked for)."""
        return self._lazy or device in self.held

    @classmethod
    def of(cls, events: Iterable[Event]) -> Quarantine:
        """The quarantine of these refused events (a case folder's evidence of them)."""
        q = cls(None, "")
        q._hold(events)
        return q

    def _hold(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.held.setdefault(ev.device_id, _Seqs()).add(ev)

    def saw(self, ev: Event) -> None:
        """The rebuild read `ev` (primed or fed): its device's record stands there (its
        digest taken when a quarantined event is met after it)."""
        if self._has(ev.device_id) and ev.seq >= self.tip.get(ev.device_id, (0, b""))[0]:
            self.tip[ev.device_id] = (ev.seq, ev)

    def _after(self, device: str, seq: int, last: bytes | Event,
               rounds: set[str] | None = None) -> list[Event]:
        """The quarantined events that continue `device`'s chain from its event at
        `seq` (`last`: that event, or its digest)."""
        out: list[Event] = []
        if not self._has(device):
            return out
        at = self.held[device]
        while at[seq + 1]:
            dig = last if isinstance(last, bytes) else digest(last)
            q = next((q for q in at[seq + 1] if q.prev_digest == dig
                      and q.event_id not in self.done
                      and (rounds is None or (q.round_id or "") in rounds)), None)
            if q is None:
                break
            out.append(q)
            self.done.add(q.event_id)
            seq, last = q.seq, q
        if out:
            self.tip[device] = (seq, last)
        return out

    def after(self, ev: Event) -> list[Event]:
        """The quarantined events right after `ev` (fed) in its device's record, in
        order: the run that continues its chain."""
        if not self._has(ev.device_id):
            return []
        self.saw(ev)
        return self._after(ev.device_id, ev.seq, ev)

    def due(self, ev: Event) -> list[Event]:
        """The quarantined events of `ev`'s device not yet fed that its chain links to
        right before it (after the last event of the device read), in order."""
        out: list[Event] = []
        if self._has(ev.device_id):
            at = self.held[ev.device_id]
            since = self.tip.get(ev.device_id, (0, b""))[0]
            seq, prev = ev.seq, ev.prev_digest
            while seq - 1 > since:
                q = next((q for q in at[seq - 1] if q.event_id not in self.done
                          and digest(q) == prev), None)
                if q is None:
                    break
                out.append(q)
                self.done.add(q.event_id)
                seq, prev = q.seq, q.prev_digest
            out.reverse()
            self.saw(ev)
        return out

    def trailing(self, rounds: set[str]) -> list[Event]:
        """At the end of what a rebuild read: each device's quarantined events that
        continue its chain from the last event of it read, of the `rounds` rebuilt (the
        record took them in, and nothing of their device came after them in what was
        read)."""
        out: list[Event] = []
        for device, (seq, dig) in list(self.tip.items()):
            out += self._after(device, seq, dig, rounds)
        return out

    def feed(self, auditor: TableAuditor, ev: Event) -> None:
        """Feed `ev` to `auditor`, with the quarantined events due before and after it."""
        for q in self.due(ev):
            auditor.refused(q, q.refused or "")
        auditor.feed(ev)
        for q in self.after(ev):
            auditor.refused(q, q.refused or "")
