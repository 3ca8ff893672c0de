"""All four detectors over a record: events in record order, and the audit's
violations of the same record (for the dealer error rate)."""

from __future__ import annotations

from collections.abc import Iterable

from ..engine.violation import Violation
from ..events.model import Event
from .counting import detect_count_betting
from .dealer_errors import detect_dealer_errors
from .hold import detect_hold, hold_tallies
from .holecard import detect_hole_card_play
from .observation import Observation
from .rounds import RoundView, rounds_by_table
from .sessions import infer_sessions


def observe(tables: dict[str, list[RoundView]],
            violations: Iterable[Violation] = ()) -> list[Observation]:
    """The observations of rounds already read: seat sessions table by table, then
    holds, then dealers. The same rounds give the same observations in the same order."""
    out: list[Observation] = []
    for table_id in sorted(tables):
        for session in infer_sessions(tables[table_id]):
            for detect in (detect_count_betting, detect_hole_card_play):
                found = detect(session)
                if found is not None:
                    out.append(found)
    out.extend(detect_hold(hold_tallies(tables)))
    out.extend(detect_dealer_errors(tables, violations))
    return out


def protect(events: Iterable[Event], violations: Iterable[Violation] = ()) -> list[Observation]:
    return observe(rounds_by_table(events), violations)
