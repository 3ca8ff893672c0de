"""Seat sessions inferred from wagers, and the rounds the detectors read from events."""

from __future__ import annotations

from pitwatch.events.model import CardDealt, RoundStarted, Rules, ShoeLoaded, WagerPlaced
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.hilo import HiLo, true_count
from pitwatch.protect.rounds import RoundView, SeatRound, rounds_by_table
from pitwatch.protect.sessions import GAP_ROUNDS, infer_sessions


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


def test_the_rounds_are_the_engine_s_fold_of_the_events() -> None:
    """The detectors read the audit's own fold (`TableAuditor.watch`): every round the
    table dealt, each seat's main wager as the engine holds it, and the true count from
    the shoe's cards before the round."""
    table = SimTable(3, 9, {s: make_player(p, 9, s, 3) for s, p in
                            ((1, "counter-8"), (4, "random"), (6, "martingale"))})
    evs = events(table, 60, 9)
    rounds = rounds_by_table(evs)["SIM-BJ-00003"]
    assert [r.index for r in rounds] == list(range(60))
    placed = {(e.round_id, e.payload.seat): e.payload.amount for e in evs
              if isinstance(e.payload, WagerPlaced) and e.payload.kind == "MAIN"}
    assert {(r.round_id, s): sr.main for r in rounds for s, sr in r.seats.items()} == placed
    count, shoe, first = HiLo(6), None, []
    for e in evs:
        p = e.payload
        if isinstance(p, ShoeLoaded):
            count, shoe = HiLo(p.decks), p.shoe_id
        elif isinstance(p, RoundStarted):
            first.append((e.round_id, shoe, count.true))
        elif isinstance(p, CardDealt):
            count.see(p.rank)
    assert [(r.round_id, r.shoe_id, r.true_count) for r in rounds] == first
