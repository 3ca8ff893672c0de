"""`pitwatch protect --data DIR` judges a store a table at a time (`judge_stored`): each
table's events read in windows of positions through the sort key, and of the floor-wide
scopes (a dealer's and a shift's hold, a dealer's error rate) only running tallies kept
(`FloorJudge`). Its answer is the one of the whole history read at once (`read_stored`,
`observe`), whatever the window."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import astuple

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.engine.violation import Violation
from pitwatch.events.model import Event
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.hold import hold_tallies
from pitwatch.protect.observation import DEALER, SHIFT, TABLE, Observation
from pitwatch.protect.rounds import ReadFloor
from pitwatch.protect.run import BREAKS, Findings, FloorJudge, observe
from pitwatch.protect.stored import judge_stored, read_stored
from pitwatch.store import lookup
from pitwatch.store.embedded import EmbeddedStore

PROFILES = {0: {1: "counter-8", 3: "flat"}, 1: {2: "holecard", 5: "martingale"}}


def _floor() -> list[Event]:
    """Two tables dealt at the same hours (their shifts are shared), a counter at one
    and a hole-card player at a flashing other; one event of the second lost mid-way
    (a break in its record: the rest of that shoe is suspended)."""
    out: list[Event] = []
    for t, seats in PROFILES.items():
        players = {s: make_player(p, 5, s, t) for s, p in seats.items()}
        evs = events(SimTable(t, 5, players, flash=0.5, seated=t == 0), 110, 5)
        if t == 1:
            del evs[len(evs) // 2]
        out += evs
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path_factory.mktemp("windows") / "data")
    try:
        s.setup()
        audit_events(_floor(), store=s)
        s.sync()
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def whole(store: EmbeddedStore) -> tuple[ReadFloor, int]:
    """The store's history read at once, every table's rounds held."""
    return read_stored(store)


def _rows(found: list[Observation]) -> list[tuple[object, ...]]:
    return [(o.observation_id, *astuple(o)) for o in found]


def test_a_tiny_window_gives_the_answer_of_the_whole_history(
        store: EmbeddedStore, whole: tuple[ReadFloor, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    read, events_read = whole
    want = observe(read.floor.tables, read.violations, read.floor.seatings)
    assert {o.code for o in want} >= {"COUNT_CORRELATED_BETTING", "HOLE_CARD_PLAY"}
    assert any(v.code in BREAKS for v in read.violations), "the floor has a break"
    monkeypatch.setattr(lookup, "WINDOW", 1024 * 1_000_000)  # a table in one window
    big = judge_stored(store)
    monkeypatch.setattr(lookup, "WINDOW", 1024 * 64)  # about 64 events a window
    done: list[tuple[str, int]] = []
    tiny = judge_stored(store, on_table=lambda t, n: done.append((t, n)))
    assert _rows(tiny.observations) == _rows(big.observations) == _rows(want)
    assert (tiny.events, tiny.tables, tiny.violations) == (
        events_read, len(read.floor.tables), len(read.violations))
    assert tiny.rounds == sum(len(r) for r in read.floor.tables.values())
    assert [t for t, _ in done] == sorted(read.floor.tables)
    assert sum(n for _, n in done) == events_read


def test_the_floor_wide_tallies_run_across_tables_without_their_rounds(
        whole: tuple[ReadFloor, int]) -> None:
    """A dealer's and a shift's hold added a table at a time are the floor's, with no
    round ids kept; a table's own tally is judged when it is added and let go."""
    read, _ = whole
    tables = read.floor.tables
    judge = FloorJudge()
    findings = Findings.of(read.violations)
    for t in sorted(tables):
        judge.add(t, tables[t], findings, read.floor.seatings[t])
        assert not judge.holds.by_table
    running = judge.holds.tallies()
    want = [x for x in hold_tallies(tables) if x.scope != TABLE]
    assert [(x.scope, x.subject, x.rounds, x.hands, x.expected, x.actual, x.variance)
            for x in running] == [
        (x.scope, x.subject, x.rounds, x.hands, x.expected, x.actual, x.variance)
        for x in want]
    assert {x.scope for x in running} == {DEALER, SHIFT}
    shared = [x for x in running if x.scope == SHIFT]
    assert shared and all(x.round_ids == [] for x in running)
    assert any(x.hands > sum(len(r) for r in tables.values()) // 2 for x in shared), \
        "a shift's tally holds both tables' rounds"


def test_a_dealers_errors_are_counted_over_the_tables_they_dealt() -> None:
    """"A dealer's errors are the rounds they dealt that carry a violation of the
    dealer's game ... the record's own defects ... do not count": a record finding
    (EVENTS_LOST) never makes a round an error, a payout error does."""
    def found(code: str, round_id: str) -> Violation:
        return Violation(code, "HIGH", "T1", round_id, None, None, "e", (), "", "", "p",
                         "1", 0)

    f = Findings.of([found("WRONG_PAYOUT", "R1"), found("EVENTS_LOST", "R2")])
    assert f.errors == {"R1"} and f.broken == {"R2"}
