"""What the engine raises: a violation with its code, citation and evidence."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Violation:
        """The violation whose `to_json` is `d` (the alerts topic's, a case's, an
        audit state's). Its `violation_id` is not read: it follows from the fields. A
        field missing or holding another type is a ValueError naming it; no value is
        converted."""
        values: list[Any] = []
        for f in fields(cls):
            if f.name not in d:
                raise ValueError(f"a violation with no {f.name!r}")
            holds, what = _JSON_FIELDS.get(f.name, (_is_text, "text"))
            if not holds(d[f.name]):
                raise ValueError(f"a violation's {f.name!r} is not {what}: "
                                 f"{str(d[f.name])[:40]!r}")
            values.append(tuple(d[f.name]) if f.name == "evidence" else d[f.name])
        return cls(*values)


def _is_text(v: object) -> bool:
    return type(v) is str


def _is_whole(v: object) -> bool:
    return type(v) is int  # not a bool, not a float


def _is_number_or_none(v: object) -> bool:
    return v is None or _is_whole(v)


def _is_ids(v: object) -> bool:
    return isinstance(v, list | tuple) and all(_is_text(x) for x in v)


#: The fields of a violation's JSON form that are not text: what each holds.
_JSON_FIELDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "seat": (_is_number_or_none, "a seat number or none"),
    "hand": (_is_number_or_none, "a hand number or none"),
    "evidence": (_is_ids, "a list of event ids"),
    "detected_at": (_is_whole, "a time in ms"),
}
