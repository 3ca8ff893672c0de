"""Side wagers a table posts besides the bonus wager: Blackjack Switch's match wager and
Free Bet Blackjack's Push 22 wager. Their money is judged like every other wager's:
SIDE_WAGER_SETTLEMENT_WRONG when settled before its cards decide it, at other odds or
the wrong way, or never.

Their pay tables are not in the regulation files (public summaries, or the table's
posted `pay_tables` entry named MATCH or PUSH22).
"""

from __future__ import annotations

from ...blackjack import Ratio, Settlement, dealer_must_draw, settle_match, settle_push22
from ...engine.rulepack import Finding, Undecidable
from ...engine.state import Round
from ...events.model import Event
from ...money import dollars
from ._common import decided, expected_text, mismatch, money, rounding, verb

SIDE_KINDS = frozenset({"MATCH", "PUSH22"})


def _posted(r: Round, name: str) -> dict[str, Ratio] | None:
    t = r.rules.pay_table(name)
    return None if t is None else {e.key: Ratio(e.num, e.den) for e in t.entries}


def _match(r: Round, seat: int, amount: int) -> Settlement | None:
    """The match wager reads the first two cards of hands 0 and 1 (a switch moves cards
    between the two hands, which leaves the four ranks as they were)."""
    h0, h1 = r.hands.get((seat, 0)), r.hands.get((seat, 1))
    if h0 is None or h1 is None or len(h0.ranks) < 2 or len(h1.ranks) < 2:
        return None
    if any(k[0] == seat and k[1] > 1 for k in r.hands):
        raise Undecidable(f"seat {seat} split before its match wager settled: the first "
                          "four cards are no longer on hands 0 and 1")
    four = [(rank, "S") for h in (h0, h1) for rank in h.ranks[:2]]
    return decided(settle_match, amount, four, pay_table=_posted(r, "MATCH"),
                   rounding=rounding(r))


def _dealer_final(r: Round) -> bool:
    d = r.dealer_ranks
    if len(d) < 2 or not (r.revealed or (r.hole_inserted and r.dealer_blackjack)):
        return False
    return r.dealer_blackjack or not dealer_must_draw(
        d, hits_soft_17=r.rules.dealer_hits_soft_17)


def _expected(r: Round, seat: int, kind: str, amount: int) -> Settlement | None:
    if kind == "MATCH":
        return _match(r, seat, amount)
    if not _dealer_final(r):
        return None
    return decided(settle_push22, amount, r.dealer_ranks, pay_table=_posted(r, "PUSH22"),
                   rounding=rounding(r))


def settlement_wrong(r: Round, ev: Event) -> Finding | None:
    p = money(ev)
    if p.kind not in SIDE_KINDS or r.is_void_settlement(p):
        return None
    w = r.side.get((p.seat, p.hand, p.kind))
    if w is None:
        return None  # never placed: the procedure check speaks
    exp = _expected(r, p.seat, p.kind, w.amount)
    if exp is None:
        what = "first four cards" if p.kind == "MATCH" else "final hand"
        return Finding(f"{p.kind} wager {dollars(w.amount)} {verb(p)} {dollars(p.amount)} before "
                       f"the {'player' if p.kind == 'MATCH' else 'dealer'}'s {what} decided it",
                       p.seat, p.hand)
    if not mismatch(p, w, exp):
        return None
    return Finding(f"{p.kind} wager {dollars(w.amount)} {verb(p)} {dollars(p.amount)}; expected "
                   f"{expected_text(exp)}", p.seat, p.hand)


def never_settled(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: a match or Push 22 wager whose money never moved."""
    for kind in sorted(SIDE_KINDS):
        for (seat, hand, _), w in r.open_side(kind):
            exp = _expected(r, seat, kind, w.amount)
            tail = "" if exp is None else f"; expected {expected_text(exp)}"
            return Finding(f"{kind} wager {dollars(w.amount)} never settled{tail}", seat, hand)
    return None
