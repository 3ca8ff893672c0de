"""The cards and the procedure: the shoe's counts, the dealer's play, events the
round's state cannot admit. In every pack."""

from __future__ import annotations

from ...blackjack import dealer_must_draw, hand_total
from ...engine.rulepack import Finding
from ...engine.state import HAND_KINDS, Round
from ...events.model import (
    CardDealt,
    CardsCleared,
    Event,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from ...money import dollars


def card_count_exceeded(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    assert isinstance(p, CardDealt)
    if not r.table.counts_known:  # cards of this shoe were lost: nothing to count against
        return None
    decks = r.table.decks or r.rules.decks
    seen = r.table.counts.get((p.rank, p.suit), 0)
    if seen < decks:
        return None
    return Finding(f"{p.rank}{p.suit} dealt {seen + 1} times from a shoe of {decks} deck(s), "
                   f"which holds {decks}", p.seat, p.hand)


def _soft17(r: Round) -> str:
    return "hits soft 17" if r.rules.dealer_hits_soft_17 else "stands on all 17s"


def _describe(ranks: list[str]) -> str:
    total, soft = hand_total(ranks)
    return f"{'soft' if soft else 'hard'} {total} ({' '.join(ranks)})"


def dealer_drew(r: Round, ev: Event) -> Finding | None:
    """A dealer card once the dealer's hand is open, on a total the posted rule stands on."""
    p = ev.payload
    assert isinstance(p, CardDealt)
    if p.to != "DEALER" or len(r.dealer_ranks) < 2:
        return None  # a third card without the reveal: judged (unannounced_reveal says so)
    if dealer_must_draw(r.dealer_ranks, hits_soft_17=r.rules.dealer_hits_soft_17):
        return None
    return Finding(f"dealer drew on {_describe(r.dealer_ranks)}; the table {_soft17(r)}")


def dealer_stood(r: Round, ev: Event) -> Finding | None:
    """The dealer stopped on a total the posted rule draws on, with hands or a Push 22
    wager waiting on the dealer. Only the dealer's cards cleared or the round's end show
    the dealer stopped: a hand settled or cleared while the rule still draws may be
    settled early (the dealer then draws, and that settlement is judged against the
    final hand), so it decides nothing yet. When the dealer never moved after such a
    settlement, the finding cites it: it showed the stop first. (With a bonus wager
    open and two cards under 17, BONUS_THIRD_CARD_NOT_DRAWN speaks.)"""
    p = ev.payload
    if not (isinstance(p, RoundEnded) or (isinstance(p, CardsCleared) and p.seat is None)):
        return None
    if not r.revealed or r.dealer_done or len(r.dealer_ranks) < 2:
        return None
    if not dealer_must_draw(r.dealer_ranks, hits_soft_17=r.rules.dealer_hits_soft_17):
        return None
    if len(r.dealer_ranks) == 2 and (r.open_side("BONUS") or
                                     ("BONUS_THIRD_CARD_NOT_DRAWN", None, None) in r.raised):
        return None  # BONUS_THIRD_CARD_NOT_DRAWN speaks for this stop
    shown = [e for e in r.early if e.seen == r.seen]
    if not shown and not r.needs_dealer_cards():
        return None
    return Finding(f"dealer stood on {_describe(r.dealer_ranks)}; the table {_soft17(r)}",
                   at=shown[0].event if shown else None)


# --- procedure -------------------------------------------------------------------------


def unannounced_reveal(r: Round, ev: Event) -> Finding | None:
    """A dealer's third card at a hole-card table with no HoleCardRevealed before it:
    the record shows the hole card was turned over without its event. Say so; the state
    takes the hand as revealed from that card on."""
    p = ev.payload
    assert isinstance(p, CardDealt)
    if p.to != "DEALER" or r.revealed or len(r.dealer_ranks) < 2:
        return None
    return _out(f"dealer drew {p.rank}{p.suit} with no HoleCardRevealed before it: the hole "
                f"card ({' '.join(r.dealer_ranks)}) is taken as revealed")


def unannounced_switch(r: Round, ev: Event) -> Finding | None:
    """Blackjack Switch: a SWITCH decision with no SwitchOffered before it. The switch
    happened (its cards move), so the offer is taken as made: insurance is closed from
    it on (INSURANCE_TOO_LATE), and the missing announcement is the finding."""
    p = ev.payload
    assert isinstance(p, PlayerDecision)
    if p.decision != "SWITCH" or r.switch_offered:
        return None
    return _out(f"SWITCH at seat {p.seat} with no SwitchOffered before it: the switch is "
                "taken as offered (insurance closed)", p.seat, p.hand)



def _out(what: str, seat: int | None = None, hand: int | None = None) -> Finding:
    return Finding(what, seat, hand)


def card_to_unknown_hand(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    assert isinstance(p, CardDealt)
    if p.to == "DEALER":
        return None
    if (p.seat or 0, p.hand or 0) in r.hands:
        return None
    return _out(f"card {p.rank}{p.suit} to seat {p.seat} hand {p.hand}, which has no wager; "
                "expected a card to a hand in play", p.seat, p.hand)


def decision_for_unknown_hand(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    assert isinstance(p, PlayerDecision)
    if (p.seat, p.hand) in r.hands:
        return None
    return _out(f"{p.decision} for seat {p.seat} hand {p.hand}, which is not in play; "
                f"playing: {sorted({s for s, _ in r.hands}) or 'none'}", p.seat, p.hand)


def wager_out_of_order(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    assert isinstance(p, WagerPlaced)
    if p.kind == "MAIN" and r.first_card:
        return _out(f"blackjack wager of {dollars(p.amount)} placed after the first card",
                    p.seat, p.hand)
    if p.kind in ("DOUBLE", "FREE_DOUBLE") and (p.seat, p.hand) not in r.hands:
        return _out(f"{p.kind} for seat {p.seat} hand {p.hand}, which is not in play",
                    p.seat, p.hand)
    if p.kind in ("SPLIT", "FREE_SPLIT") and p.seat not in r.pending_split:
        return _out(f"{p.kind} wager at seat {p.seat} with no SPLIT decision before it",
                    p.seat, p.hand)
    return None


def settlement_of_unknown_wager(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    assert isinstance(p, PayoutMade | WagerCollected | WagerReturned)
    if p.kind in HAND_KINDS or r.wager_for(p.seat, p.hand, p.kind) is not None \
            or r.is_void_settlement(p):
        return None  # hand wagers: PAYOUT_WRONG; void wagers: VOID_WAGER_SETTLED
    return _out(f"{p.kind} at seat {p.seat} hand {p.hand} settled, but no such wager was placed",
                p.seat, p.hand)
