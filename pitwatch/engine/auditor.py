"""The per-table auditor: cuts a table's stream into rounds, keeps each device's record
honest (seq and prev_digest), treats identical copies as no-ops and refuses different
ones (`record.py`), runs the rule pack's checks on every event and folds it into the
round.

A break in the record (docs/events.md, "The record": a gap, a device first seen past
seq 1, a loss the caller reports with `lost`, a device restart) is one finding a break
episode; until the record decides them again, checks that need what is missing suspend
judgement: card counts until the next ShoeLoaded, the round the break cuts through
(`Round.cut`) until the next RoundStarted. `feed` returns what the record did with the
event (`Fed`); `prime` takes a device's last stored event without judging it.

Violations go out through `on_violation` the moment the evidence arrives; a round's
summary goes out through `on_round` when it ends (or is found incomplete).

Time (docs/procedure.md, "When a round is incomplete"): the engine reads no clock. A
round is incomplete when the table's own stream shows it: its next round or a table
event arrives, or an event of the table carries a device ts more than the time-out
after the round's last event. A live worker adds the processing-time rule
(`expire_idle`) when its partition is caught up; the wall clock is never compared with
device ts.

Nor does it read a file or the environment: the released writer schemas a signed
checkpoint is held to are given to it as data (`released`, `schema.released_writers`).

A check that raises anything but `Undecidable` is an engine error: counted in
`engine_errors`, logged, sent to `on_engine_error`, never a violation
(`pitwatch.engine.errors`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..events.avro import (
    DecodeError,
    decode_single,
    digest,
    message_bytes,
    rules_from_dict,
    rules_to_dict,
)
from ..events.keys import KeyRegistry
from ..events.model import (
    SEAT_EVENTS,
    Checkpoint,
    Event,
    RoundEnded,
    RoundStarted,
    ShoeLoaded,
    TableOpened,
    WagerReturned,
)
from ..events.schema import ReleasedWriters, WriterSchema
from .backfill import Backfill, Hole
from .errors import FOLD, EngineError, EngineErrorSink, engine_error
from .record import HISTORY_SEQS, HOLE, PREFIX, Fed, _b64, _unb64
from .record import Device as _Device
from .rulepack import Finding, PostingRule, Rule, RulePack, Undecidable
from .signed_order import TableOrder
from .state import Round, TableState
from .violation import Severity, Violation, violation_id

#: The version of `export_state`'s format; `import_state` reads it and upcasts the older.
STATE_VERSION = 3
#: How many devices a table has at most (docs/events.md, "Ranges"): each keeps a
#: history, so a stream inventing device ids cannot grow a table's state and snapshot.
MAX_DEVICES = 32
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


class StateError(ValueError):
    """A snapshot this auditor cannot take: another version, or damaged."""


def _upcast_v1(state: dict[str, Any]) -> dict[str, Any]:
    """A version-1 snapshot as version 2: each device's seq window becomes a history
    of its last event alone, and the table's record was whole (no break known)."""
    out = dict(state)
    out["version"] = 2
    out["devices"] = {k: _Device.from_v1(d) for k, d in state["devices"].items()}
    out["record"] = {"episode": None, "awaiting": [], "judged_since": False,
                     "from_break": False, "lost": None, "lost_check": None, "whole": True,
                     "cut_at": None, "cut_next": None, "counts_known": True, "held": []}
    return out


def _upcast_v2(state: dict[str, Any]) -> dict[str, Any]:
    """A version-2 snapshot as version 3: no lost stretch was kept for a back-fill."""
    return {**state, "version": 3, "fill_from": None, "fill": None}


#: Upcasters by the version they read: each returns the next version's snapshot.
_UPCASTERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _upcast_v1,
                                                                     2: _upcast_v2}


PackSelector = Callable[[str, str], RulePack]
ViolationSink = Callable[[Violation], None]
RoundSink = Callable[[RoundSummary], None]
#: `TableAuditor.watch`: an event the fold takes, and its round (None: a table event)
FoldWatch = Callable[[Event, Round | None], None]


class TableAuditor:
    def __init__(self, table_id: str, select_pack: PackSelector,
                 on_violation: ViolationSink, on_round: RoundSink,
                 on_engine_error: EngineErrorSink | None = None,
                 round_timeout_ms: int | None = None, keys: KeyRegistry | None = None,
                 *, released: ReleasedWriters) -> None:
        self.table = TableState(table_id)
        #: the device keys: with them, a device in the registry must sign its chain
        #: (docs/events.md, "Signed checkpoints"); without, checkpoints are not judged
        self.keys = keys
        #: the released writer schemas, as data the caller read
        #: (`pitwatch.events.schema.released_writers`): the engine reads no file
        self.released = released
        #: the table's order across devices and its end, as sealed checkpoints sign them
        self._order = TableOrder()
        #: signing device -> SHA-256s of the writer schemas of its events since its
        #: checkpoint (events read from Avro bytes; a JSON Lines event's meaning is its
        #: field names)
        self._writers: dict[str, set[bytes]] = {}
        #: the round id (or None) of the table's last event other than a checkpoint
        self._rid: str | None = None
        #: the device-clock time-out (None: only the next round or a table event ends one)
        self.round_timeout_ms = round_timeout_ms
        #: the table's device clock: the latest ts among its accepted events
        self.clock = 0
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
        #: while a round is open: the table as it was when it opened, and the events
        #: routed since, so a snapshot can hold the open round as its events
        self._base: tuple[TableState, TableOpened | None, dict[str, int]] | None = None
        self._since: list[Event] = []
        #: `import_state` folding the open round again: nothing it finds is news
        self._refolding = False
        # --- continuity (docs/events.md, "The record": a break in the record) ---
        #: while a break episode is open: the devices heard from since it opened (a gap
        #: of any other is the same break, not another)
        self._episode: set[str] | None = None
        #: the devices known when it opened and not heard from since, and whether a
        #: round was judged whole since: when both say so, the episode ends
        self._awaiting: set[str] = set()
        self._judged_since = False
        #: the table's record began with a break (read from its middle): a device first
        #: seen past seq 1 is part of that break, however late it shows
        self._from_break = False
        #: what the caller said was lost before the audit (`lost`), for the next break
        self._lost: str | None = None
        #: the devices that still have to show they continue for `_lost` to lapse
        self._lost_check: set[str] | None = None
        #: the table's record has been whole since its start (no break before its
        #: TableOpened): only then is a round without one TABLE_NOT_OPENED
        self._whole = True
        #: where in `_since` the open round was cut (None: not cut)
        self._cut_at: int | None = None
        #: a round whose first events were lost: it opens cut
        self._cut_next: str | None = None
        #: what the record could not decide (a check raised `Undecidable`) in the last
        #: round: reported when the table moves on, dropped when a break shows first
        self._held: list[Violation] = []
        # --- back-fill (engine/backfill.py) ---
        #: the table's state when `lost` was said, until the break it announced shows
        self._fill_from: dict[str, Any] | None = None
        #: the lost stretch whose re-sent events are audited apart, until it is whole
        self._fill: Backfill | None = None
        #: a read-only watcher of the fold (game protection, `pitwatch.protect`): called
        #: with each event the table or an audited round takes, before the fold applies
        #: it (so as the checks read the state), and the round it is in (None: a table
        #: event). Not called for a void event, a round a break cut or a refold. It
        #: must change nothing it is given.
        self.watch: FoldWatch | None = None

    # --- input -----------------------------------------------------------------------

    def feed(self, ev: Event) -> Fed:
        """Audit the table's next event. Returns what the record did with it: ACCEPTED
        (recorded, and judged where the record allows), REDELIVERY (an identical copy of
        a recorded event: a no-op) or REFUSED (not applied, and reported): a store keeps
        only what was accepted."""
        why = ev.refused
        if why is not None:
            return self.refused(ev, why)
        fill = self._fill
        if fill is not None and fill.wants(ev.device_id, ev.seq):
            return self._backfill(fill, ev)
        if type(ev.payload) is Checkpoint:
            return self._checkpoint(ev, ev.payload)
        if type(ev.payload) in SEAT_EVENTS:  # its device's record, never a round's
            return self._seat_event(ev)  # (docs/events.md, "Seat events")
        fed = self._take(ev)
        if fed is not Fed.ACCEPTED:
            return fed
        ts = ev.ts
        if ts > self.clock:
            self.clock = ts
            r = self.round
            timeout = self.round_timeout_ms
            if timeout is not None and r is not None and not r.ended \
                    and ts - r.last_ts > timeout:
                self._incomplete(r, ts,
                                 f"the table's clock passed {timeout / 1000:g} s after its "
                                 "last event")
        self._route(ev)
        return fed

    def refused(self, ev: Event, reason: str) -> Fed:
        """An event of the table's record its decoder refused (`reason`: a field of its
        payload outside the contract's ranges; its envelope decoded cleanly). It takes
        its place in its device's record, whose next event names its digest (of its
        bytes as sent), so the chain holds and no seq is missing; it is never applied
        to the table or a round, and is one HIGH finding naming it and why
        (EVENT_REFUSED). Only the device's next event is taken so (`_refusal`); any
        other refused event is a dead letter alone. Returns REFUSED (a store keeps
        nothing of it), or REDELIVERY for a copy of one taken."""
        fill = self._fill
        if fill is not None and fill.wants(ev.device_id, ev.seq):
            fed = self._backfill(fill, ev)
        else:
            fed = self._refusal(ev, reason)
        return Fed.REFUSED if fed is Fed.ACCEPTED else fed

    def _refusal(self, ev: Event, reason: str) -> Fed:
        """`refused`'s record and finding: ACCEPTED when the record took the event in.
        Only its device's next event is taken (the seq after its last, naming its
        digest; or seq 1 of a device not seen yet): an event the contract refuses never
        restarts, breaks or displaces a device's record, so a peer's malformed copies
        stay dead letters and change nothing."""
        dev = self.devices.get(ev.device_id)
        if dev is not None and dev.seen:
            if dev.known(ev.seq, digest(ev)[:PREFIX]):
                return Fed.REDELIVERY
            if ev.seq != dev.last_seq + 1 or ev.prev_digest != dev.last_digest:
                return Fed.REFUSED
        elif ev.seq != 1 or ev.prev_digest is not None:
            return Fed.REFUSED
        fed = self._take(ev)
        if fed is not Fed.ACCEPTED:
            return fed
        rid = ev.round_id
        self._raise_record(
            "EVENT_REFUSED", ev, rid,
            f"{ev.type} {ev.event_id} ({ev.device_id} seq {ev.seq}"
            + (f", round {rid}" if rid else ", between rounds")
            + f") was refused where it was decoded: {reason}. Not applied: the round "
            "goes on without it; its place in the device's record is kept (its digest is "
            "of its bytes as sent), so the record is continuous")
        return fed

    def _take(self, ev: Event) -> Fed:
        """`ev` into its device's record (`_record`); once taken, at a table whose
        devices sign, it awaits the checkpoint that covers it (`_unsigned`)."""
        fed = self._record(ev)
        if fed is Fed.ACCEPTED and self.keys is not None:
            self._unsigned(ev)
        return fed

    def prime(self, ev: Event) -> None:
        """Take `ev` as its device's last known event (history read back from a store,
        before a replay or a continued audit) without judging it: the device's next
        event is checked against it (seq, prev_digest). Nothing is raised."""
        dev = self.devices.get(ev.device_id)
        if dev is None:
            if len(self.devices) >= MAX_DEVICES:
                return
            dev = self.devices[ev.device_id] = _Device()
        if dev.seen and ev.seq <= dev.last_seq:
            return
        dev.start(ev.seq, digest(ev))
        dev.unsigned, dev.unsigned_round = 0, None
        self._order.lost()  # the order before the audit's first event is not known
        if type(ev.payload) is Checkpoint and ev.payload.order is not None:
            self._order.signed = True  # the table signs its order: its end must be signed

    def lost(self, where: str) -> None:
        """The caller knows events that may be this table's were lost before the audit
        read them (`where`: e.g. the partition, the offsets and when it was noticed).
        The table's next break (a gap of any device, a device first seen past seq 1) is
        reported as EVENTS_LOST with this text; nothing is raised if the table shows no
        break before each of its devices has continued its record. The table's state
        now is kept, so the lost stretch can be audited if it is sent again."""
        self._fill_from = self._core_state()
        self._lost = where
        self._lost_check = set(self.devices)

    def _route(self, ev: Event) -> None:
        """An event the record accepted: to the table, or to its round."""
        rid = ev.round_id
        if self._held and self._held[0].round_id != rid:
            self._flush()
        if rid is None:
            if self._base is not None:
                self._since.append(ev)
            if self.watch is not None and not self._refolding:
                self.watch(ev, None)
            self._table_event(ev)
            return
        r = self.round
        if r is None or r.round_id != rid:
            if rid in self.closed:
                self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                                   f"{ev.type} for round {rid} after it ended")
                return
            if r is not None and not r.ended:
                self._incomplete(r, ev.ts, f"the table moved on to round {rid}", ev.event_id)
            r = self.round = self._open_round(rid)
            if not self.table.opened and self._whole:  # no rule pack: say so
                self._raise_record("TABLE_NOT_OPENED", ev, rid,
                                   f"round {rid} at table {self.table.table_id}, which has "
                                   "no TableOpened: no posted rules, no jurisdiction, judged "
                                   "by the record rules only")
        elif r.ended:
            self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                               f"{ev.type} after the round ended")
            return
        if self._refolding and self._cut_at is not None and len(self._since) >= self._cut_at:
            r.cut = True  # where the break cut the round when it was first folded
        self._since.append(ev)
        p = ev.payload
        t = type(p)
        if r.cut:  # after a break: folded for the summary, never judged
            try:
                r.apply(ev)
            except Exception as e:  # a bug in the fold: reported apart
                self._engine_error(ev, FOLD, e)
            if t is RoundEnded:
                self._close(r, complete=False)
            return
        void = False
        cause: tuple[str, str] | None = None
        if not r.started and t is not RoundStarted:
            self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                               f"{ev.type} before RoundStarted")
            void = True
            cause = ("PROCEDURE_OUT_OF_ORDER",
                     violation_id(rid, "PROCEDURE_OUT_OF_ORDER", ev.event_id))
        elif t is not WagerReturned or not r.is_void_handback(p):
            for rule in self.pack.by_type[t]:
                try:
                    f = rule.check(r, ev)
                except Undecidable as e:
                    # the record cannot decide it (e.g. after lost events): say so once
                    # the table moves on with no break found, keep the event out of the
                    # fold, and go on with the stream
                    self._hold(r, ev, f"{ev.type} cannot be judged in this round's state "
                               f"({rule.code} check: {e})")
                    void = True
                    cause = ("PROCEDURE_OUT_OF_ORDER",
                             violation_id(rid, "PROCEDURE_OUT_OF_ORDER", ev.event_id))
                    break
                except Exception as e:  # a bug: reported apart, the other checks go on
                    self._engine_error(ev, _where(rule), e)
                    continue
                if f is not None:
                    vid = self._emit(r, rule.code, rule.severity, rule.citation, ev, f)
                    if f.void_wager is not None and f.seat is not None:
                        r.void_standing(f.seat, f.hand or 0, f.void_wager, (rule.code, vid))
                    if rule.voids:
                        void, cause = True, (rule.code, vid)
                        break
        if self.watch is not None and not void and not self._refolding:
            self.watch(ev, r)
        try:
            r.apply(ev, void, cause)
        except Exception as e:  # a bug in the fold: reported apart, the stream goes on
            self._engine_error(ev, FOLD, e)
        if t is RoundEnded and not void:
            self._close(r, complete=True)

    def expire(self, now_ms: int, timeout_ms: int) -> None:
        """Close the open round as incomplete if nothing came for it for `timeout_ms`
        by `now_ms`, a time on the same device clock as the events (never the wall
        clock: see `expire_idle` for processing time)."""
        r = self.round
        if r is not None and not r.ended and now_ms - r.last_ts > timeout_ms:
            self._incomplete(r, now_ms,
                             f"no RoundEnded within {timeout_ms / 1000:g} s of its last event")

    def expire_idle(self, timeout_ms: int) -> bool:
        """The processing-time rule, for a caller that knows the table's partition is
        caught up and nothing arrived for the table for `timeout_ms` of its own clock:
        the open round is incomplete (dated its last event's ts plus the time-out).
        Returns whether a round was closed."""
        self._flush()
        r = self.round
        if r is None or r.ended:
            return False
        self._incomplete(r, r.last_ts + timeout_ms,
                         f"nothing arrived for the table for {timeout_ms / 1000:g} s "
                         "(processing time, partition caught up)")
        self._flush()
        return True

    def expire_unsigned(self, timeout_ms: int) -> bool:
        """The processing-time rule for signatures, for a caller that knows the table's
        partition is caught up and nothing arrived for the table for `timeout_ms`: a
        signing device's events after its last checkpoint are a truncated chain, as at
        the end of a file (the same violation ids). Returns whether any was found."""
        if self.keys is None:
            return False
        found = self._no_end(f"nothing arrived for the table for {timeout_ms / 1000:g} s "
                             "after it")
        for device_id, dev in self.devices.items():
            if dev.unsigned:
                self._missing(device_id, dev, f"nothing arrived for the table for "
                              f"{timeout_ms / 1000:g} s after it (a truncated chain)")
                found = True
        return found

    @property
    def round_open(self) -> bool:
        return self.round is not None and not self.round.ended

    def finish(self) -> None:
        """End of input: a round still open is incomplete, and a signing device's events
        after its last checkpoint are a truncated chain."""
        r = self.round
        if r is not None and not r.ended:
            self._incomplete(r, r.last_ts, "the input ended before RoundEnded")
        self._flush()
        if self.keys is not None:
            self._no_end("the input ended after it")
            for device_id, dev in self.devices.items():
                if dev.unsigned:
                    self._missing(device_id, dev, "the input ended after it (a "
                                  "truncated chain: its last events are vouched for by nothing)")

    # --- snapshots ---------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """Everything the auditor knows, as JSON-ready data (no code, no pickle), version
        STATE_VERSION: the table's posted rules and shoe, each device's record (last
        seq and digest, its history of digest prefixes), the writer schemas of each
        signing device's events since its checkpoint, the record's continuity (an
        open break episode, what `lost` said, a cut round), the recently closed
        rounds, and the open round as the canonical bytes of its events (folded again
        by `import_state`, deterministic). Violations are not part of it: they went out
        when found."""
        if self._base is not None and self.round_open:
            table, pending, early = self._base
            since = [_b64(message_bytes(e)) for e in self._since]
        else:
            table, pending, early, since = self.table, self.pending_open, self.early, []
        r = self.round
        return {
            "version": STATE_VERSION,
            "table": _table_to_json(table),
            "pending_open": None if pending is None else _opened_to_json(pending),
            "early": dict(early),
            "since": since,
            "round_violations": r.violations if r is not None and self.round_open else 0,
            "early_now": dict(self.early),
            "devices": {k: d.to_json() for k, d in self.devices.items()},
            "closed": list(self.closed),
            "clock": self.clock,
            "rid": self._rid,
            "order": self._order.to_json(),
            "writers": {d: sorted(w.hex() for w in ws)
                        for d, ws in sorted(self._writers.items())},
            "record": {
                "episode": None if self._episode is None else sorted(self._episode),
                "awaiting": sorted(self._awaiting),
                "judged_since": self._judged_since,
                "from_break": self._from_break,
                "lost": self._lost,
                "lost_check": None if self._lost_check is None else sorted(self._lost_check),
                "whole": self._whole,
                "cut_at": self._cut_at if self.round_open else None,
                "cut_next": self._cut_next,
                "counts_known": self.table.counts_known,
                "held": [_violation_to_json(v) for v in self._held],
            },
            "fill_from": self._fill_from,
            "fill": None if self._fill is None else _fill_to_json(self._fill),
        }

    def import_state(self, state: dict[str, Any]) -> None:
        """Become the auditor `export_state` described. Raises StateError (and stays
        as it was) on a snapshot of another version or one that does not parse."""
        v = state.get("version") if isinstance(state, dict) else None
        try:
            while isinstance(v, int) and v in _UPCASTERS:  # an older snapshot, brought up
                state = _UPCASTERS[v](state)
                v = state.get("version")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StateError(f"damaged version {v} snapshot: {e!r}") from e
        if v != STATE_VERSION:
            raise StateError(f"snapshot version {v!r}, this auditor reads {STATE_VERSION} "
                             f"and {', '.join(map(str, sorted(_UPCASTERS)))}")
        try:
            table = _table_from_json(self.table.table_id, state["table"])
            pending = None if state["pending_open"] is None \
                else _opened_from_json(state["pending_open"])
            devices = {str(k): _Device.from_json(d) for k, d in state["devices"].items()}
            since = [decode_single(_unb64(b)) for b in state["since"]]
            closed = OrderedDict((str(rid), None) for rid in state["closed"])
            early = {str(k): int(n) for k, n in state["early"].items()}
            early_now = {str(k): int(n) for k, n in state["early_now"].items()}
            clock, round_violations = int(state["clock"]), int(state["round_violations"])
            rec = state["record"]
            episode = None if rec["episode"] is None else {str(x) for x in rec["episode"]}
            awaiting = {str(x) for x in rec["awaiting"]}
            judged_since, from_break = bool(rec["judged_since"]), bool(rec["from_break"])
            lost = None if rec["lost"] is None else str(rec["lost"])
            lost_check = None if rec["lost_check"] is None \
                else {str(x) for x in rec["lost_check"]}
            whole, counts_known = bool(rec["whole"]), bool(rec["counts_known"])
            cut_at = None if rec["cut_at"] is None else int(rec["cut_at"])
            cut_next = None if rec["cut_next"] is None else str(rec["cut_next"])
            held = [Violation.from_json(v) for v in rec["held"]]
            order = TableOrder.from_json(state.get("order"))
            writers = {str(d): {bytes.fromhex(x) for x in ws}  # absent before: none known
                       for d, ws in (state.get("writers") or {}).items()}
            fill_from = state["fill_from"]
            if fill_from is not None and not isinstance(fill_from, dict):
                raise TypeError("fill_from is not a snapshot")
            fill = None if state["fill"] is None else self._fill_from_json(state["fill"])
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StateError(f"damaged snapshot: {e!r}") from e
        self.table, self.pending_open, self.early = table, pending, early
        self.pack = self.select_pack(table.jurisdiction, table.game) if table.opened \
            else self.select_pack("OTHER", "OTHER")
        self.devices, self.closed, self.clock = devices, closed, clock
        self._order, self._writers = order, writers
        rid = state.get("rid")
        self._rid = None if rid is None else str(rid)
        self.round, self._base, self._since = None, None, []
        self._episode, self._lost, self._lost_check = episode, lost, lost_check
        self._awaiting, self._judged_since, self._from_break = awaiting, judged_since, from_break
        self._whole, self._cut_at, self._cut_next = whole, cut_at, cut_next
        self._fill_from, self._fill = fill_from, fill
        quiet_v, quiet_r = self.on_violation, self.on_round
        self.on_violation, self.on_round, self._refolding = _drop, _drop, True
        try:  # the open round, folded again: what it raised (findings, engine errors)
            for ev in since:  # went out when first found
                self._route(ev)
        finally:
            self.on_violation, self.on_round, self._refolding = quiet_v, quiet_r, False
        self.early = early_now
        self.table.counts_known = counts_known
        self._held = held  # what the refold held again, as it was
        if self.round is not None and self.round_open:
            self.round.violations = round_violations
            self._cut_at = cut_at

    # --- signatures (docs/events.md, "Signed checkpoints") -----------------------------

    def _checkpoint(self, ev: Event, p: Checkpoint) -> Fed:
        """A device's checkpoint: part of its record (seq, digest), never of a round.
        Judged only with a key registry: once per checkpoint, off the per-event path."""
        dev = self.devices.get(ev.device_id)
        head_seq, head = 0, b""
        if dev is not None and dev.last_digest is not None:
            head_seq, head = dev.last_seq, dev.last_digest
        fed = self._record(ev)
        keys = self.keys
        if fed is not Fed.ACCEPTED or keys is None:
            return fed
        dev = self.devices[ev.device_id]
        if dev.broke_at == ev.seq:
            # the chain resumes on this checkpoint: the head it signs was lost, so it is
            # held to its own envelope (the event before it) and its signature
            head_seq, head = ev.seq - 1, ev.prev_digest or b""
        if p.head_seq != head_seq or p.head_digest != head:
            why: str | None = (
                f"{ev.device_id} checkpoint claims head seq {p.head_seq} "
                f"({p.head_digest.hex()[:12]}…), the chain's head is seq {head_seq} "
                f"({head.hex()[:12]}…)")
        else:
            why = self._schema_bound(ev, p) or keys.check_checkpoint(ev.table_id,
                                                                     ev.device_id, p)
        if why is None and p.end and p.order is None:
            why = f"{ev.device_id} seq {ev.seq} says the table's record ends, signing no order"
        if why is not None:
            self._raise_record("SIGNATURE_INVALID", ev, ev.round_id, why)
        elif p.order is not None:
            self._judge_order(ev, p.order)
        dev.unsigned, dev.unsigned_round = 0, None
        self._writers.pop(ev.device_id, None)
        if keys.signs(ev.device_id):  # the order of the signed chains' events
            o = self._order
            o.note(ev.device_id, ev.event_id, ev.ts, ev.round_id, ev.seq)
            if p.order is not None:
                o.signed_here(ev.device_id)
            o.ended = p.end
        return fed

    def _seat_event(self, ev: Event) -> Fed:
        """A player seated or leaving: taken into its device's record, shown to the
        watcher as a table event, never a round's (no check, no clock)."""
        fed = self._take(ev)
        if fed is Fed.ACCEPTED and self.watch is not None:
            self.watch(ev, None)
        return fed

    def _schema_bound(self, ev: Event, p: Checkpoint) -> str | None:
        """Why the checkpoint does not bind the writer schema of the events it covers
        (None: it does). A checkpoint read from Avro bytes under a version that has the
        sealed form must be sealed, and name that schema's SHA-256, the schema of its
        device's events since its last checkpoint too; one read from JSON Lines (its
        meaning is its field names) names a released schema when sealed."""
        bound = p.schema_sha256
        if ev.raw is None:
            if bound is None or bound in self.released.sha256:
                return None
            return (f"{ev.device_id} seq {ev.seq} binds schema {bound.hex()[:12]}…, "
                    "not a released one")
        w = self._writer(ev)
        if bound is None:
            if not w.seals:
                return None  # the version 2 form, under a version 2 writer
            return (f"{ev.device_id} seq {ev.seq} is written under schema "
                    f"{w.sha256.hex()[:12]}…, which signs checkpoints sealed, and binds no "
                    "schema: its bytes' meaning is not signed")
        under = {w.sha256} | self._writers.get(ev.device_id, set())
        other = sorted(x.hex()[:12] for x in under if x != bound)
        if other:
            return (f"{ev.device_id} seq {ev.seq} binds schema {bound.hex()[:12]}…, its "
                    f"events are under {', '.join(other)}…: the signed bytes would mean "
                    "something else")
        return None

    def _judge_order(self, ev: Event, order: bytes) -> None:
        """A verified checkpoint's signed order across devices against the record's:
        a contradiction is held until the signer's next order or the end of input (a
        break found before then explains it: `TableOrder.held`)."""
        self._order_held()
        got = self._order.matches(ev.device_id, order)
        if got is None or got[0]:
            return  # unknown after a break (its own finding), or the order signed
        self._order.held = (
            ev.event_id, ev.ts, ev.round_id,
            f"{ev.device_id} seq {ev.seq} signed the table's order across devices since its "
            f"previous signed order, and the record's {got[1]} events since then are in "
            "another order (or are other events): how the devices' chains interleave was "
            "changed, so no judgement of order across devices since then is vouched for")

    def _order_held(self) -> bool:
        """Report a held order contradiction no break explained."""
        held, self._order.held = self._order.held, None
        if held is None:
            return False
        self._raise_record_at("SIGNATURE_INVALID", *held)
        return True

    def _no_end(self, why: str) -> bool:
        """At the end of a table's input: a table whose order is signed must end on a
        signed end (a sealed checkpoint with `end`); else its record may be truncated.
        One finding, on the table's last event, naming the events no checkpoint covers
        (they are not reported again one device at a time)."""
        held = self._order_held()
        o = self._order
        if not o.signed or o.ended or o.end_reported or o.last is None:
            return held
        event_id, ts, rid, device_id, seq = o.last
        tails = []
        for d, dev in self.devices.items():
            if dev.unsigned:
                tails.append(f"{d} {_seqs(dev.unsigned_from, dev.unsigned_last[0])}")
                dev.unsigned, dev.unsigned_round = 0, None
        o.end_reported = True
        self._raise_record_at(
            "SIGNATURE_INVALID", event_id, ts, rid,
            f"table {self.table.table_id}'s record has no signed end: {why} ({device_id} "
            f"seq {seq}), with no end-of-shift checkpoint (a truncated record: what came "
            "after it may be missing)"
            + (f"; covered by no checkpoint: {', '.join(tails)}" if tails else ""))
        return True

    def _unsigned(self, ev: Event) -> None:
        """Count a signing device's events since its checkpoint: more than the posted
        number, or a table that moved on with some of them unsigned, is a missing one."""
        rid = ev.round_id
        keys = self.keys
        assert keys is not None
        if keys.signs(ev.device_id):  # the order of the signed chains' events
            self._order.note(ev.device_id, ev.event_id, ev.ts, rid, ev.seq)
        if rid != self._rid:  # the table moves on: what came before must be signed
            for device_id, d in self.devices.items():
                if d.unsigned and d.unsigned_round != rid and device_id != ev.device_id:
                    self._missing(device_id, d, _moved(rid))
            self._rid = rid
        if not keys.signs(ev.device_id):
            if not keys.knows(ev.device_id):
                self._stranger(ev)
            return
        dev = self.devices[ev.device_id]
        if dev.unsigned and dev.unsigned_round != rid:
            self._missing(ev.device_id, dev, _moved(rid))
        elif dev.unsigned >= keys.checkpoint_every:
            self._missing(ev.device_id, dev,
                          f"it sent more than {keys.checkpoint_every} events")
        if not dev.unsigned:
            dev.unsigned_from = ev.seq
        if ev.raw is not None:
            self._writers.setdefault(ev.device_id, set()).add(self._writer(ev).sha256)
        dev.unsigned += 1
        dev.unsigned_last = (ev.seq, ev.event_id, ev.ts)
        dev.unsigned_round = rid

    def _writer(self, ev: Event) -> WriterSchema:
        """The released schema an event read from bytes is under."""
        w = self.released.of(ev.writer)
        if w is None:
            assert ev.writer is not None
            raise DecodeError(f"unknown schema fingerprint {ev.writer.hex()}")
        return w

    def _stranger(self, ev: Event) -> None:
        """An event of a device the key registry does not name: nobody can check it
        (a forger may invent a device). Reported on its first event of each round."""
        dev = self.devices[ev.device_id]
        where = ev.round_id or ""
        if dev.stranger_round == where:
            return
        dev.stranger_round = where
        self._raise_record("SIGNATURE_INVALID", ev, ev.round_id,
                           f"{ev.device_id} is not in the key registry: its events "
                           + ("in this round " if ev.round_id else "")
                           + "carry no signature anyone can check")

    def _missing(self, device_id: str, dev: _Device, why: str) -> None:
        """A missing checkpoint, reported on the device's last unsigned event."""
        last, event_id, ts = dev.unsigned_last
        span = f"seq {dev.unsigned_from}" + ("" if last == dev.unsigned_from else f"–{last}")
        self._raise_record_at("SIGNATURE_INVALID", event_id, ts, dev.unsigned_round,
                              f"{device_id} {span} has no checkpoint: {why}")
        dev.unsigned, dev.unsigned_round = 0, None

    # --- the record: seq, digest, redelivery, breaks ---------------------------------

    def _record(self, ev: Event) -> Fed:
        """Check the device's record: what the event is to it (docs/events.md, "The
        record"). Only an ACCEPTED event is applied."""
        device_id = ev.device_id
        dev = self.devices.get(device_id)
        if dev is None:
            if len(self.devices) >= MAX_DEVICES:  # the table's state stays bounded
                self._raise_record("DEVICE_LIMIT_EXCEEDED", ev, ev.round_id,
                                   f"{device_id} would be device {len(self.devices) + 1} "
                                   f"of table {self.table.table_id}; at most {MAX_DEVICES}: "
                                   "not applied")
                return Fed.REFUSED
            dev = self.devices[device_id] = _Device()
        d = digest(ev)
        seq = ev.seq
        if seq == dev.last_seq + 1 and dev.last_digest is not None and not dev.old:
            # the chain's next event (the common case: nothing recorded to compare)
            if ev.prev_digest != dev.last_digest:
                self._digest_mismatch(ev, dev.last_digest)
            if self._episode is not None or self._lost_check is not None:
                self._continues(device_id)
            dev.append(seq, d)
            return Fed.ACCEPTED
        if not dev.seen:
            if seq == 1:
                if ev.prev_digest is not None:
                    self._digest_mismatch(ev, None)
                self._continues(device_id)
            else:
                self._break(ev, dev, f"{device_id} starts at seq {seq} with no history "
                            f"before it: {_seqs(1, seq - 1)} are not in the record")
            dev.start(seq, d)
            if self._fill is not None and device_id in self._fill.holes:
                dev.lost_before(1)  # its first events are in the lost stretch
            return Fed.ACCEPTED
        prefix = d[:PREFIX]
        if dev.known(seq, prefix):
            return Fed.REDELIVERY
        if seq == 1 and ev.prev_digest is None:
            self._restart(ev, dev)
            dev.restart(d)
            return Fed.ACCEPTED
        last = dev.last_seq
        if seq <= last:
            rec = dev.recorded(seq)
            if rec is None:
                self._raise_record(
                    "SEQUENCE_CONFLICT", ev, ev.round_id,
                    f"{device_id} seq {seq} is older than the {HISTORY_SEQS:,} seqs of its "
                    f"record the audit keeps (it is at {last}): not compared, not applied",
                    Severity.LOW)
            elif rec == HOLE:
                self._raise_record(
                    "SEQUENCE_CONFLICT", ev, ev.round_id,
                    f"{device_id} seq {seq}, missing from its record, arrived after the "
                    f"record moved on to {last}: not applied", Severity.LOW)
            else:
                self._raise_record(
                    "SEQUENCE_CONFLICT", ev, ev.round_id,
                    f"{device_id} seq {seq} was recorded as {rec.hex()}… and now comes as "
                    f"{prefix.hex()}…, another event: a different copy of a recorded "
                    "event, not applied (the first copy stands)")
            return Fed.REFUSED
        if seq > last + 1:
            self._break(ev, dev, f"{device_id} {_seqs(last + 1, seq - 1)} missing (got "
                        f"{seq} after {last})")
        else:
            if ev.prev_digest != dev.last_digest:
                self._digest_mismatch(ev, dev.last_digest)
            self._continues(device_id)
        dev.append(seq, d)
        return Fed.ACCEPTED

    def _continues(self, device_id: str) -> None:
        """The device's record goes on without a break."""
        if self._episode is not None:
            self._heard(device_id)
        check = self._lost_check
        if check is not None:
            check.discard(device_id)
            if not check:  # every device continued: what was lost was not this table's
                self._lost = self._lost_check = self._fill_from = None

    def _restart(self, ev: Event, dev: _Device) -> None:
        """The device's seq starts again (seq 1, prev_digest null: a new chain): one
        finding, and a break in the record like any other."""
        device_id = ev.device_id
        where = f"round {ev.round_id}" if ev.round_id else "between rounds"
        signs = self.keys is not None and self.keys.signs(device_id)
        tail = ""
        if signs and dev.unsigned:
            last = dev.unsigned_last[0]
            tail = (f"; {device_id} {_seqs(dev.unsigned_from, last)} before it are covered "
                    "by no checkpoint")
        self._raise_record("DEVICE_RESTARTED", ev, ev.round_id,
                           f"{device_id} restarted {where}: its record starts again at seq "
                           f"1, a new chain, after seq {dev.last_seq}{tail}",
                           Severity.HIGH if tail else None)
        self._break(ev, dev, None)

    def _break(self, ev: Event, dev: _Device, lost: str | None) -> None:
        """A break in the table's record at `ev` (docs/events.md, "The record"): `lost`
        says what is missing (None: a restart, already reported). One EVENTS_LOST a
        break episode; checks that need what is missing suspend judgement until the
        record decides them again."""
        dev.broke_at = ev.seq
        dev.unsigned, dev.unsigned_round = 0, None  # the chain (and its signing) resumes here
        self._order.lost()  # the order across devices is judged again from the next signed one
        self._drop_held()
        self.table.counts_known = False  # until the next ShoeLoaded
        if not self.table.opened:
            self._whole = False
        ep = self._episode
        if self._lost is None:  # else the caller knows of a loss: a break of its own
            if ep is not None and ev.device_id not in ep:
                self._heard(ev.device_id)  # not heard from since the break: the same one
                if self._fill is not None and lost is not None:
                    self._hole(self._fill, ev, dev)
                return
            if ep is None and self._from_break and dev.last_digest is None:
                return  # first seen past seq 1 at a table read from its middle: that break
        if not self.devices.keys() - {ev.device_id} and dev.last_digest is None:
            self._from_break = True
        self._episode = {ev.device_id}
        self._awaiting = set(self.devices) - {ev.device_id}
        self._judged_since = False
        r = self.round
        if r is not None and not r.ended and not r.cut:
            r.cut, self._cut_at = True, len(self._since)
        rid = ev.round_id
        if rid is not None and (r is None or r.round_id != rid) and rid not in self.closed \
                and type(ev.payload) is not RoundStarted:
            self._cut_next = rid  # its first events were lost
        where, before = self._lost, self._fill_from
        self._lost = self._lost_check = self._fill_from = None
        if where is not None and before is not None and lost is not None:
            self._fill = Backfill(self._fold(before))
            self._hole(self._fill, ev, dev)
        if lost is None and where is None:
            return
        for d in self.devices.values():  # their checkpoints may be in what was lost
            d.unsigned, d.unsigned_round = 0, None
        what = lost if lost is not None else \
            f"{ev.device_id} restarted at seq 1 (what it sent before may be missing)"
        v = self._raise_record("EVENTS_LOST", ev, rid,
                               f"{what}: events lost" + ("" if where is None else f" ({where})")
                               + "; the record is not continuous: card counts are judged "
                               "again from the next ShoeLoaded, rounds from the next "
                               "RoundStarted")
        if self._fill is not None and where is not None:
            self._fill.loss = v

    # --- back-fill (engine/backfill.py) ------------------------------------------------

    def _core_state(self) -> dict[str, Any]:
        """The table's state now, without what it keeps for a back-fill."""
        return {**self.export_state(), "fill_from": None, "fill": None}

    def _fold(self, state: dict[str, Any]) -> TableAuditor:
        """An auditor of the table as `state` has it, raising through this one."""
        fold = TableAuditor(self.table.table_id, self.select_pack,
                            lambda v: self.on_violation(v), lambda s: self.on_round(s),
                            self._fold_error, self.round_timeout_ms, self.keys,
                            released=self.released)
        fold.import_state(state)
        return fold

    def _fold_error(self, e: EngineError) -> None:
        self.engine_errors += 1
        if self.on_engine_error is not None:
            self.on_engine_error(e)

    def _fill_from_json(self, d: dict[str, Any]) -> Backfill:
        fill = Backfill(self._fold(d["fold"]),
                        {str(k): Hole.from_json(h) for k, h in d["holes"].items()},
                        None if d["loss"] is None else Violation.from_json(d["loss"]))
        if len(fill.holes) > MAX_DEVICES:
            raise ValueError("more holes than devices")
        return fill

    def _hole(self, fill: Backfill, ev: Event, dev: _Device) -> None:
        """The seqs `ev`'s device lost before it: after its last known event, or from
        seq 1 for a device first seen here."""
        if ev.device_id not in fill.holes and ev.seq > dev.last_seq + 1:
            fill.holes[ev.device_id] = Hole(dev.last_seq + 1, ev.seq - 1, ev.prev_digest)

    def _backfill(self, fill: Backfill, ev: Event) -> Fed:
        """An event re-sent for the lost stretch: audited by the fold, in the stretch's
        order; the hole it fills is no longer one. When the stretch is whole and joins
        the record after it, the loss finding says so."""
        why = ev.refused
        fed = fill.fold.feed(ev) if why is None else fill.fold._refusal(ev, why)
        if fed is Fed.ACCEPTED:
            self.devices[ev.device_id].fill(ev.seq, digest(ev))
            fill.holes[ev.device_id].took(ev.seq)
            if fill.done():
                self._fill = None
                self._whole_again(fill)
        return fed

    def _whole_again(self, fill: Backfill) -> None:
        loss = fill.loss
        if loss is None or fill.skipped():  # the fold reported what is still missing
            return
        bad = fill.unjoined()
        if bad:
            self._raise_record_at(
                "DIGEST_MISMATCH", loss.event_id, loss.detected_at, loss.round_id or None,
                f"the events re-sent for the lost stretch ({fill.stretch()}) do not join "
                f"the record after it: the last of {', '.join(bad)} is not the event its "
                "next one names; the loss stands", Severity.HIGH)
            return
        self.on_violation(replace(
            loss, severity=Severity.LOW,
            message=f"{loss.message}. Back-filled: {fill.stretch()} re-sent and audited in "
            "order, the chains join the record after it: the record is whole again"))

    def _hold(self, r: Round, ev: Event, message: str) -> None:
        """What the record cannot decide: likely events of the round were lost and
        the device that lost them has not spoken since. Counted in the round now,
        reported when the table moves on (`_flush`) unless a break shows first."""
        posted, citation = self.pack.record_citations["PROCEDURE_OUT_OF_ORDER"]
        r.violations += 1
        self._held.append(Violation(
            "PROCEDURE_OUT_OF_ORDER", posted, self.table.table_id, r.round_id, None, None,
            ev.event_id, (), citation, message, self.pack.name, self.pack.version, ev.ts))

    def _flush(self) -> None:
        held, self._held = self._held, []
        for v in held:
            self.on_violation(v)

    def _drop_held(self) -> None:
        """A break explains what the record could not decide: nobody is blamed."""
        r = self.round
        for v in self._held:
            if r is not None and r.round_id == v.round_id and not r.ended:
                r.violations -= 1
        self._held = []

    def _heard(self, device_id: str) -> None:
        """A device heard from during a break episode; the episode ends once every
        device it was waiting for was heard from and a round was judged whole."""
        assert self._episode is not None
        self._episode.add(device_id)
        self._awaiting.discard(device_id)
        if not self._awaiting and self._judged_since:
            self._episode = None

    def _digest_mismatch(self, ev: Event, expected: bytes | None) -> None:
        got = "none" if ev.prev_digest is None else ev.prev_digest.hex()[:12]
        want = "none" if expected is None else expected.hex()[:12]
        signed = self.keys is not None and self.keys.signs(ev.device_id)
        self._raise_record("DIGEST_MISMATCH", ev, ev.round_id,
                           f"{ev.device_id} seq {ev.seq} prev_digest {got}… "
                           f"does not match its previous event ({want}…)"
                           + ("; the device signs its chain, so its record was rewritten"
                              if signed else ""),
                           severity=Severity.HIGH if signed else None)

    # --- rounds ------------------------------------------------------------------------

    def _table_event(self, ev: Event) -> None:
        p = ev.payload
        if type(p) is TableOpened:
            self._posting(ev, p)
            if self.round is None or self.round.ended:
                self._open_table(p)
            else:
                self.pending_open = p  # the posted rules change from the next round on
        elif type(p) is ShoeLoaded:
            self.table.decks = p.decks
            self.table.counts = {}
            self.table.counts_known = True

    def _posting(self, ev: Event, p: TableOpened) -> None:
        """The posted rules against what the pack's text fixes: a finding on the
        TableOpened itself (round id empty)."""
        pack = self.select_pack(p.jurisdiction, p.game)
        found: dict[str, list[tuple[str, str, str]]] = {}
        for rule in pack.posting:
            try:
                why = rule.check(p.rules)
            except Exception as e:  # a bug: reported apart, the other postings judged
                self._engine_error(ev, _where(rule), e)
                continue
            if why is not None:
                found.setdefault(rule.code, []).append((rule.severity, rule.citation, why))
        for code, items in found.items():  # one violation per code and event: one id
            citations = "; ".join(dict.fromkeys(c for _, c, _ in items))
            self.on_violation(Violation(
                code, items[0][0], self.table.table_id, "", None, None, ev.event_id, (),
                citations, "; ".join(w for _, _, w in items), pack.name, pack.version, ev.ts))

    def _open_table(self, p: TableOpened) -> None:
        self.pack = self.select_pack(p.jurisdiction, p.game)
        t = self.table
        t.jurisdiction, t.game, t.opened = p.jurisdiction, p.game, True
        t.rules = self.pack.judged_rules(p.rules)
        if not t.decks:
            t.decks = p.rules.decks

    def _open_round(self, round_id: str) -> Round:
        t = self.table
        self._base = (replace(t, counts=dict(t.counts)), self.pending_open, dict(self.early))
        self._since = []
        if self.pending_open is not None:
            self._open_table(self.pending_open)
            self.pending_open = None
        r = Round(self.table, round_id)
        r.violations = self.early.pop(round_id, 0)
        if self._cut_next == round_id:  # its first events were lost
            r.cut, self._cut_at, self._cut_next = True, 0, None
        return r

    def _incomplete(self, r: Round, ts: int, why: str, shown_by: str | None = None) -> None:
        """The round ends incomplete. Whichever rule found it (docs/procedure.md), the
        violation cites the round's last event, so its id is one function of the
        table's stream: a worker that died after a processing-time verdict, before its
        snapshot, has a successor that gives the same id when the table moves on. The
        event that showed it, if another, is its evidence. A round a break cut through
        is not complete and nobody is blamed for it: the break is the finding."""
        if r.cut:
            self._close(r, complete=False)
            return
        severity, citation = self.pack.record_citations["ROUND_INCOMPLETE"]
        self._emit_raw(r, "ROUND_INCOMPLETE", severity, citation, r.last_event_id, ts,
                       Finding(f"round {r.round_id} has no RoundEnded: {why}",
                               evidence=() if shown_by is None else (shown_by,)))
        self._close(r, complete=False)

    def _close(self, r: Round, complete: bool) -> None:
        r.ended = True
        self._base, self._since, self._cut_at = None, [], None
        if complete and self._episode is not None:  # a round judged whole
            self._judged_since = True
            if not self._awaiting:
                self._episode = None
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
        if self._refolding:  # counted, logged and sent when first found
            return
        self.engine_errors += 1
        e = engine_error(ev, where, exc, self.pack.name, self.pack.version)
        if self.on_engine_error is not None:
            self.on_engine_error(e)

    def _raise_record(self, code: str, ev: Event, round_id: str | None, message: str,
                      severity: Severity | None = None) -> Violation:
        return self._raise_record_at(code, ev.event_id, ev.ts, round_id, message, severity)

    def _raise_record_at(self, code: str, event_id: str, ts: int, round_id: str | None,
                         message: str, severity: Severity | None = None) -> Violation:
        posted, citation = self.pack.record_citations[code]
        r = self.round if self.round is not None and self.round.round_id == round_id else None
        v = Violation(code, severity or posted, self.table.table_id, round_id or "", None,
                      None, event_id, (), citation, message, self.pack.name,
                      self.pack.version, ts)
        if r is not None:
            r.violations += 1
        elif round_id and round_id not in self.closed:
            # on the first event of a round not opened yet: count it there (a round that
            # closed already sent its summary; a late finding is not counted in it)
            self.early[round_id] = self.early.get(round_id, 0) + 1
        self.on_violation(v)
        return v

    def _emit(self, r: Round, code: str, severity: str, citation: str, ev: Event,
              f: Finding) -> str:
        event_id, ts = f.at or (ev.event_id, ev.ts)
        return self._emit_raw(r, code, severity, citation, event_id, ts, f)

    def _emit_raw(self, r: Round, code: str, severity: str, citation: str, event_id: str,
                  ts: int, f: Finding) -> str:
        """Emit once per code and hand per round; the id of the violation that stands
        for this finding (an earlier one of the same code and hand, if any)."""
        key = (code, f.seat, f.hand)
        known = r.raised.get(key)
        if known is not None:
            return known
        vid = r.raised[key] = violation_id(r.round_id, code, event_id)
        r.violations += 1
        self.on_violation(Violation(
            code, severity, self.table.table_id, r.round_id, f.seat, f.hand, event_id,
            f.evidence, citation, f.message, self.pack.name, self.pack.version, ts))
        return vid


def _fill_to_json(fill: Backfill) -> dict[str, Any]:
    return {"holes": {d: h.to_json() for d, h in sorted(fill.holes.items())},
            "loss": None if fill.loss is None else _violation_to_json(fill.loss),
            "fold": fill.fold.export_state()}


def _violation_to_json(v: Violation) -> dict[str, Any]:
    d = v.to_json()
    del d["violation_id"]
    return d


def _seqs(first: int, last: int) -> str:
    return f"seq {first}" if first == last else f"seq {first}–{last}"


def _moved(round_id: str | None) -> str:
    return f"the table moved on to {'round ' + round_id if round_id else 'a table event'}"


def _drop(_: object) -> None:
    pass


def _table_to_json(t: TableState) -> dict[str, Any]:
    return {"jurisdiction": t.jurisdiction, "game": t.game, "rules": rules_to_dict(t.rules),
            "opened": t.opened, "decks": t.decks,
            "counts": [[rank, suit, n] for (rank, suit), n in sorted(t.counts.items())]}


def _table_from_json(table_id: str, d: dict[str, Any]) -> TableState:
    return TableState(table_id, str(d["jurisdiction"]), str(d["game"]),
                      rules_from_dict(d["rules"]), bool(d["opened"]), int(d["decks"]),
                      {(str(rank), str(suit)): int(n) for rank, suit, n in d["counts"]})


def _opened_to_json(p: TableOpened) -> dict[str, Any]:
    return {"jurisdiction": p.jurisdiction, "game": p.game, "rules": rules_to_dict(p.rules)}


def _opened_from_json(d: dict[str, Any]) -> TableOpened:
    return TableOpened(str(d["jurisdiction"]), str(d["game"]), rules_from_dict(d["rules"]))


def _where(rule: Rule | PostingRule) -> str:
    c = rule.check
    return f"{rule.code} {c.__module__}.{getattr(c, '__qualname__', repr(c))}"


class Auditor:
    """All tables of a stream: one `TableAuditor` each, created on first sight."""

    def __init__(self, select_pack: PackSelector, on_violation: ViolationSink,
                 on_round: RoundSink, on_engine_error: EngineErrorSink | None = None,
                 round_timeout_ms: int | None = None, keys: KeyRegistry | None = None,
                 *, released: ReleasedWriters) -> None:
        self.select_pack = select_pack
        self.keys = keys
        #: the released writer schemas, given to each table (read by the caller)
        self.released = released
        self.on_violation = on_violation
        self.on_round = on_round
        self.on_engine_error = on_engine_error
        self.round_timeout_ms = round_timeout_ms
        self.tables: dict[str, TableAuditor] = {}
        #: given to each table as it is created (`TableAuditor.watch`)
        self.watch: FoldWatch | None = None

    @property
    def engine_errors(self) -> int:
        return sum(t.engine_errors for t in self.tables.values())

    def table(self, table_id: str) -> TableAuditor:
        t = self.tables.get(table_id)
        if t is None:
            t = self.tables[table_id] = TableAuditor(
                table_id, self.select_pack, self.on_violation, self.on_round,
                self.on_engine_error, self.round_timeout_ms, self.keys,
                released=self.released)
            t.watch = self.watch
        return t

    def feed(self, ev: Event) -> Fed:
        t = self.tables.get(ev.table_id)
        if t is None:
            t = self.table(ev.table_id)
        return t.feed(ev)

    def expire(self, now_ms: int, timeout_ms: int) -> None:
        for t in self.tables.values():
            t.expire(now_ms, timeout_ms)

    def finish(self) -> None:
        for t in self.tables.values():
            t.finish()
