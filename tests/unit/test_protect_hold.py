"""Detector 3, hold against theoretical: "Summed over a table's or a dealer's rounds,
z = (actual - expected) / sqrt(variance)"; |z| above Z_THRESHOLD is an observation."""

from __future__ import annotations

import math

from pitwatch.events.model import Rules
from pitwatch.protect.expectations import player_edge
from pitwatch.protect.hold import (
    COV_BETWEEN_SEATS,
    VAR_PER_STAKE,
    Z_THRESHOLD,
    detect_hold,
    hold_tallies,
)
from pitwatch.protect.observation import DEALER, HOLD_OFF_THEORETICAL, TABLE
from pitwatch.protect.rounds import RoundView, SeatRound, rounds_by_table
from producers.players import SimTable, events, make_player


def _rounds(house: int, n: int = 200) -> list[RoundView]:
    return [RoundView("T1", f"T1-{i:06d}", i, f"D{i // 100}", "BLACKJACK", Rules(), "S1", 0.0,
                      {1: SeatRound(1, 1000, house), 2: SeatRound(2, 1000, house)})
            for i in range(n)]


def test_the_expectation_is_the_house_edge_and_the_variance_counts_both_seats() -> None:
    t = hold_tallies({"T1": _rounds(0)})[0]
    assert t.scope == TABLE and t.hands == 400 and t.rounds == 200
    assert math.isclose(t.expected, -player_edge(Rules()) * 1000 * 400)
    per_round = 2 * VAR_PER_STAKE * 1000**2 + 2 * COV_BETWEEN_SEATS * 1000**2
    assert math.isclose(t.variance, 200 * per_round)


def test_a_table_holding_far_more_than_theoretical_is_an_observation() -> None:
    obs = detect_hold(hold_tallies({"T1": _rounds(300)}))  # the house wins 0.3 a hand
    assert {(o.scope, o.subject) for o in obs} == {(TABLE, "T1"), (DEALER, "D0"), (DEALER, "D1")}
    assert all(o.code == HOLD_OFF_THEORETICAL and o.value > Z_THRESHOLD for o in obs)


def test_a_table_holding_its_theoretical_is_not() -> None:
    expected = round(-player_edge(Rules()) * 1000)
    assert detect_hold(hold_tallies({"T1": _rounds(expected)})) == []


def test_an_honest_simulated_table_is_within_its_band() -> None:
    seats = {s: p for s, p in zip(range(1, 8), ("flat", "random", "paroli", "martingale",
                                                "flat", "random", "martingale"), strict=True)}
    table = SimTable(31, 37, {s: make_player(p, 37, s, 31) for s, p in seats.items()})
    tallies = hold_tallies(rounds_by_table(events(table, 300, 37)))
    assert tallies[0].hands == 2100
    assert abs(tallies[0].z) < Z_THRESHOLD
