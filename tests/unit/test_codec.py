"""Every event round-trips through every form: Avro body, single-object encoding,
container files and JSON Lines; bad input is refused with a reason."""

from __future__ import annotations

import io
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitwatch.blackjack import Ratio
from pitwatch.events import avro, jsonl
from pitwatch.events.files import Rejected, read_files
from pitwatch.events.model import (
    DECISIONS,
    DOUBLE_ON,
    GAMES,
    HOLE_CARD_MODES,
    JURISDICTIONS,
    RANKS,
    SUITS,
    WAGER_KINDS,
    CardDealt,
    CardsCleared,
    Event,
    HoleCardInserted,
    HoleCardRevealed,
    InsuranceOffered,
    PayEntry,
    PayoutMade,
    PayTable,
    PlayerDecision,
    RoundEnded,
    RoundStarted,
    Rules,
    ShoeLoaded,
    SwitchOffered,
    TableOpened,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)

ints = st.integers(min_value=0, max_value=2**31 - 1)
cents = st.integers(min_value=0, max_value=10**12)
small = st.integers(min_value=0, max_value=12)
seat = st.integers(min_value=1, max_value=12)  # seats are numbered from 1
opt_seat = st.none() | seat
text = st.text(alphabet=string.ascii_letters + string.digits + "-", min_size=1, max_size=12)
opt_small = st.none() | small

ratios = st.builds(Ratio, st.integers(1, 20), st.integers(1, 20))
pay_tables = st.none() | st.lists(st.builds(
    PayTable, text, st.lists(st.builds(PayEntry, text, st.integers(1, 500), st.integers(1, 5)),
                             max_size=3).map(tuple)), max_size=2).map(tuple)
rules = st.builds(
    Rules, decks=st.integers(1, 8), dealer_hits_soft_17=st.booleans(), blackjack_pays=ratios,
    insurance_pays=ratios, hole_card=st.sampled_from(sorted(HOLE_CARD_MODES)),
    double_on=st.sampled_from(sorted(DOUBLE_ON)), double_after_split=st.booleans(),
    max_split_hands=st.integers(1, 4), resplit_aces=st.booleans(), hit_split_aces=st.booleans(),
    insurance=st.booleans(), even_money=st.booleans(), surrender=st.booleans(),
    bonus_wager=st.booleans(), bonus_wager_max=st.none() | cents, match_wager=st.booleans(),
    push22_wager=st.booleans(), progressive_wager=st.booleans(), multiple_action=st.booleans(),
    min_wager=cents, max_wager=cents, chip_unit=st.integers(1, 10000), pay_tables=pay_tables,
)
kinds = st.sampled_from(sorted(WAGER_KINDS))
payloads = st.one_of(
    st.builds(TableOpened, st.sampled_from(sorted(JURISDICTIONS)), st.sampled_from(sorted(GAMES)),
              rules),
    st.builds(ShoeLoaded, text, st.integers(1, 8)),
    st.builds(RoundStarted, text, st.lists(seat, max_size=7).map(tuple)),
    *(st.builds(cls, seat, small, kinds, cents)
      for cls in (WagerPlaced, PayoutMade, WagerCollected, WagerReturned)),
    st.builds(CardDealt, st.sampled_from(["PLAYER", "DEALER"]), opt_seat, opt_small,
              st.sampled_from(RANKS), st.sampled_from(SUITS), st.booleans()),
    st.just(InsuranceOffered()), st.builds(SwitchOffered, seat),
    st.builds(HoleCardInserted, st.booleans()), st.just(HoleCardRevealed()),
    st.builds(PlayerDecision, seat, small, st.sampled_from(sorted(DECISIONS))),
    st.builds(CardsCleared, opt_seat, opt_small), st.just(RoundEnded()),
)
events = st.builds(
    Event, st.uuids().map(str), text, text, st.integers(1, 2**40),
    st.integers(0, 2**32 * 1000 - 1), st.none() | text,
    st.none() | st.binary(min_size=32, max_size=32),
    payloads,
)


@settings(max_examples=300, deadline=None)
@given(events)
def test_avro_body_round_trip(ev: Event) -> None:
    assert avro.decode(avro.encode(ev)) == ev


@settings(max_examples=300, deadline=None)
@given(events)
def test_single_object_round_trip(ev: Event) -> None:
    msg = avro.encode_single(ev)
    assert msg[:2] == b"\xc3\x01"
    assert avro.decode_single(msg) == ev


@settings(max_examples=300, deadline=None)
@given(events)
def test_json_lines_round_trip(ev: Event) -> None:
    assert jsonl.loads(jsonl.dumps(ev)) == ev


@settings(max_examples=30, deadline=None)
@given(st.lists(events, max_size=20))
def test_container_round_trip(evs: list[Event]) -> None:
    buf = io.BytesIO()
    avro.write_container(buf, evs)
    buf.seek(0)
    assert list(avro.read_container(buf)) == evs


def test_digest_is_sha256_of_canonical_form() -> None:
    import hashlib

    ev = Event("e1", "T", "T-shoe", 1, 0, "R", None, CardDealt("DEALER", None, None, "A", "S",
                                                                 True))
    assert avro.digest(ev) == hashlib.sha256(avro.encode(ev)).digest()
    assert avro.digest(ev) != avro.digest(Event("e1", "T", "T-shoe", 1, 0, "R", None,
                                                CardDealt("DEALER", None, None, "A", "H", True)))


def test_single_object_refuses_unknown_fingerprint() -> None:
    msg = bytearray(avro.encode_single(Event("e", "T", "d", 1, 0, None, None, RoundEnded())))
    msg[5] ^= 0xFF
    with pytest.raises(avro.DecodeError, match="fingerprint"):
        avro.decode_single(bytes(msg))
    with pytest.raises(avro.DecodeError, match="C3 01"):
        avro.decode_single(b"{}")


@pytest.mark.parametrize(("line", "reason"), [
    (b"{not json", "not JSON"),
    (b'{"type":"Teleport","event_id":"x"}', "unknown type 'Teleport'"),
    (b'{"type":"RoundEnded","table_id":"T","device_id":"d","seq":1,"ts":0}', "missing event_id"),
    (b'{"type":"WagerPlaced","event_id":"e","table_id":"T","device_id":"d","seq":1,"ts":0,'
     b'"round_id":"R","seat":1,"hand":0,"kind":"MAIN","amount":"12.50"}', "WagerPlaced.amount"),
    (b'{"type":"CardDealt","event_id":"e","table_id":"T","device_id":"d","seq":1,"ts":0,'
     b'"round_id":"R","to":"PLAYER","seat":1,"hand":0,"rank":"1","suit":"S","face_up":true}',
     "CardDealt.rank"),
    (b'{"type":"RoundEnded","event_id":"e","table_id":"T","device_id":"d","seq":1,'
     b'"ts":"2026-11-30T18:00:00"}', "no zone"),
])
def test_json_lines_refuse_with_a_reason(line: bytes, reason: str) -> None:
    with pytest.raises(jsonl.InvalidEvent, match=reason):
        jsonl.loads(line)


def test_iso_timestamps_are_accepted() -> None:
    ev = jsonl.loads(b'{"type":"RoundEnded","event_id":"e","table_id":"T","device_id":"d",'
                     b'"seq":1,"ts":"2026-11-30T18:00:00.250Z","round_id":"R"}')
    assert ev.ts == 1796061600250


def test_reading_never_stops_at_a_bad_line(tmp_path: Path) -> None:
    good = [Event(f"e{i}", "T", "d", i, i, "R", None, RoundEnded()) for i in range(1, 4)]
    lines = [jsonl.dumps(good[0]), b"garbage", jsonl.dumps(good[1]),
             b'{"type":"Nope"}', jsonl.dumps(good[2])]
    f = tmp_path / "events.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    rejected: list[Rejected] = []
    assert list(read_files([f], rejected.append)) == good
    assert [(r.line, r.raw) for r in rejected] == [(2, "garbage"), (4, '{"type":"Nope"}')]
    assert "not JSON" in rejected[0].reason


def test_deflate_blocks_inflate_to_the_bytes_fastavro_reads() -> None:
    """pitwatch reads a container's blocks itself (ISA-L's inflate, bounded): the same
    blocks fastavro's own reader gives; a file cut inside a block is an error, never
    fewer records."""
    import fastavro

    from pitwatch.producers.simulate import Floor

    evs = list(Floor(2, 30, seed=3).events())
    buf = io.BytesIO()
    avro.write_container(buf, evs, codec="deflate")
    data = buf.getvalue()
    ours = [b.raw for b in avro.read_container_blocks(io.BytesIO(data))]
    assert len(ours) > 1
    assert ours == [b.bytes_.getvalue() for b in fastavro.block_reader(io.BytesIO(data))]
    with pytest.raises(avro.ContainerError, match="ends inside"):
        list(avro.read_container(io.BytesIO(data[: len(data) // 2])))
