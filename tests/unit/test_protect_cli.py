"""`pitwatch protect FILES`: the audit's output shapes (a summary and a table, or one
JSON object a line) for observations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pitwatch.cli import main
from pitwatch.events.files import write_jsonl
from pitwatch.producers.players import SimTable, events, make_player


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    seats = {1: "counter-8", 3: "flat", 4: "holecard"}
    out = []
    for v in range(2):
        players = {s: make_player(p, 5, s, v) for s, p in seats.items()}
        out += events(SimTable(v, 5, players, flash=0.3, variant=v), 200, 5)
    d = tmp_path_factory.mktemp("floor")
    write_jsonl(d / "floor.jsonl", out)
    return d


def test_table_format(floor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protect", str(floor)]) == 0
    out = capsys.readouterr().out
    assert "rounds at 2 tables, 0 violations" in out
    assert "COUNT_CORRELATED_BETTING" in out and "HOLE_CARD_PLAY" in out
    assert "STRENGTH  CODE" in out


def test_jsonl_format_names_seat_sessions(floor: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    assert main(["protect", str(floor), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r["code"], r["seat"]) for r in rows} == {
        ("COUNT_CORRELATED_BETTING", 1), ("HOLE_CARD_PLAY", 4)}
    assert all(r["inferred"] and r["weight_rounds"] for r in rows)
    assert len({r["observation_id"] for r in rows}) == len(rows) == 4


def test_no_events_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    assert main(["protect", str(tmp_path)]) == 2
    assert "nothing read" in capsys.readouterr().err


def test_a_redelivered_copy_is_read_once(floor: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = (floor / "floor.jsonl").read_text()
    lines = text.splitlines(keepends=True)
    (tmp_path / "floor.jsonl").write_text("".join(lines[:200] + lines[100:]))
    assert main(["protect", str(tmp_path), "--format", "jsonl"]) == 0
    again = capsys.readouterr().out
    assert main(["protect", str(floor), "--format", "jsonl"]) == 0
    assert again == capsys.readouterr().out
