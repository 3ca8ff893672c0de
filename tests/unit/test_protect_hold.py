"""Detector 3, hold against theoretical: "Summed over a table's, a dealer's or a shift's
rounds, z = (actual - expected) / sqrt(variance)"; |z| above Z_THRESHOLD is an
observation. And: "A shift is the site's (`pitwatch.sitetime`, the console's shifts):
the rounds of every table started in it, by the RoundStarted's device time"."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Final

from pitwatch.events.model import RoundStarted, Rules
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.expectations import player_edge
from pitwatch.protect.hold import (
    COV_BETWEEN_SEATS,
    VAR_PER_STAKE,
    Z_THRESHOLD,
    detect_hold,
    hold_tallies,
    shift_id,
)
from pitwatch.protect.observation import DEALER, HOLD_OFF_THEORETICAL, SHIFT, TABLE
from pitwatch.protect.rounds import RoundView, SeatRound, rounds_by_table
from pitwatch.sitetime import SiteTime

#: 2026-12-05 13:00 UTC: an hour before the default site's second shift (14:00)
AT_13H: Final = int(datetime(2026, 12, 5, 13, tzinfo=UTC).timestamp() * 1000)


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


def _timed(table: str, house: int, start_ms: int, step_ms: int) -> list[RoundView]:
    return [replace(r, table_id=table, round_id=f"{table}-{r.index:06d}",
                    dealer_id=f"{table}-{r.dealer_id}", start_ms=start_ms + r.index * step_ms)
            for r in _rounds(house)]


def test_a_shift_sums_every_tables_rounds_started_in_it() -> None:
    # 200 rounds a minute apart from 13:00: 60 in shift 1 (06:00-14:00), 140 in shift 2
    tables = {t: _timed(t, 0, AT_13H, 60_000) for t in ("T1", "T2")}
    shifts = [t for t in hold_tallies(tables) if t.scope == SHIFT]
    assert [(t.subject, t.table_id, t.rounds) for t in shifts] == [
        ("2026-12-05/1", "", 120), ("2026-12-05/2", "", 280)]
    whole = next(t for t in hold_tallies(tables) if t.subject == "T1")
    assert math.isclose(sum(t.expected for t in shifts), 2 * whole.expected)


def test_a_shift_holding_far_more_than_theoretical_is_an_observation_and_its_own_is_not() -> None:
    expected = round(-player_edge(Rules()) * 1000)
    tables = {"T1": _timed("T1", 300, AT_13H + 3_600_000, 1_000),  # all in shift 2
              "T2": _timed("T2", expected, AT_13H, 1_000)}  # all in shift 1
    shift = [o for o in detect_hold(hold_tallies(tables)) if o.scope == SHIFT]
    assert [(o.subject, o.table_id) for o in shift] == [("2026-12-05/2", "")]
    assert shift[0].value > Z_THRESHOLD and shift[0].message.startswith("shift 2026-12-05/2")


def test_the_shift_is_the_sites_local_one() -> None:
    # 13:00 UTC is 08:00 in New York: its first shift (06:00-14:00 local)
    site = SiteTime.make("America/New_York", "06:00", "06:00,14:00,22:00")
    assert shift_id(site, AT_13H) == "2026-12-05/1"
    assert shift_id(SiteTime(), AT_13H) == "2026-12-05/1"
    assert shift_id(SiteTime(), AT_13H + 3_600_000) == "2026-12-05/2"
    assert shift_id(site, AT_13H + 3_600_000) == "2026-12-05/1"
    # before the gaming day starts: the previous day's last shift
    assert shift_id(SiteTime(), AT_13H - 8 * 3_600_000) == "2026-12-04/3"


def test_a_round_read_from_the_record_starts_at_its_round_started_time() -> None:
    table = SimTable(32, 37, {1: make_player("flat", 37, 1, 32)})
    evs = events(table, 5, 37)
    starts = [e.ts for e in evs if isinstance(e.payload, RoundStarted)]
    rounds = rounds_by_table(evs)[table.cfg.table_id]
    assert [r.start_ms for r in rounds] == starts
