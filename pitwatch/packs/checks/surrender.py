"""Late surrender: N.J.A.C. 13:69F-2.8."""

from __future__ import annotations

from ...blackjack import SIX_TO_FIVE, same_odds, settle_surrender
from ...engine.rulepack import Finding
from ...engine.state import Round
from ...events.model import (
    CardDealt,
    CardsCleared,
    Event,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    WagerCollected,
    WagerReturned,
)
from ...money import dollars
from ._common import expected_text, mismatch, money, rounding, verb


def _surrender(ev: Event) -> PlayerDecision | None:
    p = ev.payload
    return p if isinstance(p, PlayerDecision) and p.decision == "SURRENDER" else None


def not_available(r: Round, ev: Event) -> Finding | None:
    p = _surrender(ev)
    if p is None:
        return None
    rules = r.rules
    why = ("the table does not offer surrender" if not rules.surrender
           else "the table pays blackjack 6 to 5" if same_odds(rules.blackjack_pays, SIX_TO_FIVE)
           else "the table offers a progressive wager" if rules.progressive_wager
           else "the table offers multiple action blackjack" if rules.multiple_action
           else None)
    return None if why is None else Finding(f"surrender taken but {why}", p.seat, p.hand)


def too_early(r: Round, ev: Event) -> Finding | None:
    p = _surrender(ev)
    h = None if p is None else r.hands.get((p.seat, p.hand))
    if p is None or h is None or len(h.ranks) >= 2:
        return None
    return Finding(f"surrender with {len(h.ranks)} card(s), before the first two",
                   p.seat, p.hand)


def too_late(r: Round, ev: Event) -> Finding | None:
    """2.8(a): "after the first two cards are dealt to the player" and before any other
    decision: not on a hand a split made (the split was a decision, and its cards are
    not the player's first two), not once the dealer's second card is revealed."""
    p = _surrender(ev)
    h = None if p is None else r.hands.get((p.seat, p.hand))
    if p is None or h is None:
        return None
    if h.decisions or len(h.ranks) > 2:
        after = h.decisions[-1] if h.decisions else f"card {len(h.ranks)}"
        return Finding(f"surrender after {after} on the hand", p.seat, p.hand)
    if h.split:
        return Finding("surrender of a hand made by a split: its two cards are not the "
                       "player's first two, and the split was a decision", p.seat, p.hand)
    if r.revealed:
        return Finding("surrender after the dealer's second card was revealed", p.seat, p.hand)
    return None


def settlement_wrong(r: Round, ev: Event) -> Finding | None:
    p = money(ev)
    h = r.hands.get((p.seat, p.hand))
    w = None if h is None else h.wagers.get("MAIN")
    if h is None or w is None or not h.surrendered or p.kind != "MAIN":
        return None
    if r.up_ace_or_ten and not r.revealed:
        return Finding(f"surrendered wager {dollars(w.amount)} {verb(p)} {dollars(p.amount)} "
                       f"before the dealer's second card was revealed (up card {r.up_card})",
                       p.seat, p.hand)
    exp = settle_surrender(w.amount, r.up_ace_or_ten and r.dealer_blackjack,
                           rounding(r))
    if not mismatch(p, w, exp):
        return None
    return Finding(f"surrendered wager {dollars(w.amount)} {verb(p)} {dollars(p.amount)}; expected "
                   f"{expected_text(exp)}", p.seat, p.hand)


def _on_surrendered(r: Round, ev: Event) -> bool:
    """An event of a surrendered hand itself (its settlement, its cards cleared), a
    bonus wager's settlement (2.25(e) puts those first once due), or an insurance
    settled at the same moment (2.8(b): each settled separately)."""
    p = ev.payload
    if isinstance(p, PayoutMade | WagerCollected | WagerReturned):
        if p.kind in ("BONUS", "INSURANCE"):
            return True
        key = (p.seat, p.hand)
    elif isinstance(p, CardsCleared) and p.seat is not None:
        key = (p.seat, p.hand or 0)
    else:
        return False
    return any((h.seat, h.hand) == key for h in r.surrendered)


def not_settled_at_once(r: Round, ev: Event) -> Finding | None:
    """2.8(a)1: against a 2–9 first card, half collected and half returned
    "immediately": before the next card, decision or other settlement. 2.8(a)2: against
    an A or 10-value card, "when the dealer's second card is revealed ... immediately":
    before the dealer draws, any other wager settles or the round ends (the bonus
    wagers, due at the same moment, go first under 2.25(e))."""
    if not r.surrendered:
        return None
    p = ev.payload
    at_end = isinstance(p, RoundEnded)
    if r.up_ace_or_ten and not r.revealed and not at_end:
        return None
    if isinstance(p, CardDealt) and p.to == "PLAYER" and r.up_ace_or_ten:
        return None  # the reveal comes after the players: a late card is another code's
    if _on_surrendered(r, ev):
        return None
    for h in r.surrendered:
        w = h.wagers.get("MAIN")
        if w is None:
            continue
        exp = settle_surrender(w.amount, r.up_ace_or_ten and r.dealer_blackjack,
                           rounding(r))
        if w.collected != exp.collected or w.returned != exp.returned:
            when = ("at the end of the round" if at_end
                    else f"when the next {ev.type} came"
                    + (" after the reveal" if r.up_ace_or_ten else ""))
            return Finding(f"surrendered wager {dollars(w.amount)} not settled at once (collected "
                           f"{dollars(w.collected)}, returned {dollars(w.returned)}) {when}",
                           h.seat, h.hand)
    return None
