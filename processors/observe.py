"""Game protection in the worker: the detectors of `pitwatch protect` over each table
the worker folds, published on the observations topic (docs/analytics.md, "Streaming").

Each table's auditor carries a `TableObserver` as its fold's read-only watcher
(`TableAuditor.watch`): the same `TableReader` the embedded audit reads, so the rounds,
counts, spots and results are the engine's, folded once. The observer keeps what the
worker's scopes need and no more:

- the table's hold tally (`HoldTally`: five numbers), judged by `detect_hold`;
- the rounds of the seat sessions still open, each cut to its wagering seats and to the
  decisions that departed from basic strategy (all the session detectors read), judged
  by `infer_sessions` and `detect_count_betting` / `detect_hole_card_play`;
- the seat stays those rounds need, and the round just completed until the table's next
  event (its record findings are all in by then: a break in its record drops it, and
  the rest of its shoe loses its count, as `pitwatch.protect.run.suspend` does).

What it finds goes out as it is decided: a seat session's observations when the session
ends (a gap of GAP_ROUNDS rounds without a wager, a recorded stay ending or starting),
and the open sessions' and the table's hold as they stand at each shoe's end and when
the table goes quiet (`TableObserver.publish`). An observation's id depends only on
(table, subject, code), so a newer value upserts the stored row; a code an earlier
publication of the subject gave and this one does not is published as a withdrawal of
that id (`stored.Withdrawn`: the row marked withdrawn), so the store keeps no flag
`pitwatch protect` of the same record would not give. The codes published of each open
subject are kept (`TableObserver.published`) for that. Dealer scopes need
every table: `pitwatch protect --clickhouse/--data` judges them over the store.

The observer's state rides in the auditor's snapshot (`ObservedAuditor.export_state`,
the key "observe"), so a restarted worker resumes it exactly where the fold resumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

from pitwatch.engine.auditor import TableAuditor
from pitwatch.engine.state import Round
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import rules_from_dict, rules_to_dict
from pitwatch.events.model import Event, PlayerLeft, PlayerSeated, Rules, ShoeLoaded
from pitwatch.protect.hold import HoldTally, detect_hold
from pitwatch.protect.holecard import basic_play
from pitwatch.protect.observation import SEAT_SESSION, TABLE, Observation
from pitwatch.protect.rounds import BLACKJACK, RoundView, SeatRound, Spot, TableReader
from pitwatch.protect.run import BREAKS, session_observations
from pitwatch.protect.seating import Seating, SeatLog
from pitwatch.protect.sessions import GAP_ROUNDS, SeatSession, infer_sessions
from pitwatch.protect.stored import withdrawal

from .state import Found, TableStates

log = logging.getLogger("pitwatch.worker")

SEAT_EVENTS: Final = (PlayerSeated, PlayerLeft)
#: the version of the observer's part of a snapshot; another one starts it afresh
STATE_VERSION: Final = 2


def slim(view: RoundView) -> RoundView | None:
    """The round as the session detectors read it: its wagering seats, and only the
    decisions that departed from basic strategy with a hole card on record (the rest
    weigh nothing in `holecard.departure`). None: no seat wagered."""
    seats = {s: SeatRound(s, sr.main, sr.house) for s, sr in view.seats.items()
             if sr.main > 0}
    if not seats:
        return None
    spots = [sp for sp in view.spots if sp.seat in seats and sp.hole is not None
             and view.game == BLACKJACK and sp.decision != basic_play(sp, view.rules)]
    return replace(view, dealer_id="", seats=seats, spots=spots)


def seat_log(seatings: Iterable[Seating]) -> SeatLog:
    """A SeatLog holding these stays, as the seat events that made them would."""
    book = SeatLog()
    for s in seatings:
        book.seated(PlayerSeated(s.seat, s.player_id, s.player_kind), s.start)
        if s.end is not None:
            book.left(s.seat, s.end)
    return book


@dataclass(slots=True)
class _Break:
    """Round ids with a finding that the record is not whole (BREAKS), and the shoe a
    dropped round was in (its later rounds have no count)."""

    rounds: set[str] = field(default_factory=set)
    shoe: str | None = None
    on: bool = False


class TableObserver:
    """One table's game-protection state, fed by the fold's watcher (`watch`) and the
    table's violations (`violation`); what it decides goes to `out`."""

    def __init__(self, table_id: str, out: list[Observation] | None = None) -> None:
        self.table_id = table_id
        self.reader = TableReader(table_id)
        self.hold = HoldTally(TABLE, table_id, table_id)
        #: the slim rounds of the sessions not yet ended, in record order
        self.window: list[RoundView] = []
        #: each seat's last wagered round of an inferred run still open (no recorded
        #: stay holds it): what can end by a gap
        self.free: dict[int, int] = {}
        #: the round completed last, judged at the table's next event
        self.done: RoundView | None = None
        self.brk = _Break()
        #: rounds judged since the open observations were last published
        self.fresh = 0
        #: the codes last published of each subject still open (a seat session not yet
        #: ended, the table): what a later publication withdraws if it no longer gives
        self.published: dict[str, list[str]] = {}
        #: what it decided, for the caller to take
        self.out: list[Observation] = [] if out is None else out

    # --- the fold ------------------------------------------------------------------

    def watch(self, ev: Event, r: Round | None) -> None:
        self._settle()
        done = self.reader.watch(ev, r)
        if done is not None:
            self.done = done
        elif r is None and type(ev.payload) is ShoeLoaded:
            self.publish()  # the shoe before it ended
        elif r is None and type(ev.payload) in SEAT_EVENTS:
            self._close()  # a stay ended or began: a session may have ended with it

    def violation(self, v: Violation) -> None:
        if v.code in BREAKS and v.round_id:
            self.brk.rounds.add(v.round_id)

    def _settle(self) -> None:
        """The completed round judged, its findings all in: dropped on a break in its
        record (and its shoe's later rounds without a count), else into the hold and
        the open sessions; the sessions it ends published."""
        done, self.done = self.done, None
        if done is None:
            return
        brk = self.brk
        broken = done.round_id in brk.rounds
        brk.rounds.clear()  # a later finding names a later round
        if broken:
            brk.on, brk.shoe = True, done.shoe_id
            return
        if brk.on and done.shoe_id == brk.shoe:
            done = replace(done, true_count=None, composition_known=False)
        else:
            brk.on = False
        if done.game == BLACKJACK:
            self.hold.add(done)
        self.hold.round_ids.clear()  # the detectors never read them: kept small
        self.fresh += 1
        cut = slim(done)
        ended = False
        if cut is not None:
            self.window.append(cut)
            for seat in cut.seats:
                if self._held(seat, cut.index):
                    ended |= seat in self.free  # a recorded stay ends an inferred run
                else:
                    self.free[seat] = cut.index
        if ended or any(self.reader.index - last > GAP_ROUNDS
                        for last in self.free.values()):
            self._close()

    # --- seat sessions -------------------------------------------------------------

    def _held(self, seat: int, index: int) -> bool:
        return any(x.seat == seat and x.holds(index) for x in self.reader.seat_log.seatings)

    def _free(self) -> dict[int, int]:
        """Each seat's last wagered round in the window that no recorded stay holds."""
        out: dict[int, int] = {}
        for r in self.window:
            for seat in r.seats:
                if not self._held(seat, r.index):
                    out[seat] = r.index
        return out

    def _sessions(self) -> list[SeatSession]:
        return infer_sessions(self.window, seatings=self.reader.seat_log.seatings)

    def _ended(self, s: SeatSession) -> bool:
        """No round to come can join the session."""
        last = s.rounds[-1].index
        stays = [x for x in self.reader.seat_log.seatings if x.seat == s.seat]
        if not s.inferred:
            return all(x.end is not None for x in stays if x.holds(s.rounds[0].index)
                       and x.player_id == s.player_id)
        if self.reader.index - last > GAP_ROUNDS:
            return True
        # a recorded stay held a wagered round at the seat since: the run ended there
        return any(r.index > last and s.seat in r.seats and any(x.holds(r.index)
                   for x in stays) for r in self.window)

    def _close(self) -> None:
        ended = [s for s in self._sessions() if self._ended(s)]
        if not ended:
            return
        for s in ended:
            self._emit(s.session_id, SEAT_SESSION, s.seat, session_observations(s))
            self.published.pop(s.session_id, None)
            ids = {r.round_id for r in s.rounds}
            for r in self.window:
                if r.round_id in ids:
                    r.seats.pop(s.seat, None)
                    r.spots = [sp for sp in r.spots if sp.seat != s.seat]
        self.window = [r for r in self.window if r.seats]
        self._prune_stays()
        self.free = self._free()

    def _prune_stays(self) -> None:
        """Stays that hold no round of the window and are over: no session reads them."""
        def used(x: Seating) -> bool:
            return x.end is None or any(x.seat in r.seats and x.holds(r.index)
                                        for r in self.window)

        kept = [x for x in self.reader.seat_log.seatings if used(x)]
        if len(kept) != len(self.reader.seat_log.seatings):
            self.reader.seat_log = seat_log(kept)

    def publish(self) -> None:
        """The open sessions' observations and the table's hold as they stand (a shoe
        ended, or the table went quiet), when a round was judged since the last time."""
        self._settle()
        if not self.fresh:
            return
        self.fresh = 0
        sessions = self._sessions()
        for s in sessions:
            self._emit(s.session_id, SEAT_SESSION, s.seat, session_observations(s))
        self._emit(self.table_id, TABLE, None, detect_hold([self.hold]))
        # a subject published that no open session is now: all it gave withdrawn
        gone = self.published.keys() - {s.session_id for s in sessions} - {self.table_id}
        for subject in sorted(gone):
            self._emit(subject, SEAT_SESSION, _seat(subject), [])
            del self.published[subject]

    def _emit(self, subject: str, scope: str, seat: int | None,
              found: list[Observation]) -> None:
        """A subject's observations out, after the withdrawal of each code it was last
        published with and no longer gives; what it gives now remembered."""
        codes = sorted({o.code for o in found})
        for code in self.published.get(subject, ()):
            if code not in codes:
                self.out.append(withdrawal(self.table_id, scope, subject, code, seat))
        self.out.extend(found)
        if codes:
            self.published[subject] = codes
        else:
            self.published.pop(subject, None)

    # --- snapshots -----------------------------------------------------------------

    def export(self) -> dict[str, Any]:
        rules: list[Rules] = []

        def rid(x: Rules) -> int:
            if x not in rules:
                rules.append(x)
            return rules.index(x)

        def view(v: RoundView | None) -> list[Any] | None:
            if v is None:
                return None
            return [v.round_id, v.index, v.dealer_id, v.game, rid(v.rules), v.shoe_id,
                    v.true_count, [[s.seat, s.main, s.house] for s in v.seats.values()],
                    [_spot_json(sp) for sp in v.spots], v.composition_known, v.start_ms]

        rd = self.reader
        h = self.hold
        state = {
            "version": STATE_VERSION,
            "reader": [rd.shoe_id, rd.counted, rd.index, view(rd.round)],
            "stays": [[x.seat, x.player_id, x.player_kind, x.start, x.end]
                      for x in rd.seat_log.seatings],
            "hold": [h.rounds, h.hands, h.expected, h.actual, h.variance],
            "window": [view(v) for v in self.window],
            "done": view(self.done),
            "break": [sorted(self.brk.rounds), self.brk.shoe, self.brk.on],
            "fresh": self.fresh,
            "published": self.published,
        }
        state["rules"] = [rules_to_dict(x) for x in rules]
        return state

    @classmethod
    def load(cls, table_id: str, state: Any, out: list[Observation] | None = None
             ) -> TableObserver:
        """The observer `export` described; raises ValueError on one it cannot read."""
        o = cls(table_id, out)
        version = state.get("version") if isinstance(state, dict) else None
        if version not in (1, STATE_VERSION):  # 1: the same, without `published`
            raise ValueError(f"observer state version {version!r}, not {STATE_VERSION}")
        try:
            rules = [rules_from_dict(d) for d in state["rules"]]

            def view(v: list[Any] | None) -> RoundView | None:
                if v is None:
                    return None
                (round_id, index, dealer, game, ri, shoe, tc, seats, spots, known,
                 start) = v
                return RoundView(
                    table_id, str(round_id), int(index), str(dealer), str(game), rules[ri],
                    None if shoe is None else str(shoe), None if tc is None else float(tc),
                    {int(s): SeatRound(int(s), int(m), int(h)) for s, m, h in seats},
                    [_spot_load(sp) for sp in spots], bool(known),
                    None if start is None else int(start))

            shoe, counted, index, current = state["reader"]
            o.reader.shoe_id = None if shoe is None else str(shoe)
            o.reader.counted, o.reader.index = bool(counted), int(index)
            o.reader.round = view(current)
            o.reader.seat_log = seat_log(
                Seating(int(s), str(p), str(k), int(a), None if b is None else int(b))
                for s, p, k, a, b in state["stays"])
            rounds, hands, expected, actual, variance = state["hold"]
            o.hold.rounds, o.hold.hands = int(rounds), int(hands)
            o.hold.expected, o.hold.actual = float(expected), int(actual)
            o.hold.variance = float(variance)
            o.window = [w for w in (view(v) for v in state["window"]) if w is not None]
            o.free = o._free()
            o.done = view(state["done"])
            ids, bshoe, on = state["break"]
            o.brk = _Break({str(x) for x in ids}, None if bshoe is None else str(bshoe),
                           bool(on))
            o.fresh = int(state["fresh"])
            o.published = {str(k): [str(c) for c in v]
                           for k, v in state.get("published", {}).items()}
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ValueError(f"damaged observer state: {e!r}") from e
        return o


def _seat(session_id: str) -> int | None:
    """The seat a session id ("table/seat/first round") names."""
    parts = session_id.rsplit("/", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def _spot_json(sp: Spot) -> list[Any]:
    return [sp.seat, sp.hand, list(sp.ranks), sp.up, sp.hole, sp.decision, sp.can_double,
            sp.can_split, sp.can_surrender, list(sp.unseen), sp.wager]


def _spot_load(v: list[Any]) -> Spot:
    seat, hand, ranks, up, hole, decision, dbl, split, surrender, unseen, wager = v
    return Spot(int(seat), int(hand), tuple(str(x) for x in ranks), str(up),
                None if hole is None else str(hole), str(decision), bool(dbl), bool(split),
                bool(surrender), tuple(int(x) for x in unseen), int(wager))


class ObservedAuditor(TableAuditor):
    """A table's auditor with its game-protection observer watching its fold; the
    observer's state is part of the auditor's snapshot (key "observe"), and what it
    decides goes to `observations`."""

    def __init__(self, *args: Any, observations: list[Observation], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.observations = observations
        self.observer = TableObserver(self.table.table_id, observations)
        self.watch = self._watch
        #: the detectors' failures on this table (a bug: logged, the audit goes on)
        self.observer_errors = 0
        tell = self.on_violation

        def on_violation(v: Violation) -> None:
            self.observer.violation(v)
            tell(v)

        self.on_violation = on_violation

    def _watch(self, ev: Event, r: Round | None) -> None:
        """The observer's watch, kept from ever stopping the audit: a failure (a bug)
        is logged, and the table's observer starts afresh from the next event."""
        try:
            self.observer.watch(ev, r)
        except Exception:
            self._failed(f"event {ev.event_id}")

    def publish(self) -> None:
        """The table went quiet: its open observations as they stand."""
        try:
            self.observer.publish()
        except Exception:
            self._failed("a quiet table's publication")

    def _failed(self, where: str) -> None:
        self.observer_errors += 1
        log.exception("game-protection detectors failed on table %s at %s; its "
                      "observations start afresh from here (the audit goes on)",
                      self.table.table_id, where)
        published = self.observer.published  # still stored: a later one withdraws it
        self.observer = TableObserver(self.table.table_id, self.observations)
        self.observer.published = published

    def export_state(self) -> dict[str, Any]:
        return {**super().export_state(), "observe": self.observer.export()}

    def import_state(self, state: dict[str, Any]) -> None:
        super().import_state(state)
        table_id = self.table.table_id
        try:
            self.observer = TableObserver.load(table_id, state.get("observe"),
                                               self.observations)
        except ValueError:
            # a snapshot without it (or another version): judged from here on
            self.observer = TableObserver(table_id, self.observations)


@dataclass
class Observed(Found):
    """What one step of the audit found, with the observations it decided."""

    observations: list[Observation] = field(default_factory=list)

    def __bool__(self) -> bool:
        return Found.__bool__(self) or bool(self.observations)


class ObservedStates(TableStates):
    """The worker's table states, each auditor with its observer (`ObservedAuditor`):
    what a step found carries the observations decided (`Observed`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._observations: list[Observation] = []

    auditor_type = ObservedAuditor

    def _new_auditor(self, table_id: str, **extra: Any) -> TableAuditor:
        return super()._new_auditor(table_id, observations=self._observations, **extra)

    def _take(self) -> Observed:
        found = super()._take()
        obs = self._observations[:]
        self._observations.clear()
        return Observed(**{f.name: getattr(found, f.name) for f in fields(found)},
                        observations=obs)

    def expire_idle(self, caught_up: Callable[[str, int], bool], timeout_s: float
                    ) -> Found:
        """The processing-time rule, and each quiet table's open observations published
        as they stand (`TableObserver.publish`): the same tables the rule judges."""
        now = time.monotonic()
        for t in self.tables.values():
            if (isinstance(t.auditor, ObservedAuditor) and now - t.arrived > timeout_s
                    and caught_up(t.topic, t.partition)):
                t.auditor.publish()
        return super().expire_idle(caught_up, timeout_s)
