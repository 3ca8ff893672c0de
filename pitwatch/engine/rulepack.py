"""Rule packs: one jurisdiction and game's checks, each with its code, severity and
citation. A check is a small function of the round's state before an event and the
event; it returns a `Finding` when the event shows a violation, else None, and raises
`Undecidable` when the record before the event cannot decide it. Nothing else may
escape a check: any other exception is an engine error (a bug), never a violation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..events.model import PAYLOAD_TYPES, Event, Payload, Rules
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
    #: a wager already standing that the finding makes void (its kind, on seat and
    #: hand): judged once the stacks are all in, e.g. a minimum at the first card
    void_wager: str | None = None
    #: an earlier event of the round, (event id, ts), that the finding cites instead of
    #: the event that decided it (money settled before its outcome was known, judged
    #: once it is): that event shows the fault
    at: tuple[str, int] | None = None


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


@dataclass(frozen=True, slots=True)
class PostingRule:
    """A check of a table's posted rules (its `TableOpened`) against the text: a posting
    that contradicts what the regulation fixes. `check` returns what is wrong, or None."""

    code: str
    severity: Severity
    citation: str
    check: Callable[[Rules], str | None]


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
    #: checks of the posted rules, run on each TableOpened
    posting: tuple[PostingRule, ...] = ()
    #: fields of `Rules` the regulation fixes (odds, a player's rights): the engine
    #: judges by these whatever the table posts
    fixed: Mapping[str, Any] = field(default_factory=dict)
    by_type: dict[type[Payload], tuple[Rule, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_type", {
            t: tuple(r for r in self.rules if t in r.on) for t in PAYLOAD_TYPES.values()
        })

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def codes(self) -> set[str]:
        return ({r.code for r in self.rules} | {r.code for r in self.posting}
                | set(self.record_citations))

    def citation(self, code: str) -> str:
        for r in self.rules:
            if r.code == code:
                return r.citation
        for pr in self.posting:
            if pr.code == code:
                return pr.citation
        return self.record_citations[code][1]

    def judged_rules(self, posted: Rules) -> Rules:
        """The rules the engine judges a table by: what it posts, with what the text
        fixes in place of any posting that contradicts it."""
        changed = {k: v for k, v in self.fixed.items() if getattr(posted, k) != v}
        return replace(posted, **changed) if changed else posted
