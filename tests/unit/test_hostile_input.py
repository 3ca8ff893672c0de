"""Hostile input on the wire and in files (docs/events.md, "Ranges"): "An event with a
field outside these ranges, or bigger than 64 KiB, is refused where it is decoded: the
worker dead-letters it, a file reader rejects it with its line number." A table with
no TableOpened is a visible finding; the worker's live state is bounded."""

from __future__ import annotations

import asyncio
import io
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from pitwatch.audit.run import audit_events
from pitwatch.engine.violation import Violation
from pitwatch.events import limits
from pitwatch.events.avro import DecodeError, decode_single, encode_single, write_container
from pitwatch.events.files import Rejected, read_files
from pitwatch.events.jsonl import dumps, from_json, to_json
from pitwatch.events.model import (
    Event,
    PayoutMade,
    RoundEnded,
    RoundStarted,
    TableOpened,
    WagerPlaced,
)
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.processors.dead_letters import dead_letter
from pitwatch.processors.state import TableStates
from pitwatch.producers.simulate import Floor

TS = 1_796_000_000_000
WAGER = Event("00000000-0000-4000-8000-000000000001", "T1", "T1-rfid", 3, TS, "T1-000001",
              b"\x00" * 32, WagerPlaced(3, 0, "MAIN", 2500))


def hostile() -> dict[str, Event]:
    """One event per range, just outside it."""
    w = WAGER
    p = w.payload
    assert isinstance(p, WagerPlaced)
    return {
        "device id of 1 MB": replace(w, device_id="d" * 1_000_000),
        "seat 300": replace(w, payload=replace(p, seat=300)),
        "seat 0": replace(w, payload=replace(p, seat=0)),
        "hand -1": replace(w, payload=replace(p, hand=-1)),
        "negative amount": replace(w, payload=replace(p, amount=-100)),
        "amount over the contract": replace(w, payload=replace(p, amount=limits.MAX_AMOUNT + 1)),
        "negative seq": replace(w, seq=-5),
        "seq 0": replace(w, seq=0),
        "ts before 1970": replace(w, ts=-1),
        "ts after 2106": replace(w, ts=limits.MAX_TS + 1),
        "short digest": replace(w, prev_digest=b"\x01\x02"),
        "empty table id": replace(w, table_id=""),
        "200 seats": replace(w, payload=RoundStarted("D1", tuple(range(1, 201)))),
    }


@pytest.mark.parametrize("name", sorted(hostile()))
def test_the_decoder_refuses_each_out_of_range_event(name: str) -> None:
    """Streaming: decode_single raises DecodeError, which the worker dead-letters."""
    ev = hostile()[name]
    with pytest.raises(DecodeError) as e:
        decode_single(encode_single(ev))
    assert "contract" in str(e.value)


def test_the_edges_of_the_ranges_are_accepted() -> None:
    p = WAGER.payload
    assert isinstance(p, WagerPlaced)
    for ev in (replace(WAGER, payload=replace(p, seat=limits.MAX_SEAT)),
               replace(WAGER, payload=replace(p, seat=1, hand=0, amount=0)),
               replace(WAGER, payload=replace(p, amount=limits.MAX_AMOUNT)),
               replace(WAGER, seq=1, ts=0), replace(WAGER, ts=limits.MAX_TS),
               replace(WAGER, device_id="d" * limits.MAX_ID)):
        assert decode_single(encode_single(ev)) == ev


def test_a_huge_message_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(DecodeError, match="limit is 65,536"):
        decode_single(b"\xc3\x01" + b"\x00" * 8 + b"\x00" * (limits.MAX_MESSAGE_BYTES + 1))


def test_its_dead_letter_fits_the_broker() -> None:
    """The reason names the field; the dead letter stays far under Kafka's 1 MB."""
    msg = encode_single(hostile()["device id of 1 MB"])
    with pytest.raises(DecodeError) as e:
        decode_single(msg)
    letter = dead_letter(str(e.value), "table-events", 0, 7, b"T1", msg)
    assert len(letter) < 100_000
    assert "limit" in orjson.loads(letter)["reason"]


def test_files_reject_each_with_its_line_number(tmp_path: Path) -> None:
    good = [replace(WAGER, seq=s, event_id=f"00000000-0000-4000-8000-00000000000{s}")
            for s in (1, 2)]
    bad = hostile()
    lines = [dumps(good[0])] + [dumps(e) for e in bad.values()] + [dumps(good[1])]
    f = tmp_path / "events.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    rejected: list[Rejected] = []
    read = list(read_files([f], rejected.append))
    # an event out of range in its payload alone is its device's record's: given in its
    # place, marked refused (the audit raises EVENT_REFUSED: test_refused_events.py)
    payload_only = {"seat 300", "seat 0", "hand -1", "negative amount",
                    "amount over the contract", "200 seats"}
    assert read == [good[0], *(e for n, e in bad.items() if n in payload_only), good[1]]
    assert [e.refused is not None for e in read] == [False, *[True] * 6, False]
    assert any("seat: 300 is outside 1..32" in (e.refused or "") for e in read)
    lines_of = {n: k for k, n in enumerate(bad, 2)}
    assert [r.line for r in rejected] == [lines_of[n] for n in bad if n not in payload_only]
    for r in rejected:
        assert "contract" in r.reason or "limit" in r.reason, r.reason
    assert any("seq: -5" in r.reason for r in rejected)


def test_avro_files_reject_each_with_its_record_number(tmp_path: Path) -> None:
    evs = [WAGER, hostile()["seat 300"], replace(WAGER, seq=4)]
    buf = io.BytesIO()
    write_container(buf, evs)
    f = tmp_path / "events.avro"
    f.write_bytes(buf.getvalue())
    rejected: list[Rejected] = []
    read = list(read_files([f], rejected.append))
    assert [(e.seq, e.refused is not None) for e in read] == [(3, False), (3, True), (4, False)]
    assert "seat: 300" in (read[1].refused or "")
    assert rejected == []
    evs = [WAGER, replace(WAGER, seq=0), replace(WAGER, seq=4)]
    buf = io.BytesIO()
    write_container(buf, evs)
    f.write_bytes(buf.getvalue())
    assert [e.seq for e in read_files([f], rejected.append)] == [3, 4]
    assert [(r.line, "seq" in r.reason) for r in rejected] == [(2, True)]


def test_a_json_object_with_a_seat_of_300_is_not_stored_wrapped() -> None:
    from pitwatch.events.jsonl import InvalidEvent, from_json

    d: dict[str, Any] = to_json(WAGER)
    d["seat"] = 300
    with pytest.raises(InvalidEvent, match="seat"):
        from_json(d)


def test_a_table_with_no_table_opened_is_a_visible_finding() -> None:
    """Its rounds are judged by the record rules only, and the audit says so."""
    floor = Floor(1, 3, seed=9, sign=False)
    evs = [e for e in floor.events() if not isinstance(e.payload, TableOpened)]
    evs = [replace(e, seq=e.seq - 1, prev_digest=None if e.seq == 2 else e.prev_digest)
           if e.device_id.endswith("console") else e for e in evs]
    rep = audit_events(evs)
    found = [v for v in rep.violations if v.code == "TABLE_NOT_OPENED"]
    assert [v.round_id for v in found] == [f"AC-BJ-01-00000{k}" for k in (1, 2, 3)]
    assert all(v.severity == "MEDIUM" and "record rules only" in v.message for v in found)
    opened = audit_events(list(Floor(1, 3, seed=9, sign=False).events()))
    assert "TABLE_NOT_OPENED" not in {v.code for v in opened.violations}


def test_idle_tables_are_evicted_to_their_snapshot_and_come_back() -> None:
    """MAX_LIVE_TABLES bounds the live auditors: an idle table whose snapshot holds all
    of it goes, and its next event restores it, judged as if it had stayed."""
    floor = Floor(3, 6, seed=13, inject=0.5, sign=False)
    events = list(floor.events())
    log = [(i, ev.table_id.encode(), encode_single(ev)) for i, ev in enumerate(events)]
    table: dict[bytes, bytes] = {}
    found: list[Violation] = []
    alone: list[Violation] = []

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list[Any]:
        return [m for m in log if a <= m[0] < b]

    async def go(evict: bool) -> int:
        states = TableStates(table, select, 15 * 60 * 1000, max_tables=1 if evict else 256)
        most = 0
        for i, ev in enumerate(events):
            out = await states.process(ev, "t", 0, i, catch_up)
            (found if evict else alone).extend(out.violations)
            if states.due(ev.table_id, ev):
                states.snapshot(ev.table_id)
            if evict:
                states.evict_idle(idle_s=3600)
            most = max(most, len(states.tables) - states.open_rounds())
        assert not evict or states.evicted > 0
        return most

    idle_live = asyncio.run(go(evict=True))
    assert idle_live <= 1
    table.clear()
    assert asyncio.run(go(evict=False)) == 3
    assert len(alone) > 2
    assert sorted(v.violation_id for v in found) == sorted(v.violation_id for v in alone)


def test_a_table_idle_for_long_is_evicted() -> None:
    states = TableStates({}, select, None)
    floor = Floor(1, 1, seed=13, sign=False)
    evs = list(floor.events())
    log = [(i, e.table_id.encode(), encode_single(e)) for i, e in enumerate(evs)]

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list[Any]:
        return [m for m in log if a <= m[0] < b]

    async def go() -> None:
        for i, ev in enumerate(evs):
            await states.process(ev, "t", 0, i, catch_up)
        states.snapshot(evs[0].table_id)

    asyncio.run(go())
    assert states.evict_idle(idle_s=3600) == 0  # it just arrived
    states.tables[evs[0].table_id].arrived = time.monotonic() - 3601
    assert states.evict_idle(idle_s=3600) == 1 and states.tables == {}


def test_round_ended_alone_is_in_range() -> None:
    assert decode_single(encode_single(replace(WAGER, payload=RoundEnded()))).type == "RoundEnded"


def test_a_stream_inventing_device_ids_cannot_grow_a_table() -> None:
    """docs/events.md § Ranges: "devices of one table: at most 32: an event from a 33rd
    device is not applied (DEVICE_LIMIT_EXCEEDED)"."""
    from pitwatch.engine.auditor import MAX_DEVICES, TableAuditor

    found: list[Violation] = []
    a = TableAuditor("T1", select, found.append, lambda _: None, released=released_writers())
    for k in range(MAX_DEVICES + 5):
        a.feed(replace(WAGER, event_id=f"00000000-0000-4000-8000-{k:012d}",
                       device_id=f"dev-{k}", seq=1, prev_digest=None, round_id=None,
                       payload=RoundEnded()))
    assert len(a.devices) == MAX_DEVICES
    over = [v for v in found if v.code == "DEVICE_LIMIT_EXCEEDED"]
    assert len(over) == 5 and over[0].severity == "MEDIUM"
    assert "dev-32 would be device 33" in over[0].message
    assert len(orjson.dumps(a.export_state())) < 200_000


def test_a_payout_s_ceiling_is_the_wager_s_at_the_highest_odds_a_table_can_post() -> None:
    """docs/events.md § Ranges: "`PayoutMade.amount` (cents) | 0 to 10^18: a wager's
    10^12 at the highest odds a table can post (10^6 to 1), so no payout the posted odds
    allow is refused". A wager keeps its own 10^12."""
    assert limits.MAX_PAYOUT == limits.MAX_AMOUNT * limits.MAX_RATIO == 10**18
    p = WAGER.payload
    assert isinstance(p, WagerPlaced)
    paid = replace(WAGER, payload=PayoutMade(3, 0, "MAIN", p.amount))
    for amount in (limits.MAX_AMOUNT * 3 // 2, limits.MAX_AMOUNT * 15, limits.MAX_PAYOUT):
        ev = replace(paid, payload=PayoutMade(3, 0, "MAIN", amount))
        assert decode_single(encode_single(ev)) == ev
        assert from_json(to_json(ev)) == ev
    for ev in (replace(paid, payload=PayoutMade(3, 0, "MAIN", limits.MAX_PAYOUT + 1)),
               replace(WAGER, payload=replace(p, amount=limits.MAX_AMOUNT + 1))):
        with pytest.raises(DecodeError, match="amount") as e:
            decode_single(encode_single(ev))
        assert e.value.event is not None  # the record's, refused (EVENT_REFUSED)


def test_a_maximum_wager_paid_at_the_posted_odds_is_judged_not_refused() -> None:
    """A blackjack on the contract's largest wager, 10^12 cents, paid 3 to 2: one and a
    half times the wager's own ceiling, read and judged right (and a cent more, wrong)."""
    from tests.rounds import TableScript, audit

    def round_paid(extra: int) -> list[Event]:
        sc = TableScript.opened("nj_blackjack", "T-MAX", max_wager=limits.MAX_AMOUNT)
        sc.start(1, [1])
        sc.wager(1, "MAIN", limits.MAX_AMOUNT)
        sc.deal({(1, 0): ("A", "K")}, up="9", hole="7")
        sc.pay(1, "MAIN", limits.MAX_AMOUNT * 3 // 2 + extra)
        sc.clear(1, 0)
        sc.reveal()
        sc.finish_round()
        return [decode_single(encode_single(e)) for e in sc.events]

    assert audit(round_paid(0)) == []
    assert [v.code for v in audit(round_paid(1))] == ["PAYOUT_WRONG"]
