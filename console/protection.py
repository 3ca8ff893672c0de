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
chart shows the numbers the detectors judged. The events the record took in as refused
(the store's quarantine) are fed back at their place, as every rebuild does
(`Quarantine.feed`). Each page reads a bounded stretch: a seat session's rounds, a
dealer's latest `DEALER_ROUNDS` rounds, or, for a seat of a round when it is asked
(`round_seat`, never for the round page itself), the round's table back from the round
to where its seats' sessions began (`SEATED_ROUNDS` rounds at most). Each read is a short call
on the console's store thread (`ask`, a chunk of `CHUNK` events at most, with the
quarantined events of its devices around it) and the fold runs on another thread
(`cpu`), so the store's health probe is never held back.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from pitwatch.engine.auditor import TableAuditor
from pitwatch.engine.state import Round
from pitwatch.engine.violation import Violation
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.protect.hold import Z_THRESHOLD, HoldTally
from pitwatch.protect.observation import DEALER
from pitwatch.protect.rounds import BLACKJACK, RoundView, TableReader
from pitwatch.protect.run import suspend
from pitwatch.protect.sessions import GAP_ROUNDS, infer_sessions
from pitwatch.protect.stored import LIVE
from pitwatch.protect.touching import COLUMNS, observation_from_row, session_parts, stored, touches
from pitwatch.store import lookup
from pitwatch.store.base import Store
from pitwatch.store.history import SEQ_BLOCK, Quarantine, context_of, primers, seed
from pitwatch.store.rows import quarantined_event

from .data import NotFound, checked_id

#: a seat session's chart reads at most this many rounds of its table
SESSION_ROUNDS: Final = 2000
#: a dealer page's rounds, newest first, and its hold chart's rounds
DEALER_ROUNDS: Final = 400
#: a dealer's rounds at one table further apart than this many positions (about
#: 4,096 events) are read as separate stretches, each with its own context
RUN_GAP: Final = lookup.WINDOW
#: observations a page of the protection list
PAGE: Final = 50


def session_tables(session_id: str) -> tuple[str, ...]:
    """The table ids a seat session's id may start with: its id is
    `TABLE/SEAT/FIRST_ROUND`, and a table or round id may hold '/' itself, so every
    prefix before a '/' is a candidate (the store's sort key picks the one it holds)."""
    return tuple(sorted({session_id[:i] for i, c in enumerate(session_id) if c == "/"
                         and i > 0}))


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


#: events a call on the store thread reads, and the fold then takes on another thread
CHUNK: Final = 1000

Ask = Callable[..., Awaitable[Any]]


class TableFold:
    """One table's rounds as the detectors read them (`TableReader` watching the
    engine's fold), from the event at position `first`: the auditor is given the posted
    rules and each device's last event before the context (`seed`, `prime`), then fed
    the context's events quietly, then the rounds' events, whose completed rounds and
    findings it keeps; the quarantined events at their place (`Quarantine.feed`). No
    I/O: the events, and the quarantined ones around them, come from the store thread
    in chunks."""

    def __init__(self, table_id: str, rules: list[Event], primers: list[Event],
                 first: int) -> None:
        self.table_id = table_id
        self.first = first
        self.reader = TableReader(table_id)
        self.rounds: list[RoundView] = []
        self.violations: list[Violation] = []
        self.live = False
        self.auditor = TableAuditor(table_id, select, self._violation, lambda s: None,
                                    released=released_writers())
        self.auditor.watch = self._watch
        self.held = Quarantine.of(())
        seed(self.auditor, rules)
        for ev in primers:
            self.auditor.prime(ev)
            self.held.saw(ev)

    def _violation(self, v: Violation) -> None:
        if self.live:
            self.violations.append(v)

    def _watch(self, ev: Event, r: Round | None) -> None:
        done = self.reader.watch(ev, r)
        if done is not None and self.live:
            self.rounds.append(done)

    def feed(self, chunk: list[tuple[int, Event]], refused: Iterable[Event] = ()) -> None:
        """The chunk's events, each with the quarantined events due before and after
        it; `refused`: the quarantine read around the chunk (`refused_near`)."""
        for device, seqs in Quarantine.of(refused).held.items():
            mine = self.held.held.setdefault(device, seqs)
            if mine is not seqs:
                for evs in seqs.values():
                    for q in evs:
                        mine.add(q)
        for pos, ev in chunk:
            self.live = pos >= self.first
            self.held.feed(self.auditor, ev)

    def kept(self) -> list[RoundView]:
        """The rounds, a break in the record suspending judgement as the detectors do."""
        return suspend({self.table_id: self.rounds}, self.violations)[self.table_id]


def fold_begin(store: Store, table_id: str, first: int
               ) -> tuple[list[Event], list[Event], int]:
    """(posted rules read ahead, each device's last event before the context, the
    context's first position) for the event at `first` (`pitwatch.store.history`)."""
    ctx = context_of(store, table_id, first)
    return ([st.event for st in ctx.rules], [st.event for st in primers(
        store, table_id, ctx.begin)], ctx.begin)


def take(events: Iterator[tuple[int, Event]], n: int) -> list[tuple[int, Event]]:
    """Up to `n` more events of a stream being read (on the store thread)."""
    return list(itertools.islice(events, n))


def refused_near(store: Store, table_id: str, chunk: list[tuple[int, Event]],
                 since: dict[str, int]) -> list[Event]:
    """The quarantined events a fold of `chunk` may feed back (on the store thread):
    of each device in it, those from its last event read before (`since`, updated;
    else `SEQ_BLOCK` seqs before its first in the chunk) to `SEQ_BLOCK` seqs after
    its last, where a run the record took in after it may go on."""
    span: dict[str, tuple[int, int]] = {}
    for _, ev in chunk:
        lo, hi = span.get(ev.device_id, (ev.seq, ev.seq))
        span[ev.device_id] = (min(lo, ev.seq), max(hi, ev.seq))
    out: list[Event] = []
    for device, (lo, hi) in sorted(span.items()):
        out += [quarantined_event(r) for r in store.query(
            "SELECT DISTINCT table_id, device_id, seq, event_id, writer, raw, reason "
            "FROM refused_events WHERE table_id = {t:String} AND device_id = {d:String} "
            "AND seq >= {a:UInt64} AND seq < {b:UInt64} ORDER BY seq, event_id",
            {"t": table_id, "d": device, "a": since.get(device, max(0, lo - SEQ_BLOCK)),
             "b": hi + SEQ_BLOCK})]
        since[device] = hi
    return out


def read_chunk(store: Store, table_id: str, events: Iterator[tuple[int, Event]], n: int,
               since: dict[str, int]) -> tuple[list[Event], list[tuple[int, Event]]]:
    """Up to `n` more events of a stream being read, and the quarantine around them
    (`refused_near`), on the store thread."""
    chunk = take(events, n)
    return (refused_near(store, table_id, chunk, since) if chunk else []), chunk


async def fold_rounds(ask: Ask, cpu: Ask, store: Store, table_id: str, first: int,
                      last: int | None, enough: Callable[[TableFold], bool] | None = None
                      ) -> TableFold:
    """The table's rounds from position `first` to `last` (None: until `enough` says
    so, or the table's end): every read a short call on the store thread (`ask`), the
    fold on another (`cpu`), so no page holds the store thread for long."""
    rules, before, begin = await ask(fold_begin, store, table_id, first)
    fold: TableFold = await cpu(TableFold, table_id, rules, before, first)
    events = lookup.stream(store, table_id, begin, last)
    since = {ev.device_id: ev.seq for ev in before}
    while True:
        refused, chunk = await ask(read_chunk, store, table_id, events, CHUNK, since)
        if not chunk:
            break
        await cpu(fold.feed, chunk, refused)
        if enough is not None and enough(fold):
            break
    return fold


class SessionEnd:
    """When a seat session's rounds are all read: `n` wagered rounds at the seat (the
    observation's count), else more than GAP_ROUNDS rounds without a wager after one,
    or SESSION_ROUNDS rounds."""

    def __init__(self, seat: int, n: int | None) -> None:
        self.seat, self.n = seat, n
        self.seen = self.wagered = 0
        self.last = -1

    def __call__(self, fold: TableFold) -> bool:
        for i in range(self.seen, len(fold.rounds)):
            sr = fold.rounds[i].seats.get(self.seat)
            if sr is not None and sr.main > 0:
                self.wagered, self.last = self.wagered + 1, i
        self.seen = len(fold.rounds)
        if self.seen >= SESSION_ROUNDS:
            return True
        if self.n is not None:
            return self.wagered >= self.n
        return self.last >= 0 and self.seen - 1 - self.last > GAP_ROUNDS


class ProtectionData:
    """The protection pages' reads; every call runs on the console's store thread."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # --- observations ---------------------------------------------------------------

    def protection_list(self, offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
        """Observations by strength, strongest first; of the same strength, newest
        first (by the latest round that carries the weight, then the subject); withdrawn
        ones left out."""
        total = int(self.store.query(
            "SELECT count() AS n FROM (SELECT observation_id FROM observations FINAL "
            f"WHERE {LIVE})")[0]["n"])
        rows = self.store.query(
            f"SELECT {COLUMNS} FROM observations FINAL WHERE {LIVE} "
            "ORDER BY round(strength, 3) DESC, "
            "if(length(weight_rounds) = 0, '', weight_rounds[length(weight_rounds)]) DESC, "
            "subject DESC, observation_id LIMIT {n:UInt32} OFFSET {o:UInt32}",
            {"n": limit, "o": offset})
        return {"observations": [observation_from_row(r) for r in rows], "total": total,
                "offset": offset, "limit": limit}

    def table_observations(self, table_id: str) -> list[dict[str, Any]]:
        """The observations about a table and its seat sessions, strongest first."""
        found = stored(self.store, [checked_id(table_id, "table id")])
        return sorted(found, key=lambda o: -o["strength"])

    def dealer_observations(self, dealer_ids: Iterable[str]) -> list[dict[str, Any]]:
        """The observations about dealers (stored under table '' and the dealer)."""
        return stored(self.store, (), dealer_ids)

    def round_observations(self, table_id: str, round_id: str, dealer_id: str
                           ) -> list[dict[str, Any]]:
        """The observations that touch a round (`pitwatch.protect.touching`)."""
        found = stored(self.store, [checked_id(table_id, "table id")],
                       [dealer_id] if dealer_id else [])
        return [o for o in found if touches(o, table_id, round_id, dealer_id)]

    # --- a seat session (the store thread's parts) ----------------------------------

    def session_start(self, session_id: str) -> dict[str, Any]:
        """Where a seat session starts: its table, seat, first round's position, and its
        observations (whose round count says how many wagered rounds it has)."""
        sid = checked_id(session_id, "seat session id")
        cands = session_tables(sid)
        obs = [observation_from_row(r) for r in self.store.query(
            f"SELECT {COLUMNS} FROM observations FINAL WHERE table_id IN "
            f"{{t:Array(String)}} AND subject = {{s:String}} AND {LIVE} ORDER BY code",
            {"t": cands, "s": sid})] if cands else []
        for table_id in [obs[0]["table_id"]] if obs else list(cands):
            parts = session_parts(sid, table_id)
            if parts is None:
                continue
            span = lookup.round_spans(self.store, [parts[1]]).get(parts[1])
            if span is None or span.table_id != table_id:
                continue
            return {"session_id": sid, "table_id": table_id, "seat": parts[0],
                    "first": span.first, "n": obs[0]["rounds"] if obs else None,
                    "observations": obs}
        raise NotFound(f"no seat session {sid} in the store (a session's id is "
                       "TABLE/SEAT/FIRST_ROUND, as the protection list links it)")

    def round_times(self, table_id: str, round_ids: list[str]
                    ) -> dict[str, tuple[int, int]]:
        """Each round's start and end (device time, UTC ms) from its summary."""
        if not round_ids:
            return {}
        return {r["round_id"]: (int(r["a"]), int(r["z"])) for r in self.store.query(
            "SELECT round_id, toUInt64(started) * 1000 + started_ms AS a, "
            "toUInt64(ended) * 1000 + ended_ms AS z FROM rounds FINAL "
            "WHERE table_id = {t:String} AND round_id IN {r:Array(String)}",
            {"t": table_id, "r": tuple(sorted(set(round_ids)))})}

    # --- a dealer (the store thread's parts) ----------------------------------------

    def dealer_start(self, dealer_id: str) -> dict[str, Any]:
        """A dealer's tables, latest rounds with their summaries, and the stretches of
        positions (table, first, last) their rounds lie in, nearby rounds together."""
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
        rounds = [{**r, "at": int(r["at"]),
                   **summaries.get((r["table_id"], r["round_id"]), {})} for r in newest]
        spans = lookup.round_spans(self.store, [r["round_id"] for r in newest])
        by_table: dict[str, list[lookup.Span]] = {}
        for r in newest:
            s = spans.get(r["round_id"])
            if s is not None and s.table_id == r["table_id"]:
                by_table.setdefault(s.table_id, []).append(s)
        runs: list[tuple[str, int, int]] = []
        for table_id, found in sorted(by_table.items()):
            found.sort(key=lambda s: s.first)
            here: list[list[int]] = []
            for s in found:
                if here and s.first - here[-1][1] <= RUN_GAP:
                    here[-1][1] = max(here[-1][1], s.last)
                else:
                    here.append([s.first, s.last])
            runs += [(table_id, a, z) for a, z in here]
        return {"dealer_id": d,
                "tables": [{**t, "rounds": int(t["rounds"]), "first_ms": int(t["first_ms"]),
                            "last_ms": int(t["last_ms"])} for t in tables],
                "rounds": rounds, "runs": runs,
                "observations": self.dealer_observations([d]), "limit": DEALER_ROUNDS}

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


async def seat_session(ask: Ask, cpu: Ask, data: ProtectionData, session_id: str
                       ) -> dict[str, Any]:
    """A seat session: its observations, who sat there, when, and its bets against the
    true count, read again from its table's events through the detectors' own fold."""
    start = await ask(data.session_start, session_id)
    sid, table_id, seat = start["session_id"], start["table_id"], start["seat"]
    fold = await fold_rounds(ask, cpu, data.store, table_id, start["first"], None,
                             SessionEnd(seat, start["n"]))
    rounds = await cpu(fold.kept)
    found = [x for x in infer_sessions(rounds, seatings=fold.reader.seat_log.seatings)
             if x.session_id == sid]
    if found:
        mine = list(found[0].rounds)
        player = (found[0].player_id, found[0].player_kind)
    else:  # the seat's wagered rounds from its first
        mine = [r for r in rounds if (sr := r.seats.get(seat)) is not None
                and sr.main > 0][:start["n"] or SESSION_ROUNDS]
        player = (None, None)
    obs = start["observations"]
    if obs and obs[0]["player_id"]:
        player = (obs[0]["player_id"], obs[0]["player_kind"])
    times = await ask(data.round_times, table_id, [r.round_id for r in mine[:1] + mine[-1:]])
    return {
        "session_id": sid, "table_id": table_id, "seat": seat,
        "player_id": player[0], "player_kind": player[1],
        "inferred": obs[0]["inferred"] if obs else player[0] is None,
        "rounds": [r.round_id for r in mine],
        "points": [BetPoint(r.round_id, r.true_count, r.seats[seat].main)
                   for r in mine if r.true_count is not None],
        "started_at": times.get(mine[0].round_id, (None, None))[0] if mine else None,
        "ended_at": times.get(mine[-1].round_id, (None, None))[1] if mine else None,
        "dealers": sorted({r.dealer_id for r in mine}),
        "observations": obs,
    }


@dataclass(frozen=True, slots=True)
class Seated:
    """A seat session seated in a round: the seat, the session's id (None when it began
    before the rounds read back, `SEATED_ROUNDS`, so its id is not known), whether it
    is inferred from the wagers, and the player the seat events name."""

    seat: int
    session_id: str | None
    inferred: bool
    player_id: str | None = None
    player_kind: str | None = None


#: positions read back before a round, first, for where its seats' sessions began
#: (about 1,000 events), then four times as many each time
SEATED_BACK: Final = lookup.WINDOW // 4
#: a round's seat sessions are looked for this many rounds back at most
SEATED_ROUNDS: Final = SESSION_ROUNDS


def round_place(store: Store, table_id: str, round_id: str) -> tuple[int, int, int] | None:
    """(the table's first position, the round's first and last) through `round_index`;
    None for a round the table does not hold."""
    span = lookup.round_spans(store, [round_id]).get(round_id)
    extent = lookup.table_extent(store, table_id)
    if span is None or span.table_id != table_id or extent is None:
        return None
    return extent[0], span.first, span.last


def runs_began(store: Store, table_id: str, round_id: str) -> int | None:
    """Where to read back from for the round's seats' sessions, from the round
    summaries alone (a hint: `seated_in` judges): the first position of the round
    GAP_ROUNDS + 1 rounds before where the runs of rounds naming each of the round's
    seats (RoundStarted's seats) began, walking back through `round_starts` (table,
    start) in widening windows of time and `rounds` by its sort key. The round
    SEATED_ROUNDS rounds back when they go back further; 0 when they go back to the
    table's first round; None when the round has no summary or no seat."""
    me = store.query("SELECT seats, toUInt32(started) AS s, started_ms AS ms FROM rounds "
                     "FINAL WHERE table_id = {t:String} AND round_id = {r:String}",
                     {"t": table_id, "r": round_id})
    low = store.query("SELECT toUInt32(min(started)) AS s, count() AS n FROM round_starts "
                      "WHERE table_id = {t:String}", {"t": table_id})
    if not me or not int(low[0]["n"]):
        return None
    at, floor = (int(me[0]["s"]), int(me[0]["ms"]), round_id), int(low[0]["s"])
    missing = {int(x): 0 for x in me[0]["seats"]}
    hi, width, seen = at[0], lookup.ROUND_WINDOW, 0
    while missing and seen < SEATED_ROUNDS and hi >= floor:
        lo = max(floor, hi - width)
        starts = [r for r in store.query(
            "SELECT DISTINCT round_id, toUInt32(started) AS s, started_ms AS ms FROM "
            "round_starts WHERE table_id = {t:String} AND started >= toDateTime({a:UInt32}) "
            "AND started <= toDateTime({b:UInt32})", {"t": table_id, "a": lo, "b": hi})
            if (int(r["s"]), int(r["ms"]), r["round_id"]) < at]
        starts.sort(key=lambda r: (int(r["s"]), int(r["ms"]), r["round_id"]), reverse=True)
        seats = {r["round_id"]: {int(x) for x in r["seats"]} for r in store.query(
            "SELECT round_id, seats FROM rounds FINAL WHERE table_id = {t:String} AND "
            "round_id IN {r:Array(String)}",
            {"t": table_id, "r": tuple(sorted({r["round_id"] for r in starts}))})
        } if starts else {}
        for r in starts:
            seen += 1
            here = seats.get(r["round_id"], set())
            for seat in list(missing):
                missing[seat] = 0 if seat in here else missing[seat] + 1
                if missing[seat] > GAP_ROUNDS:
                    del missing[seat]
            if not missing or seen >= SEATED_ROUNDS:
                span = lookup.round_spans(store, [r["round_id"]]).get(r["round_id"])
                return span.first if span is not None and span.table_id == table_id else None
        if starts:
            last = starts[-1]
            at = (int(last["s"]), int(last["ms"]), last["round_id"])
        hi, width = lo - 1, width * 2
    return 0 if missing else None  # every round read back to the table's first


class BeganEarlier(Exception):
    """A seat session seated in the round may have begun before the rounds read."""


def seated_in(fold: TableFold, round_id: str, from_start: bool, last_try: bool
              ) -> list[Seated] | None:
    """The seat sessions seated in the round, from a fold that ends with it, as the
    detectors and the session page read them (`infer_sessions`): each session whose
    wagered rounds hold the round, or whose recorded stay does. `from_start`: the fold
    read from the table's first event. None when the detectors do not read the round
    (open, or a break in its record: judgement suspended). BeganEarlier when one of
    them may have begun before the fold's first round, unless it is the `last_try`
    (then such a one is given without its id)."""
    rounds = fold.kept()
    at = next((r for r in rounds if r.round_id == round_id), None)
    if at is None or not fold.rounds:
        return None
    first = fold.rounds[0].index
    seatings = fold.reader.seat_log.seatings
    out: list[Seated] = []
    for s in infer_sessions(rounds, seatings=seatings):
        begin = s.rounds[0].index
        stay = next((x for x in seatings if not s.inferred and x.seat == s.seat
                     and x.holds(begin)), None)
        if not any(r.round_id == round_id for r in s.rounds) and not (
                stay is not None and stay.holds(at.index)):
            continue
        # an inferred run read from its start has GAP_ROUNDS rounds read before it; a
        # recorded one, its player seated within the rounds read
        known = from_start or (begin - first >= GAP_ROUNDS if stay is None
                               else stay.start >= first)
        if not known and not last_try:
            raise BeganEarlier(s.session_id)
        out.append(Seated(s.seat, s.session_id if known else None, s.inferred,
                          s.player_id, s.player_kind))
    return out


async def round_seated(ask: Ask, cpu: Ask, data: ProtectionData, table_id: str,
                       round_id: str) -> list[Seated] | None:
    """The seat sessions seated in a round (`seated_in`; None when the detectors do not
    read the round, or the table does not hold it): the table's rounds read again up to
    the round from a stretch before it (from where the summaries say the seats' runs
    began, `runs_began`, where they say), four times wider each time a session may have
    begun before it, until the table's first event or `SEATED_ROUNDS` rounds."""
    place = await ask(round_place, data.store, checked_id(table_id, "table id"),
                      checked_id(round_id, "round id"))
    if place is None:
        return None
    top, first, last = place
    hint = await ask(runs_began, data.store, table_id, round_id)
    width = SEATED_BACK if hint is None else max(SEATED_BACK, first - hint)
    while True:
        start = max(top, first - width)
        fold = await fold_rounds(ask, cpu, data.store, table_id, start, last)
        try:
            found: list[Seated] | None = await cpu(
                seated_in, fold, round_id, start == top, len(fold.rounds) >= SEATED_ROUNDS)
        except BeganEarlier:
            width *= 4
            continue
        return None if found is None else sorted(found, key=lambda x: (x.seat,
                                                                        x.session_id or ""))


@dataclass(frozen=True, slots=True)
class SeatSessions:
    """The seat sessions at one seat of a round (`round_seat`); `sessions` None when
    the detectors do not read the round (open, or a break in its record)."""

    table_id: str
    round_id: str
    seat: int
    sessions: list[Seated] | None


def round_table(store: Store, round_id: str) -> str | None:
    """The table whose events carry the round (`round_index`); None for none."""
    span = lookup.round_spans(store, [round_id]).get(round_id)
    return None if span is None else span.table_id


async def round_seat(ask: Ask, cpu: Ask, data: ProtectionData, round_id: str, seat: int
                     ) -> SeatSessions:
    """The seat sessions at a seat of a round (`round_seated`, its fold), read only when
    asked: the round page links each of its seats here and reads no fold itself.
    NotFound for a round the store does not hold."""
    rid = checked_id(round_id, "round id")
    table_id = await ask(round_table, data.store, rid)
    if table_id is None:
        raise NotFound(f"no round {rid} in the store")
    found = await round_seated(ask, cpu, data, table_id, rid)
    return SeatSessions(table_id, rid, seat, None if found is None
                        else [x for x in found if x.seat == seat])


async def dealer_view(ask: Ask, cpu: Ask, data: ProtectionData, dealer_id: str
                      ) -> dict[str, Any]:
    """A dealer's latest rounds and every table they dealt at, their observations, and
    the hold of those rounds against theoretical, cumulative in time, each stretch of
    their rounds read again with its table context."""
    d = await ask(data.dealer_start, dealer_id)
    views: dict[tuple[str, str], RoundView] = {}
    for table_id, first, last in d.pop("runs"):
        fold = await fold_rounds(ask, cpu, data.store, table_id, first, last)
        for view in await cpu(fold.kept):
            if view.dealer_id == d["dealer_id"]:
                views[(table_id, view.round_id)] = view
    timed = sorted(((r["at"], views[(r["table_id"], r["round_id"])]) for r in d["rounds"]
                    if (r["table_id"], r["round_id"]) in views),
                   key=lambda x: (x[0], x[1].table_id, x[1].round_id))
    return {**d, "hold": hold_points(timed, d["dealer_id"])}
