"""All four detectors over a record: events in record order, and the audit's
violations of the same record (for the dealer error rate)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from ..engine.violation import Violation
from ..events.model import Event
from ..sitetime import SiteTime
from .counting import detect_count_betting
from .dealer_errors import RECORD_CODES, detect_dealer_errors
from .hold import detect_hold, hold_tallies
from .holecard import detect_hole_card_play
from .observation import Observation
from .rounds import RoundView, read_floor
from .seating import Seating
from .sessions import infer_sessions

#: findings that say the record of a round is not whole (its cards or money may be
#: missing): the round is not judged, nor the count or composition of its shoe after it
BREAKS: Final = RECORD_CODES - {"POSTED_RULES_CONTRADICT_REGULATION", "TABLE_NOT_OPENED"}


def suspend(tables: dict[str, list[RoundView]], violations: Iterable[Violation]
            ) -> dict[str, list[RoundView]]:
    """The rounds with a break in their record left out, and the rounds after them in
    the same shoe without a true count or a known composition: judgement on them waits
    for the next shoe."""
    broken = {v.round_id for v in violations if v.code in BREAKS}
    if not broken:
        return tables
    out: dict[str, list[RoundView]] = {}
    for table_id, rounds in tables.items():
        kept: list[RoundView] = []
        in_break, shoe = False, None
        for r in rounds:
            if r.round_id in broken:
                in_break, shoe = True, r.shoe_id
                continue
            if in_break and r.shoe_id == shoe:
                r = replace(r, true_count=None, composition_known=False)
            else:
                in_break = False
            kept.append(r)
        out[table_id] = kept
    return out


def observe(tables: dict[str, list[RoundView]],
            violations: Iterable[Violation] = (),
            seatings: Mapping[str, Sequence[Seating]] | None = None,
            site: SiteTime | None = None) -> list[Observation]:
    """The observations of rounds already read: seat sessions table by table (from the
    seat events in `seatings` where the record has them, inferred where not), then
    holds (by table, dealer and shift of `site`: `hold_tallies`), then dealers. The same
    rounds give the same observations in the same order.
    A break in the record (BREAKS) suspends judgement (`suspend`); the dealer's error
    rate never counts it."""
    violations = list(violations)
    all_rounds = tables
    tables = suspend(tables, violations)
    out: list[Observation] = []
    for table_id in sorted(tables):
        stays = () if seatings is None else seatings.get(table_id, ())
        for session in infer_sessions(tables[table_id], seatings=stays):
            for detect in (detect_count_betting, detect_hole_card_play):
                found = detect(session)
                if found is not None:
                    out.append(found if session.player_id is None else replace(
                        found, player_id=session.player_id,
                        player_kind=session.player_kind))
    out.extend(detect_hold(hold_tallies(tables, site)))
    out.extend(detect_dealer_errors(all_rounds, violations))
    return out


def protect(events: Iterable[Event], site: SiteTime | None = None) -> list[Observation]:
    """The observations of events in record order, audited (nothing stored): the
    detectors read the audit's fold, and the dealer error rate its violations; the hold
    by shift groups by `site`'s shifts."""
    floor, violations = read_floor(events)
    return observe(dict(sorted(floor.tables.items())), violations, floor.seatings, site)
