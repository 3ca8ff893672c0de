"""Detector 3: hold against theoretical, by table and by dealer.

Each seat's round has an expected house result: its main wager times the house edge for
the posted rules (pitwatch.protect.expectations.player_edge, infinite deck), plus, for
each decision that departed from basic strategy, what the departure cost the player by
the up card alone (the basic play's expectation minus the play's, times the wager). The
actual house result is what the hand wagers collected minus what they paid (insurance
and side wagers are left out). Its variance is VAR_PER_STAKE times the square of the
main wager (the variance of one blackjack hand with its doubles and splits, about 1.3
squared stakes: Griffin), and two seats of the same round, facing the same dealer hand,
covary by COV_BETWEEN_SEATS times the product of their wagers. Summed over a table's,
a dealer's or a shift's rounds, z = (actual - expected) / sqrt(variance); the band is
expected +- 3 sd. A shift is the site's (`pitwatch.sitetime`, the console's shifts):
the rounds of every table started in it, by the RoundStarted's device time. Only
blackjack rounds are judged (Switch and Free Bet have no edge model here yet).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from ..sitetime import SiteTime
from .expectations import against_up, peeked, player_edge
from .holecard import basic_play
from .observation import (
    DEALER,
    HOLD_OFF_THEORETICAL,
    SHIFT,
    TABLE,
    Observation,
    strength,
)
from .rounds import BLACKJACK, RoundView
from .stats import normal_two_sided

VAR_PER_STAKE: Final = 1.32
#: the covariance of two seats' results in the same round (squared stakes): they face
#: the same dealer hand (measured on the simulator: 0.48 over 9,000 rounds of seven
#: seats; a correlation of about 0.36)
COV_BETWEEN_SEATS: Final = 0.48
#: the shipped threshold: |z| above this is an observation (two-sided 0.27% nominal)
Z_THRESHOLD: Final = 3.0
#: fewer seat-rounds than this: no judgement
MIN_HANDS: Final = 100


def seat_expectations(r: RoundView) -> dict[int, tuple[float, float]]:
    """Each seat's (expected house result, variance) for the round, in cents."""
    edge = player_edge(r.rules)
    out = {s: (-edge * sr.main, VAR_PER_STAKE * float(sr.main) ** 2)
           for s, sr in r.seats.items() if sr.main > 0}
    for spot in r.spots:
        if spot.seat not in out:
            continue
        basic = basic_play(spot, r.rules)
        if spot.decision == basic:
            continue
        ex = against_up(spot.up, r.rules.dealer_hits_soft_17, peeked(spot.up, r.rules))
        cost = (ex.action(basic, spot.ranks, r.rules)
                - ex.action(spot.decision, spot.ranks, r.rules))
        e, v = out[spot.seat]
        out[spot.seat] = (e + cost * spot.wager, v)
    return out


@dataclass(slots=True)
class HoldTally:
    scope: str
    subject: str
    table_id: str
    rounds: int = 0
    hands: int = 0
    expected: float = 0.0
    actual: int = 0
    variance: float = 0.0
    round_ids: list[str] = field(default_factory=list)

    def add(self, r: RoundView, seats: dict[int, tuple[float, float]] | None = None) -> None:
        """A round added; `seats`: its `seat_expectations`, where already worked out."""
        seats = seat_expectations(r) if seats is None else seats
        if not seats:
            return
        self.rounds += 1
        self.round_ids.append(r.round_id)
        for s, (e, v) in seats.items():
            self.hands += 1
            self.expected += e
            self.variance += v
            self.actual += r.seats[s].house
        mains = [float(r.seats[s].main) for s in seats]
        total = sum(mains)
        self.variance += COV_BETWEEN_SEATS * (total * total - sum(m * m for m in mains))

    def merge(self, other: HoldTally) -> None:
        """Another tally of the same subject added (the rounds of another batch)."""
        self.rounds += other.rounds
        self.hands += other.hands
        self.expected += other.expected
        self.actual += other.actual
        self.variance += other.variance
        self.round_ids.extend(other.round_ids)

    @property
    def z(self) -> float:
        return (self.actual - self.expected) / math.sqrt(self.variance) if self.variance else 0.0


def shift_id(site: SiteTime, ms: int) -> str:
    """The shift an instant is in: its gaming day and its number in it ("2026-12-05/2")."""
    day, n = site.shift_of(ms)
    return f"{day.isoformat()}/{n + 1}"


class HoldTallies:
    """Hold tallies by table, dealer and shift of `site` (by default UTC with shifts at
    06:00, 14:00 and 22:00), added to a table's rounds at a time: a dealer's and a
    shift's run across tables, each round added in the order it is given."""

    def __init__(self, site: SiteTime | None = None) -> None:
        self.site = SiteTime() if site is None else site
        self.by_table: dict[str, HoldTally] = {}
        self.by_dealer: dict[str, HoldTally] = {}
        self.by_shift: dict[str, HoldTally] = {}

    def add(self, table_id: str, rounds: Iterable[RoundView]) -> None:
        """A table's rounds (in record order) added; its blackjack rounds alone count."""
        for r in rounds:
            if r.game != BLACKJACK:
                continue
            seats = seat_expectations(r)
            self.by_table.setdefault(table_id, HoldTally(TABLE, table_id, table_id)).add(
                r, seats)
            self.by_dealer.setdefault(r.dealer_id, HoldTally(DEALER, r.dealer_id, "")).add(
                r, seats)
            if r.start_ms is not None:
                shift = shift_id(self.site, r.start_ms)
                self.by_shift.setdefault(shift, HoldTally(SHIFT, shift, "")).add(r, seats)

    def tallies(self) -> list[HoldTally]:
        """Tables first, then dealers, then shifts, each group sorted by its id."""
        return [g[k] for g in (self.by_table, self.by_dealer, self.by_shift)
                for k in sorted(g)]


def hold_tallies(tables: dict[str, list[RoundView]], site: SiteTime | None = None
                 ) -> list[HoldTally]:
    """One tally per table, one per dealer (across tables) and one per shift of `site`
    (across tables; by default UTC with shifts at 06:00, 14:00 and 22:00): tables
    first, then dealers, then shifts, each group sorted by its id."""
    held = HoldTallies(site)
    for table_id, rounds in sorted(tables.items()):
        held.add(table_id, rounds)
    return held.tallies()


def detect_hold(tallies: Iterable[HoldTally]) -> list[Observation]:
    out = []
    for t in tallies:
        if t.hands < MIN_HANDS or abs(t.z) <= Z_THRESHOLD:
            continue
        p = normal_two_sided(t.z)
        sd = math.sqrt(t.variance)
        low, high = t.expected - Z_THRESHOLD * sd, t.expected + Z_THRESHOLD * sd
        who = {TABLE: "table", DEALER: "dealer", SHIFT: "shift"}[t.scope] + f" {t.subject}"
        out.append(Observation(
            HOLD_OFF_THEORETICAL, t.scope, t.table_id, t.subject, None,
            t.subject if t.scope == DEALER else None, "z", t.z, p, None,
            strength(-math.log10(max(p, 1e-300)), -math.log10(normal_two_sided(Z_THRESHOLD))),
            t.rounds, (), False,
            f"{who}: house result {t.actual / 100:,.2f} against {t.expected / 100:,.2f} "
            f"expected over {t.hands} hands (band {low / 100:,.2f} to {high / 100:,.2f}, "
            f"z={t.z:+.2f})",
            (("expected_cents", t.expected), ("actual_cents", float(t.actual)),
             ("sd_cents", sd), ("hands", float(t.hands)))))
    return out
