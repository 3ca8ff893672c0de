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

from .model import (
    CardDealt,
    CardsCleared,
    Checkpoint,
    Event,
    PayoutMade,
    PlayerDecision,
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
#: Identifiers (event, table, device, round, dealer, shoe, key and pay-table names).
MAX_ID: Final = 128
MAX_SEQ: Final = 2**53 - 1
#: ts: ms since the epoch, from 1970 to the last ms the store's DateTime holds (2106-02-07).
MIN_TS: Final = 0
MAX_TS: Final = 4_294_967_295_999
MAX_SEAT: Final = 32  # seats are 1..MAX_SEAT
MAX_HAND: Final = 31  # hands are 0..MAX_HAND
#: Any amount, limit or chip in cents: 0 to 10^12 (ten thousand million dollars).
MAX_AMOUNT: Final = 10**12
MAX_DECKS: Final = 16
MAX_RATIO: Final = 10**6  # a ratio's num and den are 1..MAX_RATIO
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


def _seat_hand(where: str, seat: int | None, hand: int | None) -> None:
    if seat is not None and not 1 <= seat <= MAX_SEAT:
        raise _outside(f"{where}.seat", seat, 1, MAX_SEAT)
    if hand is not None and not 0 <= hand <= MAX_HAND:
        raise _outside(f"{where}.hand", hand, 0, MAX_HAND)


def _money(p: Any) -> None:
    _seat_hand(type(p).__name__, p.seat, p.hand)
    if not 0 <= p.amount <= MAX_AMOUNT:
        raise _outside(f"{type(p).__name__}.amount", p.amount, 0, MAX_AMOUNT)


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


def _shoe(p: ShoeLoaded) -> None:
    _id("ShoeLoaded.shoe_id", p.shoe_id)
    _int("ShoeLoaded.decks", p.decks, 1, MAX_DECKS)


def _checkpoint(p: Checkpoint) -> None:
    _int("Checkpoint.head_seq", p.head_seq, 1, MAX_SEQ)
    _id("Checkpoint.key_id", p.key_id)
    if len(p.head_digest) != DIGEST_BYTES:
        raise OutOfRange(f"Checkpoint.head_digest: {len(p.head_digest)} bytes, not "
                         f"{DIGEST_BYTES}")
    if len(p.signature) != SIGNATURE_BYTES:
        raise OutOfRange(f"Checkpoint.signature: {len(p.signature)} bytes, not "
                         f"{SIGNATURE_BYTES}")


_PAYLOAD: Final[dict[type, Callable[[Any], None]]] = {
    TableOpened: lambda p: _rules(p.rules),
    ShoeLoaded: _shoe,
    RoundStarted: _round_started,
    WagerPlaced: _money,
    PayoutMade: _money,
    WagerCollected: _money,
    WagerReturned: _money,
    CardDealt: lambda p: _seat_hand("CardDealt", p.seat, p.hand),
    CardsCleared: lambda p: _seat_hand("CardsCleared", p.seat, p.hand),
    PlayerDecision: lambda p: _seat_hand("PlayerDecision", p.seat, p.hand),
    SwitchOffered: lambda p: _int("SwitchOffered.seat", p.seat, 1, MAX_SEAT),
    Checkpoint: _checkpoint,
}


def check(ev: Event) -> None:
    """Raise OutOfRange naming the first field of `ev` outside the contract's ranges."""
    if not 0 < len(ev.event_id) <= MAX_ID:
        raise _length("event_id", ev.event_id)
    if not 0 < len(ev.table_id) <= MAX_ID:
        raise _length("table_id", ev.table_id)
    if not 0 < len(ev.device_id) <= MAX_ID:
        raise _length("device_id", ev.device_id)
    if ev.round_id is not None and not 0 < len(ev.round_id) <= MAX_ID:
        raise _length("round_id", ev.round_id)
    if not 1 <= ev.seq <= MAX_SEQ:
        raise OutOfRange(f"seq: {ev.seq} is outside 1..{MAX_SEQ}")
    if not MIN_TS <= ev.ts <= MAX_TS:
        raise OutOfRange(f"ts: {ev.ts} is outside {MIN_TS}..{MAX_TS} (ms from 1970 to 2106)")
    if ev.prev_digest is not None and len(ev.prev_digest) != DIGEST_BYTES:
        raise OutOfRange(f"prev_digest: {len(ev.prev_digest)} bytes, not {DIGEST_BYTES}")
    f = _PAYLOAD.get(type(ev.payload))
    if f is not None:
        f(ev.payload)
