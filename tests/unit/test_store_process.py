"""The embedded store in a process of its own (`pitwatch/store/process.py`, what
`pitwatch audit --jobs 1` stores through): the rows it stores are those of the store in
the audit's process, from every kind of input, and a batch it cannot store, or its
death, is a StoreError raised in the audit's process, never lost."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from pitwatch.audit.run import audit_paths
from pitwatch.events.avro import to_datum
from pitwatch.events.files import write_avro, write_jsonl
from pitwatch.events.model import Event
from pitwatch.events.schema import schemas_dir, strip_logical
from pitwatch.producers.simulate import Floor
from pitwatch.store.base import TABLES, StoreError
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.process import StoreProcess, store_cpus
from tests.unit.test_store_background import _violation


def _events() -> list[Event]:
    return list(Floor(3, 6, seed=61, inject=0.3).events())


def _v1_avro(path: Path, events: list[Event]) -> None:
    """An Avro file written under the released v1 schema (no Checkpoint then)."""
    v1 = json.loads((schemas_dir() / "avro/released/v1/TableEvent.avsc").read_text())
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(strip_logical(v1)),
                        [to_datum(e) for e in events if e.type != "Checkpoint"])


WRITERS: dict[str, Callable[[Path, list[Event]], Any]] = {
    "events.avro": write_avro, "events.jsonl": write_jsonl, "v1.avro": _v1_avro}


def _rows(store: Any) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, in a stable order."""
    return {t: store.query(f"SELECT * FROM {t} FINAL ORDER BY tuple(*)") for t in TABLES}


def _audited(kind: str, data: Path, files: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """The rows of auditing `files` one run after another into a store of `kind`."""
    for f in files:
        store = StoreProcess(data) if kind == "process" else EmbeddedStore(data)
        store.setup()
        audit_paths([f], store=store)
        store.close()
    reader = EmbeddedStore(data)
    try:
        return _rows(reader)
    finally:
        reader.close()


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_the_rows_are_those_of_the_store_in_the_audits_process(tmp_path: Path,
                                                                name: str) -> None:
    """An Avro file under this schema (its events go as their bytes), JSON Lines and an
    Avro file under an older schema (their rows written in the audit's process)."""
    path = tmp_path / name
    WRITERS[name](path, _events())
    here = _audited("embedded", tmp_path / "here", [path])
    there = _audited("process", tmp_path / "there", [path])
    assert len(there["events"]) > 500 and there["violations"] and there["rounds"]
    assert there == here
    if name == "v1.avro":  # the events say which schema wrote their bytes
        assert {r["writer"] for r in there["events"]} == {"403b329a44f3b2ad"}


def test_a_history_continued_over_runs_is_stored_as_in_process(tmp_path: Path) -> None:
    """The second run resumes each table's record clock and history from the store (its
    queries answered by the store process), the rows as in the audit's process."""
    events = _events()
    half = len(events) // 2
    first, second = tmp_path / "first.avro", tmp_path / "second.avro"
    write_avro(first, events[:half])
    write_avro(second, events[half - 40:])  # 40 events again: the same rows
    here = _audited("embedded", tmp_path / "here", [first, second])
    there = _audited("process", tmp_path / "there", [first, second])
    assert len(there["events"]) == len(events)
    assert there == here


@pytest.fixture
def store(tmp_path: Path) -> StoreProcess:
    s = StoreProcess(tmp_path / "data")
    s.setup()
    return s


def _count(data: Path) -> list[str]:
    """The messages of the violations stored in `data` (the store process closed)."""
    s = EmbeddedStore(data)
    try:
        return sorted(r["message"] for r in s.query("SELECT message FROM violations"))
    finally:
        s.close()


def test_a_batch_it_cannot_store_is_raised_at_the_next_hand_over(store: StoreProcess
                                                                 ) -> None:
    store.insert("violations", [_violation(0, "before")])
    store.insert("violations", [_violation(1, "refused") | {"seat": 256}])  # returns
    with pytest.raises(StoreError, match=r"violations\.seat \(UInt8\)"):
        store.sync()
    with pytest.raises(StoreError, match=r"violations\.seat"):  # at every call after it
        store.insert("violations", [_violation(2, "after")])
    with pytest.raises(StoreError, match=r"violations\.seat"):
        store.query("SELECT 1")
    store.close()  # told already: closes without raising again
    assert _count(store.path) == ["before"]  # nothing after the gap


def test_a_failure_nobody_was_told_of_is_raised_by_close(store: StoreProcess) -> None:
    store.insert("violations", [_violation(0, "refused") | {"hand": 200}])
    with pytest.raises(StoreError, match=r"violations\.hand \(Int8\)"):
        store.close()
    assert _count(store.path) == []


class _Unreadable:
    """Pickles, but cannot be read back: unpickling calls int("not a number")."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (int, ("not a number",))


def test_a_message_it_cannot_read_is_a_store_error_and_what_came_before_is_kept(
        store: StoreProcess) -> None:
    """The store process reads ahead of its work on a thread of its own: a message that
    thread cannot read ends the store's work with a StoreError for the audit's process,
    never a reader that stops and leaves the audit waiting."""
    store.insert("violations", [_violation(0, "before")])
    store._send(("columns", "violations", _Unreadable()))
    with pytest.raises(StoreError, match=r"the store process failed: ValueError: invalid "
                                         r"literal for int\(\)"):
        store.query("SELECT 1")
    store.close()  # told already: closes without raising again
    assert _count(store.path) == ["before"]


def test_a_killed_store_process_is_a_store_error_that_says_so(store: StoreProcess) -> None:
    store.insert("violations", [_violation(0, "x")])
    os.kill(store._proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
    store._proc.join(30)
    with pytest.raises(StoreError, match=r"store process of .* stopped \(killed by signal "
                                         r"9 \(out of memory\?\)\): what it had not stored"):
        store.query("SELECT count() AS n FROM violations")
    with pytest.raises(StoreError, match="stopped"):
        store.close()


def test_a_store_another_process_holds_is_refused_with_its_reason(tmp_path: Path) -> None:
    held = EmbeddedStore(tmp_path / "data")
    try:
        with pytest.raises(StoreError, match="is open in another process"):
            StoreProcess(tmp_path / "data")
    finally:
        held.close()


def test_an_audit_into_a_new_store_asks_nothing_while_it_opens(tmp_path: Path) -> None:
    """A new store holds nothing: the audit's process does not wait for chDB to open
    it before the audit starts (nor for `setup`), and takes no stored table from it.
    Once given anything, the store may hold tables, and they are asked for."""
    from pitwatch.audit.run import stored_tables

    s = StoreProcess(tmp_path / "data")
    s.setup()
    assert s.empty and s._owed == 2  # the opening's answer and setup's, not waited for
    assert stored_tables(s) == set() and s._owed == 2  # not asked: nothing answered yet
    s.insert("violations", [_violation(0, "given")])
    assert not s.empty
    assert stored_tables(s) == set() and s._owed == 0  # asked, and every answer taken
    s.close()
    again = StoreProcess(tmp_path / "data")  # not new: opened before the caller goes on
    assert not again.empty and again._owed == 0
    again.close()
    assert _count(tmp_path / "data") == ["given"]


def test_a_new_store_that_cannot_be_opened_says_why_at_the_next_call(tmp_path: Path
                                                                     ) -> None:
    """Not waited for, a new store that cannot be opened is the StoreError that says
    why at the caller's next call or hand-over, never a store process that merely
    stopped; told once, `close` does not raise it again."""
    (tmp_path / "taken").write_text("a file where the store's directory would be")
    s = StoreProcess(tmp_path / "taken" / "data")
    s.setup()
    with pytest.raises(StoreError, match="NotADirectoryError"):
        s.sync()
    with pytest.raises(StoreError, match="NotADirectoryError"):  # at every call after it
        s.insert("violations", [_violation(0, "lost")])
    s.close()


def test_dropped_unclosed_it_stores_what_it_was_given(tmp_path: Path) -> None:
    s = StoreProcess(tmp_path / "data")
    s.setup()
    s.insert("violations", [_violation(0, "given")])
    proc = s._proc
    del s  # its pipe closes: the store process stores what it has and exits
    proc.join(60)
    assert proc.exitcode == 0
    assert _count(tmp_path / "data") == ["given"]


def _printed(code: str, name: str, value: str | None, *args: str) -> str:
    """What a fresh Python running `code` prints, with the environment variable `name`
    set to `value` (None: unset)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != name}
    if value is not None:
        env[name] = value
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    return out.stdout.strip()


@pytest.mark.parametrize("users", [None, "dirty_decay_ms:5000"])
def test_the_allocator_setting_is_not_left_for_later_processes(tmp_path: Path,
                                                               users: str | None) -> None:
    """A process whose work is the store loads chDB with its allocator's setting, and
    leaves the environment as it was: a forkserver or a store process started after it
    would otherwise inherit the setting (the bench's later sides did). A user's own
    setting is theirs, and stays."""
    code = ("import os, sys\n"
            "from pitwatch.store.embedded import EmbeddedStore, KEEPING_JEMALLOC_CONF\n"
            "s = EmbeddedStore(sys.argv[1], KEEPING_JEMALLOC_CONF)\n"
            "s.close()\n"
            "print(os.environ.get('JE_MALLOC_CONF'))\n")
    assert _printed(code, "JE_MALLOC_CONF", users, str(tmp_path / "store")) == str(users)


@pytest.mark.parametrize("users", [None, "mimalloc"])
def test_the_store_process_gives_arrow_the_c_librarys_malloc(users: str | None) -> None:
    """The store process's Arrow buffers come from glibc's malloc, which with its
    thresholds hands them back as they are freed (`process.ARROW_POOL`); a user's own
    choice of Arrow's allocator is theirs, and stays."""
    code = ("from pitwatch.store.process import _hand_back_freed_blocks\n"
            "_hand_back_freed_blocks()\n"
            "import pyarrow as pa\n"
            "print(pa.default_memory_pool().backend_name)\n")
    assert _printed(code, "ARROW_DEFAULT_MEMORY_POOL", users) == (users or "system")


def test_the_store_cpus_leave_the_first_to_the_audit() -> None:
    """Of the CPUs the store process may use it keeps to all but the first, where the
    audit's thread runs alone; with one CPU there is nothing to leave, and it stays."""
    assert store_cpus({0, 1}) == {1}
    assert store_cpus({3, 5, 9}) == {5, 9}
    assert store_cpus({2}) is None


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="one CPU: nothing to leave to the audit")
def test_the_store_process_and_chdbs_threads_keep_off_the_audits_core(
        store: StoreProcess) -> None:
    """Every thread of the store process (chDB's among them, made after it set its own
    CPUs) runs on the store's CPUs; the process that audits keeps all of its own."""
    mine = os.sched_getaffinity(0)
    store.setup()
    store.query("SELECT 1")  # chDB has made its threads
    threads = [int(t) for t in os.listdir(f"/proc/{store._proc.pid}/task")]
    assert len(threads) > 2
    assert {frozenset(os.sched_getaffinity(t)) for t in threads} == {
        frozenset(store_cpus(mine) or mine)}
    assert os.sched_getaffinity(0) == mine
