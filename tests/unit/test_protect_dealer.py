"""Detector 4, a dealer's error rate: "the dealer's count k in n rounds is judged
against Poisson(n x that rate): the p-value is P(X >= k)"; the record's own defects
never count against the dealer."""

from __future__ import annotations

import math

from pitwatch.engine.violation import Violation
from pitwatch.events.model import Rules
from pitwatch.protect.dealer_errors import (
    MIN_ERRORS,
    P_THRESHOLD,
    dealer_tests,
    detect_dealer_errors,
)
from pitwatch.protect.observation import DEALER_ERROR_RATE
from pitwatch.protect.rounds import RoundView
from pitwatch.protect.stats import poisson_upper


def test_poisson_upper_tail() -> None:
    assert poisson_upper(0, 3.0) == 1.0
    assert math.isclose(poisson_upper(1, 3.0), 1 - math.exp(-3.0))
    assert math.isclose(poisson_upper(12, 3.0), 1 - sum(
        math.exp(-3.0) * 3.0**i / math.factorial(i) for i in range(12)), rel_tol=1e-6)
    assert 0 < poisson_upper(60, 3.0) < 1e-40


def _floor(raised_errors: int) -> dict[str, tuple[int, tuple[str, ...]]]:
    dealt = {f"D{d:02d}": (300, tuple(f"D{d:02d}-{k}" for k in range(3))) for d in range(20)}
    dealt["DX"] = (300, tuple(f"DX-{k}" for k in range(raised_errors)))
    return dealt


def test_a_dealer_at_four_times_the_floor_rate_is_flagged_and_the_floor_is_not() -> None:
    tests = {t.dealer_id: t for t in dealer_tests(_floor(12))}
    assert tests["DX"].errors == 12 and math.isclose(tests["DX"].expected, 3.0)
    assert tests["DX"].p_value < P_THRESHOLD
    assert all(t.p_value > P_THRESHOLD for d, t in tests.items() if d != "DX")
    assert dealer_tests(_floor(4))[-1].p_value > P_THRESHOLD


def _violation(code: str, round_id: str) -> Violation:
    return Violation(code, "HIGH", "T1", round_id, None, None, f"e-{round_id}", (), "", "",
                     "nj", "1", 0)


def test_only_the_dealers_errors_count_not_the_records() -> None:
    rounds = {"T1": [RoundView("T1", f"R{i}", i, "DX" if i < 100 else f"D{i // 100}",
                               "BLACKJACK", Rules(), "S1", 0.0) for i in range(2000)]}
    floor = [_violation("PAYOUT_WRONG", f"R{i}") for i in range(100, 2000, 100)]
    lost = [_violation("EVENTS_LOST", f"R{i}") for i in range(0, 100, 5)]
    assert detect_dealer_errors(rounds, floor + lost) == []
    bad = [_violation("DEALER_DREW_WRONG", f"R{i}") for i in range(0, 100, 10)]
    obs = detect_dealer_errors(rounds, floor + lost + bad)
    assert [(o.code, o.subject, o.value) for o in obs] == [(DEALER_ERROR_RATE, "DX", 10.0)]
    assert obs[0].weight_rounds == tuple(f"R{i}" for i in range(0, 100, 10))
    assert MIN_ERRORS <= 10
