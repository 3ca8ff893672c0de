"""`pitwatch audit --jobs N` gives what `--jobs 1` gives, byte for byte: the printed
violations and summary, the rejects file, the store's rows and the exit status, on a
simulated floor with injected faults and malformed records, and across two runs that
continue one shift's history in one store."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.audit.parallel import _Merge, _Owners, _Shard
from pitwatch.events import avro

TABLES = ("events", "rounds", "violations")


def pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """7 tables of the four games, a fifth of the rounds faulty, and the JSON Lines file
    with malformed lines (bad JSON, a bad field) among the events."""
    d = tmp_path_factory.mktemp("jobs")
    r = pitwatch("simulate", "--tables", "7", "--rounds", "24", "--seed", "13", "--inject",
                 "0.2", "--avro", "--out", str(d / "floor"), cwd=d)
    assert r.returncode == 0, r.stderr
    lines = (d / "floor" / "events.jsonl").read_bytes().splitlines(keepends=True)
    lines.insert(40, b"{not json\n")
    lines.insert(900, lines[900].replace(b'"seq":', b'"seq":"x","was":'))
    cut = len(lines) * 3 // 5
    (d / "part1.jsonl").write_bytes(b"".join(lines[:cut]))
    (d / "part2.jsonl").write_bytes(b"".join(lines[cut:]))
    (d / "all.jsonl").write_bytes(b"".join(lines))
    return d


def store_rows(data: Path, cwd: Path) -> dict[str, bytes]:
    out = {}
    for t in TABLES:
        q = pitwatch("query", "--data", str(data), "--format", "csv",
                     f"SELECT * FROM {t} FINAL ORDER BY tuple(*)", cwd=cwd)
        assert q.returncode == 0, q.stderr
        out[t] = q.stdout
    return out


def audit(floor: Path, jobs: int, name: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return pitwatch("audit", *args, "--jobs", str(jobs), "--data", name, cwd=floor)


def test_jsonl_store_and_rejects_are_those_of_one_job(floor: Path) -> None:
    one = audit(floor, 1, "d1", "all.jsonl", "floor/events.avro", "--format", "jsonl")
    assert one.returncode == 0, one.stderr
    assert one.stdout.count(b"\n") > 20  # violations were found, so the order is tested
    rows = store_rows(floor / "d1", floor)
    for jobs in (2, 3):
        many = audit(floor, jobs, f"d{jobs}", "all.jsonl", "floor/events.avro",
                     "--format", "jsonl")
        assert many.returncode == one.returncode
        assert many.stdout == one.stdout
        # the data directory's name, not two hex digits of the key registry's SHA-256
        assert re.sub(rb"\bd%d\b" % jobs, b"d1", many.stderr) == one.stderr
        assert (floor / f"d{jobs}" / "rejects.jsonl").read_bytes() == \
            (floor / "d1" / "rejects.jsonl").read_bytes()
        assert store_rows(floor / f"d{jobs}", floor) == rows
    assert b"rejected 2 malformed" in one.stderr


def test_table_format_and_exit_status_are_those_of_one_job(floor: Path) -> None:
    args = ("floor/events.avro", "--no-store", "--limit", "0", "--fail-on", "HIGH")
    one = audit(floor, 1, "t", *args)
    two = audit(floor, 2, "t", *args)
    assert one.returncode == 1  # the faults include HIGH ones
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr)


def test_a_second_run_continues_the_first_the_same_way(floor: Path) -> None:
    """The second part of a shift, audited into the store of the first: the workers ask
    the main process for the tables' stored history."""
    runs = {}
    for jobs in (1, 2):
        name = f"h{jobs}"
        first = audit(floor, jobs, name, "part1.jsonl", "--format", "jsonl")
        second = audit(floor, jobs, name, "part2.jsonl", "--format", "jsonl")
        assert first.returncode == second.returncode == 0, second.stderr
        runs[jobs] = (first.stdout, second.stdout, store_rows(floor / name, floor))
    assert runs[2] == runs[1]
    assert runs[1][1]  # the second run found violations of its own


def test_a_block_the_framer_refuses_is_read_as_one_job_reads_it(floor: Path) -> None:
    """A worker decodes only its own tables' records of the blocks the framer frames; a
    block it refuses (here: text that is not UTF-8, mid-file) is decoded whole, so the
    file is cut where one process cuts it, with the same reject."""
    with open(floor / "floor" / "events.avro", "rb") as f:
        evs = list(avro.read_container(f))
    with open(floor / "plain.avro", "wb") as f:
        avro.write_container(f, evs, codec="null", sync_marker=b"pitwatch-test-01")
    data = (floor / "plain.avro").read_bytes()
    at = data.index(evs[len(evs) // 2].table_id.encode(), len(data) // 2)
    (floor / "cut.avro").write_bytes(data[:at] + b"\xff" + data[at + 1:])
    one = audit(floor, 1, "c1", "cut.avro")
    two = audit(floor, 2, "c2", "cut.avro")
    assert one.returncode == 0, one.stderr
    assert two.returncode == one.returncode
    assert two.stdout.replace(b"c2", b"c1") == one.stdout  # the store's name is printed
    assert two.stderr.replace(b"c2", b"c1") == one.stderr
    rejects = (floor / "c1" / "rejects.jsonl").read_bytes()
    assert b"corrupt Avro container after record" in rejects
    assert (floor / "c2" / "rejects.jsonl").read_bytes() == rejects
    assert store_rows(floor / "c2", floor) == store_rows(floor / "c1", floor)


def test_a_worker_builds_its_own_records_as_fastavro_reads_them(
        floor: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker's events, framed and built in C, are those one process reads; and a
    block the builder refuses is read whole with fastavro, to the same events."""
    files = [floor / "floor" / "events.avro"]

    def shard(k: int) -> list[object]:
        s = _Shard(files, k, 2, lambda at, kind, x: None, lambda upto: None)
        return [(s.at, ev) for ev in s.events()]

    framed = [shard(0), shard(1)]
    with open(files[0], "rb") as f:
        every = list(avro.read_container(f))
    assert 0 < len(framed[0]) < len(every) and len(framed[0]) + len(framed[1]) == len(every)
    merged = [ev for _, ev in sorted(framed[0] + framed[1], key=lambda x: x[0])]
    assert merged == every
    assert [ev.raw for ev in merged] == [ev.raw for ev in every]

    monkeypatch.setattr(avro.ContainerBlock, "pick", lambda self, ours, decide: None)
    monkeypatch.setattr(avro.ContainerBlock, "events", lambda self: None)
    assert [shard(0), shard(1)] == framed


def test_jobs_must_be_positive(floor: Path) -> None:
    r = audit(floor, 0, "z", "all.jsonl")
    assert r.returncode == 2
    assert b"--jobs must be 1 or more" in r.stderr


def test_owners_share_tables_in_order_of_first_sight() -> None:
    o = _Owners(3)
    assert [o.of(t) for t in ("b", "a", "b", "c", "d", None, "a")] == [0, 1, 0, 2, 0, 0, 1]
    assert o.rank == {"b": 0, "a": 1, "c": 2, "d": 3}


def test_owners_share_the_planned_tables_by_their_records() -> None:
    o = _Owners(2)
    o.plan({"x": 10, "y": 50, "z": 30, "w": 20})  # busiest first, to the least loaded
    assert [o.of(t) for t in ("x", "y", "z", "w")] == [0, 0, 1, 1]
    assert o.load == [60, 50]
    assert o.of("late") == 1 and o.load == [60, 77]  # a later table: the typical load


def test_merge_waits_for_every_worker_to_pass_a_tag() -> None:
    m = _Merge(2)
    m.add(0, [(5, 0, "violation", "w0@5"), (9, 1, "violation", "w0@9")], 9)
    assert list(m.ready()) == []  # worker 1 may still find something before 5
    m.add(1, [(7, 0, "round", "w1@7")], 6)
    assert list(m.ready()) == [("violation", "w0@5")]
    m.add(1, [], 100)
    assert list(m.ready()) == [("round", "w1@7"), ("violation", "w0@9")]


def test_workers_are_forked_only_from_a_process_of_one_thread() -> None:
    """A process that runs one thread forks its workers (they start with its modules
    loaded); one that runs more (chDB's, a caller's) starts them from a fork server,
    as a forked copy of a threaded process can deadlock."""
    code = ("import threading; from pitwatch.audit.parallel import _context; "
            "print(_context().get_start_method()); done = threading.Event(); "
            "threading.Thread(target=done.wait).start(); "
            "print(_context().get_start_method()); done.set()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert out.stdout.split() == [b"fork", b"forkserver"]
