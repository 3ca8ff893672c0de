"""Detector 4: a dealer's error rate against the floor's.

A dealer's errors are the rounds they dealt that carry a violation of the dealer's
game (a payout, a draw, the procedure): the record's own defects (events lost, a
device restarted, a signature, a table never opened, a round cut off) are the
record's, never the dealer's, and do not count. Over the same record, the floor's
rate is the other dealers' rounds with errors per round dealt; the dealer's count k in
n rounds is judged against Poisson(n x that rate): the p-value is P(X >= k).
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import Final

from ..engine.violation import Violation
from .observation import DEALER, DEALER_ERROR_RATE, Observation, strength
from .rounds import RoundView
from .stats import poisson_upper

#: the record's findings: not the dealer's doing
RECORD_CODES: Final = frozenset({
    "EVENTS_LOST", "DEVICE_RESTARTED", "SEQUENCE_CONFLICT", "DIGEST_MISMATCH",
    "SIGNATURE_INVALID", "DEVICE_LIMIT_EXCEEDED", "TABLE_NOT_OPENED", "ROUND_INCOMPLETE",
    "POSTED_RULES_CONTRADICT_REGULATION",
})
#: the shipped threshold: flagged when P(X >= k) is below this, with MIN_ERRORS at least
P_THRESHOLD: Final = 1e-3
MIN_ERRORS: Final = 3


@dataclass(frozen=True, slots=True)
class DealerTest:
    dealer_id: str
    rounds: int
    errors: int
    expected: float
    p_value: float
    error_rounds: tuple[str, ...]


def dealer_tests(dealt: dict[str, tuple[int, tuple[str, ...]]]) -> list[DealerTest]:
    """`dealt`: each dealer's rounds dealt and the ids of those with an error."""
    total_n = sum(n for n, _ in dealt.values())
    total_k = sum(len(bad) for _, bad in dealt.values())
    out = []
    for dealer in sorted(dealt):
        n, bad = dealt[dealer]
        k = len(bad)
        others_n = total_n - n
        rate = (total_k - k) / others_n if others_n else 0.0
        mu = n * rate
        out.append(DealerTest(dealer, n, k, mu, poisson_upper(k, mu), bad))
    return out


def flagged(t: DealerTest) -> bool:
    """The shipped threshold."""
    return t.errors >= MIN_ERRORS and t.p_value < P_THRESHOLD


class Dealt:
    """Each dealer's rounds dealt and the ids of those with an error, added a table's
    rounds at a time (a dealer's run across tables): what the test needs, never the
    rounds themselves."""

    def __init__(self) -> None:
        self.rounds: dict[str, int] = {}
        self.errors: dict[str, list[str]] = {}

    def add(self, rounds: Iterable[RoundView], bad: Container[str]) -> None:
        """Rounds in record order, `bad` the ids of rounds with a dealer's error."""
        for r in rounds:
            self.rounds[r.dealer_id] = self.rounds.get(r.dealer_id, 0) + 1
            at = self.errors.setdefault(r.dealer_id, [])
            if r.round_id in bad:
                at.append(r.round_id)

    def observations(self) -> list[Observation]:
        return dealer_observations(
            {d: (n, tuple(self.errors[d])) for d, n in self.rounds.items()})


def dealer_errors(violations: Iterable[Violation]) -> set[str]:
    """The rounds with an error of the dealer's: a violation not of the record."""
    return {v.round_id for v in violations if v.code not in RECORD_CODES}


def detect_dealer_errors(tables: dict[str, list[RoundView]],
                         violations: Iterable[Violation]) -> list[Observation]:
    dealt = Dealt()
    bad = dealer_errors(violations)
    for rounds in tables.values():
        dealt.add(rounds, bad)
    return dealt.observations()


def dealer_observations(tallies: dict[str, tuple[int, tuple[str, ...]]]
                        ) -> list[Observation]:
    """The dealers flagged, from each one's rounds dealt and the ids of those with an
    error (`dealer_tests`)."""
    out = []
    for t in dealer_tests(tallies):
        if not flagged(t):
            continue
        per100 = 100 * t.errors / t.rounds
        floor100 = 100 * t.expected / t.rounds
        out.append(Observation(
            DEALER_ERROR_RATE, DEALER, "", t.dealer_id, None, t.dealer_id, "errors",
            float(t.errors), t.p_value, None,
            strength(-math.log10(max(t.p_value, 1e-300)), -math.log10(P_THRESHOLD)),
            t.rounds, t.error_rounds, False,
            f"dealer {t.dealer_id}: {t.errors} rounds with errors in {t.rounds} "
            f"({per100:.1f} per 100) against the floor's {floor100:.1f} per 100 "
            f"(p={t.p_value:.2g})",
            (("per_100", per100), ("floor_per_100", floor100),
             ("expected", t.expected))))
    return out
