"""Detector 1: count-correlated betting, per seat session.

A counter raises the bet when the Hi-Lo true count rises. Both series are strongly
autocorrelated (the count wanders through a shoe, a ramp follows it), which makes a
plain correlation of levels look significant far too often. So the test is on
changes: within one shoe, between consecutive rounds the seat bet in, the change in
true count (dTC) against the change in log bet (dlogB). With exact decks remaining the
true count is a martingale (pitwatch.protect.hilo), so dTC is serially uncorrelated,
and under "the bets do not follow the count" sqrt(m) * r(dTC, dlogB) is close to a
standard normal (Haugh's test on a prewhitened series); its upper tail is the p-value.

The implied advantage weighs each round's true count by its bet: a player's edge moves
by about 0.5% of the bet per true count point (Griffin, *The Theory of Blackjack*, the
effects of removal summed for Hi-Lo), from the house's edge for the posted rules at a
count of 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from .expectations import player_edge
from .observation import COUNT_BETTING, SEAT_SESSION, Observation, strength
from .sessions import SeatSession
from .stats import normal_upper, pearson

#: the shipped threshold: flagged when the one-sided p-value is below this
P_THRESHOLD: Final = 1e-5
#: fewer pairs of consecutive in-shoe rounds than this: no judgement
MIN_PAIRS: Final = 30
#: the player's edge per true count point (of the bet)
EDGE_PER_COUNT: Final = 0.005
#: the rounds named as carrying the weight
WEIGHT_ROUNDS: Final = 10


@dataclass(frozen=True, slots=True)
class CountTest:
    pairs: int
    r: float
    z: float
    p_value: float
    #: bet-weighted expected edge of the player (a fraction of the money bet)
    advantage: float
    #: the same for the player's mean bet, flat (what a flat bettor would have had)
    flat_advantage: float
    weight_rounds: tuple[str, ...]


def count_test(session: SeatSession) -> CountTest | None:
    """The test's numbers for a session; None when it has too few pairs."""
    dx: list[float] = []
    dy: list[float] = []
    who: list[str] = []
    prev = None
    bet_tc: list[tuple[int, float]] = []
    for r in session.rounds:
        sr = r.seats.get(session.seat)
        if r.true_count is None or sr is None or sr.main <= 0:
            prev = None
            continue
        bet_tc.append((sr.main, r.true_count))
        if prev is not None and prev[0] == r.shoe_id and prev[3] == r.index - 1:
            dx.append(r.true_count - prev[1])
            dy.append(math.log(sr.main) - math.log(prev[2]))
            who.append(r.round_id)
        prev = (r.shoe_id, r.true_count, sr.main, r.index)
    m = len(dx)
    if m < MIN_PAIRS:
        return None
    rho = pearson(dx, dy)
    z = rho * math.sqrt(m)
    edge = player_edge(session.rounds[0].rules)
    money = sum(b for b, _ in bet_tc)
    adv = sum(b * (edge + EDGE_PER_COUNT * tc) for b, tc in bet_tc) / money
    flat = sum(edge + EDGE_PER_COUNT * tc for _, tc in bet_tc) / len(bet_tc)
    ranked = sorted(range(m), key=lambda i: (-(dx[i] * dy[i]), who[i]))
    heavy = tuple(sorted(who[i] for i in ranked[:WEIGHT_ROUNDS] if dx[i] * dy[i] > 0))
    return CountTest(m, rho, z, normal_upper(z), adv, flat, heavy)


def detect_count_betting(session: SeatSession) -> Observation | None:
    """An observation when the session's bets follow the count past the threshold."""
    t = count_test(session)
    if t is None or t.p_value >= P_THRESHOLD:
        return None
    evidence = -math.log10(max(t.p_value, 1e-300))
    return Observation(
        COUNT_BETTING, SEAT_SESSION, session.table_id, session.session_id, session.seat,
        None, "z", t.z, t.p_value, None,
        strength(evidence, -math.log10(P_THRESHOLD)), len(session.rounds), t.weight_rounds,
        session.inferred,
        f"seat {session.seat}: bet changes follow the true count's (r={t.r:.2f} over "
        f"{t.pairs} round pairs, z={t.z:.1f}); implied advantage "
        f"{100 * t.advantage:+.2f}% of the money bet ({100 * t.flat_advantage:+.2f}% flat)",
        (("r", t.r), ("pairs", float(t.pairs)), ("advantage", t.advantage),
         ("flat_advantage", t.flat_advantage)))
