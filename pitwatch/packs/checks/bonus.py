"""The dealer-bust bonus wager: N.J.A.C. 13:69F-2.25.

2.25(f)'s pay table for three eights is missing from the regulation text: it is used
only when the table posts one (`pay_tables` entry named BONUS); otherwise 2.25(e)'s
table applies to an eight like any other.
"""

from __future__ import annotations

from ...blackjack import Ratio, hand_total, settle_bonus
from ...engine.rulepack import Finding
from ...engine.state import Round
from ...events.model import (
    CardDealt,
    CardsCleared,
    Event,
    PayoutMade,
    RoundEnded,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from ...money import dollars
from ._common import decided, expected_text, mismatch, money, rounding, verb
from .posting import BONUS_DECKS, bonus_bar

MIN_BONUS = 100  # $1.00, 2.25(c)


def _bonus(ev: Event) -> WagerPlaced | None:
    p = ev.payload
    return p if isinstance(p, WagerPlaced) and p.kind == "BONUS" else None


def not_available(r: Round, ev: Event) -> Finding | None:
    p = _bonus(ev)
    if p is None:
        return None
    rules = r.rules
    barred = bonus_bar(rules)
    why = ("the table does not offer it" if not rules.bonus_wager
           else f"the table offers {barred} (2.25(h))" if barred is not None else None)
    return None if why is None else Finding(f"bonus wager of {dollars(p.amount)} but {why}",
                                            p.seat, p.hand)


def too_few_decks(r: Round, ev: Event) -> Finding | None:
    """N.J.A.C. 13:69F-2.2(a)4: where the bonus wager is offered, the fewest decks are six
    or eight; a bonus wager at a table whose shoe holds fewer is not available."""
    p = _bonus(ev)
    decks = r.table.decks or r.rules.decks
    if p is None or not r.rules.bonus_wager or decks >= BONUS_DECKS:
        return None
    return Finding(f"bonus wager of {dollars(p.amount)} but the shoe holds {decks} deck(s): where "
                   "the bonus wager is offered the fewest decks are six or eight",
                   p.seat, p.hand)


def too_late(r: Round, ev: Event) -> Finding | None:
    p = _bonus(ev)
    if p is None or not r.first_card:
        return None
    return Finding(f"bonus wager of {dollars(p.amount)} placed after the first card was dealt",
                   p.seat, p.hand)


def without_main(r: Round, ev: Event) -> Finding | None:
    p = _bonus(ev)
    if p is None or r.main_of(p.seat, 0) is not None:
        return None
    return Finding(f"bonus wager of {dollars(p.amount)} at seat {p.seat}, which has no blackjack "
                   "wager", p.seat, p.hand)


def amount(r: Round, ev: Event) -> Finding | None:
    """2.25(c) "any maximum amount established by the casino licensee and posted": on the
    stack that takes the standing wager (its stacks together) over it. The cap of the
    blackjack wager is judged when bets close (`at_close`): the main wager may still
    grow before the first card."""
    p = _bonus(ev)
    posted = r.rules.bonus_wager_max
    if p is None or posted is None or r.main_of(p.seat, 0) is None:
        return None
    total = r.standing_with(p)  # two stacks on one spot are one wager
    if total <= posted:
        return None
    return Finding(f"bonus wager of {dollars(total)} exceeds the posted maximum {dollars(posted)}",
                   p.seat, p.hand)


def at_close(r: Round, ev: Event) -> Finding | None:
    """2.25(c) "at least $ 1.00 but shall not exceed the lesser of the player's wager":
    the bonus wager and the blackjack wager are each the sum of their stacks when bets
    close, at the seat's first card; a stack under $1.00 that another brings over it, or
    a bonus over a main wager that a later stack brings level, is no finding. The bonus
    wager is then void (judged whole: no one stack passed the cap)."""
    p = ev.payload
    if not isinstance(p, CardDealt) or p.to != "PLAYER" or p.seat is None:
        return None
    h = r.hands.get((p.seat, p.hand or 0))
    if h is None or h.ranks:
        return None  # not the seat's first card
    w = r.side.get((p.seat, 0, "BONUS"))
    main = h.wagers.get("MAIN") if (p.hand or 0) == 0 else None
    if w is None or w.settled:
        return None
    if w.amount < MIN_BONUS:
        return Finding(f"bonus wager of {dollars(w.amount)} is under the {dollars(MIN_BONUS)} "
                       "minimum",
                       p.seat, 0, void_wager="BONUS")
    if main is not None and w.amount > main.amount:
        return Finding(f"bonus wager of {dollars(w.amount)} exceeds the blackjack wager "
                       f"{dollars(main.amount)} when bets closed", p.seat, 0, void_wager="BONUS")
    return None


def _two_under_17(r: Round) -> bool:
    d = r.dealer_ranks
    return r.revealed and len(d) == 2 and hand_total(d)[0] < 17


def third_card_not_drawn(r: Round, ev: Event) -> Finding | None:
    """2.25(d): with a bonus wager standing and two dealer cards under 17, the dealer
    draws a third card. Only an event that shows the dealer stopped drawing says it was
    not drawn: the round's end, the dealer's cards cleared, or a bonus wager settled on
    two cards. A hand settled before may have been settled early (the dealer then
    draws): when the dealer never moved after it, the finding cites it, the first event
    that showed the stop. A surrender, an insurance or a blackjack settled right after
    the reveal shows nothing."""
    if not _two_under_17(r) or not r.open_side("BONUS"):
        return None
    p = ev.payload
    bonus_money = isinstance(p, PayoutMade | WagerCollected | WagerReturned) \
        and p.kind == "BONUS"
    stopped = isinstance(p, RoundEnded) or (isinstance(p, CardsCleared) and p.seat is None)
    if not (bonus_money or stopped):
        return None
    shown = [e for e in r.early if e.seen == r.seen]
    return Finding(f"bonus wagers stand and the dealer's first two cards total "
                   f"{r.dealer_total}, but no third card was drawn",
                   at=shown[0].event if shown else None)


def _pay_table(r: Round) -> dict[str, Ratio] | None:
    t = r.rules.pay_table("BONUS")
    return None if t is None else {e.key: Ratio(e.num, e.den) for e in t.entries}


def settlement_wrong(r: Round, ev: Event) -> Finding | None:
    p = money(ev)
    if p.kind != "BONUS":
        return None
    w = r.side.get((p.seat, p.hand, "BONUS"))
    if w is None or _two_under_17(r) or r.is_void_settlement(p):
        return None  # void, or the third card is missing (its own code)
    if not r.bonus_due:
        return Finding(f"bonus wager {dollars(w.amount)} {verb(p)} {dollars(p.amount)} before the "
                       "dealer's cards decided it", p.seat, p.hand)
    exp = decided(settle_bonus, w.amount, r.dealer_ranks[:3], r.dealer_suits[:3],
                  pay_table=_pay_table(r), rounding=rounding(r))
    if not mismatch(p, w, exp):
        return None
    cards = " ".join(r.dealer_ranks[:3])
    return Finding(f"bonus wager {dollars(w.amount)} {verb(p)} {dollars(p.amount)} with dealer "
                   f"cards {cards}; expected {expected_text(exp)}", p.seat, p.hand)


def settlement_order(r: Round, ev: Event) -> Finding | None:
    """2.25(e): once due, bonus wagers settle before any other wager, starting with the
    player farthest to the dealer's right (the highest seat) and going round."""
    if not r.bonus_due or _two_under_17(r):
        return None
    p = money(ev)
    open_bonus = r.open_side("BONUS")
    if p.kind != "BONUS":
        if not open_bonus:
            return None
        return Finding(f"{p.kind} wager at seat {p.seat} {verb(p)} before the bonus wagers "
                       f"were settled (seat {open_bonus[0][0][0]} still open)", p.seat, p.hand)
    higher = [k[0] for k, _ in open_bonus if k[0] > p.seat]
    if not higher:
        return None
    return Finding(f"bonus wager at seat {p.seat} settled before seat {max(higher)}'s "
                   "(bonus wagers settle from the highest seat down)", p.seat, p.hand)


def left_up(r: Round, ev: Event) -> Finding | None:
    """2.25(e): "Immediately after" the two cards are seen to total 17 or more, or the
    third card is dealt, the bonus wagers settle. A bonus wager still open when the
    dealer draws a further card was left up."""
    p = ev.payload
    if not isinstance(p, CardDealt) or p.to != "DEALER" or not r.bonus_due:
        return None
    open_bonus = r.open_side("BONUS")
    if not open_bonus:
        return None
    (seat, hand, _), w = open_bonus[0]
    return Finding(f"bonus wager {dollars(w.amount)} at seat {seat} still open when the dealer "
                   "drew "
                   f"card {len(r.dealer_ranks) + 1}: bonus wagers settle immediately after the "
                   "third card (or two cards of 17 or more)", seat, hand)


def never_settled(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: a bonus wager whose money never moved."""
    if _two_under_17(r):
        return None
    for (seat, hand, _), w in r.open_side("BONUS"):
        try:
            exp = settle_bonus(w.amount, r.dealer_ranks[:3], r.dealer_suits[:3],
                               pay_table=_pay_table(r), rounding=rounding(r))
            tail = f"; expected {expected_text(exp)}"
        except ValueError:
            tail = ""
        return Finding(f"bonus wager {dollars(w.amount)} never settled{tail}", seat, hand)
    return None
