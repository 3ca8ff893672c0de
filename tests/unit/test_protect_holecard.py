"""Detector 2, hole-card play: a departure from basic strategy is *right* for a hole
card when "with the dealer's two cards known, it is the best play the table allowed and
worth more than the basic play"; the session is flagged when the likelihood ratio of
its departures reaches LR_THRESHOLD."""

from __future__ import annotations

import math

from pitwatch.events.model import Rules
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.holecard import (
    LR_THRESHOLD,
    P_RIGHT,
    departure,
    detect_hole_card_play,
    hole_test,
)
from pitwatch.protect.observation import HOLE_CARD_PLAY
from pitwatch.protect.rounds import RoundView, SeatRound, Spot, rounds_by_table
from pitwatch.protect.sessions import SeatSession, infer_sessions

RULES = Rules(decks=6)
FULL = tuple(24 if v < 10 else 96 for v in range(1, 11))  # a fresh six-deck shoe


def _spot(ranks: tuple[str, ...], up: str, hole: str | None, decision: str) -> Spot:
    return Spot(2, 0, ranks, up, hole, decision, can_double=len(ranks) == 2,
                can_split=False, can_surrender=False, unseen=FULL, wager=1000)


def test_standing_on_14_against_a_10_is_right_over_a_6_and_wrong_over_a_9() -> None:
    right = departure(_spot(("10", "4"), "10", "6", "STAND"), "R1", RULES)
    wrong = departure(_spot(("10", "4"), "10", "9", "STAND"), "R2", RULES)
    assert right is not None and wrong is not None
    assert right.right and not wrong.right
    assert math.isclose(right.q, wrong.q) and 0.2 < right.q < 0.6  # stiffs under a 10
    assert right.log_lr == math.log(P_RIGHT / right.q) > 0
    assert wrong.log_lr == math.log((1 - P_RIGHT) / (1 - wrong.q)) < 0


def test_basic_strategy_plays_are_no_evidence() -> None:
    assert departure(_spot(("10", "6"), "10", "6", "HIT"), "R1", RULES) is None
    assert departure(_spot(("10", "6"), "10", None, "STAND"), "R1", RULES) is None


def _session(spots: list[Spot]) -> SeatSession:
    rounds = tuple(RoundView("T1", f"T1-{i:06d}", i, "D100", "BLACKJACK", RULES, "S1", 0.0,
                             {2: SeatRound(2, 1000)}, [s]) for i, s in enumerate(spots))
    return SeatSession("T1", 2, "T1/2/T1-000000", rounds)


def test_a_player_whose_departures_the_hole_card_makes_right_is_flagged() -> None:
    spots = [_spot(("10", "4"), "10", hole, "STAND") for hole in ("6", "5", "4", "3", "2") * 2]
    obs = detect_hole_card_play(_session(spots))
    assert obs is not None and obs.code == HOLE_CARD_PLAY
    assert obs.likelihood_ratio is not None and obs.likelihood_ratio >= LR_THRESHOLD
    assert len(obs.weight_rounds) == 10


def test_a_never_bust_player_standing_whatever_the_hole_is_not() -> None:
    holes = ("6", "9", "10", "K", "5", "7", "Q", "2", "J", "8") * 3
    spots = [_spot(("10", "4"), "10", hole, "STAND") for hole in holes]
    t = hole_test(_session(spots))
    assert t.peak < math.log(LR_THRESHOLD) and t.final < 0
    assert detect_hole_card_play(_session(spots)) is None


def test_simulated_hole_card_player_flagged_and_honest_neighbours_not() -> None:
    seats = {2: "flat", 4: "holecard", 6: "random", 7: "paroli"}
    table = SimTable(21, 37, {s: make_player(p, 37, s, 21) for s, p in seats.items()},
                     flash=0.3)
    sessions = infer_sessions(rounds_by_table(events(table, 100, 37))[table.cfg.table_id])
    assert {s.seat for s in sessions if detect_hole_card_play(s) is not None} == {4}
