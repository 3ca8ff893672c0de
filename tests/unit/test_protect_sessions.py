"""Seat sessions inferred from wagers, and the rounds the detectors read from events."""

from __future__ import annotations

from pitwatch.events.model import Rules
from pitwatch.protect.hilo import HiLo, true_count
from pitwatch.protect.rounds import RoundView, SeatRound, read_table, rounds_by_table
from pitwatch.protect.sessions import GAP_ROUNDS, infer_sessions
from producers.players import SimTable, events, make_player, payloads


def _round(i: int, seats: dict[int, int]) -> RoundView:
    return RoundView("T1", f"T1-{i:06d}", i, "D100", "BLACKJACK", Rules(), "S1", 0.0,
                     {s: SeatRound(s, amount) for s, amount in seats.items()})


def test_a_gap_of_gap_rounds_without_a_wager_ends_a_session() -> None:
    """'a gap of >= N rounds without a wager ends it' (N = GAP_ROUNDS = 3)"""
    assert GAP_ROUNDS == 3
    bets = [1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1]  # a 2-round gap, then a 3-round gap
    rounds = [_round(i, {3: 1000 * b} if b else {}) for i, b in enumerate(bets)]
    sessions = infer_sessions(rounds)
    assert [[r.index for r in s.rounds] for s in sessions] == [[0, 1, 2, 5, 6], [10, 11]]
    assert all(s.inferred and s.seat == 3 for s in sessions)
    assert sessions[1].session_id == "T1/3/T1-000010"


def test_sessions_are_per_seat_in_seat_order() -> None:
    rounds = [_round(i, {5: 1000, 2: 2000}) for i in range(4)]
    assert [(s.seat, len(s.rounds)) for s in infer_sessions(rounds)] == [(2, 4), (5, 4)]


def test_hi_lo_true_count_is_the_running_count_per_deck_left() -> None:
    """'the true count is the running count per deck still to be dealt'"""
    c = HiLo(6)
    for rank in ("2", "3", "4", "5", "6", "7", "K", "A"):
        c.see(rank)
    assert c.running == 3 and c.seen == 8
    assert c.true == true_count(3, 6, 8) == 3 * 52 / (6 * 52 - 8)


def test_events_and_payloads_give_the_same_rounds() -> None:
    def table() -> SimTable:
        return SimTable(3, 9, {s: make_player(p, 9, s, 3) for s, p in
                               ((1, "counter-8"), (4, "random"), (6, "martingale"))})

    from_payloads = list(read_table("SIM-BJ-00003", payloads(table(), 60)))
    from_events = rounds_by_table(events(table(), 60, 9))["SIM-BJ-00003"]
    assert len(from_payloads) == 60
    assert from_events == from_payloads
    assert all(r.true_count is not None for r in from_events)
    assert from_events[0].true_count == 0.0


def test_a_break_in_the_record_suspends_judgement_until_the_next_shoe() -> None:
    """'checks that need the missing part suspend judgement until the record decides
    them again': the broken round is not judged, the rest of its shoe has no count."""
    from pitwatch.engine.violation import Violation
    from pitwatch.protect.run import suspend

    rounds = [_round(i, {1: 1000}) for i in range(6)]
    for r in rounds:
        r.shoe_id = "S1" if r.index < 4 else "S2"
    lost = Violation("EVENTS_LOST", "HIGH", "T1", "T1-000001", None, None, "e1", (), "",
                     "", "nj", "1", 0)
    kept = suspend({"T1": rounds}, [lost])["T1"]
    assert [r.index for r in kept] == [0, 2, 3, 4, 5]
    assert [r.true_count for r in kept] == [0.0, None, None, 0.0, 0.0]
    assert [r.composition_known for r in kept] == [True, False, False, True, True]
    assert suspend({"T1": rounds}, [])["T1"] is rounds
