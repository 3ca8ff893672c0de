"""`pitwatch protect FILES --data DIR`: the observations into the store's
`observations` table (schemas/clickhouse/015_observations.sql), one row per
observation id, so storing the same record again changes nothing."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from pitwatch.cli import main
from pitwatch.events.files import write_jsonl
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.observation import Observation
from pitwatch.protect.stored import observation_row
from pitwatch.store.embedded import EmbeddedStore


def test_a_row_holds_what_the_json_form_says() -> None:
    o = Observation("HOLE_CARD_PLAY", "SEAT_SESSION", "T1", "T1/4/T1-000001", 4, None,
                    "log_lr", 7.5, None, 1808.0, 0.12, 100, ("T1-000009",), False, "m",
                    (("right", 9.0),), "LOYAL-1", "RATED")
    row = observation_row(o)
    assert row["observation_id"] == o.to_json()["observation_id"]
    assert math.isnan(row["p_value"]) and row["likelihood_ratio"] == 1808.0
    assert (row["seat"], row["dealer_id"], row["inferred"]) == (4, "", 0)
    assert (row["player_id"], row["player_kind"]) == ("LOYAL-1", "RATED")
    assert json.loads(row["details"]) == {"right": 9.0}


def test_protect_data_stores_each_observation_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    players = {s: make_player(p, 5, s, 0) for s, p in {1: "counter-8", 3: "flat"}.items()}
    write_jsonl(tmp_path / "floor.jsonl", events(SimTable(0, 5, players), 300, 5))
    data = tmp_path / "data"
    for _ in range(2):  # the same record twice: the same rows
        assert main(["protect", str(tmp_path / "floor.jsonl"), "--format", "jsonl",
                     "--data", str(data)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed and printed[:len(printed) // 2] == printed[len(printed) // 2:]
    store = EmbeddedStore(data)
    try:
        rows = store.query("SELECT observation_id, code, seat, inferred, value "
                           "FROM observations FINAL ORDER BY observation_id")
    finally:
        store.close()
    want = sorted({(r["observation_id"], r["code"], r["seat"], int(r["inferred"]))
                   for r in printed})
    assert [(r["observation_id"], r["code"], r["seat"], r["inferred"]) for r in rows] == want


def test_protect_over_a_store_judges_its_history_as_the_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With no PATH, `pitwatch protect --data DIR` reads the store's history back in its
    order of record and finds what `pitwatch protect` of the same files finds, dealer
    scopes included, writing them to the store; a stored observation it no longer gives
    (a session the worker published flagged as it stood) is withdrawn."""
    from pitwatch.protect.stored import store_observations

    players = {s: make_player(p, 5, s, 0) for s, p in {1: "counter-8", 3: "flat"}.items()}
    write_jsonl(tmp_path / "floor.jsonl", events(SimTable(0, 5, players), 150, 5))
    data = tmp_path / "data"
    assert main(["audit", str(tmp_path / "floor.jsonl"), "--data", str(data)]) in (0, 1)
    capsys.readouterr()
    stale = Observation("HOLE_CARD_PLAY", "SEAT_SESSION", "SIM-BJ-00000", "stale/3/x", 3,
                        None, "log_lr", 7.5, None, 1808.0, 0.12, 40, (), True, "m")
    store = EmbeddedStore(data)
    try:
        store_observations(store, [stale])
    finally:
        store.close()
    assert main(["protect", str(tmp_path / "floor.jsonl"), "--format", "jsonl"]) == 0
    files = capsys.readouterr().out
    assert main(["protect", "--data", str(data), "--format", "jsonl"]) == 0
    got = capsys.readouterr()
    assert got.out == files and "COUNT_CORRELATED_BETTING" in files
    assert "stored" in got.err and "1 no longer given withdrawn" in got.err
    store = EmbeddedStore(data)
    try:
        rows = store.query("SELECT observation_id FROM observations FINAL "
                           "WHERE withdrawn = 0")
    finally:
        store.close()
    assert sorted(r["observation_id"] for r in rows) == sorted(
        json.loads(line)["observation_id"] for line in files.splitlines())


def test_protect_without_paths_or_a_store_says_what_to_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protect"]) == 2
    assert "--data DIR or --clickhouse" in capsys.readouterr().err
    assert main(["protect", "--data", str(tmp_path / "none")]) == 2
    assert "no store at" in capsys.readouterr().err


def test_protect_groups_the_hold_by_the_sites_shifts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The site's clock is `pitwatch serve`'s (--tz, --gaming-day-start, --shifts); one
    it cannot use is an error naming why."""
    assert main(["protect", "--tz", "Mars/Base", str(tmp_path)]) == 2
    assert "unknown time zone 'Mars/Base'" in capsys.readouterr().err
    assert main(["protect", "--shifts", "07:00", str(tmp_path)]) == 2
    assert "the first shift must start with the gaming day" in capsys.readouterr().err


def test_a_withdrawn_row_replaces_its_observation_and_no_reader_shows_it(
        tmp_path: Path) -> None:
    """The worker's withdrawal (the same id, withdrawn 1) replaces the stored flag; the
    readers of stored observations (touching.stored, the console's pages, case folders
    through them) leave it out, and the table's other observation stays."""
    from pitwatch.console.protection import ProtectionData
    from pitwatch.protect.stored import store_observations, withdrawal
    from pitwatch.protect.touching import stored

    flag = Observation("COUNT_BETTING", "SEAT_SESSION", "T1", "T1/1/T1-000001", 1, None,
                       "z", 4.0, 1e-5, None, 0.3, 80, ("T1-000009",), True, "m")
    other = replace(flag, code="HOLE_CARD_PLAY", subject="T1/4/T1-000001", seat=4)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        store_observations(store, [flag, other])
        assert len(stored(store, ["T1"])) == 2
        store_observations(store, [withdrawal("T1", flag.scope, flag.subject, flag.code, 1)])
        assert [o["code"] for o in stored(store, ["T1"])] == ["HOLE_CARD_PLAY"]
        page = ProtectionData(store).protection_list()
        assert page["total"] == 1 and [o["code"] for o in page["observations"]] == [
            "HOLE_CARD_PLAY"]
    finally:
        store.close()
