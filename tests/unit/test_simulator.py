"""The floor simulator (producers/): clean output.

Determinism, the whole vocabulary, the devices' records, the procedure's shape and
money conservation, on floors dealt without faults.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import pytest

from pitwatch.blackjack import FREE_MARKERS
from pitwatch.events.avro import digest, read_container
from pitwatch.events.jsonl import loads
from pitwatch.events.model import (
    PAYLOAD_TYPES,
    CardDealt,
    Checkpoint,
    Event,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    RoundStarted,
    TableOpened,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from pitwatch.producers import table as table_mod
from pitwatch.producers.floor import floor_tables
from pitwatch.producers.simulate import Floor, command, simulate_floor

Key = tuple[str, int, int, str]


@pytest.fixture(scope="module")
def floor7() -> list[Event]:
    """The floor of the README: 12 tables, 150 rounds each, seed 7, no faults."""
    events, truth = simulate_floor(12, 150, 7)
    assert truth == []
    return events


def by_round(events: list[Event]) -> dict[str, list[Event]]:
    rounds: dict[str, list[Event]] = defaultdict(list)
    for ev in events:
        if ev.round_id is not None:
            rounds[ev.round_id].append(ev)
    return rounds


# --- the vocabulary and the floor -------------------------------------------------------


def test_every_event_type_and_every_game(floor7: list[Event]) -> None:
    # no table of the floor peeks: HoleCardChecked is dealt at a PEEK table
    # (tests/unit/test_hole_card_checked.py); seat events come only from a profiled
    # table asked for them (tests/unit/test_seat_events.py)
    assert {ev.type for ev in floor7} == set(PAYLOAD_TYPES) - {
        "HoleCardChecked", "PlayerSeated", "PlayerLeft"}
    opened = [ev.payload for ev in floor7 if isinstance(ev.payload, TableOpened)]
    assert len(opened) == 12
    assert {(p.jurisdiction, p.game) for p in opened} == {
        ("NJ", "BLACKJACK"), ("NJ", "BLACKJACK_SWITCH"), ("PA", "FREE_BET_BLACKJACK"),
        ("NZ", "BLACKJACK")}
    assert len(by_round(floor7)) == 12 * 150


def test_posted_rules() -> None:
    tables = floor_tables(20)
    for t in tables:
        r = t.rules
        assert 1000 <= r.min_wager <= 2500 and r.chip_unit in (100, 500)
        assert r.min_wager % r.chip_unit == 0 and r.max_wager > r.min_wager
        assert not (r.surrender and r.bonus_wager)
        if t.game == "BLACKJACK_SWITCH":
            assert r.blackjack_pays == (1, 1) and r.dealer_hits_soft_17 and not r.surrender
        if t.game == "FREE_BET_BLACKJACK":
            assert r.push22_wager and r.even_money and not r.dealer_hits_soft_17
        if t.jurisdiction == "NZ":
            assert r.hole_card == "NONE" and r.even_money
    nj = [t.rules for t in tables if t.jurisdiction == "NJ" and t.game == "BLACKJACK"]
    assert any(r.surrender for r in nj)
    assert any(r.bonus_wager and r.bonus_wager_max for r in nj)
    assert any(not r.surrender and not r.bonus_wager for r in nj)
    assert sum(r.surrender for r in nj) > len(nj) / 2
    assert [t.table_id for t in tables[:4]] == ["AC-BJ-01", "AC-SW-02", "PH-FB-03", "AK-BJ-04"]


def test_filters() -> None:
    nz = floor_tables(5, jurisdiction="NZ")
    assert {(t.jurisdiction, t.game) for t in nz} == {("NZ", "BLACKJACK")}
    assert {t.game for t in floor_tables(4, game="BLACKJACK")} == {"BLACKJACK"}
    assert {t.jurisdiction for t in floor_tables(4, jurisdiction="nj")} == {"NJ"}
    with pytest.raises(ValueError):
        floor_tables(3, jurisdiction="PA", game="BLACKJACK_SWITCH")
    with pytest.raises(ValueError):
        Floor(2, 0, 1)
    with pytest.raises(ValueError):
        Floor(2, 3, 1, inject=1.5)


# --- the record ---------------------------------------------------------------------


def test_seq_contiguous_per_device(floor7: list[Event]) -> None:
    seqs: dict[str, list[int]] = defaultdict(list)
    for ev in floor7:
        seqs[ev.device_id].append(ev.seq)
    for device, s in seqs.items():
        assert s == list(range(1, len(s) + 1)), device
    assert {d.rsplit("-", 1)[1] for d in seqs} == {"console", "shoe", "reader", "rfid"}
    assert len({ev.event_id for ev in floor7}) == len(floor7)


def test_digest_chain_per_device() -> None:
    events, _ = simulate_floor(4, 40, 11)
    last: dict[str, bytes] = {}
    for ev in events:
        assert ev.prev_digest == last.get(ev.device_id), (ev.device_id, ev.seq)
        last[ev.device_id] = digest(ev)


def test_table_events_between_rounds(floor7: list[Event]) -> None:
    open_round: dict[str, str | None] = defaultdict(lambda: None)
    for ev in floor7:
        t = ev.table_id
        if isinstance(ev.payload, Checkpoint):  # a device's record, in the device's round
            assert ev.round_id is None or ev.round_id.startswith(t + "-")
            continue
        if ev.round_id is None:
            assert ev.type in ("TableOpened", "ShoeLoaded")
            assert open_round[t] is None, "a table event inside a round"
        elif isinstance(ev.payload, RoundStarted):
            assert open_round[t] is None
            assert ev.round_id.startswith(t + "-")
            open_round[t] = ev.round_id
        else:
            assert open_round[t] == ev.round_id
            if isinstance(ev.payload, RoundEnded):
                open_round[t] = None
    assert all(r is None for r in open_round.values())


def test_timestamps_rise_per_table(floor7: list[Event]) -> None:
    last: dict[str, int] = {}
    for ev in floor7:
        assert ev.ts > last.get(ev.table_id, 0)
        last[ev.table_id] = ev.ts


def test_tables_are_independent() -> None:
    small, _ = simulate_floor(2, 15, 3, inject=0.3)
    large, _ = simulate_floor(5, 15, 3, inject=0.3)
    first = [ev for ev in small if ev.table_id == "AC-BJ-01"]
    assert first == [ev for ev in large if ev.table_id == "AC-BJ-01"]


# --- the procedure and the money ----------------------------------------------------------


def test_cards_are_a_real_shoe(floor7: list[Event]) -> None:
    """No card more often than the shoe's decks hold; every shoe starts afresh."""
    decks: dict[str, int] = {}
    counts: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for ev in floor7:
        p = ev.payload
        if ev.type == "ShoeLoaded":
            decks[ev.table_id] = p.decks  # type: ignore[union-attr]
            counts[ev.table_id] = Counter()
        elif isinstance(p, CardDealt):
            c = counts[ev.table_id]
            c[(p.rank, p.suit)] += 1
            assert c[(p.rank, p.suit)] <= decks[ev.table_id]


def test_wagers_in_chips_and_limits(floor7: list[Event]) -> None:
    rules = {ev.table_id: ev.payload.rules for ev in floor7
             if isinstance(ev.payload, TableOpened)}
    for ev in floor7:
        p = ev.payload
        if isinstance(p, WagerPlaced):
            r = rules[ev.table_id]
            assert p.amount > 0 and p.amount % r.chip_unit == 0, ev
            if p.kind == "MAIN":
                assert r.min_wager <= p.amount <= r.max_wager


def _settlements(events: list[Event]) -> tuple[dict[Key, int], dict[Key, list[object]]]:
    placed: dict[Key, int] = {}
    settled: dict[Key, list[object]] = defaultdict(list)
    for ev in events:
        p = ev.payload
        if isinstance(p, WagerPlaced | PayoutMade | WagerCollected | WagerReturned):
            key = (ev.round_id or "", p.seat, p.hand, p.kind)
            if isinstance(p, WagerPlaced):
                assert key not in placed, f"two {p.kind} wagers on one hand: {key}"
                placed[key] = p.amount
            else:
                settled[key].append(p)
    return placed, settled


def test_money_is_conserved(floor7: list[Event]) -> None:
    """Each wager ends exactly one way: collected whole, returned whole, paid (the
    stake stays), or surrendered (half collected, half returned); a Free Bet marker that
    does not win moves no money at all (settle_free_wager, the one marker contract)."""
    placed, settled = _settlements(floor7)
    surrendered = {(ev.round_id, p.seat, p.hand) for ev in floor7
                   if isinstance(p := ev.payload, PlayerDecision) and p.decision == "SURRENDER"}
    assert set(settled) <= set(placed), "money moved on a wager never placed"
    ways: Counter[str] = Counter()
    for key, amount in placed.items():
        moves = settled.get(key, [])
        kinds = [type(m).__name__ for m in moves]
        if kinds == ["WagerCollected"] and moves[0].amount == amount:  # type: ignore[attr-defined]
            ways["lost"] += 1
        elif kinds == ["WagerReturned"] and moves[0].amount == amount:  # type: ignore[attr-defined]
            ways["push"] += 1
        elif kinds == ["PayoutMade"] and moves[0].amount > 0:  # type: ignore[attr-defined]
            ways["won"] += 1
        elif kinds == [] and key[3] in FREE_MARKERS:  # the house's marker, not money
            ways["marker taken back"] += 1
        elif kinds == ["WagerCollected", "WagerReturned"] and key[3] == "MAIN" \
                and key[:3] in surrendered:
            collected, returned = (m.amount for m in moves)  # type: ignore[attr-defined]
            assert (collected, returned) == (amount // 2, amount - amount // 2)
            ways["surrendered"] += 1
        else:
            raise AssertionError(f"{key} placed {amount}, settled {moves}")
    assert min(ways.values()) > 0 and len(ways) == 5
    kinds_seen = {k[3] for k in placed}
    assert {"MAIN", "INSURANCE", "BONUS", "MATCH", "PUSH22", "DOUBLE", "SPLIT",
            "FREE_DOUBLE", "FREE_SPLIT"} <= kinds_seen


def test_blackjack_and_winnings_paid_at_posted_odds(floor7: list[Event]) -> None:
    """A main wager's win is 1 to 1 or the posted blackjack ratio; insurance 2 to 1."""
    rules = {ev.table_id: ev.payload.rules for ev in floor7
             if isinstance(ev.payload, TableOpened)}
    placed, settled = _settlements(floor7)
    for key, moves in settled.items():
        p = moves[0]
        if not isinstance(p, PayoutMade):
            continue
        table = key[0].rsplit("-", 1)[0]
        r, stake = rules[table], placed[key]
        if key[3] in ("MAIN", "SPLIT", "DOUBLE", "FREE_DOUBLE", "FREE_SPLIT"):
            bj = stake * r.blackjack_pays.num // r.blackjack_pays.den
            assert p.amount in (stake, bj), (key, stake, p.amount)
        elif key[3] == "INSURANCE":
            assert p.amount == stake * 2


# --- determinism and the command ----------------------------------------------------------


def _run(tmp: Path, *argv: str) -> tuple[int, Path]:
    parser = argparse.ArgumentParser()
    command.configure(parser)
    args = parser.parse_args([*argv, "--out", str(tmp)])
    return command.run(args), tmp


def test_same_seed_same_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("--tables", "5", "--rounds", "25", "--seed", "42", "--inject", "0.3", "--avro")
    rc1, a = _run(tmp_path / "a", *argv)
    rc2, b = _run(tmp_path / "b", *argv)
    assert rc1 == rc2 == 0
    for name in ("events.jsonl", "events.avro", "truth.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    _, c = _run(tmp_path / "c", *argv[:5], "43", *argv[6:])
    assert (a / "events.jsonl").read_bytes() != (c / "events.jsonl").read_bytes()
    assert (a / "truth.jsonl").read_bytes() != (c / "truth.jsonl").read_bytes()
    out = capsys.readouterr().out
    assert "5 tables x 25 rounds" in out and "injected" in out


def test_same_bytes_in_another_process(tmp_path: Path) -> None:
    """Nothing depends on the process: not Python's hash seed, not os.urandom."""
    code = ("import sys; from pitwatch.producers.simulate import main; "
            "sys.exit(main(sys.argv[1:]))")
    argv = ["--tables", "3", "--rounds", "6", "--seed", "5", "--inject", "0.5", "--avro",
            "--quiet"]
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", code, *argv, "--out", str(tmp_path / seed)],
                       check=True, env=env)
    for name in ("events.jsonl", "events.avro", "truth.jsonl"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()


def test_command_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(tmp_path, "--tables", "4", "--rounds", "20", "--seed", "3", "--inject",
                   "0.5", "--jurisdiction", "NJ", "--avro")
    assert rc == 0
    lines = (out / "events.jsonl").read_bytes().splitlines()
    events = [loads(line) for line in lines]
    with open(out / "events.avro", "rb") as f:
        assert list(read_container(f)) == events
    truth = [orjson.loads(line) for line in (out / "truth.jsonl").read_bytes().splitlines()]
    assert truth and all(list(t) == ["code", "table_id", "round_id", "event_id"] for t in truth)
    assert {ev.table_id[:2] for ev in events} == {"AC"}
    summary = capsys.readouterr().out
    assert "80 rounds" in summary and f"{len(events):,} events" in summary
    for code, n in Counter(t["code"] for t in truth).items():
        assert f"{n:5d}  {code}" in summary


def test_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _ = _run(tmp_path, "--tables", "1", "--rounds", "2", "--quiet")
    assert rc == 0 and capsys.readouterr().out == ""


def test_generator_matches_lists() -> None:
    floor = Floor(3, 10, 5, 0.5)
    gen = list(floor.events())
    events, truth = simulate_floor(3, 10, 5, 0.5)
    assert gen == events and floor.truth == truth
    assert floor.event_count == len(events) and floor.rounds_done == 30


def test_shoe_running_out_mid_round() -> None:
    """A round that would empty the shoe is dealt from a new one (ShoeLoaded first)."""
    cfg = floor_tables(2)[1]  # Blackjack Switch: the most cards a round
    run = table_mod.TableRun(cfg, seed=1, rounds=3, inject=0.0, truth=[])
    run.opening()
    run.shoe.cut = len(run.shoe.cards)  # the cut card never comes out
    run.shoe.pos = len(run.shoe.cards) - 3  # three cards left
    events = [e for e in run.play(1) if e.type != "Checkpoint"]
    assert events[0].type == "ShoeLoaded" and events[0].payload.shoe_id.endswith("S0002")  # type: ignore[union-attr]
    assert events[1].type == "RoundStarted" and events[-1].type == "RoundEnded"
