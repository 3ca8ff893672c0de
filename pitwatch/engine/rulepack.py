"""Rule packs: one jurisdiction and game's checks, each with its code, severity and
citation. A check is a small function of the round's state before an event and the
event; it returns a `Finding` when the event shows a violation, else None, and raises
`Undecidable` when the record before the event cannot decide it. Nothing else may
escape a check: any other exception is an engine error (a bug), never a violation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..events.model import PAYLOAD_TYPES, Event, Payload
from .violation import Severity

if TYPE_CHECKING:
    from .state import Round


class Undecidable(Exception):
    """The one exception a check raises: the record before the event cannot decide it
    (a card or an event of the record is missing). The auditor reports it as
    PROCEDURE_OUT_OF_ORDER "cannot be judged" and keeps the event out of the fold.
    Any other exception from a check is an engine error (`pitwatch.engine.errors`)."""


@dataclass(frozen=True, slots=True)
class Finding:
    message: str
    seat: int | None = None
    hand: int | None = None
    evidence: tuple[str, ...] = ()


Check = Callable[["Round", Event], Finding | None]


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    severity: Severity
    citation: str
    check: Check
    on: tuple[type[Payload], ...]  # the event types the check looks at
    #: A finding makes the event void: a wager or decision that should not stand (HIGH),
    #: or an event the round cannot admit. The round's state does not take it in, and no
    #: later check is asked about it.
    voids: bool = False


@dataclass(frozen=True)
class RulePack:
    name: str
    version: str
    jurisdiction: str
    game: str
    title: str
    rules: tuple[Rule, ...]
    #: citations of the record checks the auditor itself makes (sequence, digest, ...)
    record_citations: dict[str, tuple[Severity, str]] = field(default_factory=dict)
    by_type: dict[type[Payload], tuple[Rule, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_type", {
            t: tuple(r for r in self.rules if t in r.on) for t in PAYLOAD_TYPES.values()
        })

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def codes(self) -> set[str]:
        return {r.code for r in self.rules} | set(self.record_citations)

    def citation(self, code: str) -> str:
        for r in self.rules:
            if r.code == code:
                return r.citation
        return self.record_citations[code][1]
