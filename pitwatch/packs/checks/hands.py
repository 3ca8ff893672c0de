"""Settlement of main, double and split wagers: PAYOUT_WRONG, in every pack.

The expected settlement comes from `pitwatch.blackjack.settle_hand` with the posted
blackjack ratio and, in Blackjack Switch and Free Bet Blackjack, the dealer-22 push.
"""

from __future__ import annotations

from ...blackjack import Outcome, Settlement, settle_free_wager, settle_hand
from ...engine.rulepack import Finding, Undecidable
from ...engine.state import FREE_KINDS, HAND_KINDS, EarlySettlement, Hand, Round, Wager
from ...events.model import Event, RoundEnded
from ...money import dollars
from ._common import decided, expected_text, mismatch, money, rounding, verb

DEALER_22_GAMES = frozenset({"BLACKJACK_SWITCH", "FREE_BET_BLACKJACK"})


def dealer_hand_for(r: Round, h: Hand, final: bool = False) -> tuple[list[str], bool] | None:
    """The dealer's cards that decide `h` now and whether they can still be a dealer
    blackjack, or None if nothing decides it yet (`Round.outcome_known`). With `final`
    the dealer's cards are taken as the final hand (the round ended on them).

    A player blackjack is decided as soon as a dealer blackjack is ruled out: against a
    2-9 up card at once, against an A or 10-value card once the reader (or the peek)
    shows no blackjack. The dealer pays it in turn, before the reveal, and that is legal
    (pitwatch's reading: docs/procedure.md, "Readings where the texts are silent").
    Any other hand waits for the dealer's final hand: a total the posted rule still
    draws on decides nothing."""
    d = r.dealer_ranks
    if final or h.bust or r.dealer_final:
        return d, True
    if not r.outcome_known(h):
        return None
    if r.dealer_blackjack:
        return d, True  # every hand is decided: only a blackjack stands off
    return d[:1], False  # a player blackjack, no dealer blackjack possible


def expected(r: Round, h: Hand, w: Wager, final: bool = False) -> Settlement | None:
    if h.bust:  # lost, whatever the dealer holds; a free wager's marker moves no money
        return Settlement(Outcome.LOSE, 0, 0 if w.kind in FREE_KINDS else w.amount, 0)
    deciding = dealer_hand_for(r, h, final)
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
                   player_blackjack_allowed=not (h.split or h.switched), rounding=rounding(r))


def payout_wrong(r: Round, ev: Event) -> Finding | None:
    p = money(ev)
    if p.kind not in HAND_KINDS or r.is_void_settlement(p):
        return None
    h = r.hands.get((p.seat, p.hand))
    w = None if h is None else h.wagers.get(p.kind)
    if h is None or w is None:
        return Finding(f"{p.kind} {verb(p)} {dollars(p.amount)} for a wager never placed",
                       p.seat, p.hand)
    if h.surrendered or h.even_money:
        return None  # their own codes judge them (every pack has them)
    exp = expected(r, h, w)
    if exp is None:
        return None  # settled early: judged once its outcome is known (early_settlement)
    if not mismatch(p, w, exp):
        return None
    dealer = " ".join(r.dealer_ranks) or "none"
    return Finding(f"{p.kind} {dollars(w.amount)} on {' '.join(h.ranks)} against dealer {dealer} "
                   f"{verb(p)} {dollars(p.amount)}; expected {expected_text(exp)}", p.seat, p.hand)


def _early_decided(r: Round, ev: Event) -> list[tuple[EarlySettlement, Settlement]]:
    """The early settlements the record decides now, each with its expected settlement
    (at the round's end, against the dealer's cards as they stand)."""
    if not r.early:
        return []
    final = type(ev.payload) is RoundEnded
    out = []
    for e in r.early:
        try:
            exp = expected(r, e.hand, e.wager, final)
        except Undecidable:
            continue  # a card of that hand is missing: the record cannot judge it
        if exp is not None:
            out.append((e, exp))
    return out


def _moved(w: Wager) -> str:
    return expected_text(Settlement(Outcome.WIN, w.paid, w.collected, w.returned))


def _right(w: Wager, exp: Settlement) -> bool:
    return (w.paid, w.collected, w.returned) == (exp.payout, exp.collected, exp.returned)


def early_settlement_wrong(r: Round, ev: Event) -> Finding | None:
    """Money moved on a hand before its outcome was known is judged against the outcome
    once the record decides it (the dealer's final hand, a dealer blackjack found, a
    player blackjack ruled safe), and cites the settlement. CRITICAL when it disagrees."""
    wrong = [(e, exp) for e, exp in _early_decided(r, ev) if not _right(e.wager, exp)]
    if not wrong:
        return None
    e, exp = wrong[0]
    h, w = e.hand, e.wager
    more = "".join(f"; also seat {o.hand.seat} hand {o.hand.hand} {o.wager.kind}"
                   for o, _ in wrong[1:])
    dealer = " ".join(r.dealer_ranks) or "none"
    return Finding(f"{w.kind} {dollars(w.amount)} on {' '.join(h.ranks)} settled before its "
                   f"outcome was known ({_moved(w)}); against dealer {dealer} expected "
                   f"{expected_text(exp)}{more}", h.seat, h.hand, evidence=(ev.event_id,),
                   at=e.event)


def early_settlement_order(r: Round, ev: Event) -> Finding | None:
    """A settlement made right for the outcome, but before the table knew it (the dealer
    then drew, revealed, or the reader answered): the procedure out of order, cited on
    the settlement. A dealer who never moved after it stood there (DEALER_DREW_WRONG
    speaks), and New Zealand's blackjack paid before the dealer's second card is
    BLACKJACK_PAID_EARLY (8.2)."""
    for e, exp in _early_decided(r, ev):
        h = e.hand
        if not _right(e.wager, exp) or e.seen == r.seen:
            continue
        if r.rules.hole_card == "NONE" and h.blackjack and e.seen[0] < 2:
            continue
        return Finding(f"{e.wager.kind} {dollars(e.wager.amount)} settled ({_moved(e.wager)}) "
                       "before "
                       "its outcome was known: the dealer's hand was not complete; the amount "
                       "is right for the outcome", h.seat, h.hand, evidence=(ev.event_id,),
                       at=e.event)
    return None


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
            return Finding(f"{w.kind} {dollars(w.amount)} never settled"
                           + ("" if exp is None else f"; expected {expected_text(exp)}"),
                           h.seat, h.hand)
    return None
