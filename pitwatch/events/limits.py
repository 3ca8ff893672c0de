"""The contract's ranges (docs/events.md, "Ranges"): what a decoder accepts.

An event outside them is refused where it is decoded, with the field and the range in
the reason: the worker dead-letters it, a file reader rejects it with its line (or
record) number. Nothing outside them reaches the engine or the store, so nothing is
wrapped (a seat of 300 in a UInt8 column), clamped or allowed to grow a snapshot past
the broker's message limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from . import native
from .model import (
    CardDealt,
    CardsCleared,
    Checkpoint,
    Event,
    HoleCardChecked,
    HoleCardInserted,
    HoleCardRevealed,
    InsuranceOffered,
    PayoutMade,
    PlayerDecision,
    PlayerLeft,
    PlayerSeated,
    RoundEnded,
    RoundStarted,
    Rules,
    ShoeLoaded,
    SwitchOffered,
    TableOpened,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)

#: The largest single-object message (or Avro record, or JSON line) a reader takes. A
#: TableOpened with pay tables is about 1 KiB; the broker's default limit is 1 MB.
MAX_MESSAGE_BYTES: Final = 64 * 1024
#: The most bytes a container file's block may hold, inflated: its records x
#: MAX_MESSAGE_BYTES, and never past this (64 x the message limit; writers cut a block
#: at 16-64 KB). A block that would inflate past its bound is refused, not inflated.
MAX_BLOCK_BYTES: Final = 64 * MAX_MESSAGE_BYTES
#: The most bytes of a container file's header metadata (its schema is about 30 KB).
MAX_HEADER_BYTES: Final = 1024 * 1024
#: Identifiers (event, table, device, round, dealer, shoe, key and pay-table names).
MAX_ID: Final = 128
MAX_SEQ: Final = 2**53 - 1
#: ts: ms since the epoch, from 1970 to the last ms the store's DateTime holds (2106-02-07).
MIN_TS: Final = 0
MAX_TS: Final = 4_294_967_295_999
MAX_SEAT: Final = 32  # seats are 1..MAX_SEAT
MAX_HAND: Final = 31  # hands are 0..MAX_HAND
#: Any amount but a payout's (`MAX_PAYOUT`), limit or chip in cents: 0 to 10^12 (ten
#: thousand million dollars).
MAX_AMOUNT: Final = 10**12
MAX_DECKS: Final = 16
MAX_RATIO: Final = 10**6  # a ratio's num and den are 1..MAX_RATIO
#: A payout in cents: a wager's ceiling at the highest odds a table can post (MAX_RATIO
#: to 1), so no payout the posted odds allow is refused: 10^18, under a signed 64-bit
#: column's 9.2 x 10^18. Whether it is the right amount is the rules' question.
MAX_PAYOUT: Final = MAX_AMOUNT * MAX_RATIO
MAX_PAY_TABLES: Final = 32
MAX_PAY_ENTRIES: Final = 64
DIGEST_BYTES: Final = 32
SIGNATURE_BYTES: Final = 64


class OutOfRange(ValueError):
    """A field outside the contract's ranges; the message names it and the range."""


# Each check is its condition, then the error naming the field; the error's text is made
# only when it is raised (every event is checked: this is on the decoder's hot path).


def _outside(where: str, v: int, lo: int, hi: int) -> OutOfRange:
    return OutOfRange(f"{where}: {v} is outside {lo}..{hi}")


def _length(where: str, v: str) -> OutOfRange:
    return OutOfRange(f"{where}: {len(v)} characters, not 1..{MAX_ID}")


def _int(where: str, v: int, lo: int, hi: int) -> None:
    if not lo <= v <= hi:
        raise _outside(where, v, lo, hi)


def _id(where: str, v: str) -> None:
    if not 0 < len(v) <= MAX_ID:
        raise _length(where, v)


def _rules(r: Rules) -> None:
    w = "TableOpened.rules"
    _int(f"{w}.decks", r.decks, 1, MAX_DECKS)
    _int(f"{w}.max_split_hands", r.max_split_hands, 1, MAX_HAND + 1)
    for name in ("min_wager", "max_wager"):
        _int(f"{w}.{name}", getattr(r, name), 0, MAX_AMOUNT)
    _int(f"{w}.chip_unit", r.chip_unit, 1, MAX_AMOUNT)
    if r.bonus_wager_max is not None:
        _int(f"{w}.bonus_wager_max", r.bonus_wager_max, 0, MAX_AMOUNT)
    ratios = [("blackjack_pays", r.blackjack_pays.num, r.blackjack_pays.den),
              ("insurance_pays", r.insurance_pays.num, r.insurance_pays.den)]
    tables = r.pay_tables or ()
    if len(tables) > MAX_PAY_TABLES:
        raise OutOfRange(f"{w}.pay_tables: {len(tables)}, at most {MAX_PAY_TABLES}")
    for t in tables:
        _id(f"{w}.pay_tables.name", t.name)
        if len(t.entries) > MAX_PAY_ENTRIES:
            raise OutOfRange(f"{w}.pay_tables[{t.name}]: {len(t.entries)} entries, at most "
                             f"{MAX_PAY_ENTRIES}")
        for e in t.entries:
            _id(f"{w}.pay_tables[{t.name}].key", e.key)
            ratios.append((f"pay_tables[{t.name}][{e.key}]", e.num, e.den))
    for name, num, den in ratios:
        _int(f"{w}.{name}.num", num, 1, MAX_RATIO)
        _int(f"{w}.{name}.den", den, 1, MAX_RATIO)


def _round_started(p: RoundStarted) -> None:
    _id("RoundStarted.dealer_id", p.dealer_id)
    if len(p.seats) > MAX_SEAT:
        raise OutOfRange(f"RoundStarted.seats: {len(p.seats)} seats, at most {MAX_SEAT}")
    for s in p.seats:
        _int("RoundStarted.seats", s, 1, MAX_SEAT)


#: The ranges of the fields checked one by one (`native.Field`: attribute, kind, lo, hi,
#: optional), in the order they are checked: the envelope's, and the payloads' whose
#: every checked field is an int, a str's length or a bytes' length (the others have
#: functions of their own, `_PAYLOAD`). A type with no checked field has none. C checks
#: these (`_in_range`) for nearly every event.
_ID: Final = (1, MAX_ID)
ENVELOPE: Final[tuple[native.Field, ...]] = (
    ("event_id", "str", *_ID, False), ("table_id", "str", *_ID, False),
    ("device_id", "str", *_ID, False), ("round_id", "str", *_ID, True),
    ("seq", "int", 1, MAX_SEQ, False), ("ts", "int", MIN_TS, MAX_TS, False),
    ("prev_digest", "bytes", DIGEST_BYTES, DIGEST_BYTES, True),
)
_SEAT_HAND: Final[tuple[native.Field, ...]] = (
    ("seat", "int", 1, MAX_SEAT, True), ("hand", "int", 0, MAX_HAND, True))
_MONEY: Final = (*_SEAT_HAND, ("amount", "int", 0, MAX_AMOUNT, False))
_PAID: Final = (*_SEAT_HAND, ("amount", "int", 0, MAX_PAYOUT, False))
FIELDS: Final[dict[type, tuple[native.Field, ...]]] = {
    WagerPlaced: _MONEY, PayoutMade: _PAID, WagerCollected: _MONEY, WagerReturned: _MONEY,
    CardDealt: _SEAT_HAND, CardsCleared: _SEAT_HAND, PlayerDecision: _SEAT_HAND,
    SwitchOffered: (("seat", "int", 1, MAX_SEAT, False),),
    ShoeLoaded: (("shoe_id", "str", *_ID, False), ("decks", "int", 1, MAX_DECKS, False)),
    Checkpoint: (("head_seq", "int", 1, MAX_SEQ, False), ("key_id", "str", *_ID, False),
                 ("head_digest", "bytes", DIGEST_BYTES, DIGEST_BYTES, False),
                 ("signature", "bytes", SIGNATURE_BYTES, SIGNATURE_BYTES, False),
                 ("schema_sha256", "bytes", DIGEST_BYTES, DIGEST_BYTES, True),
                 ("order", "bytes", DIGEST_BYTES, DIGEST_BYTES, True)),
    InsuranceOffered: (), HoleCardInserted: (), HoleCardRevealed: (), RoundEnded: (),
    HoleCardChecked: (),
    PlayerSeated: (("seat", "int", 1, MAX_SEAT, False), ("player_id", "str", *_ID, False)),
    PlayerLeft: (("seat", "int", 1, MAX_SEAT, False),),
}

#: The payloads with ranges `FIELDS` cannot say: lists, and the rules' nested records.
_PAYLOAD: Final[dict[type, Callable[[Any], None]]] = {
    TableOpened: lambda p: _rules(p.rules),
    RoundStarted: _round_started,
}

#: True when an event is certainly inside the ranges (in C; without the extension,
#: never): `check` then has nothing to find.
_in_range = native.range_check(Event, ENVELOPE, "payload", FIELDS)


#: What a range is in, where its numbers alone do not say.
_UNITS: Final = {"ts": " (ms from 1970 to 2106)"}


def _fields(obj: Any, fields: tuple[native.Field, ...], prefix: str) -> None:
    for name, kind, lo, hi, optional in fields:
        v = getattr(obj, name)
        if optional and v is None:
            continue
        if kind == "int":
            if not lo <= v <= hi:
                raise OutOfRange(f"{prefix}{name}: {v} is outside {lo}..{hi}"
                                 + _UNITS.get(prefix + name, ""))
        elif not lo <= len(v) <= hi:
            unit, want = ("characters", f"{lo}..{hi}") if kind == "str" else (
                "bytes", f"{lo}" if lo == hi else f"{lo}..{hi}")
            raise OutOfRange(f"{prefix}{name}: {len(v)} {unit}, not {want}")


def envelope_in_range(ev: Event) -> bool:
    """Whether `ev`'s envelope (table, device, seq, event id, ts, round, prev_digest) is
    inside the ranges: an event refused for its payload alone is still its device's."""
    try:
        _fields(ev, ENVELOPE, "")
    except OutOfRange:
        return False
    return True


def check(ev: Event) -> None:
    """Raise OutOfRange naming the first field of `ev` outside the contract's ranges."""
    if not _in_range(ev):
        check_in_python(ev)


def check_in_python(ev: Event) -> None:
    """`check` with no help from C: what finds and names the field out of range."""
    _fields(ev, ENVELOPE, "")
    p = ev.payload
    fields = FIELDS.get(type(p))
    if fields is not None:
        _fields(p, fields, type(p).__name__ + ".")
    elif (f := _PAYLOAD.get(type(p))) is not None:
        f(p)
