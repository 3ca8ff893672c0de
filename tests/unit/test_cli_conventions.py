"""The command's conventions, as a user meets them: exit codes for cron and CI, one
clear line for bad input and bad SQL, a read-only `query` that exports, quiet closed
pipes, and a missing optional extra that names its `pip install`."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.cli import commands_for, missing_extra
from pitwatch.store.readonly import NotReadOnly, check_read_only


def pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def shift(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("shift")
    r = pitwatch("simulate", "--tables", "2", "--rounds", "20", "--seed", "26", "--inject",
                 "0.3", "--out", str(d / "floor"), "--quiet", cwd=d)
    assert r.returncode == 0, r.stderr
    a = pitwatch("audit", str(d / "floor"), "--data", str(d / "data"), "--quiet", cwd=d)
    assert a.returncode == 0, a.stderr
    return d


def _severities(shift: Path) -> set[str]:
    q = pitwatch("query", "--data", str(shift / "data"), "--format", "jsonl",
                 "SELECT DISTINCT severity FROM violations FINAL", cwd=shift)
    return {json.loads(x)["severity"] for x in q.stdout.splitlines()}


def test_fail_on_sets_the_exit_code(shift: Path) -> None:
    found = _severities(shift)
    assert "CRITICAL" in found or "HIGH" in found
    worst = "CRITICAL" if "CRITICAL" in found else "HIGH"
    r = pitwatch("audit", str(shift / "floor"), "--no-store", "--quiet", "--fail-on", worst,
                 cwd=shift)
    assert r.returncode == 1, r.stderr
    # a clean floor passes the strictest threshold
    clean = shift / "clean"
    pitwatch("simulate", "--tables", "1", "--rounds", "5", "--seed", "3", "--out", str(clean),
             "--quiet", cwd=shift)
    r = pitwatch("audit", str(clean), "--no-store", "--quiet", "--fail-on", "LOW", cwd=shift)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("content", ["", "garbage\n{\"type\": \"Nope\"}\n"])
def test_empty_or_garbage_input_exits_2_with_one_line(tmp_path: Path, content: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(content)
    r = pitwatch("audit", str(src), "--data", str(tmp_path / "d"), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("pitwatch audit: nothing audited:")
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(("sql", "reason"), [
    ("DROP TABLE events", "DROP refused"),
    ("INSERT INTO violations SELECT * FROM violations", "INSERT refused"),
    ("ALTER TABLE events DELETE WHERE 1", "ALTER refused"),
    ("SELECT * FROM file('/etc/passwd', 'LineAsString')", "file() refused"),
    ("SELECT * FROM url('http://127.0.0.1/', 'CSV')", "url() refused"),
    ("SELECT 1; DROP TABLE events", "one statement"),
    ("SELECT 1 INTO OUTFILE 'x.csv'", "INTO OUTFILE refused"),
])
def test_query_refuses_anything_but_reading(sql: str, reason: str) -> None:
    with pytest.raises(NotReadOnly, match=re.escape(reason)):
        check_read_only(sql)


def test_query_lets_reads_through() -> None:
    check_read_only("SELECT 'DROP TABLE x; file(' AS s -- DELETE\n FROM events")
    check_read_only("  with 1 AS a SELECT a;")
    check_read_only("DESCRIBE TABLE events")


def test_query_refuses_in_one_line_and_the_store_is_untouched(shift: Path) -> None:
    data = str(shift / "data")
    r = pitwatch("query", "--data", data, "DROP TABLE events", cwd=shift)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    bad = pitwatch("query", "--data", data, "SELECT no_such_column FROM events", cwd=shift)
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("pitwatch query: ")
    n = pitwatch("query", "--data", data, "--format", "jsonl",
                 "SELECT count() AS n FROM events", cwd=shift)
    assert int(json.loads(n.stdout)["n"]) > 0


def test_query_exports_csv_and_json(shift: Path) -> None:
    data = str(shift / "data")
    sql = "SELECT round_id, wagered, seats FROM rounds FINAL ORDER BY round_id LIMIT 3"
    c = pitwatch("query", "--data", data, "--format", "csv", sql, cwd=shift)
    rows = list(csv.DictReader(io.StringIO(c.stdout)))
    j = pitwatch("query", "--data", data, "--format", "json", sql, cwd=shift)
    objs = json.loads(j.stdout)
    assert len(rows) == len(objs) == 3
    assert [r["round_id"] for r in rows] == [o["round_id"] for o in objs]
    assert [json.loads(r["seats"]) for r in rows] == [o["seats"] for o in objs]


def test_a_closed_pipe_is_quiet(shift: Path) -> None:
    cmd = (f"{sys.executable} -m pitwatch.cli query --data {shift / 'data'} "
           "'SELECT body FROM events' | head -1")
    r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                       timeout=120)
    assert r.stdout.count("\n") == 1
    assert r.stderr == "", r.stderr
    assert r.returncode == 0


def test_a_missing_extra_names_the_pip_install() -> None:
    e = ModuleNotFoundError("No module named 'reportlab'", name="reportlab")
    assert missing_extra(e) == ("needs reportlab, in the optional extra 'investigate': "
                                "pip install 'pitwatch[investigate]'")
    e = ModuleNotFoundError("No module named 'clickhouse_driver'", name="clickhouse_driver")
    assert "pip install 'pitwatch[stream]'" in missing_extra(e)


def test_a_command_named_imports_no_other_stage() -> None:
    """`pitwatch audit` (and `query`) start without importing the stages; a stage's
    command loads that stage alone; help and a name not known list every command."""
    core = {"audit", "query", "protect"}
    assert {c.name for c in commands_for(["audit", "floor/"])} == core
    assert {c.name for c in commands_for(["simulate"])} == core | {"simulate"}
    every = {c.name for c in commands_for([])}
    assert {"demo", "simulate", "replay", "worker", "produce", "investigate"} <= every
    assert {c.name for c in commands_for(["--help"])} == every
    assert {c.name for c in commands_for(["bogus"])} == every
