"""Audit event files with the engine in process and land the results in a store."""

from __future__ import annotations

import gc
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.auditor import Auditor, FoldWatch, RoundSummary, TableAuditor
from ..engine.errors import EngineError
from ..engine.record import PREFIX, Fed
from ..engine.violation import Violation
from ..events.avro import digest
from ..events.files import Rejected, expand, read_files
from ..events.jsonl import dumps
from ..events.keys import KeyRegistry
from ..events.model import Event
from ..events.order import in_record_order
from ..events.schema import released_writers
from ..packs.registry import select
from ..store import lookup
from ..store.base import Store
from ..store.batch import BatchWriter
from ..store.first_copy import first_copies
from ..store.history import (
    OpenRound,
    Standing,
    books_open,
    continue_history,
    latest_positions,
    open_rounds,
    recent_positions,
    resume_state,
)
from ..store.order import STRIDE, WINDOW, Positions, table_clock
from ..store.rows import refused_row, round_row, state_row, violation_row

#: A round is incomplete once a later event of its table carries a device ts this much
#: after the round's last event (docs/procedure.md, "When a round is incomplete"); the
#: streaming worker applies the same rule, and its processing-time rule on top.
DEFAULT_ROUND_TIMEOUT_MS = 15 * 60 * 1000
ACCEPTED, REFUSED = Fed.ACCEPTED, Fed.REFUSED
#: Accepted events of tables with stored history checked against the store at a time.
PENDING = 2000
#: The `source` of a dead letter the record refused (not a file's malformed record).
REFUSED_SOURCE = "record"


@dataclass
class AuditReport:
    files: int = 0
    events: int = 0
    #: malformed records set aside (`on_reject`), and events the record (or the
    #: store's first copy) refused, never stored, set aside too (`on_refused`)
    rejected: int = 0
    refused: int = 0
    tables: set[str] = field(default_factory=set)
    games: Counter[str] = field(default_factory=Counter)
    rounds: int = 0
    incomplete: int = 0
    wagered: int = 0
    paid: int = 0
    collected: int = 0
    returned: int = 0
    #: the new findings (not in the store before the run), by code, severity and table
    by_code: Counter[str] = field(default_factory=Counter)
    by_severity: Counter[str] = field(default_factory=Counter)
    by_table: Counter[str] = field(default_factory=Counter)
    #: the findings whose violation id the store held before the run (an earlier audit
    #: of the same input found them), by code: apart from the new ones
    known: Counter[str] = field(default_factory=Counter)
    #: every finding, new and known (when kept), and the ids of the known ones
    violations: list[Violation] = field(default_factory=list)
    known_ids: set[str] = field(default_factory=set)
    #: the rounds the store's books leave open after the run, the oldest first: each
    #: is judged when its table's next events come, or by `--final`
    open_rounds: list[OpenRound] = field(default_factory=list)
    #: the tables whose books the run could not close (`finish`): no stored state of
    #: theirs agrees with their stored events (written by another writer since)
    unclosed: list[str] = field(default_factory=list)
    #: bugs in the engine met on the way (never violations: pitwatch.engine.errors)
    engine_errors: list[EngineError] = field(default_factory=list)
    #: how many devices the key registry holds (None: no registry, signatures not required)
    signing_devices: int | None = None
    #: CPU seconds of each process of `audit --jobs N` (for benches: the busiest is the
    #: critical path on a machine with N free cores)
    worker_cpu: list[float] = field(default_factory=list)
    #: the tables an event's row of may have been stored twice: a stored event moved no
    #: device forward (the record clock's `behind`; a copy the record did not accept is
    #: not stored), or the table's history was in the store already. After the audit the
    #: store merges the replaced rows of these tables' events only (`Store.dedupe`):
    #: two rows of one event have one event id, and an event met again moves no device
    #: forward, so a table whose clock counted none behind, with no history stored,
    #: holds no event twice. Counting all of `events` with FINAL took a quarter of a
    #: second after the last of 1.08M events.
    stored_again: set[str] = field(default_factory=set)

    def add_round(self, s: RoundSummary) -> None:
        self.rounds += 1
        self.incomplete += not s.complete
        self.games[game_of(s)] += 1
        self.wagered += s.wagered
        self.paid += s.paid
        self.collected += s.collected
        self.returned += s.returned

    def rounds_only(self) -> AuditReport:
        """What `add_round` added up, alone (an `audit --jobs` worker's, for `add_rounds`)."""
        return AuditReport(rounds=self.rounds, incomplete=self.incomplete,
                           games=self.games.copy(), wagered=self.wagered, paid=self.paid,
                           collected=self.collected, returned=self.returned)

    def add_rounds(self, other: AuditReport) -> None:
        """Add what `add_round` added up in `other`; a game new here comes last."""
        self.rounds += other.rounds
        self.incomplete += other.incomplete
        self.games.update(other.games)
        self.wagered += other.wagered
        self.paid += other.paid
        self.collected += other.collected
        self.returned += other.returned

    def add_violation(self, v: Violation, known: bool = False) -> None:
        if known:
            self.known[v.code] += 1
            return
        self.by_code[v.code] += 1
        self.by_severity[v.severity] += 1
        self.by_table[v.table_id] += 1


def game_of(s: RoundSummary) -> str:
    """A round's game as the report counts it: its jurisdiction and game."""
    return f"{s.jurisdiction} {s.game}"


def _progress(events: Iterable[Event], enabled: bool) -> Iterable[Event]:
    """The events, through a progress bar when `enabled` (else untouched: no generator
    layer in the way of the hot loop)."""
    return _with_bar(events) if enabled else events


def _with_bar(events: Iterable[Event]) -> Iterator[Event]:
    from tqdm import tqdm

    with tqdm(unit=" events", unit_scale=True, file=sys.stderr, desc="audit",
              mininterval=0.5) as bar:
        n = 0
        for ev in events:
            yield ev
            n += 1
            if n == 5000:
                bar.update(n)
                n = 0
        bar.update(n)


#: The cyclic garbage collector's thresholds while an audit runs (CPython's own: 700, 10,
#: 10). An audit makes millions of short-lived objects (events, payloads, rows) and
#: next to no cycles, and CPython looks for cycles among the young every 700 objects
#: made: 4% of the `--no-store` time and 6% of the audit into chDB, whose batches keep
#: their events long enough to age them (267k events); the peak RSS is the same.
AUDIT_GC_THRESHOLDS = (10_000, 20, 20)


@contextmanager
def _collecting_less() -> Iterator[None]:
    """`AUDIT_GC_THRESHOLDS` for the duration, the thresholds before restored after."""
    before = gc.get_threshold()
    gc.set_threshold(*AUDIT_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def audit_events(
    events: Iterable[Event],
    *,
    store: Store | None = None,
    on_violation: Callable[[Violation], None] | None = None,
    on_known: Callable[[Violation], None] | None = None,
    keep_violations: bool = True,
    round_timeout_ms: int = DEFAULT_ROUND_TIMEOUT_MS,
    report: AuditReport | None = None,
    finish: bool = True,
    keys: KeyRegistry | None = None,
    on_round: Callable[[RoundSummary], None] | None = None,
    on_engine_error: Callable[[EngineError], None] | None = None,
    books: bool = True,
    on_refused: Callable[[Rejected], None] | None = None,
    watch: FoldWatch | None = None,
) -> AuditReport:
    """Feed events through one auditor; violations go out as they are found (and round
    summaries and engine errors, to `on_round` and `on_engine_error` when given).

    Without `finish`, a round still open at the end of the input stays open, as in a
    stream that goes on: into a store, each table's engine state is stored after its
    events (`audit_states`), and the next run continues it from there
    (`store.history.resume_state`), judging the open round when the table's next events
    come. With `finish`, the end of the input closes the books: a round still open is
    incomplete, and a signing device's unsigned tail a truncated chain; into a store,
    of every table whose books an earlier run left open too (`books`: False in an
    `audit --jobs N` worker, whose main process does that once for all).

    Into a store, a finding whose violation id the store held before the run (an
    earlier audit of the same input found it) is known: it goes to `on_known` when
    given (else to `on_violation`) and is counted apart (`AuditReport.known`).

    Into a store, an event is stored only if the record ACCEPTED it (`Fed`): an
    identical copy of a recorded event stores nothing (the first row stays), and an
    event the record REFUSED (a different copy of a recorded event, a late one, a
    device over the limit: reported as a finding) goes to `on_refused` as a dead letter
    with the finding's reason (`refused_letter`), with or without a store. Only a stored
    event moves its table's record clock (`store.order`): one that leaves no row leaves
    no trace in the positions, as a writer resumed from the store finds them."""
    rep = report or AuditReport()
    rep.signing_devices = None if keys is None else len(keys.devices)
    writer = (None if store is None
              else BatchWriter(store, store.batch_rows))
    positions = Positions(store)
    known = _Known(store)
    last: list[Violation | None] = [None]  # the latest finding, for a refusal's reason

    def violation(v: Violation) -> None:
        last[0] = v
        seen = known.has(v)
        rep.add_violation(v, known=seen)
        if keep_violations:
            rep.violations.append(v)
            if seen:
                rep.known_ids.add(v.violation_id)
        if writer is not None:
            writer.add("violations", violation_row(v))
        if seen and on_known is not None:
            on_known(v)
        elif on_violation is not None:
            on_violation(v)

    def round_done(s: RoundSummary) -> None:
        rep.add_round(s)
        if writer is not None:
            writer.add("rounds", round_row(s))
        if on_round is not None:
            on_round(s)

    def engine_error(e: EngineError) -> None:
        rep.engine_errors.append(e)
        if on_engine_error is not None:
            on_engine_error(e)

    def refuse(ev: Event) -> None:
        v = last[0]
        rep.refused += 1
        if writer is not None and ev.refused is not None and taken(auditor, ev):
            # its device's record took it in (EVENT_REFUSED): quarantined, so a rebuild
            # from the store finds it at its place (`history.Quarantine`)
            writer.add("refused_events", refused_row(ev, ev.refused))
        if on_refused is not None:
            on_refused(refused_letter(ev, v if v is not None and v.event_id == ev.event_id
                                     else None))

    def new_auditor() -> Auditor:
        a = Auditor(select, violation, round_done, engine_error,
                    round_timeout_ms=round_timeout_ms, keys=keys, released=released_writers())
        a.watch = watch  # a read-only watcher of the fold (`TableAuditor.watch`)
        return a

    auditor = new_auditor()
    # tables with a stored history: only theirs is asked for (a query each costs chDB
    # tens of milliseconds, and a fresh store has none)
    stored = stored_tables(store) if store is not None else set()
    clocks = positions.tables
    #: of each table resumed from the store, its last stored events' positions: a
    #: resumed record clock's window of recent ids starts empty, and a redelivery of one
    #: of them keeps its place as in one run (the table is among `stored_again`)
    recent: dict[str, dict[str, int]] = {}
    #: accepted events of tables with stored history, and accepted events that do not
    #: move their device forward on the record clock, checked against the store's
    #: copies before they are stored (`first_copies`)
    pending: list[tuple[Event, int]] = []

    def store_first_copies() -> None:
        assert store is not None and writer is not None
        if not pending:
            return
        writer.flush()  # the run's earlier events in the store, to be compared
        got = first_copies(store, [(ev, (ev, pos)) for ev, pos in pending])
        pending.clear()
        for ev, pos in got.new:
            writer.add_event(ev, pos)
        for (ev, _), why in got.different:
            rep.refused += 1
            if on_refused is not None:
                on_refused(refused_letter(ev, None, why))

    if writer is not None:
        add_at, held = writer.hand_over()
    n = 0
    with _collecting_less():
        for ev in events:
            n += 1
            if writer is None:
                if auditor.feed(ev) is REFUSED:
                    refuse(ev)
                continue
            clock = clocks.get(ev.table_id)
            if clock is None:  # the table's first event
                if ev.table_id in stored:
                    rep.stored_again.add(ev.table_id)
                    known.load(ev.table_id)
                    continue_history(store, auditor.table(ev.table_id), ev)  # type: ignore[arg-type]
                    clock = positions.clock(ev)  # resumed from the store
                    recent[ev.table_id] = recent_positions(
                        store, ev.table_id, clock.total * STRIDE + clock.extra, WINDOW)  # type: ignore[arg-type]
                else:  # nothing stored: the table's record clock starts at 0
                    clock = clocks[ev.table_id] = table_clock()
            if recent:
                was = recent.get(ev.table_id)
                if was is not None:  # a table with stored history: the first copy wins
                    at = was.get(ev.event_id)  # a stored event again keeps its place
                    fed = auditor.feed(ev)
                    if fed is ACCEPTED:
                        pending.append((ev, clock.position(ev) if at is None else at))
                        if len(pending) >= PENDING:
                            store_first_copies()
                    elif fed is REFUSED:
                        refuse(ev)
                    continue
            fed = auditor.feed(ev)
            if fed is not ACCEPTED:  # no row, and no place on the record clock
                if fed is REFUSED:
                    refuse(ev)
                continue
            if ev.seq <= clock.last.get(ev.device_id, 0):
                # accepted, yet not past its device's last seq (a restart, or a copy of
                # an event sent as one): its id may be stored already
                pending.append((ev, clock.position(ev)))
                continue
            pos = add_at(clock, ev)  # its position on the clock, and its row handed over
            if pos is not None:  # not taken in C: the writer keeps it
                writer.add_event(ev, pos)
            elif len(held) >= writer.batch_rows:
                writer.flush_table("events")
        rep.events += n
        rep.tables.update(auditor.tables)
        rep.stored_again.update(t for t, c in clocks.items() if c.behind)
        if writer is None:
            if finish:
                auditor.finish()
            return rep
        assert store is not None
        standings = {t: Standing(c.total * STRIDE + c.extra, dict(c.last))
                     for t, c in clocks.items()}
        closer = new_auditor()  # the other tables whose books are closed
        finished: set[str] = set()  # the run's tables it closed
        others: dict[str, Standing] = {}  # the other tables closed, where they stand
        if finish and stored:
            finished, others = _close_books(store, auditor, closer, standings, known, books,
                                            rep.unclosed)
        elif finish:  # a store with no history: the run's tables are all its books
            auditor.finish()
            finished = set(standings)
        store_first_copies()
        writer.flush()  # the states after the events they cover
        states = [_state_row(t, a, standings[t], t in finished)
                  for t, a in auditor.tables.items()]
        states += [_state_row(t, a, others[t], True) for t, a in closer.tables.items()]
        store.insert("audit_states", states)
    store.dedupe(rep.stored_again)
    if books:
        rep.open_rounds = open_rounds(store) if stored else sorted(
            (OpenRound(r["table_id"], r["open_round"], r["open_since_ms"]) for r in states
             if r["open_round"]), key=lambda o: (o.since, o.table_id))
    return rep


def _close_books(store: Store, auditor: Auditor, closer: Auditor,
                 standings: dict[str, Standing], known: _Known, books: bool,
                 unclosed: list[str]) -> tuple[set[str], dict[str, Standing]]:
    """The end of the input closes the books (`audit_events`' `finish`): each table of
    the run whose stored history goes no further than the run is finished; with
    `books`, so is every other table whose latest stored state is open (a table the
    run audited an earlier part of again too), from that state, by `closer`, in table
    order (one with no state that agrees with its stored events: added to `unclosed`).
    The run's tables finished, and where each other table finished stands."""
    further = latest_positions(store)
    finished = set()
    for t, a in auditor.tables.items():
        if further.get(t, -1) <= standings[t].pos:
            a.finish()
            finished.add(t)
    others: dict[str, Standing] = {}
    if not books:
        return finished, others
    for t in books_open(store):
        if t in finished:
            continue
        known.load(t)
        stand = resume_state(store, closer.table(t), t)
        if stand is None:
            del closer.tables[t]
            unclosed.append(t)
            continue
        closer.tables[t].finish()
        others[t] = stand
    return finished, others


def _state_row(table_id: str, a: TableAuditor, at: Standing, closed: bool) -> dict[str, Any]:
    """The `audit_states` row of where `a` stands."""
    r = a.round
    if r is None or not a.round_open:
        return state_row(table_id, at.pos, at.clock, a.export_state(), closed, "", 0)
    return state_row(table_id, at.pos, at.clock, a.export_state(), closed, r.round_id,
                     r.started_ts or r.last_ts)


def taken(auditor: Auditor | TableAuditor, ev: Event) -> bool:
    """Whether `ev`, refused, was taken into its device's record (`TableAuditor.refused`:
    its seq holds its digest there), not merely refused as a copy or out of place: the
    condition for its quarantine row, in the embedded audit and the streaming worker
    (`pitwatch.processors.state`) alike. `auditor`: the tables' auditor, or `ev`'s table's."""
    table = auditor if isinstance(auditor, TableAuditor) else auditor.tables.get(ev.table_id)
    dev = None if table is None else table.devices.get(ev.device_id)
    return dev is not None and dev.seen and dev.known(ev.seq, digest(ev)[:PREFIX])


def refused_letter(ev: Event, finding: Violation | None, why: str | None = None
                   ) -> Rejected:
    """The dead letter of an event the record refused: the event as JSON Lines, and
    why (`why` as given; else the finding raised on it, when there is one)."""
    if why is None:
        why = "refused by the record, never stored: " + (
            f"table {ev.table_id} {ev.device_id} seq {ev.seq} event {ev.event_id}: "
            + (f"{finding.code} ({finding.severity}): {finding.message}" if finding is not None
               else "not applied to the record (see the table's findings)"))
    return Rejected(REFUSED_SOURCE, 0, why, dumps(ev).decode("utf-8", "replace"))


class _Known:
    """Whether a violation of a table asked (`load`) was stored before the run: the ids
    of its round, read through `round_violations`' sort key (table, round) the first
    time the run raises one of the round's violations (before the run writes any of
    them), or a table-level one's id through `violation_ids`; never every violation of
    the table."""

    def __init__(self, store: Store | None) -> None:
        self.store = store
        self.loaded: set[str] = set()
        self.rounds: dict[tuple[str, str], set[str]] = {}
        self.table_level: dict[tuple[str, str], bool] = {}

    def load(self, table_id: str) -> None:
        if self.store is not None:
            self.loaded.add(table_id)

    def has(self, v: Violation) -> bool:
        if self.store is None or v.table_id not in self.loaded:
            return False
        if not v.round_id:
            at = (v.table_id, v.violation_id)
            if at not in self.table_level:
                self.table_level[at] = bool(lookup.stored_violations(
                    self.store, [v.violation_id], v.table_id))
            return self.table_level[at]
        key = (v.table_id, v.round_id)
        if key not in self.rounds:
            self.rounds[key] = lookup.round_violation_ids(self.store, *key)
        return v.violation_id in self.rounds[key]


def stored_tables(store: Store) -> set[str]:
    """The tables the store holds events of, from the index of each table's devices (a
    row a device, never a scan of the events): none, without asking, in a store that
    says it is `empty` (a new one, still opening: `StoreProcess`)."""
    if getattr(store, "empty", False):
        return set()
    return {r["table_id"] for r in store.query("SELECT DISTINCT table_id FROM table_devices")}


def audit_paths(
    paths: Iterable[str | Path],
    *,
    store: Store | None = None,
    on_violation: Callable[[Violation], None] | None = None,
    on_reject: Callable[[Rejected], None] | None = None,
    progress: bool = False,
    keep_violations: bool = True,
    keys: KeyRegistry | None = None,
    on_known: Callable[[Violation], None] | None = None,
    finish: bool = True,
    on_refused: Callable[[Rejected], None] | None = None,
) -> AuditReport:
    """The events of the files (or directories) named, audited by `audit_events`; with
    none, into a store, with `finish`: the store's books closed."""
    files = in_record_order(expand(paths))  # refused here, before any finding
    rep = AuditReport(files=len(files))

    def reject(r: Rejected) -> None:
        rep.rejected += 1
        if on_reject is not None:
            on_reject(r)

    total = sum(f.stat().st_size for f in files)
    events = _progress(read_files(files, reject), progress and total > 5_000_000)
    return audit_events(events, store=store, on_violation=on_violation, on_known=on_known,
                        keep_violations=keep_violations, report=rep, keys=keys,
                        finish=finish, on_refused=on_refused)
