"""The embedded main job, through the `pitwatch` command: simulate, audit into chDB,
query, replay, demo. Each command runs in its own process, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("floor")
    r = pitwatch("simulate", "--tables", "4", "--rounds", "30", "--seed", "5", "--inject",
                 "0.2", "--avro", "--out", str(d / "floor"), cwd=d)
    assert r.returncode == 0, r.stderr
    return d


def test_simulate_is_deterministic(floor: Path) -> None:
    again = floor / "again"
    r = pitwatch("simulate", "--tables", "4", "--rounds", "30", "--seed", "5", "--inject",
                 "0.2", "--avro", "--out", str(again), cwd=floor)
    assert r.returncode == 0, r.stderr
    for name in ("events.jsonl", "events.avro", "truth.jsonl"):
        assert (floor / "floor" / name).read_bytes() == (again / name).read_bytes()


def test_audit_jsonl_stores_once_and_answers_sql(floor: Path) -> None:
    data = floor / "store"
    first = pitwatch("audit", str(floor / "floor" / "events.avro"), "--format", "jsonl",
                     "--data", str(data), cwd=floor)
    assert first.returncode == 0, first.stderr
    rows = [json.loads(line) for line in first.stdout.splitlines()]
    truth = [json.loads(line) for line in (floor / "floor" / "truth.jsonl").open()]
    assert sorted((v["code"], v["round_id"]) for v in rows) == \
        sorted((t["code"], t["round_id"]) for t in truth)
    for v in rows:
        assert {"code", "severity", "table_id", "round_id", "seat", "hand", "event_id",
                "citation", "message", "pack"} <= v.keys()
    assert "audited" in first.stderr  # the summary goes to stderr in jsonl mode
    again = pitwatch("audit", str(floor / "floor" / "events.jsonl"), "--format", "jsonl",
                     "--data", str(data), cwd=floor)
    assert again.returncode == 0, again.stderr
    q = pitwatch("query", "--data", str(data), "--format", "jsonl",
                 "SELECT (SELECT count() FROM events) AS e, (SELECT count() FROM rounds) AS r,"
                 " (SELECT count() FROM violations) AS v", cwd=floor)
    assert q.returncode == 0, q.stderr
    counts = json.loads(q.stdout)
    events = sum(1 for _ in (floor / "floor" / "events.jsonl").open())
    # an event the record refused (a conflicting copy) is set aside, never stored
    refused = {json.loads(r["raw"])["event_id"] for r in map(
        json.loads, (data / "rejects.jsonl").open()) if r["source"] == "record"}
    assert refused
    assert (int(counts["e"]), int(counts["r"]), int(counts["v"])) == \
        (events - len(refused), 4 * 30, len(rows))

    rid = rows[0]["round_id"]
    rp = pitwatch("replay", rid, "--data", str(data), cwd=floor)
    assert rp.returncode == 0, rp.stdout + rp.stderr
    assert rows[0]["code"] in rp.stdout
    assert "match the stored ones" in rp.stdout


def test_a_store_another_process_holds_open_is_one_clear_line(tmp_path: Path,
                                                              floor: Path) -> None:
    """chDB locks a store's directory while a process has it open: an audit (one job or
    several) or a query on it meanwhile stops with one line that says so, status 2, and
    once the holder ends the same command works."""
    data = tmp_path / "held"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pitwatch.store.embedded import "
         "EmbeddedStore; s = EmbeddedStore(sys.argv[1]); s.setup(); print('open', "
         "flush=True); sys.stdin.read(); s.close()", str(data)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        avro = str(floor / "floor" / "events.avro")
        for args in (("audit", avro, "--jobs", "1"), ("audit", avro, "--jobs", "2"),
                     ("query", "SELECT 1")):
            r = pitwatch(*args, "--data", str(data), cwd=tmp_path)
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert r.stderr.strip().splitlines() == [
                f"pitwatch {args[0]}: chDB: the store {data} is open in another process "
                "(an audit, the console or a demo using it): wait for it to end, or give "
                "another data directory"], args
    finally:
        holder.communicate("", timeout=60)
    assert holder.returncode == 0
    r = pitwatch("query", "--data", str(data), "SELECT count() AS n FROM events",
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_a_store_chdb_cannot_open_gives_chdbs_reason_without_its_stack(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "chdb").write_text("not a directory")
    r = pitwatch("query", "--data", str(data), "SELECT 1", cwd=tmp_path)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"pitwatch query: chDB: cannot open the store {data}: ")
    assert "Not a directory" in line and "Stack trace" not in line


def test_audit_keeps_bad_lines_aside(tmp_path: Path, floor: Path) -> None:
    lines = (floor / "floor" / "events.jsonl").read_text().splitlines()[:50]
    lines.insert(10, "{broken")
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    r = pitwatch("audit", str(src), "--data", str(tmp_path / "d"), "--no-store", cwd=tmp_path)
    assert r.returncode == 0
    assert f"{src}:11: not JSON" in r.stderr
    assert "audited 50 events" in r.stdout
    rejects = [json.loads(x) for x in (tmp_path / "d" / "rejects.jsonl").open()]
    assert rejects[0]["line"] == 11 and rejects[0]["raw"] == "{broken"


def test_demo_runs_and_leaves_a_store(tmp_path: Path) -> None:
    r = pitwatch("demo", "--tables", "4", "--rounds", "20", "--data", str(tmp_path / "d"),
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "money moved wrongly" in r.stdout
    assert "faults found" in r.stdout
    q = pitwatch("query", "--data", str(tmp_path / "d"), "SELECT count() AS n FROM rounds",
                 cwd=tmp_path)
    assert q.returncode == 0 and "80" in q.stdout


def test_help_teaches() -> None:
    r = subprocess.run([sys.executable, "-m", "pitwatch.cli", "--help"], capture_output=True,
                       text=True)
    assert r.returncode == 0
    for cmd in ("demo", "simulate", "audit", "query", "replay", "produce", "worker"):
        assert cmd in r.stdout
    assert "unavailable" not in r.stderr
