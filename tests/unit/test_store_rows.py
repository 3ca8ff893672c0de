"""An event's row of `events` and the event rebuilt from it: the row's columns hold the
envelope, its body the rest (the prev_digest, the payload), and an older row's body the
whole JSON Lines form; both read back as the event that was stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitwatch.events.jsonl import InvalidEvent, dumps
from pitwatch.store import history
from pitwatch.store.base import column_names
from pitwatch.store.batch import BatchWriter
from pitwatch.store.columns import event_values
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.order import Positions
from pitwatch.store.rows import EVENT_COLUMNS, stored_event
from producers.simulate import Floor


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
