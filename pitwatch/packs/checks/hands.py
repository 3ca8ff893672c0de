"""Settlement of main, double and split wagers: PAYOUT_WRONG, in every pack.

The expected settlement comes from `pitwatch.blackjack.settle_hand` with the posted
blackjack ratio and, in Blackjack Switch and Free Bet Blackjack, the dealer-22 push.
"""

from __future__ import annotations

from ...blackjack import Outcome, Settlement, settle_free_wager, settle_hand
from ...engine.rulepack import Finding, Undecidable
from ...engine.state import FREE_KINDS, HAND_KINDS, Hand, Round, Wager
from ...events.model import Event, PayoutMade
from ._common import c, decided, expected_text, mismatch, money, verb

DEALER_22_GAMES = frozenset({"BLACKJACK_SWITCH", "FREE_BET_BLACKJACK"})


def hole_known(r: Round) -> bool:
    """Whether the table knows, before the reveal, if the dealer has a blackjack: the
    hole card went into the reader (or the dealer peeked, at a PEEK table)."""
    return len(r.dealer_ranks) >= 2 and (r.hole_inserted or r.rules.hole_card == "PEEK")


def dealer_hand_for(r: Round, h: Hand) -> tuple[list[str], bool] | None:
    """The dealer's cards that decide `h` now and whether they can still be a dealer
    blackjack, or None if nothing decides it yet.

    A player blackjack is decided as soon as a dealer blackjack is ruled out: against a
    2-9 up card at once, against an A or 10-value card once the reader (or the peek)
    shows no blackjack. The dealer pays it in turn, before the reveal, and that is legal
    (pitwatch's reading: docs/procedure.md, "Readings where the texts are silent")."""
    if r.revealed or r.dealer_done or h.bust:
        return r.dealer_ranks, True
    d = r.dealer_ranks
    if hole_known(r):
        if r.dealer_blackjack:
            return d, True  # every hand is decided: only a blackjack stands off
        return (d[:1], False) if h.blackjack else None
    if h.blackjack and d and not r.up_ace_or_ten:  # the dealer cannot have blackjack
        return d[:1], False
    return None


def expected(r: Round, h: Hand, w: Wager) -> Settlement | None:
    if h.bust:  # lost, whatever the dealer holds; a free wager's marker moves no money
        return Settlement(Outcome.LOSE, 0, 0 if w.kind in FREE_KINDS else w.amount, 0)
    deciding = dealer_hand_for(r, h)
    if deciding is None:
        return None
    dealer, possible = deciding
    if len(h.ranks) < 2:
        raise Undecidable(f"seat {h.seat} hand {h.hand} holds {len(h.ranks)} card(s) in the "
                          "record: a card event is missing")
    pushes = r.table.game in DEALER_22_GAMES
    if w.kind in FREE_KINDS:  # the one marker contract (settle_free_wager)
        return decided(settle_free_wager, h.ranks, dealer, w.amount, dealer_22_pushes=pushes)
    return decided(settle_hand, h.ranks, dealer, w.amount,
                   blackjack_pays=r.rules.blackjack_pays, dealer_22_pushes=pushes,
                   dealer_blackjack_possible=possible,
                   player_blackjack_allowed=not (h.split or h.switched))


def payout_wrong(r: Round, ev: Event) -> Finding | None:
    p = money(ev)
    if p.kind not in HAND_KINDS or r.is_void_settlement(p):
        return None
    h = r.hands.get((p.seat, p.hand))
    w = None if h is None else h.wagers.get(p.kind)
    if h is None or w is None:
        return Finding(f"{p.kind} {verb(p)} {c(p.amount)} for a wager never placed",
                       p.seat, p.hand)
    if h.surrendered or h.even_money:
        return None  # their own codes judge them (every pack has them)
    if r.table.rules.hole_card == "NONE" and h.blackjack and r.up_ace_or_ten \
            and not r.revealed and type(p) is PayoutMade:
        return None  # BLACKJACK_PAID_EARLY (NZ 8.2) judges an early payment
    exp = expected(r, h, w)
    if exp is None:
        return Finding(f"{p.kind} {c(w.amount)} {verb(p)} {c(p.amount)} before its outcome was "
                       "known", p.seat, p.hand)
    if not mismatch(p, w, exp):
        return None
    dealer = " ".join(r.dealer_ranks) or "none"
    return Finding(f"{p.kind} {c(w.amount)} on {' '.join(h.ranks)} against dealer {dealer} "
                   f"{verb(p)} {c(p.amount)}; expected {expected_text(exp)}", p.seat, p.hand)


def never_settled(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: a main, double or split wager whose money never moved."""
    for h in r.hands.values():
        if h.surrendered or h.even_money:
            continue
        for w in h.wagers.values():
            if w.settled:
                continue
            exp = expected(r, h, w)
            if exp is not None and not (exp.payout or exp.collected or exp.returned):
                continue  # a free wager's marker that loses or pushes moves no money
            return Finding(f"{w.kind} {c(w.amount)} never settled"
                           + ("" if exp is None else f"; expected {expected_text(exp)}"),
                           h.seat, h.hand)
    return None
