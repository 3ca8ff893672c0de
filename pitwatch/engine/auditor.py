"""The per-table auditor: cuts a table's stream into rounds, keeps each device's record
honest (seq and prev_digest), treats redeliveries as no-ops, runs the rule pack's
checks on every event and folds it into the round.

Violations go out through `on_violation` the moment the evidence arrives; a round's
summary goes out through `on_round` when it ends (or is found incomplete).

Time (docs/procedure.md, "When a round is incomplete"): the engine reads no clock. A
round is incomplete when the table's own stream shows it: its next round or a table
event arrives, or an event of the table carries a device ts more than the time-out
after the round's last event. A live worker adds the processing-time rule
(`expire_idle`) when its partition is caught up; the wall clock is never compared with
device ts.

A check that raises anything but `Undecidable` is an engine error: counted in
`engine_errors`, logged, sent to `on_engine_error`, never a violation
(`pitwatch.engine.errors`).
"""

from __future__ import annotations

import base64
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from ..events.avro import decode_single, digest, message_bytes, rules_from_dict, rules_to_dict
from ..events.keys import KeyRegistry
from ..events.model import (
    Checkpoint,
    Event,
    RoundEnded,
    RoundStarted,
    ShoeLoaded,
    TableOpened,
    WagerReturned,
)
from .errors import FOLD, EngineErrorSink, engine_error
from .rulepack import Finding, PostingRule, Rule, RulePack, Undecidable
from .state import Round, TableState
from .violation import Severity, Violation, violation_id

#: How many recent seq numbers per device are remembered to tell a redelivery (same
#: event_id) from a conflict (another event with the same seq). A snapshot keeps all of
#: them, so a restored auditor judges a late copy exactly as the live one would.
SEQ_WINDOW = 1024
#: The version of `export_state`'s format; `import_state` refuses any other.
STATE_VERSION = 1
#: How many devices a table has at most (docs/events.md, "Ranges"): each keeps a seq
#: window, so a stream inventing device ids cannot grow a table's state and snapshot.
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


class _Device:
    __slots__ = ("last_digest", "last_event", "last_seq", "stranger_round", "unsigned",
                 "unsigned_from", "unsigned_last", "unsigned_round", "window")

    def __init__(self) -> None:
        self.last_seq = 0
        self.last_event: Event | None = None
        self.last_digest: bytes | None = None  # of the last event, when restored without it
        self.window: OrderedDict[int, str] = OrderedDict()
        #: events since the device's last checkpoint (counted only for a device that
        #: signs), the seq of the first of them, the last one (seq, event id, ts) and
        #: its round
        self.unsigned = 0
        self.unsigned_from = 0
        self.unsigned_last: tuple[int, str, int] = (0, "", 0)
        self.unsigned_round: str | None = None
        #: for a device the key registry does not know: the round (or "" between
        #: rounds) it was last reported in, so it is reported once a round
        self.stranger_round: str | None = None

    @property
    def seen(self) -> bool:
        return self.last_event is not None or self.last_digest is not None

    def prev_digest(self) -> bytes:
        return digest(self.last_event) if self.last_event is not None else self.last_digest or b""

    def to_json(self) -> dict[str, Any]:
        return {"last_seq": self.last_seq, "last_digest": _b64(self.prev_digest()),
                "window": _window_to_json(self.window), "unsigned": self.unsigned,
                "unsigned_from": self.unsigned_from, "unsigned_last": list(self.unsigned_last),
                "unsigned_round": self.unsigned_round, "stranger_round": self.stranger_round}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> _Device:
        dev = cls()
        dev.last_seq = int(d["last_seq"])
        dev.last_digest = _unb64(d["last_digest"])
        dev.window = _window_from_json(d["window"])
        dev.unsigned = int(d.get("unsigned", 0))  # absent in snapshots before signing
        dev.unsigned_from = int(d.get("unsigned_from", 0))
        seq, event_id, ts = d.get("unsigned_last", (0, "", 0))
        dev.unsigned_last = (int(seq), str(event_id), int(ts))
        r = d.get("unsigned_round")
        dev.unsigned_round = None if r is None else str(r)
        s = d.get("stranger_round")  # absent in snapshots before strangers were reported
        dev.stranger_round = None if s is None else str(s)
        return dev


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _unb64(s: str) -> bytes:
    return base64.b64decode(s, validate=True)


def _window_to_json(window: OrderedDict[int, str]) -> dict[str, Any]:
    """seq -> event_id compactly: the seqs as first + steps, the ids packed as 16-byte
    UUIDs when they all are canonical UUID strings (the simulator's and most devices')."""
    seqs = list(window)
    ids = list(window.values())
    steps = [b - a for a, b in pairwise(seqs)]
    out: dict[str, Any] = {"first": seqs[0] if seqs else 0,
                           "steps": None if all(d == 1 for d in steps) else steps,
                           "n": len(seqs)}
    packed = _pack_uuids(ids)
    if packed is not None:
        out["uuids"] = _b64(packed)
        return out
    out["ids"] = ids
    return out


def _pack_uuids(ids: list[str]) -> bytes | None:
    """The ids as 16-byte UUIDs when each is a canonical UUID string (lower-case hex,
    8-4-4-4-12: what str(uuid.UUID(...)) gives back), else None. In bulk, without a
    UUID object per id: a snapshot's window holds thousands."""
    joined = "".join(ids)
    if len(joined) != 36 * len(ids) or joined.count("-") != 4 * len(ids):
        return None
    if any(joined[k::36].count("-") != len(ids) for k in (8, 13, 18, 23)):
        return None
    digits = joined.replace("-", "")
    if digits != digits.lower():
        return None
    try:
        packed = bytes.fromhex(digits)
    except ValueError:
        return None
    return packed if len(packed) == 16 * len(ids) else None  # fromhex skips whitespace


def _window_from_json(d: dict[str, Any]) -> OrderedDict[int, str]:
    n, seq = int(d["n"]), int(d["first"])
    steps = d["steps"] or [1] * max(n - 1, 0)
    seqs = [seq]
    for step in steps:
        seq += int(step)
        seqs.append(seq)
    if "uuids" in d:
        raw = _unb64(d["uuids"])
        ids = [str(uuid.UUID(bytes=raw[k * 16:k * 16 + 16])) for k in range(n)]
    else:
        ids = [str(i) for i in d["ids"]]
    if len(ids) != n or (n and len(seqs) != n):
        raise StateError("seq window: counts disagree")
    return OrderedDict(zip(seqs[:n], ids, strict=True))


PackSelector = Callable[[str, str], RulePack]
ViolationSink = Callable[[Violation], None]
RoundSink = Callable[[RoundSummary], None]


class TableAuditor:
    def __init__(self, table_id: str, select_pack: PackSelector,
                 on_violation: ViolationSink, on_round: RoundSink,
                 on_engine_error: EngineErrorSink | None = None,
                 round_timeout_ms: int | None = None, keys: KeyRegistry | None = None) -> None:
        self.table = TableState(table_id)
        #: the device keys: with them, a device in the registry must sign its chain
        #: (docs/events.md, "Signed checkpoints"); without, checkpoints are not judged
        self.keys = keys
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

    # --- input -----------------------------------------------------------------------

    def feed(self, ev: Event) -> None:
        if type(ev.payload) is Checkpoint:
            self._checkpoint(ev, ev.payload)
            return
        if not self._record(ev):
            return
        if self.keys is not None:
            self._unsigned(ev)
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

    def _route(self, ev: Event) -> None:
        """An event the record accepted: to the table, or to its round."""
        rid = ev.round_id
        if rid is None:
            if self._base is not None:
                self._since.append(ev)
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
            if not self.table.opened:  # no rule pack: say so, do not pass it silently
                self._raise_record("TABLE_NOT_OPENED", ev, rid,
                                   f"round {rid} at table {self.table.table_id}, which has "
                                   "no TableOpened: no posted rules, no jurisdiction, judged "
                                   "by the record rules only")
        elif r.ended:
            self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                               f"{ev.type} after the round ended")
            return
        self._since.append(ev)
        p = ev.payload
        t = type(p)
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
                    # the record cannot decide it (e.g. after lost events): say so, keep
                    # the event out of the fold, and go on with the stream
                    self._raise_record("PROCEDURE_OUT_OF_ORDER", ev, rid,
                                       f"{ev.type} cannot be judged in this round's state "
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
        r = self.round
        if r is None or r.ended:
            return False
        self._incomplete(r, r.last_ts + timeout_ms,
                         f"nothing arrived for the table for {timeout_ms / 1000:g} s "
                         "(processing time, partition caught up)")
        return True

    def expire_unsigned(self, timeout_ms: int) -> bool:
        """The processing-time rule for signatures, for a caller that knows the table's
        partition is caught up and nothing arrived for the table for `timeout_ms`: a
        signing device's events after its last checkpoint are a truncated chain, as at
        the end of a file (the same violation ids). Returns whether any was found."""
        if self.keys is None:
            return False
        found = False
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
        if self.keys is not None:
            for device_id, dev in self.devices.items():
                if dev.unsigned:
                    self._missing(device_id, dev, "the input ended after it (a "
                                  "truncated chain: its last events are vouched for by nothing)")

    # --- snapshots ---------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """Everything the auditor knows, as JSON-ready data (no code, no pickle), version
        STATE_VERSION: the table's posted rules and shoe, each device's record (last
        seq, digest of its last event, the whole seq window), the recently closed
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
        }

    def import_state(self, state: dict[str, Any]) -> None:
        """Become the auditor `export_state` described. Raises StateError (and stays
        as it was) on a snapshot of another version or one that does not parse."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            v = state.get("version") if isinstance(state, dict) else None
            raise StateError(f"snapshot version {v!r}, this auditor reads {STATE_VERSION}")
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
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StateError(f"damaged snapshot: {e!r}") from e
        self.table, self.pending_open, self.early = table, pending, early
        self.pack = self.select_pack(table.jurisdiction, table.game) if table.opened \
            else self.select_pack("OTHER", "OTHER")
        self.devices, self.closed, self.clock = devices, closed, clock
        rid = state.get("rid")
        self._rid = None if rid is None else str(rid)
        self.round, self._base, self._since = None, None, []
        quiet_v, quiet_r = self.on_violation, self.on_round
        self.on_violation, self.on_round, self._refolding = _drop, _drop, True
        try:  # the open round, folded again: what it raised (findings, engine errors)
            for ev in since:  # went out when first found
                self._route(ev)
        finally:
            self.on_violation, self.on_round, self._refolding = quiet_v, quiet_r, False
        self.early = early_now
        if self.round is not None and self.round_open:
            self.round.violations = round_violations

    # --- signatures (docs/events.md, "Signed checkpoints") -----------------------------

    def _checkpoint(self, ev: Event, p: Checkpoint) -> None:
        """A device's checkpoint: part of its record (seq, digest), never of a round.
        Judged only with a key registry: once per checkpoint, off the per-event path."""
        dev = self.devices.get(ev.device_id)
        head_seq, head = 0, b""
        if dev is not None and dev.seen:
            head_seq, head = dev.last_seq, dev.prev_digest()
            dev.last_event, dev.last_digest = None, head  # digested once, not again
        if not self._record(ev):
            return
        keys = self.keys
        if keys is None:
            return
        dev = self.devices[ev.device_id]
        if p.head_seq != head_seq or p.head_digest != head:
            why: str | None = (
                f"{ev.device_id} checkpoint claims head seq {p.head_seq} "
                f"({p.head_digest.hex()[:12]}…), the chain's head is seq {head_seq} "
                f"({head.hex()[:12]}…)")
        else:
            why = keys.check(ev.table_id, ev.device_id, p.head_seq, p.head_digest, p.key_id,
                             p.signature)
        if why is not None:
            self._raise_record("SIGNATURE_INVALID", ev, ev.round_id, why)
        dev.unsigned, dev.unsigned_round = 0, None

    def _unsigned(self, ev: Event) -> None:
        """Count a signing device's events since its checkpoint: more than the posted
        number, or a table that moved on with some of them unsigned, is a missing one."""
        rid = ev.round_id
        if rid != self._rid:  # the table moves on: what came before must be signed
            for device_id, d in self.devices.items():
                if d.unsigned and d.unsigned_round != rid and device_id != ev.device_id:
                    self._missing(device_id, d, _moved(rid))
            self._rid = rid
        keys = self.keys
        assert keys is not None
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
        dev.unsigned += 1
        dev.unsigned_last = (ev.seq, ev.event_id, ev.ts)
        dev.unsigned_round = rid

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

    # --- the record: seq, digest, redelivery -----------------------------------------

    def _record(self, ev: Event) -> bool:
        """Check the device's record; False when the event is not to be applied."""
        dev = self.devices.get(ev.device_id)
        if dev is None:
            if len(self.devices) >= MAX_DEVICES:  # the table's state stays bounded
                self._raise_record("DEVICE_LIMIT_EXCEEDED", ev, ev.round_id,
                                   f"{ev.device_id} would be device {len(self.devices) + 1} "
                                   f"of table {self.table.table_id}; at most {MAX_DEVICES}: "
                                   "not applied")
                return False
            dev = self.devices[ev.device_id] = _Device()
        seq = ev.seq
        if not dev.seen:
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
            expected = dev.prev_digest()
            if ev.prev_digest != expected:
                self._digest_mismatch(ev, expected)
        dev.last_seq = seq
        dev.last_event = ev
        dev.last_digest = None
        window = dev.window
        window[seq] = ev.event_id
        if len(window) > SEQ_WINDOW:
            window.popitem(last=False)
        return True

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
        return r

    def _incomplete(self, r: Round, ts: int, why: str, shown_by: str | None = None) -> None:
        """The round ends incomplete. Whichever rule found it (docs/procedure.md), the
        violation cites the round's last event, so its id is one function of the
        table's stream: a worker that died after a processing-time verdict, before its
        snapshot, has a successor that gives the same id when the table moves on. The
        event that showed it, if another, is its evidence."""
        severity, citation = self.pack.record_citations["ROUND_INCOMPLETE"]
        self._emit_raw(r, "ROUND_INCOMPLETE", severity, citation, r.last_event_id, ts,
                       Finding(f"round {r.round_id} has no RoundEnded: {why}",
                               evidence=() if shown_by is None else (shown_by,)))
        self._close(r, complete=False)

    def _close(self, r: Round, complete: bool) -> None:
        r.ended = True
        self._base, self._since = None, []
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
                      severity: Severity | None = None) -> None:
        self._raise_record_at(code, ev.event_id, ev.ts, round_id, message, severity)

    def _raise_record_at(self, code: str, event_id: str, ts: int, round_id: str | None,
                         message: str, severity: Severity | None = None) -> None:
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

    def _emit(self, r: Round, code: str, severity: str, citation: str, ev: Event,
              f: Finding) -> str:
        return self._emit_raw(r, code, severity, citation, ev.event_id, ev.ts, f)

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
                 round_timeout_ms: int | None = None, keys: KeyRegistry | None = None) -> None:
        self.select_pack = select_pack
        self.keys = keys
        self.on_violation = on_violation
        self.on_round = on_round
        self.on_engine_error = on_engine_error
        self.round_timeout_ms = round_timeout_ms
        self.tables: dict[str, TableAuditor] = {}

    @property
    def engine_errors(self) -> int:
        return sum(t.engine_errors for t in self.tables.values())

    def table(self, table_id: str) -> TableAuditor:
        t = self.tables.get(table_id)
        if t is None:
            t = self.tables[table_id] = TableAuditor(
                table_id, self.select_pack, self.on_violation, self.on_round,
                self.on_engine_error, self.round_timeout_ms, self.keys)
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
