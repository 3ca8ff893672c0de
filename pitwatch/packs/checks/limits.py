"""Posted wager limits: WAGER_OUTSIDE_LIMITS, in every pack that judges a game.

What is judged is the standing wager, the sum of every stack placed on the same seat,
hand and kind (docs/events.md § Wagers; docs/regulations/posted-rules.txt (a)):

* any wager of zero or less, of any kind, when it is placed;
* a main wager whose standing amount goes over the posted maximum, on the stack that
  takes it over (that stack is void; what stood before it stands);
* a main wager whose standing amount is under the posted minimum when wagering is
  closed, found on the first card dealt to its hand. A second stack may still come
  before the first card, so a stack under the minimum is not judged when it is placed.
  The finding cannot void a card, so the hand is dealt and judged as played.

Side wagers keep their own limits (BONUS_WAGER_AMOUNT, INSURANCE_OVER_LIMIT, ...).
"""

from __future__ import annotations

from ...engine.rulepack import Finding, Rule
from ...engine.state import Round
from ...engine.violation import Severity
from ...events.model import CardDealt, Event, WagerPlaced
from ...money import dollars

CODE = "WAGER_OUTSIDE_LIMITS"
CITATION = "Posted limits of the table, docs/regulations/posted-rules.txt (a)"


def _standing(r: Round, p: WagerPlaced) -> int:
    """The main wager's amount once `p` is added to the stacks already standing."""
    prior = r.main_of(p.seat, p.hand)
    return p.amount + (prior.amount if prior is not None and not prior.settled else 0)


def placed_outside(r: Round, ev: Event) -> Finding | None:
    """On a wager placed: zero or less (any kind), or a main wager over the maximum."""
    p = ev.payload
    assert isinstance(p, WagerPlaced)
    if p.amount <= 0:
        return Finding(f"{p.kind} wager of {dollars(p.amount)} at seat {p.seat} hand {p.hand}: "
                       "a wager is an amount of more than zero", p.seat, p.hand)
    if p.kind != "MAIN":
        return None
    standing, most = _standing(r, p), r.rules.max_wager
    if standing <= most:
        return None
    stacks = "" if standing == p.amount else f" (this stack {dollars(p.amount)})"
    return Finding(f"MAIN wager of {dollars(standing)}{stacks} at seat {p.seat} hand {p.hand} is "
                   f"over the posted maximum of {dollars(most)}", p.seat, p.hand)


def under_minimum(r: Round, ev: Event) -> Finding | None:
    """On the first card to a hand: its main wager stands under the posted minimum."""
    p = ev.payload
    assert isinstance(p, CardDealt)
    if p.to != "PLAYER" or p.seat is None:
        return None
    h = r.hands.get((p.seat, p.hand or 0))
    if h is None or h.ranks or h.split:
        return None
    w = h.wagers.get("MAIN")
    least = r.rules.min_wager
    if w is None or w.amount >= least:
        return None
    return Finding(f"MAIN wager of {dollars(w.amount)} at seat {h.seat} hand {h.hand} is under the "
                   f"posted minimum of {dollars(least)} and was dealt", h.seat, h.hand)


def limit_rules(citation: str = CITATION) -> tuple[Rule, ...]:
    """The rules a pack registers, right after its procedure rules (so that a wager of
    zero or less is this code, not a side wager's own amount code)."""
    high = Severity.HIGH
    return (Rule(CODE, high, citation, placed_outside, (WagerPlaced,), voids=True),
            Rule(CODE, high, citation, under_minimum, (CardDealt,), voids=False))
