"""The JSON Lines form of docs/events.md: envelope fields, "type", payload fields beside.

`from_json` is the strict edge: whatever a device vendor or investigator writes is
checked here, field by field, and refused with a reason that names the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import orjson

from . import limits
from .avro import encode, rules_from_dict, rules_to_dict
from .model import (
    DECISIONS,
    DOUBLE_ON,
    GAMES,
    HOLE_CARD_MODES,
    JURISDICTIONS,
    PAYLOAD_TYPES,
    PLAYER_KINDS,
    POSTED_V5,
    RANKS,
    RECIPIENTS,
    ROUNDINGS,
    SUITS,
    WAGER_KINDS,
    Checkpoint,
    Event,
    Rules,
    TableOpened,
    posts_v5,
)
from .native import json_body


class InvalidEvent(ValueError):
    """A JSON object that is not an event of the contract; the message says why.
    `event`: the event as sent, when only its payload is outside the contract's ranges
    (as `avro.DecodeError.event`)."""

    def __init__(self, message: str, event: Event | None = None) -> None:
        super().__init__(message)
        self.event = event


# field -> check, per payload type. A check is a type, a vocabulary, or "?type" for nullable.
_INT, _STR, _BOOL = int, str, bool
_WAGER: Final = {"seat": _INT, "hand": _INT, "kind": WAGER_KINDS, "amount": _INT}
_FIELDS: Final[dict[str, dict[str, Any]]] = {
    "TableOpened": {"jurisdiction": JURISDICTIONS, "game": GAMES, "rules": dict},
    "ShoeLoaded": {"shoe_id": _STR, "decks": _INT},
    "RoundStarted": {"dealer_id": _STR, "seats": list},
    "WagerPlaced": _WAGER,
    "CardDealt": {"to": RECIPIENTS, "seat": (_INT, None), "hand": (_INT, None),
                  "rank": frozenset(RANKS), "suit": frozenset(SUITS), "face_up": _BOOL},
    "InsuranceOffered": {},
    "SwitchOffered": {"seat": _INT},
    "HoleCardInserted": {"dealer_blackjack": _BOOL},
    "HoleCardRevealed": {},
    "HoleCardChecked": {"dealer_blackjack": _BOOL},
    "PlayerSeated": {"seat": _INT, "player_id": _STR, "player_kind": PLAYER_KINDS},
    "PlayerLeft": {"seat": _INT},
    "PlayerDecision": {"seat": _INT, "hand": _INT, "decision": DECISIONS},
    "PayoutMade": _WAGER,
    "WagerCollected": _WAGER,
    "WagerReturned": _WAGER,
    "CardsCleared": {"seat": (_INT, None), "hand": (_INT, None)},
    "RoundEnded": {},
    "Checkpoint": {"head_seq": _INT, "head_digest": _STR, "key_id": _STR, "signature": _STR,
                   "schema_sha256": (_STR, None), "order": (_STR, None)},
}
#: payload fields carried as hex in JSON (bytes in Avro)
_HEX: Final = ("head_digest", "signature")
#: nullable payload fields carried as hex in JSON
_HEX_OR_NULL: Final = ("schema_sha256", "order")


def _check(type_name: str, name: str, value: Any, check: Any) -> None:
    ok: bool
    if isinstance(check, tuple):  # nullable
        ok = value is None or (isinstance(value, check[0]) and not isinstance(value, bool))
    elif isinstance(check, frozenset):
        ok = isinstance(value, str) and value in check
    elif check is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, check)
    if not ok:
        want = sorted(check) if isinstance(check, frozenset) else check
        raise InvalidEvent(f"{type_name}.{name}: {value!r} is not {want}")


def _ts(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise InvalidEvent(f"ts: {value!r} is not ISO-8601") from e
        if dt.tzinfo is None:
            raise InvalidEvent(f"ts: {value!r} has no zone")
        return int(dt.timestamp() * 1000)
    raise InvalidEvent(f"ts: {value!r} is neither milliseconds nor ISO-8601")


def _rules(d: dict[str, Any]) -> Rules:
    try:
        rules = rules_from_dict(d)
    except (KeyError, TypeError) as e:
        raise InvalidEvent(f"TableOpened.rules: missing or malformed {e}") from e
    if rules.hole_card not in HOLE_CARD_MODES:
        raise InvalidEvent(f"TableOpened.rules.hole_card: {rules.hole_card!r}")
    if rules.double_on not in DOUBLE_ON:
        raise InvalidEvent(f"TableOpened.rules.double_on: {rules.double_on!r}")
    if rules.rounding not in ROUNDINGS:
        raise InvalidEvent(f"TableOpened.rules.rounding: {rules.rounding!r} is not "
                           f"{sorted(ROUNDINGS)}")
    for name, default in POSTED_V5.items():
        if type(getattr(rules, name)) is not type(default):
            raise InvalidEvent(f"TableOpened.rules.{name}: {getattr(rules, name)!r}")
    return rules


def from_json(d: Any) -> Event:
    if not isinstance(d, dict):
        raise InvalidEvent("not a JSON object")
    type_name: Any = d.get("type")
    if not isinstance(type_name, str) or type_name not in _FIELDS:
        raise InvalidEvent(f"unknown type {type_name!r}")
    fields = _FIELDS[type_name]
    for name, check in (("event_id", _STR), ("table_id", _STR), ("device_id", _STR),
                        ("seq", _INT), ("round_id", (_STR, None)), ("prev_digest", (_STR, None))):
        if name not in d and not isinstance(check, tuple):
            raise InvalidEvent(f"missing {name}")
        _check("envelope", name, d.get(name), check)
    if "ts" not in d:
        raise InvalidEvent("missing ts")
    values: dict[str, Any] = {}
    for name, check in fields.items():
        if name not in d and not isinstance(check, tuple):
            raise InvalidEvent(f"{type_name}: missing {name}")
        value = d.get(name)
        _check(type_name, name, value, check)
        values[name] = value
    if type_name == "TableOpened":
        values["rules"] = _rules(values["rules"])
    elif type_name == "RoundStarted":
        if not all(isinstance(s, int) for s in values["seats"]):
            raise InvalidEvent("RoundStarted.seats: not a list of seat numbers")
        values["seats"] = tuple(values["seats"])
    elif type_name == "Checkpoint":
        for name in _HEX + _HEX_OR_NULL:
            if values[name] is None:
                continue
            try:
                values[name] = bytes.fromhex(values[name])
            except ValueError as e:
                raise InvalidEvent(f"Checkpoint.{name}: not hex") from e
        end = d.get("end", False)  # absent in the version 2 form
        _check(type_name, "end", end, _BOOL)
        if values["schema_sha256"] is None and (values["order"] is not None or end):
            raise InvalidEvent("Checkpoint: an order or an end is signed only with a "
                               "schema_sha256 (a SealedCheckpoint)")
        values["end"] = end
    digest_hex = d.get("prev_digest")
    try:
        prev = None if digest_hex is None else bytes.fromhex(digest_hex)
    except ValueError as e:
        raise InvalidEvent("prev_digest: not hex") from e
    payload = PAYLOAD_TYPES[type_name](**values)
    ev = Event(d["event_id"], d["table_id"], d["device_id"], d["seq"], _ts(d["ts"]),
               d.get("round_id"), prev, payload)
    try:
        limits.check(ev)
    except limits.OutOfRange as e:
        raise _refused(ev, f"out of the contract's range: {e}") from e
    return ev


def _refused(ev: Event, why: str) -> InvalidEvent:
    """The error for an event outside the ranges: carrying the event (marked `refused`)
    when its envelope is inside them and its values have a canonical Avro form (its
    digest, which its device's next event names)."""
    if not limits.envelope_in_range(ev):
        return InvalidEvent(why)
    try:
        encode(ev)
    except Exception:  # a value no Avro field of its type holds: no digest, no record
        return InvalidEvent(why)
    ev.refused = why
    return InvalidEvent(why, ev)


def to_json(ev: Event) -> dict[str, Any]:
    d: dict[str, Any] = {
        "type": type(ev.payload).__name__, "event_id": ev.event_id, "table_id": ev.table_id,
        "device_id": ev.device_id, "seq": ev.seq, "ts": ev.ts, "round_id": ev.round_id,
        "prev_digest": None if ev.prev_digest is None else ev.prev_digest.hex(),
    }
    p = ev.payload
    for name in p.__slots__:
        d[name] = getattr(p, name)
    if isinstance(p, TableOpened):
        # the JSON object has the datum's shape: version 5's keys only where it posts them
        d["rules"] = rules_to_dict(p.rules, posts_v5(p.rules))
    elif isinstance(p, Checkpoint):
        for name in _HEX:
            d[name] = getattr(p, name).hex()
        for name in _HEX_OR_NULL:
            v = getattr(p, name)
            d[name] = None if v is None else v.hex()
    return d


def dumps(ev: Event) -> bytes:
    """One JSON line, without the newline: written in C (`native.json_body`, the same
    bytes), else from `to_json` by orjson."""
    line = json_body(ev)
    return orjson.dumps(to_json(ev)) if line is None else line


def loads(line: bytes | str) -> Event:
    if len(line) > limits.MAX_MESSAGE_BYTES:
        raise InvalidEvent(f"a line of {len(line):,} bytes: the contract's limit is "
                           f"{limits.MAX_MESSAGE_BYTES:,}")
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise InvalidEvent(f"not JSON: {e}") from e
    return from_json(d)
