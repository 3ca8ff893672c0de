"""Insurance: availability, timing, amount, settlement and its order.

N.J.A.C. 13:69F-2A.8 (Blackjack Switch), 58 Pa. Code § 672a.8 (Free Bet Blackjack),
NZ Gazette 1996 No 7 §9.
"""

from __future__ import annotations

from ...blackjack import allowed_insurance, pay, settle_insurance
from ...engine.rulepack import Finding
from ...engine.state import Round
from ...events.model import (
    CardDealt,
    Event,
    HoleCardRevealed,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    SwitchOffered,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from ...money import dollars
from ._common import expected_text, mismatch, money, odds, rounding, verb


def _insurance(ev: Event) -> WagerPlaced | None:
    p = ev.payload
    return p if isinstance(p, WagerPlaced) and p.kind == "INSURANCE" else None


def not_available(r: Round, ev: Event) -> Finding | None:
    p = _insurance(ev)
    if p is None:
        return None
    if not r.rules.insurance:
        return Finding(f"insurance of {dollars(p.amount)} at a table that does not offer insurance",
                       p.seat, p.hand)
    if r.up_card is not None and r.up_card != "A":
        return Finding(f"insurance of {dollars(p.amount)} against a {r.up_card} up card: insurance "
                       "is only offered when the dealer's first card is an ace", p.seat, p.hand)
    h = r.hands.get((p.seat, p.hand))
    if h is not None and h.even_money:
        return Finding(f"insurance of {dollars(p.amount)} on a hand already paid even money (even "
                       "money is taken instead of insurance)", p.seat, p.hand)
    return None


def before_up_card(r: Round, ev: Event) -> Finding | None:
    """Insurance before the dealer's first card is dealt: nothing shows an ace yet (for
    packs without an INSURANCE_TOO_EARLY rule)."""
    p = _insurance(ev)
    if p is None or r.up_card is not None:
        return None
    return Finding(f"insurance of {dollars(p.amount)} before the dealer's first card: insurance is "
                   "only offered when that card is an ace", p.seat, p.hand)


def before_announcement(r: Round, ev: Event) -> Finding | None:
    """NZ 9.2-9.3: the dealer completes the initial deal, "and then" announces insurance;
    players "may then" insure. An insurance wager before InsuranceOffered is early."""
    p = _insurance(ev)
    if p is None or r.insurance_offered or not r.initial_complete:
        return None  # before the initial deal: too_early says so
    return Finding(f"insurance of {dollars(p.amount)} before the dealer announced insurance",
                   p.seat, p.hand)


def on_match_wager(r: Round, ev: Event) -> Finding | None:
    p = _insurance(ev)
    if p is None or r.main_of(p.seat, p.hand) is not None or not r.seat_has(p.seat, "MATCH"):
        return None
    return Finding(f"insurance of {dollars(p.amount)} on hand {p.hand}, which holds no blackjack "
                   "wager: it can only stand against the match wager", p.seat, p.hand)


def too_early(r: Round, ev: Event) -> Finding | None:
    p = _insurance(ev)
    if p is None or r.initial_complete:
        return None
    return Finding(f"insurance of {dollars(p.amount)} before the initial deal was complete",
                   p.seat, p.hand)


def too_late(r: Round, ev: Event) -> Finding | None:
    p = _insurance(ev)
    if p is None:
        return None
    why = ("after a player got a further card" if r.further_card
           else "after the dealer peeked at the hole card" if r.peeked
           else "after the hole card went into the reader" if r.hole_inserted
           else "after the switch was offered" if r.switch_offered
           else "after the dealer's second card" if r.revealed
           else None)
    return None if why is None else Finding(f"insurance of {dollars(p.amount)} "
                                            f"{why}", p.seat, p.hand)


def over_limit(r: Round, ev: Event) -> Finding | None:
    p = _insurance(ev)
    if p is None:
        return None
    main = r.main_of(p.seat, p.hand)
    if main is None:
        return None
    total = r.standing_with(p)
    limit = allowed_insurance(main.amount, r.rules.chip_unit)
    if total <= limit:
        return None
    half = dollars(main.amount // 2) + (" and half a cent" if main.amount % 2 else "")
    return Finding(f"insurance {dollars(total)} exceeds half of the {dollars(main.amount)} initial "
                   f"wager (half is {half}; up to {dollars(limit)} in chips of "
                   f"{dollars(r.rules.chip_unit)})",
                   p.seat, p.hand)


def over_half(r: Round, ev: Event) -> Finding | None:
    """NZ 9.3: "not more than half the amount staked", with no allowance for chips."""
    p = _insurance(ev)
    main = None if p is None else r.main_of(p.seat, p.hand)
    if p is None or main is None:
        return None
    total = r.standing_with(p)
    if 2 * total <= main.amount:
        return None
    return Finding(f"insurance {dollars(total)} exceeds half of the {dollars(main.amount)} "
                   "original wager",
                   p.seat, p.hand)


def under_minimum(r: Round, ev: Event) -> Finding | None:
    """NZ 9.3-9.4: the insurance wager (every stack on its spot: one wager) at least the
    table minimum, and an amount whose win can be paid in chips. Judged when insurance
    closes, on the first card after the initial deal ("prior to any additional cards
    being dealt"), while a second stack can still come before: a stack under the minimum
    that another brings over it is no finding. The wager is then void."""
    p = ev.payload
    if not isinstance(p, CardDealt) or not r.initial_complete:
        return None
    for (seat, hand, _), w in r.open_side("INSURANCE"):
        if w.amount < r.rules.min_wager:
            return Finding(f"insurance of {dollars(w.amount)} (its stacks together) is below the "
                           f"table minimum "
                           f"{dollars(r.rules.min_wager)}", seat, hand, void_wager="INSURANCE")
        num, den = r.rules.insurance_pays
        win = pay(w.amount, r.rules.insurance_pays, rounding(r))
        if (w.amount * num) % (den * max(r.rules.chip_unit, 1)):  # the exact win
            return Finding(f"insurance of {dollars(w.amount)} would win {dollars(win)}, which "
                           f"cannot be paid in chips of {dollars(r.rules.chip_unit)}", seat, hand,
                           void_wager="INSURANCE")
    return None


def no_main_wager(r: Round, ev: Event) -> Finding | None:
    p = _insurance(ev)
    if p is None or r.main_of(p.seat, p.hand) is not None:
        return None
    return Finding(f"insurance on seat {p.seat} hand {p.hand}, which holds no blackjack wager",
                   p.seat, p.hand)


# --- settlement ----------------------------------------------------------------------


def settlement_wrong(r: Round, ev: Event) -> Finding | None:
    p = money(ev)
    if p.kind != "INSURANCE":
        return None
    w = r.side.get((p.seat, p.hand, "INSURANCE"))
    if w is None or r.is_void_settlement(p):
        return None  # void, or never placed: those checks speak
    if len(r.dealer_ranks) < 2:
        return Finding(f"insurance {verb(p)} {dollars(p.amount)} before the dealer's second card",
                       p.seat, p.hand)
    if r.rules.hole_card == "READER" and not (r.hole_inserted or r.revealed):
        return Finding(f"insurance {verb(p)} {dollars(p.amount)} before the hole card went into "
                       "the reader", p.seat, p.hand)
    exp = settle_insurance(w.amount, r.dealer_blackjack, pays=r.rules.insurance_pays,
                           rounding=rounding(r))
    if not mismatch(p, w, exp):
        return None
    hole = "a blackjack" if r.dealer_blackjack else f"no blackjack ({r.dealer_ranks[1]} second)"
    return Finding(f"insurance {dollars(w.amount)} {verb(p)} {dollars(p.amount)} with the dealer "
                   "holding "
                   f"{hole}; expected {expected_text(exp)} at {odds(r.rules.insurance_pays)}",
                   p.seat, p.hand)


def _losing_open(r: Round) -> list[tuple[int, int]]:
    if r.dealer_blackjack or len(r.dealer_ranks) < 2:
        return []
    return [(k[0], k[1]) for k, _ in r.open_side("INSURANCE")]


def _what(ev: Event) -> str:
    p = ev.payload
    if isinstance(p, CardDealt):
        return ("when the dealer drew a further card" if p.to == "DEALER"
                else "when a player got a further card")
    if isinstance(p, RoundEnded):
        return "at the end of the round"
    if isinstance(p, PlayerDecision):
        return f"when seat {p.seat} acted ({p.decision})"
    if isinstance(p, SwitchOffered):
        return "when the switch was offered"
    if isinstance(p, HoleCardRevealed):
        return "when the hole card was turned over"
    if isinstance(p, PayoutMade | WagerCollected | WagerReturned):
        return f"when a {p.kind} wager was settled"
    return "when cards were cleared"


def _collection_late(r: Round, ev: Event, due: bool) -> Finding | None:
    p = ev.payload
    if not due:
        return None
    if isinstance(p, PayoutMade | WagerCollected | WagerReturned) and p.kind == "INSURANCE":
        return None  # insurance being settled: its own checks
    late = _losing_open(r)
    if not late:
        return None
    seat, hand = late[0]
    return Finding(f"losing insurance at seat {seat} still uncollected {_what(ev)}",
                   seat, hand)


def collection_late(r: Round, ev: Event) -> Finding | None:
    """N.J.A.C. 13:69F-2A.8(c): losing insurance is collected "immediately after the
    dealer discloses his or her hole card and before the dealer draws": once the hole
    card is turned over (or, with no hole card, the second card dealt), any other event
    while a losing insurance is on the layout shows it late. Collecting it earlier, once
    the reader has shown no blackjack, is not a finding."""
    return _collection_late(r, ev, r.revealed)


def collection_late_after_reader(r: Round, ev: Event) -> Finding | None:
    """58 Pa. Code § 672a.8(d) (and the posted New Jersey reading): losing insurance is
    collected "immediately after the dealer inserts his hole card into the card reader
    device and determines that he does not have a Blackjack and before he draws": once
    the reader has answered, any other event (a player acting, a further card, the
    reveal, another wager settled, the round's end) while it is on the layout is late."""
    return _collection_late(r, ev, r.hole_inserted or r.revealed)


def paid_before_collection(r: Round, ev: Event) -> Finding | None:
    p = ev.payload
    if not isinstance(p, PayoutMade) or p.kind != "INSURANCE":
        return None
    losing = [k for k in _losing_open(r) if k != (p.seat, p.hand)]
    if not losing:
        return None
    return Finding(f"insurance paid at seat {p.seat} while losing insurance at seat "
                   f"{losing[0][0]} was still on the layout", p.seat, p.hand)


def never_collected(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: a losing insurance never collected (for packs that have no
    INSURANCE_COLLECTION_LATE to say so)."""
    late = _losing_open(r)
    if not late:
        return None
    seat, hand = late[0]
    return Finding(f"losing insurance at seat {seat} never collected", seat, hand)


def never_paid(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: a winning insurance never paid."""
    if not r.dealer_blackjack:
        return None
    for (seat, hand, _), w in r.open_side("INSURANCE"):
        exp = pay(w.amount, r.rules.insurance_pays, rounding(r))
        return Finding(f"winning insurance {dollars(w.amount)} never paid (expected "
                       f"{dollars(exp)})",
                       seat, hand)
    return None
