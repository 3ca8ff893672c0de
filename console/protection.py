"""What the console reads for game protection (docs/analytics.md): the observations the
detectors stored (`observations`, schemas/clickhouse/015_observations.sql), a seat
session's bets against the true count, and a dealer's rounds, tables and hold against
theoretical.

Every read goes through a sort key or an index table, never a scan of `events`:
observations by (table, subject); a dealer's rounds by `dealer_rounds` (dealer first);
a round's table and span by `round_index`; the rounds a chart needs are read again
from the table's events in order of record (`pitwatch.store.history`: the table
context from the shoe's start, then the stretch of positions the rounds span) and read
by the same fold the detectors read (`pitwatch.protect.rounds.TableReader`), so the
chart shows the numbers the detectors judged. Each page reads a bounded stretch: a seat
session's rounds, or a dealer's latest `DEALER_ROUNDS` rounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from pitwatch.engine.auditor import TableAuditor
from pitwatch.engine.state import Round
from pitwatch.engine.violation import Violation
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.protect.hold import Z_THRESHOLD, HoldTally
from pitwatch.protect.observation import DEALER, SEAT_SESSION, TABLE
from pitwatch.protect.rounds import BLACKJACK, RoundView, TableReader
from pitwatch.protect.run import suspend
from pitwatch.protect.sessions import GAP_ROUNDS, infer_sessions
from pitwatch.store import lookup
from pitwatch.store.base import Store
from pitwatch.store.history import bring_up_to

from .data import NotFound, checked_id

#: the columns of an observation the pages show
OBS_COLUMNS: Final = (
    "observation_id, code, scope, table_id, subject, seat, dealer_id, statistic, value, "
    "p_value, likelihood_ratio, strength, rounds, weight_rounds, inferred, player_id, "
    "player_kind, message, details")
#: a seat session's chart reads at most this many rounds of its table
SESSION_ROUNDS: Final = 2000
#: a dealer page's rounds, newest first, and its hold chart's rounds
DEALER_ROUNDS: Final = 400
#: a dealer's rounds at one table further apart than this many positions (about
#: 4,096 events) are read as separate stretches, each with its own context
RUN_GAP: Final = lookup.WINDOW
#: observations a page of the protection list
PAGE: Final = 50


def _observation(r: dict[str, Any]) -> dict[str, Any]:
    """A stored row as the pages use it: nan figures None, details a dict."""
    out = dict(r)
    for k in ("p_value", "likelihood_ratio", "value", "strength"):
        v = out[k]
        out[k] = None if v is None or math.isnan(float(v)) else float(v)
    out["seat"] = int(out["seat"]) or None
    out["rounds"] = int(out["rounds"])
    out["inferred"] = bool(int(out["inferred"]))
    out["weight_rounds"] = list(out["weight_rounds"])
    try:
        details = orjson.loads(out["details"] or "{}")
    except orjson.JSONDecodeError:
        details = {}
    out["details"] = details if isinstance(details, dict) else {}
    return out


def session_tables(session_id: str) -> tuple[str, ...]:
    """The table ids a seat session's id may start with: its id is
    `TABLE/SEAT/FIRST_ROUND`, and a table or round id may hold '/' itself, so every
    prefix before a '/' is a candidate (the store's sort key picks the one it holds)."""
    return tuple(sorted({session_id[:i] for i, c in enumerate(session_id) if c == "/"
                         and i > 0}))


def split_session(session_id: str, table_id: str) -> tuple[int, str] | None:
    """(seat, first round) of a seat session's id at `table_id`, or None."""
    rest = session_id[len(table_id) + 1:] if session_id.startswith(table_id + "/") else ""
    seat, _, first = rest.partition("/")
    if not seat.isdigit() or not first or int(seat) > 255:
        return None
    return int(seat), first


@dataclass(frozen=True, slots=True)
class BetPoint:
    """One round of a seat session: the true count before it and the seat's bet."""

    round_id: str
    true_count: float
    bet: int  # cents


@dataclass(frozen=True, slots=True)
class HoldPoint:
    """After a round: the cumulative house result and its expectation (cents), and the
    band's half-width (Z_THRESHOLD standard deviations, cents)."""

    at_ms: int
    round_id: str
    table_id: str
    actual: int
    expected: float
    half_band: float

    @property
    def low(self) -> float:
        return self.expected - self.half_band

    @property
    def high(self) -> float:
        return self.expected + self.half_band


def hold_points(rounds: Iterable[tuple[int, RoundView]], subject: str) -> list[HoldPoint]:
    """The cumulative hold of rounds in time order (start ms, round), as the hold
    detector tallies it (`HoldTally`): only blackjack rounds with a main wager count."""
    tally = HoldTally(DEALER, subject, "")
    out = []
    for at, r in rounds:
        if r.game != BLACKJACK:
            continue
        before = tally.rounds
        tally.add(r)
        if tally.rounds == before:
            continue
        out.append(HoldPoint(at, r.round_id, r.table_id, tally.actual, tally.expected,
                             Z_THRESHOLD * math.sqrt(tally.variance)))
    return out


@dataclass(slots=True)
class _Reading:
    """One table's fold from the store: its completed rounds, as the detectors read
    them, and the findings of the stretch read (for `suspend`)."""

    table_id: str
    reader: TableReader
    rounds: list[RoundView] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    def watch(self, ev: Event, r: Round | None) -> None:
        done = self.reader.watch(ev, r)
        if done is not None:
            self.rounds.append(done)


def _fold(store: Store, table_id: str, first: int, last: int | None,
          enough: Any = None) -> _Reading:
    """The table's rounds from the event at position `first` (with the table context
    it had) to `last` (None: until `enough(rounds)` says so, or the table's end)."""
    reading = _Reading(table_id, TableReader(table_id))
    auditor = TableAuditor(table_id, select, lambda v: None, lambda s: None,
                           released=released_writers())
    auditor.watch = reading.watch
    bring_up_to(store, auditor, table_id, first)
    auditor.on_violation = reading.violations.append
    for _, ev in lookup.stream(store, table_id, first, last):
        auditor.feed(ev)
        if enough is not None and enough(reading.rounds):
            break
    return reading


class ProtectionData:
    """The protection pages' reads; every call runs on the console's store thread."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # --- observations ---------------------------------------------------------------

    def protection_list(self, offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
        """Observations by strength, strongest first; of the same strength, newest
        first (by the latest round that carries the weight, then the subject)."""
        total = int(self.store.query(
            "SELECT count() AS n FROM (SELECT observation_id FROM observations FINAL)")[0]["n"])
        rows = self.store.query(
            f"SELECT {OBS_COLUMNS} FROM observations FINAL "
            "ORDER BY round(strength, 3) DESC, "
            "if(length(weight_rounds) = 0, '', weight_rounds[length(weight_rounds)]) DESC, "
            "subject DESC, observation_id LIMIT {n:UInt32} OFFSET {o:UInt32}",
            {"n": limit, "o": offset})
        return {"observations": [_observation(r) for r in rows], "total": total,
                "offset": offset, "limit": limit}

    def table_observations(self, table_id: str) -> list[dict[str, Any]]:
        """The observations about a table and its seat sessions (the sort key's
        table)."""
        t = checked_id(table_id, "table id")
        return [_observation(r) for r in self.store.query(
            f"SELECT {OBS_COLUMNS} FROM observations FINAL WHERE table_id = {{t:String}} "
            "ORDER BY strength DESC, subject, code", {"t": t})]

    def dealer_observations(self, dealer_ids: Iterable[str]) -> list[dict[str, Any]]:
        """The observations about dealers (stored under table '' and the dealer)."""
        ids = tuple(sorted(set(dealer_ids)))
        if not ids:
            return []
        return [_observation(r) for r in self.store.query(
            f"SELECT {OBS_COLUMNS} FROM observations FINAL WHERE table_id = '' "
            "AND subject IN {d:Array(String)} ORDER BY subject, code", {"d": ids})]

    def round_observations(self, table_id: str, round_id: str, dealer_id: str
                           ) -> list[dict[str, Any]]:
        """The observations that touch a round (`touches`)."""
        found = self.table_observations(table_id) + self.dealer_observations(
            [dealer_id] if dealer_id else [])
        return [o for o in found if touches(o, table_id, round_id, dealer_id)]

    # --- a seat session -------------------------------------------------------------

    def seat_session(self, session_id: str) -> dict[str, Any]:
        """A seat session: its observations, who sat there, when, and its bets against
        the true count (read again from its table's events)."""
        sid = checked_id(session_id, "seat session id")
        cands = session_tables(sid)
        obs = [_observation(r) for r in self.store.query(
            f"SELECT {OBS_COLUMNS} FROM observations FINAL WHERE table_id IN "
            "{t:Array(String)} AND subject = {s:String} ORDER BY code",
            {"t": cands, "s": sid})] if cands else []
        tables = [obs[0]["table_id"]] if obs else list(cands)
        for table_id in tables:
            parts = split_session(sid, table_id)
            if parts is None:
                continue
            span = lookup.round_spans(self.store, [parts[1]]).get(parts[1])
            if span is None or span.table_id != table_id:
                continue
            return self._session(sid, table_id, parts[0], span.first,
                                 obs[0]["rounds"] if obs else None, obs)
        raise NotFound(f"no seat session {sid} in the store (a session's id is "
                       "TABLE/SEAT/FIRST_ROUND, as the protection list links it)")

    def _session(self, sid: str, table_id: str, seat: int, first: int, n: int | None,
                 obs: list[dict[str, Any]]) -> dict[str, Any]:
        def enough(rounds: list[RoundView]) -> bool:
            wagered = [i for i, r in enumerate(rounds) if (sr := r.seats.get(seat))
                       is not None and sr.main > 0]
            if len(rounds) >= SESSION_ROUNDS:
                return True
            if n is not None:
                return len(wagered) >= n
            return bool(wagered) and len(rounds) - 1 - wagered[-1] > GAP_ROUNDS

        reading = _fold(self.store, table_id, first, None, enough)
        rounds = suspend({table_id: reading.rounds}, reading.violations)[table_id]
        sessions = [s for s in infer_sessions(rounds, seatings=reading.reader.seat_log.seatings)
                    if s.session_id == sid]
        if sessions:
            session = sessions[0]
            mine = list(session.rounds)
            player = (session.player_id, session.player_kind)
        else:  # the seat's wagered rounds from its first (the store's rounds differ)
            mine = [r for r in rounds if (sr := r.seats.get(seat)) is not None
                    and sr.main > 0][:n or SESSION_ROUNDS]
            player = (None, None)
        if obs and obs[0]["player_id"]:
            player = (obs[0]["player_id"], obs[0]["player_kind"])
        points = [BetPoint(r.round_id, r.true_count, r.seats[seat].main)
                  for r in mine if r.true_count is not None]
        times = self._round_times(table_id, [r.round_id for r in mine[:1] + mine[-1:]])
        return {
            "session_id": sid, "table_id": table_id, "seat": seat,
            "player_id": player[0], "player_kind": player[1],
            "inferred": obs[0]["inferred"] if obs else player[0] is None,
            "rounds": [r.round_id for r in mine], "points": points,
            "started_at": times.get(mine[0].round_id, (None, None))[0] if mine else None,
            "ended_at": times.get(mine[-1].round_id, (None, None))[1] if mine else None,
            "dealers": sorted({r.dealer_id for r in mine}),
            "observations": obs,
        }

    def _round_times(self, table_id: str, round_ids: list[str]
                     ) -> dict[str, tuple[int, int]]:
        if not round_ids:
            return {}
        return {r["round_id"]: (int(r["a"]), int(r["z"])) for r in self.store.query(
            "SELECT round_id, toUInt64(started) * 1000 + started_ms AS a, "
            "toUInt64(ended) * 1000 + ended_ms AS z FROM rounds FINAL "
            "WHERE table_id = {t:String} AND round_id IN {r:Array(String)}",
            {"t": table_id, "r": tuple(sorted(set(round_ids)))})}

    # --- a dealer -------------------------------------------------------------------

    def dealer_view(self, dealer_id: str) -> dict[str, Any]:
        """A dealer's latest rounds and every table they dealt at, their observations,
        and the hold of those rounds against theoretical, cumulative in time."""
        d = checked_id(dealer_id, "dealer id")
        tables = self.store.query(
            "SELECT table_id, count() AS rounds, "
            "toUInt64(min(started)) * 1000 AS first_ms, "
            "toUInt64(max(started)) * 1000 AS last_ms FROM dealer_rounds FINAL "
            "WHERE dealer_id = {d:String} GROUP BY table_id ORDER BY table_id", {"d": d})
        if not tables:
            raise NotFound(f"no dealer {d} in the store")
        newest = self.store.query(
            "SELECT table_id, round_id, toUInt64(started) * 1000 + started_ms AS at "
            "FROM dealer_rounds FINAL WHERE dealer_id = {d:String} "
            "ORDER BY started DESC, started_ms DESC, table_id, round_id LIMIT {n:UInt32}",
            {"d": d, "n": DEALER_ROUNDS})
        summaries = self._summaries([(r["table_id"], r["round_id"]) for r in newest])
        rounds = [{**r, "at": int(r["at"]), **summaries.get((r["table_id"], r["round_id"]), {})}
                  for r in newest]
        views = self._dealer_rounds(d, newest)
        points = hold_points(sorted(((int(r["at"]), views[(r["table_id"], r["round_id"])])
                                     for r in newest if (r["table_id"], r["round_id"]) in views),
                                    key=lambda x: (x[0], x[1].table_id, x[1].round_id)), d)
        return {"dealer_id": d, "tables": [{**t, "rounds": int(t["rounds"]),
                                            "first_ms": int(t["first_ms"]),
                                            "last_ms": int(t["last_ms"])} for t in tables],
                "rounds": rounds, "observations": self.dealer_observations([d]),
                "hold": points, "limit": DEALER_ROUNDS}

    def _summaries(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        by_table: dict[str, list[str]] = {}
        for t, r in pairs:
            by_table.setdefault(t, []).append(r)
        for t, ids in sorted(by_table.items()):
            for row in self.store.query(
                    "SELECT round_id, wagered, paid, collected, violations, complete "
                    "FROM rounds FINAL WHERE table_id = {t:String} AND round_id IN "
                    "{r:Array(String)}", {"t": t, "r": tuple(sorted(set(ids)))}):
                out[(t, row["round_id"])] = {k: int(row[k]) for k in (
                    "wagered", "paid", "collected", "violations", "complete")}
        return out

    def _dealer_rounds(self, dealer_id: str, newest: list[dict[str, Any]]
                       ) -> dict[tuple[str, str], RoundView]:
        """The dealer's rounds as the detectors read them, table by table, each run of
        nearby rounds read once with its table context."""
        spans = lookup.round_spans(self.store, [r["round_id"] for r in newest])
        by_table: dict[str, list[lookup.Span]] = {}
        for r in newest:
            s = spans.get(r["round_id"])
            if s is not None and s.table_id == r["table_id"]:
                by_table.setdefault(s.table_id, []).append(s)
        out: dict[tuple[str, str], RoundView] = {}
        for table_id, found in sorted(by_table.items()):
            found.sort(key=lambda s: s.first)
            runs: list[list[lookup.Span]] = []
            for s in found:
                if runs and s.first - runs[-1][-1].last <= RUN_GAP:
                    runs[-1].append(s)
                else:
                    runs.append([s])
            for run in runs:
                reading = _fold(self.store, table_id, run[0].first, max(s.last for s in run))
                kept = suspend({table_id: reading.rounds}, reading.violations)[table_id]
                for view in kept:
                    if view.dealer_id == dealer_id:
                        out[(table_id, view.round_id)] = view
        return out


def touches(o: dict[str, Any], table_id: str, round_id: str, dealer_id: str) -> bool:
    """Whether an observation touches a round: it names the round among the rounds that
    carry its weight, or it is about the round's table (hold), the round's dealer, or a
    seat session at the table that began with the round."""
    if round_id in o["weight_rounds"]:
        return True
    if o["scope"] == TABLE:
        return bool(o["table_id"] == table_id)
    if o["scope"] == DEALER:
        return bool(o["subject"] == dealer_id)
    return (o["scope"] == SEAT_SESSION and o["table_id"] == table_id
            and split_session(o["subject"], table_id) is not None
            and o["subject"].endswith("/" + round_id))
