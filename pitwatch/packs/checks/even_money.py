"""Even money and the timing of blackjack payment.

58 Pa. Code § 672a.8(e); NZ Gazette 1996 No 7 §8.1–8.3.
"""

from __future__ import annotations

from ...blackjack import settle_even_money
from ...engine.rulepack import Finding
from ...engine.state import Round
from ...events.model import CardDealt, CardsCleared, Event, PayoutMade, PlayerDecision
from ...money import dollars
from ._common import expected_text, mismatch, money, verb


def not_available(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    if not isinstance(p, PlayerDecision) or p.decision != "EVEN_MONEY":
        return None
    h = r.hands.get((p.seat, p.hand))
    insured = r.wager_for(p.seat, p.hand, "INSURANCE")
    why = ("the table does not offer even money" if not r.rules.even_money
           else f"the dealer's first card is {r.up_card or 'not dealt'}, not an ace"
           if not r.up_ace
           else "the hand is not a blackjack" if h is None or not h.blackjack
           else "the hand is already insured (even money is instead of insurance)"
           if insured is not None
           else "the dealer already peeked at the hole card" if r.peeked
           else "the hole card already went into the reader" if r.hole_inserted
           else "the dealer's second card is already known" if r.revealed
           else "further cards were already dealt" if r.further_card
           else None)
    return None if why is None else Finding(f"even money taken but {why}", p.seat, p.hand)


def settlement_wrong(r: Round, ev: Event) -> Finding | None:
    p = money(ev)
    h = r.hands.get((p.seat, p.hand))
    w = None if h is None else h.wagers.get("MAIN")
    if h is None or w is None or not h.even_money or p.kind != "MAIN":
        return None
    exp = settle_even_money(w.amount)
    if not mismatch(p, w, exp):
        return None
    return Finding(f"even money on {dollars(w.amount)} {verb(p)} {dollars(p.amount)}; expected "
                   f"{expected_text(exp)} (1 to 1)", p.seat, p.hand)


def never_paid(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: even money elected and never paid. The election settles the hand
    at 1 to 1 (PA 672a.8(e), NZ 8.3), so the player is owed the wager once more."""
    for h in r.hands.values():
        w = h.wagers.get("MAIN") if h.even_money else None
        if w is None or w.settled:
            continue
        return Finding(f"even money elected on {dollars(w.amount)} never paid: owed "
                       f"{dollars(settle_even_money(w.amount).payout)} (1 to 1)", h.seat, h.hand)
    return None


def cards_removed(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    if not isinstance(p, CardsCleared) or p.seat is None:
        return None
    seat = p.seat
    h = r.hands.get((seat, p.hand or 0))
    if h is None or not h.even_money:
        return None
    open_push22 = [w for (s, _, _), w in r.open_side("PUSH22") if s == seat]
    if not open_push22:
        return None
    return Finding(f"cards removed after even money while the Push 22 wager of "
                   f"{dollars(open_push22[0].amount)} was still open (they stay tucked under it)",
                   p.seat, p.hand)




def blackjack_paid_early(r: Round, ev: Event) -> Finding | None:
    """NZ 8.2: against an A or 10-value first card, no payment or removal of a player's
    blackjack before the dealer's second card."""
    if r.revealed or not r.up_ace_or_ten:
        return None
    p = ev.payload
    if isinstance(p, PayoutMade):
        if p.kind != "MAIN":
            return None
        what = f"paid {dollars(p.amount)}"
    elif isinstance(p, CardsCleared) and p.seat is not None:
        what = "its cards removed"
    else:
        return None
    assert p.seat is not None
    h = r.hands.get((p.seat, p.hand or 0))
    if h is None or not h.blackjack or h.even_money:
        return None
    return Finding(f"blackjack {what} before the dealer's second card, against a "
                   f"{r.up_card} up card", p.seat, p.hand)


def blackjack_paid_late(r: Round, ev: Event) -> Finding | None:
    """NZ 8.1: against a 2–9 first card, a player's blackjack is paid and removed
    before any player receives a third card."""
    p = ev.payload
    if not isinstance(p, CardDealt) or p.to != "PLAYER" or not r.initial_complete \
            or r.up_ace_or_ten:
        return None
    for h in r.hands.values():
        base = h.base
        paid = base is not None and base.settled
        if h.blackjack and not (paid and h.cleared):
            state = " and ".join(w for w, done in (("not paid", paid),
                                                  ("not removed", h.cleared)) if not done)
            return Finding(f"blackjack against a {r.up_card} up card {state} before a further "
                           "card was dealt", h.seat, h.hand)
    return None


def not_removed_after_even_money(r: Round, ev: Event) -> Finding | None:
    """NZ 8.3: even money is paid "immediately", and "The dealer shall then collect the
    cards of the player ... before any further cards are dealt": a card (to a player or
    the dealer) while an even-money hand is unpaid or still on the layout is late. The
    text's exception (several persons wagering on one box) cannot be seen in the record."""
    p = ev.payload
    if not isinstance(p, CardDealt) or not r.initial_complete:
        return None
    for h in r.hands.values():
        w = h.wagers.get("MAIN") if h.even_money else None
        if w is None or (w.settled and h.cleared):
            continue
        state = " and ".join(s for s, done in (("not paid", w.settled),
                                              ("its cards not removed", h.cleared)) if not done)
        return Finding(f"even money taken on {dollars(w.amount)} but {state} before a further card "
                       "was dealt", h.seat, h.hand)
    return None
