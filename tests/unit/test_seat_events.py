"""Seat events (schema version 6): who sits where, in the contract.

docs/events.md: "`PlayerSeated` ... a rated player's id read from a loyalty card, or an
anonymous session id ... Appended as the union's last branches, so every event of
versions 1-5 keeps its bytes and digest", and "Seat events are not round events: they
never enter a round, its rule checks or the time rule"."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import orjson
import pytest

from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import DecodeError, decode_single, digest, encode, encode_single, to_datum
from pitwatch.events.jsonl import InvalidEvent, dumps, loads
from pitwatch.events.model import Event, PlayerLeft, PlayerSeated
from pitwatch.events.schema import released_writers, schemas_dir, strip_logical, writer_schemas
from pitwatch.packs.registry import select
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.producers.simulate import Floor
from pitwatch.protect import protect
from pitwatch.protect.rounds import read_floor
from tests.rounds import TableScript, audit, codes


def _schema(version: int) -> dict[str, Any]:
    path = schemas_dir() / "avro" / "released" / f"v{version}" / "TableEvent.avsc"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _branches(schema: Any) -> set[str]:
    payload = next(f for f in schema["fields"] if f["name"] == "payload")
    return {b["name"].rsplit(".", 1)[-1] for b in payload["type"]}


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_v6_keeps_every_earlier_event_s_bytes_and_digest(version: int) -> None:
    """Each event of a signed seeded floor that version `version` can write is the same
    bytes, so the same digest, under it as under v6 (the current writer)."""
    raw = _schema(version)
    old = fastavro.parse_schema(strip_logical(raw))
    branches = _branches(raw)
    seen = 0
    for ev in Floor(4, 6, seed=3).events():
        datum = to_datum(ev)
        if datum["payload"][0].rsplit(".", 1)[-1] not in branches:
            continue
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, old, datum)
        assert buf.getvalue() == encode(ev), ev
        seen += 1
    assert seen > 500


def test_v6_is_v5_with_two_payloads_appended() -> None:
    v5, v6 = _schema(5), _schema(6)
    u5, u6 = (next(f for f in s["fields"] if f["name"] == "payload")["type"] for s in (v5, v6))
    assert u6[:-2] == u5 and [b["name"] for b in u6[-2:]] == ["PlayerSeated", "PlayerLeft"]
    assert v5["fields"][:-1] == v6["fields"][:-1]
    assert v6["version"] == 6


def test_a_v5_message_reads_with_its_digest() -> None:
    """A device not yet upgraded still writes under v5: its message reads, its bytes and
    digest as written."""
    v5 = next(w for w in writer_schemas().values() if w.source.endswith("v5/TableEvent.avsc"))
    ev = next(iter(Floor(1, 1, seed=3, sign=False).events()))
    got = decode_single(b"\xc3\x01" + v5.crc + encode(ev))
    assert got == ev and digest(got) == digest(ev) and got.writer == v5.crc


@pytest.mark.parametrize("payload", [PlayerSeated(3, "LOYAL-000172", "RATED"),
                                     PlayerSeated(7, "anon-7f3a", "ANONYMOUS"),
                                     PlayerLeft(3)])
def test_a_seat_event_in_each_form(payload: PlayerSeated | PlayerLeft) -> None:
    ev = Event("e-1", "T-01", "T-01-console", 9, 5, None, b"\x01" * 32, payload)
    assert decode_single(encode_single(ev)) == ev
    assert loads(dumps(ev)) == ev
    assert f'"type":"{type(payload).__name__}"'.encode() in dumps(ev)


def test_a_player_kind_outside_the_vocabulary_is_refused() -> None:
    line = orjson.loads(dumps(Event("e-1", "T-01", "T-01-console", 9, 5, None, b"\x01" * 32,
                                    PlayerSeated(3, "P1", "RATED"))))
    with pytest.raises(InvalidEvent, match="player_kind"):
        loads(orjson.dumps({**line, "player_kind": "VIP"}))


def _clean_round(sc: TableScript, n: int) -> None:
    """Seat 1 (1,000) stands on 10 9 against a 7 that stands on 17: paid."""
    sc.start(n, [1])
    sc.wager(1, "MAIN", 1000)
    sc.deal({1: ("10", "9")}, up="7", hole="10")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.pay(1, "MAIN", 1000)
    sc.clear(1)
    sc.finish_round()


@pytest.mark.parametrize("seat", [0, 33])
def test_a_seat_outside_the_table_is_refused_like_any_bad_payload(seat: int) -> None:
    """'a seat event for a seat outside 1..32 is refused where it is decoded' (as any
    payload out of the contract's ranges: EVENT_REFUSED, its place in the record kept)"""
    sc = TableScript.opened("nj_blackjack")
    _clean_round(sc, 1)
    bad = sc.emit(PlayerSeated(seat, "P1", "RATED"), device=sc.device("console"),
                  round_id=None)
    _clean_round(sc, 2)
    with pytest.raises(DecodeError) as e:
        decode_single(encode_single(bad))
    refused = e.value.event
    assert refused is not None and "PlayerSeated.seat" in (refused.refused or "")
    stream = [refused if x is bad else x for x in sc.events]
    assert codes(audit(stream)) == ["EVENT_REFUSED"]


def _run(stream: list[Event], timeout_ms: int | None = None
         ) -> tuple[list[Violation], list[RoundSummary]]:
    found: list[Violation] = []
    done: list[RoundSummary] = []
    a = Auditor(select, found.append, done.append, round_timeout_ms=timeout_ms,
                released=released_writers())
    for ev in stream:
        a.feed(ev)
    a.finish()
    return found, done


def test_seat_events_never_enter_a_round_its_checks_or_the_time_rule() -> None:
    """Seated before a round, seated and leaving during one (the round's id, a device
    clock minutes ahead), leaving after: the record is clean and the round complete."""
    sc = TableScript.opened("nj_blackjack")
    console = sc.device("console")
    sc.emit(PlayerSeated(1, "LOYAL-1", "RATED"), device=console, round_id=None)
    sc.start(1, [1])
    sc.wager(1, "MAIN", 1000)
    ts = sc.ts
    sc.ts += 600_000  # ten minutes ahead of the round: a time-out of 60 s is not tripped
    sc.emit(PlayerSeated(2, "anon-2", "ANONYMOUS"), device=console)
    sc.emit(PlayerLeft(2), device=console)
    sc.ts = ts
    sc.deal({1: ("10", "9")}, up="7", hole="10")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.pay(1, "MAIN", 1000)
    sc.clear(1)
    sc.finish_round()
    sc.emit(PlayerLeft(1), device=console, round_id=None)
    found, done = _run(sc.events, timeout_ms=60_000)
    assert found == []
    in_round = [e for e in sc.events if e.round_id == "T-01-000001"]
    assert len(in_round) == 15  # two of them seat events, which the round never counts
    assert [(r.round_id, r.complete, r.events) for r in done] == [("T-01-000001", True, 13)]


def test_a_seat_event_s_round_events_without_it_are_judged_the_same() -> None:
    """The same round with and without seat events: the same summary, the same
    (no) findings."""
    with_seats = TableScript.opened("nj_blackjack")
    with_seats.emit(PlayerSeated(1, "LOYAL-1", "RATED"), device=with_seats.device("console"),
                    round_id=None)
    _clean_round(with_seats, 1)
    without = TableScript.opened("nj_blackjack")
    _clean_round(without, 1)
    (f1, d1), (f2, d2) = _run(with_seats.events), _run(without.events)
    assert f1 == f2 == []
    assert [(r.events, r.paid, r.complete) for r in d1] == [(r.events, r.paid, r.complete)
                                                           for r in d2]


# --- the simulator and the sessions ------------------------------------------------------

SEATS = {1: "counter-8", 2: "flat", 4: "martingale"}


def _table(seated: bool) -> SimTable:
    return SimTable(2, 47, {s: make_player(p, 47, s, 2) for s, p in SEATS.items()},
                    seated=seated)


def test_the_simulator_emits_seat_events_only_when_asked() -> None:
    plain, seated = events(_table(False), 40, 47), events(_table(True), 40, 47)
    assert not any(type(e.payload) in (PlayerSeated, PlayerLeft) for e in plain)
    seat = [e.payload for e in seated if type(e.payload) in (PlayerSeated, PlayerLeft)]
    assert seat == [PlayerSeated(1, "LOYAL-00002-1", "RATED"),
                    PlayerSeated(2, "SIM-BJ-00002/ANON/2", "ANONYMOUS"),
                    PlayerSeated(4, "SIM-BJ-00002/ANON/4", "ANONYMOUS"),
                    PlayerLeft(1), PlayerLeft(2), PlayerLeft(4)]
    # the rounds are dealt the same: the seat events are added, nothing else changes
    rounds = [(e.round_id, e.payload) for e in plain if e.round_id is not None]
    assert [(e.round_id, e.payload) for e in seated if e.round_id is not None] == rounds
    found, done = _run(seated)
    assert found == [] and len(done) == 40 and all(r.complete for r in done)


def test_sessions_run_from_the_seat_events_and_name_the_player() -> None:
    floor = read_floor(events(_table(True), 40, 47)).floor
    stays = floor.seatings["SIM-BJ-00002"]
    assert [(s.seat, s.player_kind, s.start, s.end) for s in stays] == [
        (1, "RATED", 0, 40), (2, "ANONYMOUS", 0, 40), (4, "ANONYMOUS", 0, 40)]
    plain = protect(events(_table(False), 300, 47))
    seated = protect(events(_table(True), 300, 47))
    counted = [o for o in seated if o.code == "COUNT_CORRELATED_BETTING"]
    assert counted and all(not o.inferred for o in counted)
    assert counted[0].player_id == "LOYAL-00002-1" and counted[0].player_kind == "RATED"
    assert counted[0].to_json()["player_id"] == "LOYAL-00002-1"
    # the same judgement either way; only where the session comes from differs
    assert [(o.code, o.subject, o.value) for o in plain] == \
        [(o.code, o.subject, o.value) for o in seated]
    assert all(o.inferred for o in plain if o.seat is not None)
