"""The worker's game-protection detectors (processors/observe.py): each table's observer
watches the auditor's own fold and, after a floor has streamed, has published exactly
what `pitwatch protect` of the same floor gives for the seat sessions and the tables;
its state rides in the auditor's snapshot, so a restart gives the same observations."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import orjson
import pytest

from pitwatch.engine.auditor import TableAuditor
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.processors.observe import Observed, ObservedAuditor, ObservedStates, TableObserver
from pitwatch.processors.settings import Settings
from pitwatch.processors.sink import Rejected, to_row
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.hold import hold_tallies
from pitwatch.protect.observation import (
    COUNT_BETTING,
    HOLE_CARD_PLAY,
    SEAT_SESSION,
    TABLE,
    Observation,
)
from pitwatch.protect.rounds import ReadFloor, read_floor
from pitwatch.protect.run import observe
from pitwatch.protect.stored import (
    Withdrawn,
    message_row,
    observation_message,
    observation_row,
)
from pitwatch.store.order import Positions

SEATS = {1: "counter-8", 3: "flat", 4: "holecard"}


@pytest.fixture(scope="module")
def floor() -> list[Event]:
    """Two tables of a counter, a flat bettor and a hole-card player: one without seat
    events (sessions inferred), one with them (sessions recorded)."""
    out: list[Event] = []
    for v, seated in ((0, False), (1, True)):
        players = {s: make_player(p, 5, s, v) for s, p in SEATS.items()}
        out += events(SimTable(v, 5, players, flash=0.3, variant=v, seated=seated), 200, 5)
    return out


def auditor(table_id: str, out: list[Observation]) -> ObservedAuditor:
    found: list[Violation] = []
    return ObservedAuditor(table_id, select, found.append, lambda _: None,
                           released=released_writers(), observations=out)


@dataclass
class Run:
    #: the latest value of each observation id published
    published: dict[str, Observation]
    #: what was published before the tables went quiet
    before_quiet: list[Observation]
    auditors: dict[str, ObservedAuditor]


def streamed(evs: Iterable[Event], restart_at: int | None = None) -> Run:
    """Each table's events through its observed auditor, as the worker folds them (a
    restart from the snapshot at event `restart_at`), then each table gone quiet."""
    out: list[Observation] = []
    tables: dict[str, ObservedAuditor] = {}
    for k, ev in enumerate(evs):
        a = tables.get(ev.table_id)
        if a is None:
            a = tables[ev.table_id] = auditor(ev.table_id, out)
        if k == restart_at:
            state = orjson.loads(orjson.dumps(a.export_state()))
            a = tables[ev.table_id] = auditor(ev.table_id, out)
            a.import_state(state)
        a.feed(ev)
    before = out[:]
    for a in tables.values():
        a.observer.publish()
    return Run({o.observation_id: o for o in out}, before, tables)


@pytest.fixture(scope="module")
def read(floor: list[Event]) -> ReadFloor:
    return read_floor(floor)


@pytest.fixture(scope="module")
def want(read: ReadFloor) -> dict[str, Observation]:
    """What `pitwatch protect` of the floor finds for sessions and tables."""
    found = observe(read.floor.tables, read.violations, read.floor.seatings)
    return {o.observation_id: o for o in found if o.scope in (SEAT_SESSION, TABLE)}


@pytest.fixture(scope="module")
def got(floor: list[Event]) -> Run:
    return streamed(floor)


def test_the_stream_publishes_what_protect_finds_for_sessions_and_tables(
        want: dict[str, Observation], got: Run) -> None:
    assert {(o.code, o.seat, o.inferred) for o in want.values()} == {
        (COUNT_BETTING, 1, True), (HOLE_CARD_PLAY, 4, True),
        (COUNT_BETTING, 1, False), (HOLE_CARD_PLAY, 4, False)}
    assert got.published == want


def test_the_table_hold_is_the_embedded_tally(read: ReadFloor, got: Run) -> None:
    tallies = [t for t in hold_tallies(read.floor.tables) if t.scope == TABLE]
    assert len(tallies) == 2
    for t in tallies:
        h = got.auditors[t.subject].observer.hold
        assert (h.rounds, h.hands, h.expected, h.actual, h.variance) == (
            t.rounds, t.hands, t.expected, t.actual, t.variance)


def test_a_restart_from_the_snapshot_gives_the_same_observations(
        floor: list[Event], got: Run) -> None:
    """The snapshot holds the observer's state beside the fold's (here taken with a
    round open, folded again by the engine): nothing is lost or counted twice."""
    at = 2345
    assert floor[at].round_id is not None and floor[at - 1].round_id == floor[at].round_id
    assert streamed(floor, restart_at=at).published == got.published


def test_the_observer_state_reads_back_as_it_was(floor: list[Event]) -> None:
    out: list[Observation] = []
    a = auditor(floor[0].table_id, out)
    for ev in floor[:1500]:
        a.feed(ev)
    state = a.observer.export()
    assert TableObserver.load(a.table.table_id, state).export() == state
    assert len(orjson.dumps(state)) < 120_000  # the open sessions' slim rounds
    with pytest.raises(ValueError):
        TableObserver.load("T", {**state, "version": 99})
    # a snapshot of before withdrawals: the same, with nothing published to withdraw
    old = {k: v for k, v in state.items() if k != "published"}
    back = TableObserver.load(a.table.table_id, {**old, "version": 1})
    assert back.published == {} and back.window == TableObserver.load(
        a.table.table_id, state).window


def test_a_session_ended_by_its_player_leaving_is_published_then(got: Run) -> None:
    """A recorded stay ends at PlayerLeft: its session's final observations go out at
    once, before the table goes quiet, and nothing of it is kept."""
    final = {o.observation_id: o for o in got.before_quiet if not o.inferred}
    assert {(o.code, o.seat) for o in final.values()} == {
        (COUNT_BETTING, 1), (HOLE_CARD_PLAY, 4)}
    assert all(got.published[k] == o for k, o in final.items())
    seated = got.auditors["SIM-BJ-00001"].observer  # the table with seat events
    assert seated.window == [] and seated.reader.seat_log.seatings == []


def test_the_topic_message_is_the_stored_row(want: dict[str, Observation]) -> None:
    for o in want.values():
        row, back = observation_row(o), message_row(observation_message(o))
        assert orjson.dumps(back) == orjson.dumps(row)  # nan equal to nan
    with pytest.raises(ValueError, match="fields"):
        message_row(b'{"code": "X"}')
    good = observation_message(next(iter(want.values())))
    with pytest.raises(ValueError, match="seat"):
        message_row(good.replace(b'"seat":', b'"seat":-', 1))


def test_the_sink_writes_an_observation_message_as_its_row(
        want: dict[str, Observation]) -> None:
    """The observations topic is one of the sink's row topics: a message is its row in
    `observations`, and anything else a dead letter with the reason."""
    s = Settings().with_prefix("p-")
    o = next(iter(want.values()))
    table, row = to_row(s.observations_topic, s, observation_message(o), Positions()) \
        or ("", {})
    assert table == "observations" and orjson.dumps(row) == orjson.dumps(observation_row(o))
    with pytest.raises(Rejected, match="not an observation"):
        to_row(s.observations_topic, s, b"[1]", Positions())
    with pytest.raises(Rejected, match="tombstone"):
        to_row(s.observations_topic, s, None, Positions())


def test_a_gap_ends_an_inferred_session_as_soon_as_it_shows(read: ReadFloor) -> None:
    """"ended after 3 or more rounds in a row without a wager at that seat": the seat's
    session is judged and dropped once the gap is longer than GAP_ROUNDS, and what the
    observer publishes is what protect finds over the same rounds."""
    table = "SIM-BJ-00000"  # no seat events: inferred sessions
    rounds = [r if not 60 <= r.index < 65 else replace(
        r, seats={s: v for s, v in r.seats.items() if s != 1},
        spots=[sp for sp in r.spots if sp.seat != 1]) for r in read.floor.tables[table]]
    out: list[Observation] = []
    o = TableObserver(table, out)
    for r in rounds:
        o.reader.index = r.index + 1  # its table's next round is about to start
        o.done = r
        o._settle()
        if r.index == 61:  # two rounds without seat 1: its session may go on
            assert any(1 in w.seats and w.index < 60 for w in o.window)
        if r.index == 62:  # three: no round to come can join it, so it is over
            assert not any(1 in w.seats and w.index < 60 for w in o.window)
    o.publish()
    want = observe({table: rounds})
    assert {x.observation_id: x for x in out} == {
        x.observation_id: x for x in want if x.scope in (SEAT_SESSION, TABLE)}


def test_a_failing_detector_never_stops_the_audit(floor: list[Event],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A bug in the detectors is logged, the table's observer starts afresh, and the
    audit's fold and findings go on as without it."""
    table = [ev for ev in floor if ev.table_id == "SIM-BJ-00000"][:600]
    rounds: list[Any] = []
    a = ObservedAuditor("SIM-BJ-00000", select, lambda v: None, rounds.append,
                        released=released_writers(), observations=[])

    def broken(ev: Event, r: Any) -> None:
        raise RuntimeError("a bug")

    a.observer.watch = broken  # type: ignore[method-assign]
    for ev in table:
        a.feed(ev)
    plain: list[Any] = []
    b = TableAuditor("SIM-BJ-00000", select, lambda v: None, plain.append,
                     released=released_writers())
    for ev in table:
        b.feed(ev)
    assert a.observer_errors == 1 and "detectors failed on table SIM-BJ-00000" in caplog.text
    assert rounds == plain and a.observer.reader.index > 0  # afresh, and watching again


def _worker(evs: list[Event], table: dict[bytes, bytes], start: int, stop: int,
            out: list[Observation], quiet: bool) -> None:
    """Events[start:stop] through a fresh worker's table states (one partition),
    snapshotting when due, as processors/app.py does; `quiet`: then every table goes
    quiet."""
    states = ObservedStates(table, select, 15 * 60 * 1000)
    log = [(i, ev.table_id.encode(), encode_single(ev)) for i, ev in enumerate(evs)]

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list[Any]:
        return [m for m in log if a <= m[0] < b]

    async def go() -> None:
        for i in range(start, stop):
            found = await states.process(evs[i], "table-events", 0, i, catch_up)
            assert isinstance(found, Observed)
            out.extend(found.observations)
            if states.due(evs[i].table_id, evs[i]):
                states.snapshot(evs[i].table_id)
        if quiet:
            found = states.expire_idle(lambda topic, partition: True, 0.0)
            assert isinstance(found, Observed)
            out.extend(found.observations)

    asyncio.run(go())


def test_a_worker_taking_over_from_the_snapshots_publishes_the_same(
        floor: list[Event], want: dict[str, Observation]) -> None:
    """The first worker dies at `cut`; the next resumes from the committed offset
    (a little before) through the table's snapshot and the partition after it: the
    observations published by both are protect's."""
    table: dict[bytes, bytes] = {}
    out: list[Observation] = []
    cut = 5000
    _worker(floor, table, 0, cut, out, quiet=False)
    _worker(floor, table, cut - 40, len(floor), out, quiet=True)
    assert {o.observation_id: o for o in out} == want


def _unflagged_after(rounds: list[Any], at: int) -> list[Any]:
    """The table's rounds with seat 1's bets after round `at` made to fall as the count
    rises: its session is flagged over the first `at` rounds, and not over them all."""
    def turned(r: Any) -> Any:
        sr = r.seats.get(1)
        if r.index < at or sr is None or r.true_count is None:
            return r
        bet = 100 * (8 - max(0, min(6, int(r.true_count))))
        return replace(r, seats={**r.seats, 1: replace(sr, main=bet)})

    return [turned(r) for r in rounds]


@pytest.mark.parametrize("restart", [False, True])
def test_an_observation_no_longer_given_is_withdrawn(read: ReadFloor, restart: bool) -> None:
    """A seat session published flagged at a shoe's end and no longer flagged at its
    end: the later publication withdraws the id, so the rows left (the last of each id,
    withdrawn ones out) are protect's answer; a restart from the snapshot between the
    two publications still withdraws."""
    table, at = "SIM-BJ-00000", 80
    rounds = _unflagged_after(read.floor.tables[table], at)
    out: list[Observation] = []
    o = TableObserver(table, out)
    for r in rounds:
        if r.index == at:
            o.publish()  # a shoe ended: the session as it stands is flagged
            assert any(x.code == COUNT_BETTING and x.seat == 1 for x in out)
            if restart:
                state = orjson.loads(orjson.dumps(o.export()))
                o = TableObserver.load(table, state, out)
        o.reader.index = r.index + 1
        o.done = r
        o._settle()
    o.publish()
    withdrawn = [x for x in out if isinstance(x, Withdrawn)]
    assert [(x.code, x.seat) for x in withdrawn] == [(COUNT_BETTING, 1)]
    rows: dict[str, dict[str, Any]] = {}
    for x in out:  # the store: the last row of each id
        rows[x.observation_id] = message_row(observation_message(x))
    left = {k: row for k, row in rows.items() if not row["withdrawn"]}
    want = {x.observation_id: observation_row(x) for x in observe({table: rounds})
            if x.scope in (SEAT_SESSION, TABLE)}
    assert orjson.dumps(left, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        want, option=orjson.OPT_SORT_KEYS)  # nan equal to nan
    assert withdrawn[0].observation_id in rows


def test_a_message_without_withdrawn_is_not_withdrawn(want: dict[str, Observation]) -> None:
    o = next(iter(want.values()))
    old = orjson.loads(observation_message(o))
    del old["withdrawn"]
    assert message_row(orjson.dumps(old))["withdrawn"] == 0
    with pytest.raises(ValueError, match="withdrawn"):
        message_row(orjson.dumps({**old, "withdrawn": 2}))
