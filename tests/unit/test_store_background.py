"""The embedded store inserts its batches on a thread of its own: they land in the order
handed over, a failed one surfaces as a StoreError in the caller's thread (from the
writer's flush, and from every statement after it), and nothing after it is inserted."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pitwatch.store.base import StoreError
from pitwatch.store.batch import BatchWriter
from pitwatch.store.embedded import EmbeddedStore
from tests.unit.test_store_columnar import _events_columns


def _violation(i: int, message: str) -> dict[str, Any]:
    return {
        "violation_id": f"v{i:04d}", "code": "DEALER_STOOD_LOW", "severity": "HIGH",
        "table_id": "NJ-BJ-01", "round_id": f"r{i}", "seat": 1, "hand": -1,
        "event_id": f"e{i}", "evidence": [], "citation": "N.J.A.C. 13:69F-2.3",
        "message": message, "pack": "nj_blackjack", "pack_version": "1.2.0",
        "detected_at": 1_764_547_200 + i, "detected_ms": 0,
    }


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    s = EmbeddedStore(tmp_path / "data")
    s.setup()
    return s


def _break_table(store: EmbeddedStore) -> None:
    """Drop the table: the inserter thread's next insert into it fails."""
    store.query("DROP TABLE violations")


def test_batches_land_in_the_order_handed_over(store: EmbeddedStore) -> None:
    # the same 3 ids in each of 12 batches, a message a batch: the replacing table keeps
    # the last inserted, so the survivors show which batch landed last
    w = BatchWriter(store, batch_rows=3)
    for b in range(12):
        for i in range(3):
            w.add("violations", _violation(i, f"batch {b}"))
    w.flush()
    assert w.written["violations"] == 36
    store.dedupe()
    got = store.query("SELECT violation_id, message FROM violations ORDER BY violation_id")
    assert [(g["violation_id"], g["message"]) for g in got] == \
        [(f"v{i:04d}", "batch 11") for i in range(3)]
    assert list(store.staging.iterdir()) == []
    store.close()


def test_a_failed_background_insert_is_raised_by_the_writers_flush(
        store: EmbeddedStore) -> None:
    w = BatchWriter(store, batch_rows=2)
    w.add("violations", _violation(0, "stored"))
    w.add("violations", _violation(1, "stored"))
    store.sync()
    _break_table(store)
    for i in range(2, 5):  # a batch staged, a row buffered: one insert of both at flush
        w.add("violations", _violation(i, "lost"))
    with pytest.raises(StoreError, match=r"background insert of 3 rows into violations "
                                         r"failed, and nothing handed over after it"):
        w.flush()
    with pytest.raises(StoreError, match="background insert"):  # the store holds a gap
        store.query("SELECT count() AS n FROM violations")
    with pytest.raises(StoreError, match="background insert"):
        store.insert("violations", [_violation(9, "after")])
    with pytest.raises(StoreError, match="background insert"):  # raised at hand-over
        for i in range(10, 14):
            w.add("violations", _violation(i, "after"))
    store.close()  # told already: closes without raising again


def test_a_failure_nobody_was_told_of_is_raised_by_close(store: EmbeddedStore) -> None:
    _break_table(store)
    store.insert("violations", [_violation(0, "lost")])
    with pytest.raises(StoreError, match="background insert of 1 rows into violations"):
        store.close()
    assert list(store.staging.iterdir()) == []


def test_batches_are_gathered_into_inserts_of_insert_rows(
        store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each batch goes to its table's staged file at once; a file is inserted once it
    holds INSERT_ROWS rows (`events`) or OTHER_INSERT_ROWS (any other table), and what
    is left at `sync`."""
    from pitwatch.store import embedded

    monkeypatch.setattr(embedded, "INSERT_ROWS", 7)
    monkeypatch.setattr(embedded, "OTHER_INSERT_ROWS", 5)
    inserted: list[tuple[str, int]] = []
    insert = store._inserter._insert
    store._inserter._insert = lambda t, p: (inserted.append((t, _rows(p))), insert(t, p))
    w = BatchWriter(store, batch_rows=2)
    for i in range(13):
        w.add("violations", _violation(i, "m"))
    w.flush()
    assert inserted == [("violations", 6), ("violations", 6), ("violations", 1)]
    assert int(store.query("SELECT count() AS n FROM violations")[0]["n"]) == 13
    inserted.clear()
    store.insert_columns("events", _events_columns(6, "{}"))
    store.insert_columns("events", _events_columns(2, "{}", first=6))
    store.sync()  # nothing staged is left: the 8 rows went as one insert
    assert inserted == [("events", 8)]
    assert list(store.staging.iterdir()) == []
    store.close()


def _rows(path: Path) -> int:
    import pyarrow.ipc

    with pyarrow.ipc.open_file(path) as f:
        return sum(f.get_batch(i).num_rows for i in range(f.num_record_batches))


def test_a_batch_that_cannot_be_staged_is_a_store_error_at_once(
        store: EmbeddedStore) -> None:
    shutil.rmtree(store.staging)
    store.staging.write_text("not a directory")
    with pytest.raises(StoreError, match=r"cannot stage a batch of violations in .*staging"):
        store.insert("violations", [_violation(0, "x")])
    store.staging.unlink()
    store.staging.mkdir()
    store.insert("violations", [_violation(1, "after")])
    assert int(store.query("SELECT count() AS n FROM violations")[0]["n"]) == 1
    store.close()


def test_a_value_its_column_refuses_is_raised_at_once_not_in_the_background(
        store: EmbeddedStore) -> None:
    bad = _violation(0, "x") | {"seat": 256}
    with pytest.raises(StoreError, match=r"violations\.seat \(UInt8\)"):
        store.insert("violations", [bad])
    store.insert("violations", [_violation(1, "fine")])
    assert int(store.query("SELECT count() AS n FROM violations")[0]["n"]) == 1
    store.close()


def test_opening_the_store_removes_what_a_killed_process_staged(tmp_path: Path) -> None:
    """A killed audit leaves its staged files (its rows are not in the store; auditing
    the input again stores them): the next open removes them, and nothing a running
    process staged."""
    import os
    import subprocess
    import sys
    import time

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # ended, not yet reaped
    stat = Path(f"/proc/{zombie.pid}/stat")
    deadline = time.monotonic() + 30
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child never ended"
        time.sleep(0.01)
    staging = tmp_path / "data" / "staging"
    staging.mkdir(parents=True)
    left = [staging / f"events-{dead}-0.arrow", staging / f"rounds-{zombie.pid}-3.arrow"]
    kept = [staging / f"events-{os.getpid()}-999.arrow", staging / "notes.arrow",
            staging / "a-b-c.arrow", staging / f"events-{10**30}-1.arrow"]
    for f in left + kept:
        f.write_bytes(b"x")
    s = EmbeddedStore(tmp_path / "data")
    zombie.wait()
    assert sorted(p.name for p in staging.iterdir()) == sorted(p.name for p in kept)
    s.close()
