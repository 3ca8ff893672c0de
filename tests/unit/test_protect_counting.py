"""Detector 1, count-correlated betting: "within one shoe, between consecutive rounds
the seat bet in, the change in true count (dTC) against the change in log bet (dlogB)"
is flagged when its one-sided p-value is below P_THRESHOLD."""

from __future__ import annotations

import random

from pitwatch.events.model import Rules
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.counting import MIN_PAIRS, P_THRESHOLD, count_test, detect_count_betting
from pitwatch.protect.observation import COUNT_BETTING
from pitwatch.protect.rounds import RoundView, SeatRound, rounds_by_table
from pitwatch.protect.sessions import SeatSession, infer_sessions

UNIT = 1000


def _session(bets: list[tuple[float, int]], shoe_every: int = 60) -> SeatSession:
    rounds = tuple(
        RoundView("T1", f"T1-{i:06d}", i, "D100", "BLACKJACK", Rules(), f"S{i // shoe_every}",
                  tc, {2: SeatRound(2, bet)})
        for i, (tc, bet) in enumerate(bets))
    return SeatSession("T1", 2, "T1/2/T1-000000", rounds)


def _walk(n: int, seed: int) -> list[float]:
    """A true count wandering through shoes of 60 rounds, reset at each shoe."""
    rng = random.Random(seed)
    out, tc = [], 0.0
    for i in range(n):
        tc = 0.0 if i % 60 == 0 else tc + rng.gauss(0.0, 0.6)
        out.append(tc)
    return out


def ramp(tc: float) -> int:
    return UNIT * max(1, min(8, round(1 + (tc - 1) * 7 / 4)))


def test_a_counter_ramping_one_to_eight_is_flagged() -> None:
    tcs = _walk(300, 1)
    obs = detect_count_betting(_session([(tc, ramp(tc)) for tc in tcs]))
    assert obs is not None and obs.code == COUNT_BETTING
    assert obs.p_value is not None and obs.p_value < P_THRESHOLD
    assert obs.seat == 2 and obs.inferred and obs.weight_rounds
    assert obs.observation_id == detect_count_betting(
        _session([(tc, ramp(tc)) for tc in tcs])).observation_id  # type: ignore[union-attr]


def test_a_flat_bettor_and_a_random_bettor_are_not() -> None:
    tcs = _walk(300, 2)
    assert detect_count_betting(_session([(tc, 2 * UNIT) for tc in tcs])) is None
    rng = random.Random(5)
    sized = [(tc, UNIT * rng.choice((1, 2, 3, 5))) for tc in tcs]
    t = count_test(_session(sized))
    assert t is not None and t.p_value > P_THRESHOLD
    assert detect_count_betting(_session(sized)) is None


def test_a_bet_that_follows_the_count_backwards_is_not_flagged() -> None:
    tcs = _walk(300, 3)
    assert detect_count_betting(_session([(tc, ramp(-tc)) for tc in tcs])) is None


def test_too_few_pairs_suspend_judgement() -> None:
    tcs = _walk(MIN_PAIRS, 4)  # MIN_PAIRS rounds give MIN_PAIRS - 1 pairs
    assert count_test(_session([(tc, ramp(tc)) for tc in tcs])) is None


def test_pairs_never_cross_a_shoe() -> None:
    tcs = _walk(120, 6)
    t = count_test(_session([(tc, ramp(tc)) for tc in tcs], shoe_every=60))
    assert t is not None and t.pairs == 118


def test_simulated_counter_flagged_and_honest_neighbours_not() -> None:
    seats = {1: "counter-8", 3: "flat", 5: "random", 7: "martingale"}
    table = SimTable(11, 37, {s: make_player(p, 37, s, 11) for s, p in seats.items()})
    sessions = infer_sessions(rounds_by_table(events(table, 300, 37))[table.cfg.table_id])
    flagged = {s.seat for s in sessions if detect_count_betting(s) is not None}
    assert flagged == {1}
