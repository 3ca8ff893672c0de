"""The per-table auditor: cuts a table's stream into rounds, keeps each device's record
honest (seq and prev_digest), treats redeliveries as no-ops, runs the rule pack's
checks on every event and folds it into the round.

Violations go out through `on_violation` the moment the evidence arrives; a round's
summary goes out through `on_round` when it ends (or is found incomplete). Time-outs
come in as an argument (`expire(now_ms)`), never from a clock. A check that raises
anything but `Undecidable` is an engine error: counted in `engine_errors`, logged, sent
to `on_engine_error`, never a violation (`pitwatch.engine.errors`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..events.avro import digest
from ..events.model import (
    Event,
    RoundEnded,
    RoundStarted,
    ShoeLoaded,
    TableOpened,
    WagerReturned,
)
from .errors import FOLD, EngineErrorSink, engine_error
from .rulepack import Finding, Rule, RulePack, Undecidable
from .state import Round, TableState
from .violation import Violation

#: How many recent seq numbers per device are remembered to tell a redelivery (same
#: event_id) from a conflict (another event with the same seq).
SEQ_WINDOW = 4096
#: How many of them a snapshot keeps: a worker restored from one sees redeliveries only
#: back to the last committed offset, seconds of traffic, and snapshots stay small.
SNAPSHOT_SEQ_WINDOW = 256
#: How many ended rounds per table are remembered to refuse late events for them.
CLOSED_WINDOW = 64


@dataclass(frozen=True, slots=True)
class RoundSummary:
    round_id: str
    table_id: str
    jurisdiction: str
    game: str
    pack: str
    pack_version: str
    dealer_id: str
    seats: tuple[int, ...]
    events: int
    wagered: int
    paid: int
    collected: int
    returned: int
    violations: int
    complete: bool
    started: int
    ended: int

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


class _Device:
    __slots__ = ("last_event", "last_seq", "window")

    def __init__(self) -> None:
        self.last_seq = 0
        self.last_event: Event | None = None
        self.window: OrderedDict[int, str] = OrderedDict()

    def trimmed(self, keep: int) -> _Device:
        d = _Device()
        d.last_seq, d.last_event = self.last_seq, self.last_event
        d.window = OrderedDict(list(self.window.items())[-keep:])
        return d


PackSelector = Callable[[str, str], RulePack]
ViolationSink = Callable[[Violation], None]
RoundSink = Callable[[RoundSummary], None]


class TableAuditor:
    def __init__(self, table_id: str, select_pack: PackSelector,
                 on_violation: ViolationSink, on_round: RoundSink,
                 on_engine_error: EngineErrorSink | None = None) -> None:
        self.table = TableState(table_id)
        self.select_pack = select_pack
        self.pack = select_pack("OTHER", "OTHER")
        self.on_violation = on_violation
        self.on_round = on_round
        self.on_engine_error = on_engine_error
        #: exceptions from checks or the fold other than `Undecidable` (bugs)
        self.engine_errors = 0
        self.devices: dict[str, _Device] = {}
        self.round: Round | None = None
        self.pending_open: TableOpened | None = None
        self.closed: OrderedDict[str, None] = OrderedDict()
        #: record violations of a round raised before the round opened (on its first event)
        self.early: dict[str, int] = {}

    # --- input -----------------------------------------------------------------------

    def feed(self, ev: Event) -> None:
        if not self._record(ev):
            return
        rid = ev.round_id
        if rid is None:
            self._table_event(ev)
            return
        r = self.round
        if r is None or r.round_id != rid:
            if rid in self.closed:
                self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                                   f"{ev.type} for round {rid} after it ended")
                return
            if r is not None and not r.ended:
                self._incomplete(r, ev.event_id, ev.ts, f"the table moved on to round {rid}")
            r = self.round = self._open_round(rid)
        elif r.ended:
            self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                               f"{ev.type} after the round ended")
            return
        p = ev.payload
        t = type(p)
        void = False
        if not r.started and t is not RoundStarted:
            self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                               f"{ev.type} before RoundStarted")
            void = True
        elif t is not WagerReturned or not r.is_void_handback(p):
            for rule in self.pack.by_type[t]:
                try:
                    f = rule.check(r, ev)
                except Undecidable as e:
                    # the record cannot decide it (e.g. after lost events): say so, keep
                    # the event out of the fold, and go on with the stream
                    self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                                       f"{ev.type} cannot be judged in this round's state "
                                       f"({rule.code} check: {e})")
                    void = True
                    break
                except Exception as e:  # a bug: reported apart, the other checks go on
                    self._engine_error(ev, _where(rule), e)
                    continue
                if f is not None:
                    self._emit(r, rule.code, rule.severity, rule.citation, ev, f)
                    if rule.voids:
                        void = True
                        break
        try:
            r.apply(ev, void)
        except Exception as e:  # a bug in the fold: reported apart, the stream goes on
            self._engine_error(ev, FOLD, e)
        if t is RoundEnded and not void:
            self._close(r, complete=True)

    def expire(self, now_ms: int, timeout_ms: int) -> None:
        """Close the open round as incomplete if nothing came for it for `timeout_ms`
        by the caller's clock `now_ms` (device time in replays, wall time when live)."""
        r = self.round
        if r is not None and not r.ended and now_ms - r.last_ts > timeout_ms:
            self._incomplete(r, r.last_event_id, now_ms,
                             f"no RoundEnded within {timeout_ms / 1000:g} s of its last event")

    def finish(self) -> None:
        """End of input: a round still open is incomplete."""
        r = self.round
        if r is not None and not r.ended:
            self._incomplete(r, r.last_event_id, r.last_ts, "the input ended before RoundEnded")

    # --- snapshots ---------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """Everything the auditor knows, as plain objects (the callbacks excepted): a
        snapshot that `import_state` turns back into the same auditor (with the most
        recent SNAPSHOT_SEQ_WINDOW seqs of each device)."""
        devices = {k: d.trimmed(SNAPSHOT_SEQ_WINDOW) for k, d in self.devices.items()}
        return {"table": self.table, "devices": devices, "round": self.round,
                "pending_open": self.pending_open, "closed": self.closed,
                "pack": (self.table.jurisdiction, self.table.game)}

    def import_state(self, state: dict[str, Any]) -> None:
        self.table = state["table"]
        self.devices = state["devices"]
        self.round = state["round"]
        if self.round is not None:
            self.round.table = self.table
        self.pending_open = state["pending_open"]
        self.closed = state["closed"]
        self.pack = self.select_pack(*state["pack"]) if self.table.opened \
            else self.select_pack("OTHER", "OTHER")

    # --- the record: seq, digest, redelivery -----------------------------------------

    def _record(self, ev: Event) -> bool:
        """Check the device's record; False when the event is not to be applied."""
        dev = self.devices.get(ev.device_id)
        if dev is None:
            dev = self.devices[ev.device_id] = _Device()
        seq = ev.seq
        last = dev.last_event
        if last is None:
            if seq == 1 and ev.prev_digest is not None:
                self._digest_mismatch(ev, None)
        elif seq <= dev.last_seq:  # the window holds seqs up to last_seq only
            seen = dev.window.get(seq)
            if seen is None:
                self._raise_record("SEQUENCE_CONFLICT", ev, ev.round_id,
                                   f"{ev.device_id} seq {seq} is behind {dev.last_seq} and unknown")
            elif seen != ev.event_id:
                self._raise_record("SEQUENCE_CONFLICT", ev, ev.round_id,
                                   f"{ev.device_id} seq {seq} carried {seen} and now {ev.event_id}")
            return False  # a redelivery is a no-op; a conflicting copy is not applied
        elif seq > dev.last_seq + 1:
            gap = (f"seq {dev.last_seq + 1}" if seq == dev.last_seq + 2
                   else f"seq {dev.last_seq + 1}–{seq - 1}")
            self._raise_record("SEQUENCE_GAP", ev, ev.round_id,
                               f"{ev.device_id} skipped {gap} (got {seq} after {dev.last_seq})")
        else:
            expected = digest(last)
            if ev.prev_digest != expected:
                self._digest_mismatch(ev, expected)
        dev.last_seq = seq
        dev.last_event = ev
        window = dev.window
        window[seq] = ev.event_id
        if len(window) > SEQ_WINDOW:
            window.popitem(last=False)
        return True

    def _digest_mismatch(self, ev: Event, expected: bytes | None) -> None:
        got = "none" if ev.prev_digest is None else ev.prev_digest.hex()[:12]
        want = "none" if expected is None else expected.hex()[:12]
        self._raise_record("DIGEST_MISMATCH", ev, ev.round_id,
                           f"{ev.device_id} seq {ev.seq} prev_digest {got}… "
                           f"does not match its previous event ({want}…)")

    # --- rounds ------------------------------------------------------------------------

    def _table_event(self, ev: Event) -> None:
        p = ev.payload
        if type(p) is TableOpened:
            if self.round is None or self.round.ended:
                self._open_table(p)
            else:
                self.pending_open = p  # the posted rules change from the next round on
        elif type(p) is ShoeLoaded:
            self.table.decks = p.decks
            self.table.counts = {}

    def _open_table(self, p: TableOpened) -> None:
        t = self.table
        t.jurisdiction, t.game, t.rules, t.opened = p.jurisdiction, p.game, p.rules, True
        if not t.decks:
            t.decks = p.rules.decks
        self.pack = self.select_pack(p.jurisdiction, p.game)

    def _open_round(self, round_id: str) -> Round:
        if self.pending_open is not None:
            self._open_table(self.pending_open)
            self.pending_open = None
        r = Round(self.table, round_id)
        r.violations = self.early.pop(round_id, 0)
        return r

    def _incomplete(self, r: Round, event_id: str, ts: int, why: str) -> None:
        severity, citation = self.pack.record_citations["ROUND_INCOMPLETE"]
        self._emit_raw(r, "ROUND_INCOMPLETE", severity, citation, event_id, ts,
                       Finding(f"round {r.round_id} has no RoundEnded: {why}"))
        self._close(r, complete=False)

    def _close(self, r: Round, complete: bool) -> None:
        r.ended = True
        self.closed[r.round_id] = None
        if len(self.closed) > CLOSED_WINDOW:
            self.closed.popitem(last=False)
        t, pack = self.table, self.pack
        self.on_round(RoundSummary(
            r.round_id, t.table_id, t.jurisdiction, t.game, pack.name, pack.version,
            r.dealer_id, r.seats, r.events, r.wagered, r.paid, r.collected, r.returned,
            r.violations, complete, r.started_ts, r.last_ts))

    # --- emitting ----------------------------------------------------------------------

    def _engine_error(self, ev: Event, where: str, exc: Exception) -> None:
        self.engine_errors += 1
        e = engine_error(ev, where, exc, self.pack.name, self.pack.version)
        if self.on_engine_error is not None:
            self.on_engine_error(e)

    def _raise_record(self, code: str, ev: Event, round_id: str | None, message: str) -> None:
        severity, citation = self.pack.record_citations[code]
        r = self.round if self.round is not None and self.round.round_id == round_id else None
        v = Violation(code, severity, self.table.table_id, round_id or "", None, None,
                      ev.event_id, (), citation, message, self.pack.name, self.pack.version,
                      ev.ts)
        if r is not None:
            r.violations += 1
        elif round_id:  # on the first event of a round not opened yet: count it there
            self.early[round_id] = self.early.get(round_id, 0) + 1
        self.on_violation(v)

    def _emit(self, r: Round, code: str, severity: str, citation: str, ev: Event,
              f: Finding) -> None:
        self._emit_raw(r, code, severity, citation, ev.event_id, ev.ts, f)

    def _emit_raw(self, r: Round, code: str, severity: str, citation: str, event_id: str,
                  ts: int, f: Finding) -> None:
        key = (code, f.seat, f.hand)
        if key in r.raised:  # one violation per code and hand per round
            return
        r.raised.add(key)
        r.violations += 1
        self.on_violation(Violation(
            code, severity, self.table.table_id, r.round_id, f.seat, f.hand, event_id,
            f.evidence, citation, f.message, self.pack.name, self.pack.version, ts))


def _where(rule: Rule) -> str:
    c = rule.check
    return f"{rule.code} {c.__module__}.{getattr(c, '__qualname__', repr(c))}"


class Auditor:
    """All tables of a stream: one `TableAuditor` each, created on first sight."""

    def __init__(self, select_pack: PackSelector, on_violation: ViolationSink,
                 on_round: RoundSink, on_engine_error: EngineErrorSink | None = None) -> None:
        self.select_pack = select_pack
        self.on_violation = on_violation
        self.on_round = on_round
        self.on_engine_error = on_engine_error
        self.tables: dict[str, TableAuditor] = {}

    @property
    def engine_errors(self) -> int:
        return sum(t.engine_errors for t in self.tables.values())

    def table(self, table_id: str) -> TableAuditor:
        t = self.tables.get(table_id)
        if t is None:
            t = self.tables[table_id] = TableAuditor(
                table_id, self.select_pack, self.on_violation, self.on_round,
                self.on_engine_error)
        return t

    def feed(self, ev: Event) -> None:
        t = self.tables.get(ev.table_id)
        if t is None:
            t = self.table(ev.table_id)
        t.feed(ev)

    def expire(self, now_ms: int, timeout_ms: int) -> None:
        for t in self.tables.values():
            t.expire(now_ms, timeout_ms)

    def finish(self) -> None:
        for t in self.tables.values():
            t.finish()
