"""All four detectors over a record: events in record order, and the audit's
violations of the same record (for the dealer error rate)."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from ..engine.violation import Violation
from ..events.model import Event
from ..sitetime import SiteTime
from .counting import detect_count_betting
from .dealer_errors import RECORD_CODES, Dealt, dealer_errors
from .hold import HoldTallies, detect_hold
from .holecard import basic_play, detect_hole_card_play
from .observation import Observation
from .rounds import RoundView, read_floor
from .seating import Seating
from .sessions import SeatSession, infer_sessions

#: findings that say the record of a round is not whole (its cards or money may be
#: missing): the round is not judged, nor the count or composition of its shoe after it
BREAKS: Final = RECORD_CODES - {"POSTED_RULES_CONTRADICT_REGULATION", "TABLE_NOT_OPENED"}


def suspend(tables: dict[str, list[RoundView]], violations: Iterable[Violation]
            ) -> dict[str, list[RoundView]]:
    """The rounds with a break in their record left out, and the rounds after them in
    the same shoe without a true count or a known composition: judgement on them waits
    for the next shoe."""
    broken = Findings.of(violations).broken
    if not broken:
        return tables
    return {table_id: suspend_rounds(rounds, broken) for table_id, rounds in tables.items()}


def suspend_rounds(rounds: Sequence[RoundView], broken: Container[str]
                   ) -> list[RoundView]:
    """One table's rounds (in record order) as `suspend` leaves them, `broken` the ids
    of the rounds with a break in their record."""
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
    return kept


def slim(view: RoundView) -> RoundView:
    """The round as the detectors read it: its seats with a main wager, and the
    decisions there that departed from basic strategy (a seat without a wager or a
    basic play weighs nothing in `infer_sessions`, `count_test`, `departure` or
    `seat_expectations`): what a table's rounds are held as until the table is judged."""
    seats = {s: sr for s, sr in view.seats.items() if sr.main > 0}
    spots = [sp for sp in view.spots
             if sp.seat in seats and sp.decision != basic_play(sp, view.rules)]
    return replace(view, seats=seats, spots=spots)


@dataclass(frozen=True, slots=True)
class Findings:
    """What a record's violations say of its rounds: those whose record has a break
    (BREAKS), and those with an error of the dealer's (`dealer_errors`)."""

    broken: frozenset[str]
    errors: frozenset[str]

    @classmethod
    def of(cls, violations: Iterable[Violation]) -> Findings:
        violations = list(violations)
        return cls(frozenset(v.round_id for v in violations if v.code in BREAKS),
                   frozenset(dealer_errors(violations)))


def session_observations(session: SeatSession) -> list[Observation]:
    """A seat session's observations, naming its player where seat events do."""
    out = []
    for detect in (detect_count_betting, detect_hole_card_play):
        found = detect(session)
        if found is not None:
            out.append(found if session.player_id is None else replace(
                found, player_id=session.player_id, player_kind=session.player_kind))
    return out


class FloorJudge:
    """The floor judged a table at a time (`add`), in table order: a table's seat
    sessions and its hold are judged when it is added, and of the floor-wide scopes it
    keeps running tallies alone (each dealer's and shift's hold, each dealer's rounds
    dealt and the ids of those with an error), never a table's rounds once added.
    `observations` gives what `observe` gives of the same rounds, in the same order."""

    def __init__(self, site: SiteTime | None = None) -> None:
        self.holds = HoldTallies(site)
        self.dealt = Dealt()
        self.sessions: list[Observation] = []
        self.table_holds: list[Observation] = []
        #: tables and completed rounds added
        self.tables = 0
        self.rounds = 0

    def add(self, table_id: str, rounds: Sequence[RoundView], findings: Findings,
            seatings: Sequence[Seating] = ()) -> None:
        """A table's completed rounds in record order, what its violations say of them,
        and its seat stays."""
        kept = suspend_rounds(rounds, findings.broken) if findings.broken else rounds
        for session in infer_sessions(kept, seatings=seatings):
            self.sessions.extend(session_observations(session))
        self.holds.add(table_id, kept)
        table = self.holds.by_table.pop(table_id, None)
        if table is not None:
            self.table_holds.extend(detect_hold([table]))
        for held in (self.holds.by_dealer, self.holds.by_shift):
            for t in held.values():
                t.round_ids.clear()  # the detector never reads them: kept small
        self.dealt.add(rounds, findings.errors)
        self.tables += 1
        self.rounds += len(rounds)

    def observations(self) -> list[Observation]:
        """Seat sessions (tables in order), then holds by table, dealer and shift, then
        dealers' error rates."""
        def by_table(o: Observation) -> str:
            return o.table_id

        return (sorted(self.sessions, key=by_table) + sorted(self.table_holds, key=by_table)
                + detect_hold(self.holds.tallies()) + self.dealt.observations())


def observe(tables: dict[str, list[RoundView]],
            violations: Iterable[Violation] = (),
            seatings: Mapping[str, Sequence[Seating]] | None = None,
            site: SiteTime | None = None) -> list[Observation]:
    """The observations of rounds already read: seat sessions table by table (from the
    seat events in `seatings` where the record has them, inferred where not), then
    holds (by table, dealer and shift of `site`: `hold_tallies`), then dealers. The same
    rounds give the same observations in the same order (`FloorJudge`, the tables in
    order). A break in the record (BREAKS) suspends judgement (`suspend`); the dealer's
    error rate never counts it."""
    judge = FloorJudge(site)
    findings = Findings.of(violations)
    for table_id in sorted(tables):
        judge.add(table_id, tables[table_id], findings,
                  () if seatings is None else seatings.get(table_id, ()))
    return judge.observations()


def protect(events: Iterable[Event], site: SiteTime | None = None) -> list[Observation]:
    """The observations of events in record order, audited (nothing stored): the
    detectors read the audit's fold, and the dealer error rate its violations; the hold
    by shift groups by `site`'s shifts."""
    floor, violations = read_floor(events)
    return observe(dict(sorted(floor.tables.items())), violations, floor.seatings, site)
