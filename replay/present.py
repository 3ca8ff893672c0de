"""Events, rules and money as a person reads them: device time to the millisecond in
UTC (to line up with the video), cards as cards, amounts in dollars and cents."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pitwatch.blackjack import (
    BONUS_PAY_TABLE,
    MATCH_PAY_TABLE,
    PUSH22_PAY_TABLE,
    Outcome,
    Ratio,
    Settlement,
    settle_hand,
)
from pitwatch.citations import Quote, regulations_dir
from pitwatch.engine.state import Round
from pitwatch.engine.violation import Violation
from pitwatch.events.model import (
    CardDealt,
    CardsCleared,
    Checkpoint,
    Event,
    HoleCardChecked,
    HoleCardInserted,
    PayoutMade,
    PlayerDecision,
    PlayerLeft,
    PlayerSeated,
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
from pitwatch.packs.checks.hands import DEALER_22_GAMES
from pitwatch.protect.seat_words import left_words, seated_words

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
    if isinstance(p, HoleCardChecked):
        return "peek: dealer blackjack" if p.dealer_blackjack else "peek: no blackjack"
    if isinstance(p, SwitchOffered):
        return f"seat {p.seat}"
    if isinstance(p, ShoeLoaded):
        return f"shoe {p.shoe_id}, {p.decks} decks"
    if isinstance(p, TableOpened):
        return f"{p.jurisdiction} {p.game}"
    if isinstance(p, Checkpoint):
        return f"{ev.device_id} signed its record to seq {p.head_seq} (key {p.key_id})"
    if isinstance(p, PlayerSeated):
        return seated_words(p.seat, p.player_id, p.player_kind)
    if isinstance(p, PlayerLeft):
        return left_words(p.seat)
    return ""


def _table(entries: Mapping[Any, Ratio]) -> str:
    return ", ".join(f"{k} {v.num} to {v.den}" for k, v in entries.items())


def rules_lines(r: Rules, game: str = "") -> list[str]:
    """The posted rules in force, one line each, money in dollars: with the game's
    push on a dealer 22 and the pay table each side wager is judged by (the one posted,
    or the one pitwatch applies when none is)."""
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
    if game in DEALER_22_GAMES:
        lines.append(f"{game}: a dealer's 22 pushes every standing hand but a blackjack")
    defaults: dict[str, Mapping[Any, Ratio]] = {}
    if r.bonus_wager:
        cap = "" if r.bonus_wager_max is None else f", at most {dollars(r.bonus_wager_max)}"
        lines.append(f"bonus wager (dealer busts on the third card){cap}")
        defaults["BONUS"] = BONUS_PAY_TABLE
    options: list[tuple[bool, str, str, Mapping[Any, Ratio] | None]] = [
        (r.match_wager, "match wager", "MATCH", MATCH_PAY_TABLE),
        (r.push22_wager, "Push 22 wager", "PUSH22", PUSH22_PAY_TABLE),
        (r.progressive_wager, "progressive wager", "", None),
        (r.multiple_action, "multiple action", "", None)]
    for flag, name, key, table in options:
        if flag:
            lines.append(name)
            if table is not None:
                defaults[key] = table
    for t in r.pay_tables or ():
        lines.append(f"pay table {t.name}: " + ", ".join(
            f"{e.key} {e.num} to {e.den}" for e in t.entries))
    for key, table in defaults.items():
        if r.pay_table(key) is None:
            lines.append(f"pay table {key} (none posted; pitwatch judges by): {_table(table)}")
    return lines


def quote_kind(q: Quote) -> str:
    """Whose words a quote is: "regulation" for a regulation's own text, else what it
    is, to print beside it (pitwatch's paraphrase of a regulation, or pitwatch's own
    posted-rules reading or record rule), so no summary passes for the regulation."""
    name = q.source.rsplit("/", 1)[-1]
    if not q.source.startswith("docs/regulations/") or name == "posted-rules.txt":
        return f"pitwatch's own rule, from {q.source}: not the text of a regulation"
    try:
        head = (regulations_dir() / name).read_text(encoding="utf-8")[:2000]
    except OSError:
        return "regulation"
    if "PARAPHRASE" in head:
        return (f"pitwatch's summary of the regulation, in its own words ({q.source}): "
                "not the text of the regulation")
    return "regulation"


def drew_wrong_swing(v: Violation, events: list[Event], state: Round) -> int | None:
    """For a dealer who drew on a total the rules stand on: the money the draw moved,
    in cents, summed over the hands' main, double and split wagers: what each was
    settled at against what it would have been settled at had the dealer stood where
    the rules say (None when the record cannot tell)."""
    dealer_cards = [ev.event_id for ev in events if isinstance(ev.payload, CardDealt)
                    and ev.payload.to == "DEALER"]
    if v.event_id not in dealer_cards:
        return None
    stood = state.dealer_ranks[:dealer_cards.index(v.event_id)]
    rules = state.table.rules
    pushes = state.table.game in DEALER_22_GAMES
    swing = 0
    for h in state.hands.values():
        if h.surrendered or h.even_money:
            continue
        for kind, w in h.wagers.items():
            if kind not in ("MAIN", "DOUBLE", "SPLIT") or w.settlements == 0:
                continue
            try:
                due = (Settlement(Outcome.LOSE, 0, w.amount, 0) if h.bust else settle_hand(
                    h.ranks, stood, w.amount, blackjack_pays=rules.blackjack_pays,
                    dealer_22_pushes=pushes,
                    player_blackjack_allowed=not (h.split or h.switched)))
            except ValueError:
                return None
            swing += abs((w.paid - w.collected) - (due.payout - due.collected))
    return swing


def money_involved(v: Violation, events: list[Event], state: Round | None = None
                   ) -> str | None:
    """What money the finding concerns, in words, or None: the amount of the money
    event it is raised on; for a dealer's wrong draw, the swing it caused (with the
    round's folded `state`) and every settlement that followed it in the round."""
    at = next((i for i, ev in enumerate(events) if ev.event_id == v.event_id), None)
    if at is None:
        return None
    p = events[at].payload
    if v.code == "DEALER_DREW_WRONG":
        swing = None if state is None else drew_wrong_swing(v, events, state)
        paid = collected = returned = 0
        for ev in events[at:]:
            q = ev.payload
            if isinstance(q, PayoutMade):
                paid += q.amount
            elif isinstance(q, WagerCollected):
                collected += q.amount
            elif isinstance(q, WagerReturned):
                returned += q.amount
        total = paid + collected + returned
        lead = "" if swing is None else (
            f"a swing of {dollars(swing)} against the settlements had the dealer stood; ")
        return (f"{lead}{dollars(total)} settled on the dealer's hand after it (paid "
                f"{dollars(paid)}, collected {dollars(collected)}, returned "
                f"{dollars(returned)})")
    if isinstance(p, PayoutMade | WagerCollected | WagerReturned | WagerPlaced):
        verb = {PayoutMade: "paid", WagerCollected: "collected", WagerReturned: "returned",
                WagerPlaced: "wagered"}[type(p)]
        return f"{dollars(p.amount)} {verb} ({p.kind}, {_where(p.seat, p.hand)})"
    return None


def decisions(events: list[Event]) -> str:
    """Each hand's decisions in order: `seat 2: HIT, STAND; seat 5 hand 1: DOUBLE`."""
    by_hand: dict[tuple[int, int], list[str]] = {}
    for ev in events:
        p = ev.payload
        if isinstance(p, PlayerDecision):
            by_hand.setdefault((p.seat, p.hand), []).append(p.decision)
    return "; ".join(f"{_where(s, h)}: {', '.join(d)}"
                     for (s, h), d in sorted(by_hand.items())) or "none"
