"""Rows of the store's tables other than `events` (round summaries, violations, audit
states, refused events), and events and violations from their rows. Times are split into
DateTime seconds plus a milliseconds column (the subset ClickHouse 18.16 and chDB share).
An event's own row is defined in `columns.py`; `stored_event` reads it back, and reads a
row whose body is the whole JSON Lines form (as older stores hold) as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..engine.auditor import RoundSummary
from ..engine.violation import Violation
from ..events.avro import (
    DecodeError,
    decode_single,
    encode,
    writer_fingerprint,
)
from ..events.jsonl import InvalidEvent, from_json
from ..events.model import Event
from ..events.schema import SINGLE_OBJECT_MAGIC

#: The top of the `rounds` money columns (Int64). One payout may be `MAX_PAYOUT` (10^18
#: cents), so a round's summed payouts can pass it (ten such payouts): its row holds
#: `paid` at this top, read as "at least", and the round is judged and stored all the
#: same; each payout's exact amount stays in its event's row (`events.amount`).
MONEY_TOP = 2**63 - 1
#: What to select of `events` for `stored_event` to rebuild each row's event.
EVENT_COLUMNS = ("type, event_id, table_id, device_id, seq, "
                 "toUInt64(ts) * 1000 + ts_ms AS at_ms, round_id, body")


def stored_json(row: Mapping[str, Any]) -> Any:
    """The JSON Lines form of the event of a row of `events` selected as
    `EVENT_COLUMNS`, as orjson loads it, in its order. A body that holds the whole form
    (a row written before the body left out `columns.ROW_FIELDS`) is that form; one that is not
    JSON is an InvalidEvent naming the event."""
    try:
        d = orjson.loads(row["body"])
    except orjson.JSONDecodeError as e:
        raise InvalidEvent(f"event {row['event_id']}: its body is not JSON: {e}") from e
    if not isinstance(d, dict) or "type" in d:
        return d
    return {"type": row["type"], "event_id": row["event_id"], "table_id": row["table_id"],
            "device_id": row["device_id"], "seq": int(row["seq"]), "ts": int(row["at_ms"]),
            "round_id": row["round_id"] or None, **d}


def stored_event(row: Mapping[str, Any]) -> Event:
    """The event of a row of `events` selected as `EVENT_COLUMNS`, checked as every
    JSON Lines event is (an InvalidEvent names what is wrong)."""
    return from_json(stored_json(row))


def round_row(s: RoundSummary) -> dict[str, Any]:
    return {
        "round_id": s.round_id, "table_id": s.table_id, "jurisdiction": s.jurisdiction,
        "game": s.game, "pack": s.pack, "pack_version": s.pack_version,
        "dealer_id": s.dealer_id, "seats": list(s.seats), "events": s.events,
        "wagered": s.wagered, "paid": min(s.paid, MONEY_TOP), "collected": s.collected,
        "returned": s.returned, "violations": s.violations, "complete": int(s.complete),
        "started": s.started // 1000, "started_ms": s.started % 1000,
        "ended": s.ended // 1000, "ended_ms": s.ended % 1000,
    }


#: What to select of `violations` for `violation_from_row` to rebuild each row's
#: violation (`detected`: its detection time in ms, the order the console reads in).
VIOLATION_COLUMNS = ("violation_id, code, severity, table_id, round_id, seat, hand, "
                     "event_id, evidence, citation, message, pack, pack_version, "
                     "toUInt64(detected_at) * 1000 + detected_ms AS detected")
#: The `seat` and `hand` a row holds for a violation of no seat or no hand: its columns
#: are not Nullable (UInt8, Int8), and neither is a seat or hand (seats are 1 on, hands
#: 0 on). Only `violation_row` and `violation_from_row` know them.
_NO_SEAT = 0
_NO_HAND = -1
_SEATS = range(1, 256)  # UInt8
_HANDS = range(0, 128)  # Int8


def violation_row(v: Violation) -> dict[str, Any]:
    """A row of `violations` (schemas/clickhouse/003_violations.sql) that reads back as
    `v` (`violation_from_row`). A ValueError names a seat or hand the row cannot hold as
    itself (seat 0 would read back as no seat)."""
    if v.seat is not None and v.seat not in _SEATS:
        raise ValueError(f"violation {v.violation_id}: seat {v.seat} is not a seat (1 to 255)")
    if v.hand is not None and v.hand not in _HANDS:
        raise ValueError(f"violation {v.violation_id}: hand {v.hand} is not a hand (0 to 127)")
    return {
        "violation_id": v.violation_id, "code": v.code, "severity": v.severity,
        "table_id": v.table_id, "round_id": v.round_id,
        "seat": _NO_SEAT if v.seat is None else v.seat,
        "hand": _NO_HAND if v.hand is None else v.hand, "event_id": v.event_id,
        "evidence": list(v.evidence), "citation": v.citation, "message": v.message,
        "pack": v.pack, "pack_version": v.pack_version,
        "detected_at": v.detected_at // 1000, "detected_ms": v.detected_at % 1000,
    }


def violation_from_row(row: Mapping[str, Any]) -> Violation:
    """The violation of a row of `violations` selected as `VIOLATION_COLUMNS`: the one
    `violation_row` was given (no seat and no hand as None). A ValueError names a row
    `violation_row` does not write (a hand below -1). The row's `violation_id` is the
    store's key for it: a row `violation_row` wrote holds `violation_id` of the
    violation; a copy of the floor (producers/history.py) keys its copies apart."""
    seat, hand = int(row["seat"]), int(row["hand"])
    if hand < _NO_HAND:
        raise ValueError(f"violation {row['violation_id']}: hand {hand} is not a hand")
    return Violation(
        row["code"], row["severity"], row["table_id"], row["round_id"],
        None if seat == _NO_SEAT else seat, None if hand == _NO_HAND else hand,
        row["event_id"], tuple(row["evidence"]), row["citation"], row["message"],
        row["pack"], row["pack_version"], int(row["detected"]))


def state_row(table_id: str, pos: int, clock: Mapping[str, int], state: Mapping[str, Any],
              closed: bool, open_round: str, open_since: int) -> dict[str, Any]:
    """A row of `audit_states`: where an audit run left a table (schemas/clickhouse).
    `clock` is each device's last seq at `pos`; `state` is `TableAuditor.export_state()`."""
    return {
        "table_id": table_id, "pos": pos, "closed": int(closed),
        "clock": orjson.dumps(dict(clock), option=orjson.OPT_SORT_KEYS).decode(),
        "open_round": open_round, "open_since_ms": open_since,
        "state": orjson.dumps(state).decode(),
    }


def refused_row(ev: Event, reason: str) -> dict[str, Any]:
    """A row of `refused_events` (schemas/clickhouse/018_refused_events.sql): an event
    the record took in as refused (`TableAuditor.refused`), its bytes as sent (what its
    digest is of: `raw`, else its canonical encoding), under the writer schema they came
    in, and why it was refused."""
    ts = ev.ts
    return {
        "table_id": ev.table_id, "device_id": ev.device_id, "seq": ev.seq,
        "event_id": ev.event_id, "round_id": ev.round_id or "", "ts": ts // 1000,
        "ts_ms": ts % 1000, "writer": writer_fingerprint(ev),
        "raw": (ev.raw if ev.raw is not None else encode(ev)).hex(), "reason": reason,
    }


def quarantined_event(row: Mapping[str, Any]) -> Event:
    """The event of a row of `refused_events`, decoded again from its bytes as sent
    under its writer schema (so its digest is the one its device's chain names),
    marked refused with the row's reason. An InvalidEvent names a row whose bytes are
    not an event of a released schema, or one that now decodes within the ranges."""
    try:
        message = SINGLE_OBJECT_MAGIC + bytes.fromhex(row["writer"]) + bytes.fromhex(row["raw"])
    except ValueError as e:
        raise InvalidEvent(f"refused event {row['event_id']}: its bytes are not hex: {e}") from e
    try:
        decode_single(message)
    except DecodeError as e:
        ev = e.event
        if ev is None:
            raise InvalidEvent(f"refused event {row['event_id']}: {e}") from e
    else:
        raise InvalidEvent(f"refused event {row['event_id']}: its bytes decode within the "
                           "contract's ranges: not the event the record refused")
    if (ev.table_id, ev.device_id, ev.seq, ev.event_id) != (
            row["table_id"], row["device_id"], int(row["seq"]), row["event_id"]):
        raise InvalidEvent(f"refused event {row['event_id']}: its bytes are another event's")
    ev.refused = row["reason"]
    return ev
