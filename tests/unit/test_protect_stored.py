"""`pitwatch protect FILES --data DIR`: the observations into the store's
`observations` table (schemas/clickhouse/015_observations.sql), one row per
observation id, so storing the same record again changes nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pitwatch.cli import main
from pitwatch.events.files import write_jsonl
from pitwatch.protect.observation import Observation
from pitwatch.protect.stored import observation_row
from pitwatch.store.embedded import EmbeddedStore
from producers.players import SimTable, events, make_player


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
