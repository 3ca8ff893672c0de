"""What the game-protection detectors find: observations, never violations.

An observation is a statistical statement about a seat session, a table or a dealer
(bets that follow the count, decisions that only the hole card makes right, a hold
away from theoretical, a dealer's error rate above the floor's). It carries its
statistic and p-value or likelihood ratio, the rounds that carry the weight, and a
`strength` (no severity: it is evidence for a person to weigh, not a breach of a rule).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

COUNT_BETTING: Final = "COUNT_CORRELATED_BETTING"
HOLE_CARD_PLAY: Final = "HOLE_CARD_PLAY"
HOLD_OFF_THEORETICAL: Final = "HOLD_OFF_THEORETICAL"
DEALER_ERROR_RATE: Final = "DEALER_ERROR_RATE"

#: code -> what it says (docs/analytics.md has each method)
CATALOGUE: Final[dict[str, str]] = {
    COUNT_BETTING: "bet changes follow the Hi-Lo true count's changes within the shoe",
    HOLE_CARD_PLAY: "departures from basic strategy that only the dealer's hole card "
                    "makes right, more often than chance allows",
    HOLD_OFF_THEORETICAL: "the house result is more than 3 standard deviations from "
                          "its expectation under the posted rules and the decisions taken",
    DEALER_ERROR_RATE: "the dealer's violations per round above the floor's rate "
                       "(Poisson test)",
}

#: what an observation is about
SEAT_SESSION: Final = "SEAT_SESSION"
TABLE: Final = "TABLE"
DEALER: Final = "DEALER"
#: a shift of the site (pitwatch.sitetime) across the floor's tables
SHIFT: Final = "SHIFT"


def observation_id(table_id: str, subject: str, code: str) -> str:
    """A deterministic id from (table, seat session or dealer, code): a store upserts
    on it, so auditing the same record again gives the same observation."""
    key = f"{table_id}\x1f{subject}\x1f{code}".encode()
    return hashlib.sha256(key).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Observation:
    code: str
    #: SEAT_SESSION, TABLE, DEALER or SHIFT
    scope: str
    table_id: str  # "" for a dealer seen at several tables, and for a shift
    #: the seat session's id, the table id, the dealer id or the shift's
    #: ("2026-12-05/2": the gaming day and the shift's number in it)
    subject: str
    seat: int | None
    dealer_id: str | None
    #: the statistic's name and value (a z, a log likelihood ratio, a count)
    statistic: str
    value: float
    #: one-sided p-value under the honest hypothesis; None where the test is a
    #: likelihood ratio (see `likelihood_ratio`)
    p_value: float | None
    likelihood_ratio: float | None
    #: how far past the shipped threshold, 0..1 (1: ten times the evidence needed)
    strength: float
    #: rounds observed and the rounds that carry the weight, in order
    rounds: int
    weight_rounds: tuple[str, ...]
    #: the session was inferred from wagers (no seat events for it)
    inferred: bool
    message: str
    details: tuple[tuple[str, float], ...] = ()
    #: the seated player, where seat events name one: a rated player's loyalty id
    #: (player_kind RATED) or an anonymous session id (ANONYMOUS)
    player_id: str | None = None
    player_kind: str | None = None

    @property
    def observation_id(self) -> str:
        return observation_id(self.table_id, self.subject, self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "observation_id": self.observation_id, "code": self.code, "scope": self.scope,
            "table_id": self.table_id, "subject": self.subject, "seat": self.seat,
            "dealer_id": self.dealer_id, "statistic": self.statistic,
            "value": round(self.value, 6),
            "p_value": None if self.p_value is None else float(f"{self.p_value:.6g}"),
            "likelihood_ratio": (None if self.likelihood_ratio is None
                                 else float(f"{self.likelihood_ratio:.6g}")),
            "strength": round(self.strength, 4), "rounds": self.rounds,
            "weight_rounds": list(self.weight_rounds), "inferred": self.inferred,
            "message": self.message,
            "details": {k: round(v, 6) for k, v in self.details},
            "player_id": self.player_id, "player_kind": self.player_kind,
        }


def strength(evidence: float, threshold: float) -> float:
    """0 at the threshold, 1 at ten times it (both in log units: log10 of 1/p or of the
    likelihood ratio), clipped to 0..1."""
    if threshold <= 0:
        return 0.0
    return max(0.0, min(1.0, (evidence - threshold) / (9.0 * threshold)))


def evidence_text(o: Mapping[str, Any]) -> str:
    """An observation's (JSON form) test figure in words: its p-value, or its likelihood
    ratio; '' for neither."""
    if o["p_value"] is not None:
        return f"p = {o['p_value']:.2g}"
    if o["likelihood_ratio"] is not None:
        return f"likelihood ratio {o['likelihood_ratio']:.3g}"
    return ""
