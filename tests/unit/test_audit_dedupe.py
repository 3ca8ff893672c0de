"""After an audit into a store, a plain read (no FINAL) sees no row twice: the store
merges the replaced rows of `rounds` and `violations` after every audit, and of the
events of the tables where an event's row may have been stored twice
(`AuditReport.stored_again`): a table whose history was stored already. An event met
again in one audit (a redelivery, a copy past the record clock's window) is not stored
again at all (the record did not accept it), so an audit of tables with no stored
history leaves `events` as inserted."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from pitwatch.audit.parallel import audit_parallel
from pitwatch.audit.run import audit_events
from pitwatch.events import jsonl
from pitwatch.events.model import Event
from pitwatch.producers.simulate import simulate_floor
from pitwatch.store import order
from pitwatch.store.embedded import EmbeddedStore


@pytest.fixture(scope="module")
def events() -> list[Event]:
    return simulate_floor(2, 6, 41, 0.0)[0]  # no fault: no event comes twice


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    s.setup()
    asked: list[set[str] | None] = []
    dedupe = s.dedupe

    def spy(events_of: Collection[str] | None = None) -> None:
        asked.append(None if events_of is None else set(events_of))
        dedupe(events_of)

    monkeypatch.setattr(s, "dedupe", spy)
    s.asked = asked  # type: ignore[attr-defined]
    yield s
    s.close()


def _plain(store: EmbeddedStore) -> tuple[int, int]:
    """Rows of `events` a plain read sees, and its distinct event ids."""
    row = store.query("SELECT count() AS n, uniqExact(event_id) AS ids FROM events")[0]
    return int(row["n"]), int(row["ids"])


def test_an_audit_that_met_no_event_twice_merges_only_rounds_and_violations(
        store: EmbeddedStore, events: list[Event]) -> None:
    rep = audit_events(events, store=store)
    assert rep.stored_again == set()
    assert store.asked == [set()]  # type: ignore[attr-defined]
    assert _plain(store) == (len(events), len(events))


@pytest.mark.parametrize("window", [order.WINDOW, 4], ids=["redelivered", "past-window"])
def test_an_event_met_twice_in_one_audit_is_stored_once(
        store: EmbeddedStore, events: list[Event], window: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of an event at the end of the input: among the clock's recent ids, or
    (a window of 4) long forgotten: the record knows it (a redelivery), so no row of it
    is written again and nothing needs merging."""
    monkeypatch.setattr(order, "WINDOW", window)
    rep = audit_events([*events, events[10]], store=store)
    assert rep.stored_again == set() and rep.refused == 0
    assert store.asked == [set()]  # type: ignore[attr-defined]
    assert _plain(store) == (len(events), len(events))


def test_a_table_with_its_history_stored_is_merged_again(
        store: EmbeddedStore, events: list[Event]) -> None:
    audit_events(events, store=store)
    rep = audit_events(events, store=store)
    tables = {e.table_id for e in events}
    assert len(tables) == 2 and rep.stored_again == tables
    assert store.asked == [set(), tables]  # type: ignore[attr-defined]
    assert _plain(store) == (len(events), len(events))


@pytest.mark.parametrize("again", [False, True])
def test_audit_jobs_2_stores_an_event_a_worker_met_twice_once(
        tmp_path: Path, events: list[Event], again: bool) -> None:
    """`audit --jobs 2`: an event a worker meets twice is a redelivery to its record,
    so its row is not written again, and the main process has nothing to merge."""
    path = tmp_path / "floor.jsonl"
    path.write_bytes(b"".join(jsonl.dumps(e) + b"\n"
                              for e in [*events, *events[:3]][:len(events) + 3 * again]))
    rep = audit_parallel([path], 2, data=tmp_path / "data")
    assert rep.stored_again == set() and rep.refused == 0
    store = EmbeddedStore(tmp_path / "data")
    try:
        assert _plain(store) == (len(events), len(events))
    finally:
        store.close()
