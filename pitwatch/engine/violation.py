"""What the engine raises: a violation with its code, citation and evidence."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    CRITICAL = "CRITICAL"  # money moved wrongly
    HIGH = "HIGH"  # a wager or decision that should not stand
    MEDIUM = "MEDIUM"  # the procedure out of order
    LOW = "LOW"  # a record defect


def violation_id(round_id: str, code: str, event_id: str) -> str:
    """A violation's identity is a function of (round, code, evidence event): stores
    upsert on it, so redelivery and replay never double-count."""
    return hashlib.sha256(f"{round_id}\x1f{code}\x1f{event_id}".encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Violation:
    code: str
    severity: str
    table_id: str
    round_id: str
    seat: int | None
    hand: int | None
    event_id: str
    evidence: tuple[str, ...]
    citation: str
    message: str
    pack: str
    pack_version: str
    detected_at: int  # ts (ms) of the event that showed it: no clock in the engine

    @property
    def violation_id(self) -> str:
        return violation_id(self.round_id, self.code, self.event_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "violation_id": self.violation_id, "code": self.code, "severity": self.severity,
            "table_id": self.table_id, "round_id": self.round_id, "seat": self.seat,
            "hand": self.hand, "event_id": self.event_id, "evidence": list(self.evidence),
            "citation": self.citation, "message": self.message, "pack": self.pack,
            "pack_version": self.pack_version, "detected_at": self.detected_at,
        }
