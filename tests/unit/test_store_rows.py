"""An event's row of `events` and the event rebuilt from it: the row's columns hold the
envelope, its body the rest (the prev_digest, the payload), and an older row's body the
whole JSON Lines form; both read back as the event that was stored. A violation's row
of `violations` reads back as the violation, no seat and no hand as None."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitwatch.engine.violation import Violation
from pitwatch.events.jsonl import InvalidEvent, dumps
from pitwatch.producers.simulate import Floor
from pitwatch.store import history
from pitwatch.store.base import column_names
from pitwatch.store.batch import BatchWriter
from pitwatch.store.columns import event_values
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.order import Positions
from pitwatch.store.rows import (
    EVENT_COLUMNS,
    VIOLATION_COLUMNS,
    stored_event,
    violation_from_row,
    violation_row,
)


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    s = EmbeddedStore(tmp_path / "data")
    s.setup()
    return s


def test_events_stored_with_light_bodies_or_whole_ones_read_back_as_they_were(
        store: EmbeddedStore) -> None:
    evs = list(Floor(1, 3, seed=5).events())
    positions = Positions()
    at = [positions.of(e) for e in evs]
    half = len(evs) // 2
    w = BatchWriter(store, batch_rows=50)
    for ev, p in zip(evs[:half], at[:half], strict=True):
        w.add_event(ev, p)
    w.flush()
    # the rest as a store made before wrote them: the whole JSON Lines form as the body
    body = column_names("events").index("body")
    older = []
    for ev, p in zip(evs[half:], at[half:], strict=True):
        row = list(event_values(ev, p))
        row[body] = dumps(ev).decode()
        older.append(row)
    store.insert_columns("events", list(zip(*older, strict=True)))
    store.sync()

    got = list(history.stream(store, evs[0].table_id, 0))
    assert [(s.pos, s.event) for s in got] == list(zip(at, evs, strict=True))
    bodies = {r["event_id"]: r["body"] for r in store.query("SELECT event_id, body FROM events")}
    light = [bodies[e.event_id] for e in evs[:half]]
    assert all(b.startswith('{"prev_digest":') and '"event_id"' not in b for b in light)
    assert all(bodies[e.event_id].startswith('{"type":') for e in evs[half:])
    assert sum(map(len, light)) < 0.6 * sum(len(dumps(e)) for e in evs[:half])


def test_a_row_whose_body_is_not_an_event_is_an_invalid_event_naming_it(
        store: EmbeddedStore) -> None:
    ev = next(iter(Floor(1, 1, seed=5).events()))
    row = dict(zip(column_names("events"), event_values(ev, 1), strict=True))
    sql = f"SELECT {EVENT_COLUMNS} FROM events"
    store.insert("events", [row | {"body": '{"prev_digest":null'}])
    store.sync()
    with pytest.raises(InvalidEvent, match=f"event {ev.event_id}: its body is not JSON"):
        stored_event(store.query(sql)[0])
    # JSON, but not the rest of this event: refused as a JSON Lines event would be
    missing = store.query(sql)[0] | {"body": '{"prev_digest":null}'}
    with pytest.raises(InvalidEvent, match=f"{type(ev.payload).__name__}: missing"):
        stored_event(missing)


def _violation(seat: int | None, hand: int | None) -> Violation:
    return Violation("PAYOUT_WRONG", "CRITICAL", "T-1", "T-1-000001", seat, hand,
                     f"e-{seat}-{hand}", ("e-0", "e-1"), "13:69F-2.17",
                     "paid 10.00, owed 15.00", "nj", "1", 1764460800123)


def test_stored_violations_read_back_as_the_violations_with_no_seat_or_hand_as_none(
        store: EmbeddedStore) -> None:
    vs = [_violation(seat, hand) for seat, hand in
          ((None, None), (1, 0), (7, None), (32, 1), (None, 0))]
    store.insert("violations", [violation_row(v) for v in vs])
    store.sync()
    rows = store.query(f"SELECT {VIOLATION_COLUMNS} FROM violations FINAL")
    assert sorted(map(violation_from_row, rows), key=str) == sorted(vs, key=str)
    assert {r["violation_id"] for r in rows} == {v.violation_id for v in vs}


@pytest.mark.parametrize(("seat", "hand"), [(0, None), (256, 0), (1, -1), (1, 128)])
def test_a_seat_or_hand_a_row_cannot_hold_as_itself_is_refused_not_stored_as_none(
        seat: int, hand: int | None) -> None:
    """Seat 0 is no seat (seats are 1 on), so it never reads back as "no seat"."""
    with pytest.raises(ValueError, match="is not a"):
        violation_row(_violation(seat, hand))


def test_a_row_with_a_hand_below_none_is_not_read_as_no_hand() -> None:
    row = {**violation_row(_violation(1, 0)), "hand": -2, "detected": 1764460800123}
    with pytest.raises(ValueError, match="hand -2 is not a hand"):
        violation_from_row(row)
