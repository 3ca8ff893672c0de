"""Events, rules and money as a person reads them: device time to the millisecond in
UTC (to line up with the video), cards as cards, amounts in dollars and cents."""

from __future__ import annotations

from datetime import UTC, datetime

from pitwatch.events.model import (
    CardDealt,
    CardsCleared,
    Checkpoint,
    Event,
    HoleCardInserted,
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
from pitwatch.money import dollars

SUIT_SYMBOLS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
RED_SUITS = frozenset({"D", "H"})


def device_time(ts_ms: int) -> str:
    """`2026-12-01 00:21:20.428` (UTC): the device clock, as stamped."""
    return datetime.fromtimestamp(ts_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.") + \
        f"{ts_ms % 1000:03d}"


def card(rank: str, suit: str) -> str:
    return f"{rank}{SUIT_SYMBOLS.get(suit, suit)}"


def _where(seat: int | None, hand: int | None) -> str:
    if seat is None:
        return "dealer"
    return f"seat {seat}" + (f" hand {hand}" if hand else "")


def describe(ev: Event) -> str:
    """What the event says, in words: who, which card, how much."""
    p = ev.payload
    if isinstance(p, CardDealt):
        who = "dealer" if p.to == "DEALER" else _where(p.seat, p.hand)
        face = card(p.rank, p.suit) + ("" if p.face_up else " (face down)")
        return f"{face} to {who}"
    if isinstance(p, WagerPlaced | PayoutMade | WagerCollected | WagerReturned):
        return f"{p.kind} {dollars(p.amount)}, {_where(p.seat, p.hand)}"
    if isinstance(p, PlayerDecision):
        return f"{p.decision}, {_where(p.seat, p.hand)}"
    if isinstance(p, RoundStarted):
        return f"dealer {p.dealer_id}, seats {', '.join(map(str, p.seats)) or 'none'}"
    if isinstance(p, CardsCleared):
        return f"cards of {_where(p.seat, p.hand)}" if p.seat is not None \
            else "the dealer's cards"
    if isinstance(p, HoleCardInserted):
        return "reader: dealer blackjack" if p.dealer_blackjack else "reader: no blackjack"
    if isinstance(p, SwitchOffered):
        return f"seat {p.seat}"
    if isinstance(p, ShoeLoaded):
        return f"shoe {p.shoe_id}, {p.decks} decks"
    if isinstance(p, TableOpened):
        return f"{p.jurisdiction} {p.game}"
    if isinstance(p, Checkpoint):
        return f"{ev.device_id} signed its record to seq {p.head_seq} (key {p.key_id})"
    return ""


def rules_lines(r: Rules) -> list[str]:
    """The posted rules in force, one line each, money in dollars."""
    bj, ins = r.blackjack_pays, r.insurance_pays
    lines = [
        f"{r.decks} decks; dealer {'hits' if r.dealer_hits_soft_17 else 'stands on'} soft 17",
        f"blackjack pays {bj.num} to {bj.den}; hole card: {r.hole_card}",
        f"wagers {dollars(r.min_wager)} to {dollars(r.max_wager)}, chip unit "
        f"{dollars(r.chip_unit)}",
        f"double on {r.double_on}" + ("; double after split" if r.double_after_split else "")
        + f"; split to {r.max_split_hands} hands",
        "insurance " + (f"pays {ins.num} to {ins.den}" if r.insurance else "not offered")
        + ("; even money" if r.even_money else ""),
        "surrender " + ("offered" if r.surrender else "not offered"),
    ]
    if r.bonus_wager:
        cap = "" if r.bonus_wager_max is None else f", at most {dollars(r.bonus_wager_max)}"
        lines.append(f"bonus wager (dealer busts on the third card){cap}")
    for flag, name in ((r.match_wager, "match wager"), (r.push22_wager, "Push 22 wager"),
                       (r.progressive_wager, "progressive wager"),
                       (r.multiple_action, "multiple action")):
        if flag:
            lines.append(name)
    for t in r.pay_tables or ():
        lines.append(f"pay table {t.name}: " + ", ".join(
            f"{e.key} {e.num} to {e.den}" for e in t.entries))
    return lines


def decisions(events: list[Event]) -> str:
    """Each hand's decisions in order: `seat 2: HIT, STAND; seat 5 hand 1: DOUBLE`."""
    by_hand: dict[tuple[int, int], list[str]] = {}
    for ev in events:
        p = ev.payload
        if isinstance(p, PlayerDecision):
            by_hand.setdefault((p.seat, p.hand), []).append(p.decision)
    return "; ".join(f"{_where(s, h)}: {', '.join(d)}"
                     for (s, h), d in sorted(by_hand.items())) or "none"
