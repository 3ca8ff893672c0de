"""Detector 2: hole-card play, per seat session.

A player who sees the dealer's hole card departs from basic strategy exactly when the
hole card makes the departure pay: stands on 14 against a 10 with a 6 under it, hits 17
against a 10 with a 9 under it, doubles a 12 against a dealer 16. An honest player's
departures (mistakes, hunches, a "never bust" habit) do not depend on the hole card.

For each departure from basic strategy (`pitwatch.blackjack.decide` for the posted rules
and what the table allowed), the departure is *right* for a hole card when, with the
dealer's two cards known, it is the best play the table allowed and worth more than the
basic play (pitwatch.protect.expectations). Under the honest hypothesis the hole card is
any of the cards the player has not seen (one blackjack-making card excluded where the
reader checked), so the chance q that the departure is right is exact: the share of
unseen cards that make it right. Under the hole-card hypothesis it is right with
probability P_RIGHT. Each departure multiplies the likelihood ratio by P_RIGHT/q when
right and (1-P_RIGHT)/(1-q) when not. The ratio is a martingale under the honest
hypothesis, so the chance that it ever reaches A in a session is at most 1/A (Ville's
inequality): the session is flagged when it does, and the rounds whose right departures
carried it there are named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from ..blackjack import DOUBLE, HIT, RANK_VALUES, SPLIT, STAND, SURRENDER, decide
from ..events.model import Rules
from .expectations import RANK_OF, against_known, peeked
from .observation import HOLE_CARD_PLAY, SEAT_SESSION, Observation, strength
from .rounds import Spot
from .sessions import SeatSession

#: under the hole-card hypothesis, the chance a departure is right for the hole card
P_RIGHT: Final = 0.98
#: the shipped threshold: flagged when the likelihood ratio reaches this
LR_THRESHOLD: Final = 200.0
#: a departure must beat the basic play by this much (stakes) to count as right
MARGIN: Final = 1e-9
WEIGHT_ROUNDS: Final = 10


@dataclass(frozen=True, slots=True)
class Departure:
    round_id: str
    q: float
    right: bool
    log_lr: float


@dataclass(frozen=True, slots=True)
class HoleTest:
    departures: tuple[Departure, ...]
    #: the highest log likelihood ratio the session reached
    peak: float
    #: where it stood at the end
    final: float


def basic_play(spot: Spot, rules: Rules) -> str:
    """What basic strategy plays at `spot` under the posted rules."""
    return decide(spot.ranks, spot.up, can_double=spot.can_double, can_split=spot.can_split,
                  can_surrender=spot.can_surrender, hits_soft_17=rules.dealer_hits_soft_17,
                  double_after_split=rules.double_after_split)


def departure(spot: Spot, round_id: str, rules: Rules) -> Departure | None:
    """The departure at `spot` and its weight, or None if the player played basic
    strategy or the record holds no hole card."""
    if spot.hole is None:
        return None
    basic = basic_play(spot, rules)
    if spot.decision == basic:
        return None
    checked = peeked(spot.up, rules)
    h17 = rules.dealer_hits_soft_17
    legal = [a for a, ok in ((HIT, True), (STAND, True), (DOUBLE, spot.can_double),
                             (SPLIT, spot.can_split), (SURRENDER, spot.can_surrender)) if ok]
    right_by_value: dict[int, bool] = {}
    weight = 0
    hits = 0
    up_value = RANK_VALUES[spot.up]
    for v in range(1, 11):
        n = spot.unseen[v - 1]
        if n <= 0 or (checked and {up_value, v} == {1, 10}):
            continue
        ex = against_known((spot.up, RANK_OF[v]), h17)
        taken = ex.action(spot.decision, spot.ranks, rules)
        best = max(ex.action(a, spot.ranks, rules) for a in legal)
        right = (taken > ex.action(basic, spot.ranks, rules) + MARGIN
                 and taken >= best - MARGIN)
        right_by_value[v] = right
        weight += n
        hits += n if right else 0
    if weight == 0:
        return None
    q = hits / weight
    right = right_by_value.get(RANK_VALUES[spot.hole], False)
    if right:
        log_lr = math.log(P_RIGHT / q)
    else:
        log_lr = math.log((1 - P_RIGHT) / (1 - q)) if q < 1 else math.log(1 - P_RIGHT)
    return Departure(round_id, q, right, log_lr)


def hole_test(session: SeatSession) -> HoleTest:
    deps: list[Departure] = []
    total = peak = 0.0
    for r in session.rounds:
        if r.game != "BLACKJACK" or not r.composition_known:
            continue
        for spot in r.spots:
            if spot.seat != session.seat:
                continue
            d = departure(spot, r.round_id, r.rules)
            if d is None:
                continue
            deps.append(d)
            total += d.log_lr
            peak = max(peak, total)
    return HoleTest(tuple(deps), peak, total)


def detect_hole_card_play(session: SeatSession) -> Observation | None:
    t = hole_test(session)
    threshold = math.log(LR_THRESHOLD)
    if t.peak < threshold:
        return None
    right = [d for d in t.departures if d.right]
    heavy = sorted(right, key=lambda d: (-d.log_lr, d.round_id))[:WEIGHT_ROUNDS]
    lr = math.exp(min(t.peak, 700.0))
    return Observation(
        HOLE_CARD_PLAY, SEAT_SESSION, session.table_id, session.session_id, session.seat,
        None, "log_lr", t.peak, None, lr,
        strength(t.peak / math.log(10), threshold / math.log(10)), len(session.rounds),
        tuple(sorted(d.round_id for d in heavy)), session.inferred,
        f"seat {session.seat}: {len(right)} of {len(t.departures)} departures from basic "
        f"strategy were right for the hole card (likelihood ratio {lr:.3g} against "
        f"honest play)",
        (("departures", float(len(t.departures))), ("right", float(len(right))),
         ("expected_right", sum(d.q for d in t.departures))))
