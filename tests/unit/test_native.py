"""The Avro block framer (`pitwatch.events.native`) finds where each record ends and its
table_id exactly where fastavro's decode does, for every kind of Avro type, and refuses
(None) every block it cannot frame, including those fastavro reads loosely, so that the
caller decodes them with fastavro instead. Its JSON Lines writer gives orjson's bytes,
or None and Python writes them."""

from __future__ import annotations

import io
from array import array
from dataclasses import replace
from typing import Any

import fastavro
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitwatch.events import avro, jsonl, limits, native
from pitwatch.events.model import (
    CardDealt,
    CardsCleared,
    Checkpoint,
    Event,
    RoundStarted,
    TableOpened,
    WagerPlaced,
)
from pitwatch.events.native import Program
from pitwatch.events.schema import plain_schema, strip_logical
from pitwatch.store import native as store_native
from tests.unit.test_codec import events


def fastavro_frames(block: avro.ContainerBlock) -> tuple[list[int], list[Any]]:
    pos, ends, tables = 0, [], []
    for d, raw in block.records():
        pos += len(raw)
        ends.append(pos)
        tables.append(d.get("table_id"))
    return ends, tables


def test_the_extension_is_built_and_builds_this_schema() -> None:
    assert native._native is not None  # built at install by hatch_build.py
    buf = io.BytesIO()
    avro.write_container(buf, [])
    buf.seek(0)
    program = avro.Program.of(fastavro.parse_schema(plain_schema()), avro._typed, avro._ENUMS)
    assert program is not None and program.buildable


checkpoints = st.builds(
    Event, st.uuids().map(str), st.just("T-1"), st.just("shoe-1"), st.integers(1, 2**40),
    st.integers(0, 2**40), st.none() | st.just("R-1"), st.none() | st.binary(min_size=32,
                                                                             max_size=32),
    st.builds(Checkpoint, st.integers(1, 2**40), st.binary(min_size=32, max_size=32),
              st.text(alphabet="abc-1", min_size=1, max_size=8),
              st.binary(min_size=64, max_size=64)))


@settings(max_examples=60, deadline=None)
@given(st.lists(events | checkpoints, min_size=1, max_size=40))
def test_events_are_built_as_fastavro_and_from_datum_make_them(evs: list[Event]) -> None:
    buf = io.BytesIO()
    avro.write_container(buf, evs, codec="null")
    buf.seek(0)
    built = []
    for block in avro.read_container_blocks(buf):
        events_ = block.events()
        assert events_ is not None
        read = [(avro.from_datum(d, raw), raw) for d, raw in block.records()]
        assert [(ev, ev.raw) for ev in events_] == read
        assert [type(ev.payload) for ev in events_] == [type(ev.payload) for ev, _ in read]
        built.extend(events_)
    assert built == evs
    assert all(type(ev.payload.seats) is tuple for ev in built
               if isinstance(ev.payload, RoundStarted))


@settings(max_examples=60, deadline=None)
@given(st.lists(events, min_size=1, max_size=40), st.sampled_from(["null", "deflate"]))
def test_event_blocks_are_framed_where_fastavro_reads_them(evs: list[Event], codec: str) -> None:
    buf = io.BytesIO()
    avro.write_container(buf, evs, codec=codec)
    buf.seek(0)
    blocks = list(avro.read_container_blocks(buf))
    assert sum(b.count for b in blocks) == len(evs)
    for block in blocks:
        assert block.frame() == fastavro_frames(block)


@settings(max_examples=60, deadline=None)
@given(st.lists(events, min_size=1, max_size=40), st.sets(st.sampled_from(["T-1", "T-2"])),
       st.dictionaries(st.sampled_from(["T-1", "T-3"]), st.booleans()))
def test_a_worker_picks_what_framing_then_building_its_records_gives(
        evs: list[Event], mine: set[str], known: dict[str | None, bool]) -> None:
    """`pick` (one walk) gives the records, and their indices, that framing the block and
    building the spans of the tables `ours` or `decide` says are the worker's give; it
    asks `decide` of each table not in `ours`, once, in the order the records meet them."""
    evs = [replace(e, table_id=("T-1", "T-2", "T-3")[e.seq % 3]) for e in evs]
    buf = io.BytesIO()
    avro.write_container(buf, evs, codec="null")
    buf.seek(0)
    ours, asked = dict(known), []
    program = avro._current_program()
    assert program is not None

    def decide(t: str | None) -> bool:
        asked.append(t)
        return t in mine

    for block in avro.read_container_blocks(buf):
        framed = block.frame()
        assert framed is not None
        ends, tables = framed
        first = list(dict.fromkeys(t for t in tables if t not in ours))
        before = len(asked)
        picked = block.pick(ours, decide)
        assert asked[before:] == first
        assert picked is not None
        indices, built = picked
        assert indices == [i for i, t in enumerate(tables) if ours[t]]
        spans = b"".join(block.raw[(ends[i - 1] if i else 0):ends[i]] for i in indices)
        assert built == program.build(spans, len(indices))
        assert [ev.raw for ev in built] == [block.raw[(ends[i - 1] if i else 0):ends[i]]
                                           for i in indices]


def test_pick_refuses_a_block_the_walk_refuses_and_raises_what_decide_raises() -> None:
    from pitwatch.producers.simulate import Floor

    evs = list(Floor(1, 1, seed=5).events())[:6]
    buf = io.BytesIO()
    avro.write_container(buf, evs, codec="null")
    buf.seek(0)
    block = next(avro.read_container_blocks(buf))
    program = avro._current_program()
    assert program is not None
    assert program.pick(block.raw[:-1], block.count, {}, lambda t: True) is None
    assert program.pick(block.raw + b"\x00", block.count, {}, lambda t: True) is None

    def broken(t: str | None) -> bool:
        raise LookupError(t)

    with pytest.raises(LookupError):
        program.pick(block.raw, block.count, {}, broken)


KINDS: dict[str, Any] = {
    "type": "record", "name": "t.Every", "fields": [
        {"name": "flag", "type": "boolean"},
        {"name": "table_id", "type": "string"},
        {"name": "i", "type": "int"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "b", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "t.Four", "size": 4}},
        {"name": "fx2", "type": "t.Four"},
        {"name": "e", "type": {"type": "enum", "name": "t.Suit", "symbols": ["S", "H", "D"]}},
        {"name": "arr", "type": {"type": "array", "items": ["null", "long", "t.Suit"]}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "next", "type": ["null", {"type": "record", "name": "t.Node", "fields": [
            {"name": "v", "type": "string"}, {"name": "next", "type": ["null", "t.Node"]}]}]},
    ]}

datums = st.fixed_dictionaries({
    "flag": st.booleans(), "table_id": st.text(max_size=8), "i": st.integers(-2**31, 2**31 - 1),
    "f": st.floats(width=32, allow_nan=False), "d": st.floats(allow_nan=False),
    "b": st.binary(max_size=9), "fx": st.binary(min_size=4, max_size=4),
    "fx2": st.binary(min_size=4, max_size=4), "e": st.sampled_from(["S", "H", "D"]),
    "arr": st.lists(st.none() | st.integers(-2**63, 2**63 - 1) | st.sampled_from(["S", "D"]),
                    max_size=5),
    "ts": st.integers(0, 2**40),
    "next": st.recursive(st.none(), lambda inner: st.fixed_dictionaries(
        {"v": st.text(max_size=3), "next": inner}), max_leaves=4),
})


def as_dicts(name: str, fields: list[str], top: bool) -> Any:
    """A builder of the datum fastavro reads (the top-level record's bytes apart)."""
    if top:
        return lambda *values: (dict(zip(fields, values[:-1], strict=True)), values[-1])
    return lambda *values: dict(zip(fields, values, strict=True))


def lists(x: Any) -> Any:
    """fastavro's arrays are lists; the builder's, tuples."""
    if isinstance(x, tuple):
        return [lists(v) for v in x]
    if isinstance(x, dict):
        return {k: lists(v) for k, v in x.items()}
    return x


@settings(max_examples=80, deadline=None)
@given(st.lists(datums, min_size=1, max_size=20))
def test_every_avro_kind_is_read_as_fastavro_reads_it(records: list[dict[str, Any]]) -> None:
    schema = fastavro.parse_schema(KINDS)
    plain = fastavro.parse_schema(strip_logical(KINDS))  # logical types as their own type
    program = Program.of(schema, as_dicts, {"t.Suit": {"S": "spades"}})
    assert program is not None and program.buildable
    data, ends, bodies = b"", [], []
    for r in records:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, r)
        bodies.append(out.getvalue())
        data += out.getvalue()
        ends.append(len(data))
    assert program.frame(data, len(records)) == (ends, [r["table_id"] for r in records])
    built = program.build(data, len(records))
    assert built is not None
    expected = []
    for body in bodies:
        d = fastavro.schemaless_reader(io.BytesIO(body), plain, None)
        d["e"] = "spades" if d["e"] == "S" else d["e"]  # the enum's value given for S
        d["arr"] = ["spades" if x == "S" else x for x in d["arr"]]
        expected.append((d, body))
    assert [(lists(d), raw) for d, raw in built] == expected


def test_an_array_in_other_blocks_than_its_one_encoding_is_refused() -> None:
    """Items in more than one block, or a block of a negative count with its size, read
    to the same array as fastavro's one block does: other bytes for one value, so the
    walk refuses them (and `avro` refuses them after fastavro: test_forged_containers)."""
    schema = fastavro.parse_schema({"type": "record", "name": "t.R", "fields": [
        {"name": "table_id", "type": "string"},
        {"name": "a", "type": {"type": "array", "items": "long"}}]})
    program = Program.of(schema, as_dicts)
    assert program is not None
    one = b"\x04T1" + b"\x04\x02\x04\x00"  # "T1", array: 2 items (1, 2), then 0
    negative = b"\x04T1" + b"\x03\x04\x02\x04\x00"  # -2 items in 2 bytes, then 0
    split = b"\x04T1" + b"\x02\x02\x02\x04\x00"  # 1 item, 1 item, then 0
    for data in (one, negative, split):
        assert fastavro.schemaless_reader(io.BytesIO(data), schema, None) == \
            {"table_id": "T1", "a": [1, 2]}
    assert program.frame(one, 1) == ([len(one)], ["T1"])
    assert program.build(one, 1) == [({"table_id": "T1", "a": (1, 2)}, one)]
    for data in (negative, split):
        assert program.frame(data, 1) is None and program.build(data, 1) is None


def test_a_schema_with_a_map_or_an_array_of_nothing_has_no_program() -> None:
    """A map's one encoding has no key twice, which a walk cannot see; an array of items
    that take no bytes has a count nothing bounds (fastavro loops on it, the GIL held)."""
    def of(t: Any) -> Program | None:
        return Program.of(fastavro.parse_schema({"type": "record", "name": "t.R", "fields": [
            {"name": "table_id", "type": "string"}, {"name": "x", "type": t}]}), as_dicts)

    assert of({"type": "array", "items": "long"}) is not None
    assert of({"type": "map", "values": "long"}) is None
    assert of({"type": "array", "items": "null"}) is None
    assert of({"type": "array", "items": {"type": "record", "name": "t.E", "fields": []}}) is None
    assert of({"type": "array", "items": {"type": "fixed", "name": "t.Z", "size": 0}}) is None
    assert of({"type": "array", "items": ["null", "long"]}) is not None


@pytest.fixture
def one() -> tuple[Program, bytes]:
    """The program of this schema, and one event's bytes."""
    ev = Event("0b8e0f2c-5a63-4c3e-9d31-52d0f5c1a001", "T-01", "sensor-1", 7, 1_700_000_000_000,
               "R-1", None, WagerPlaced(1, 0, "MAIN", 2500))
    program = Program.of(fastavro.parse_schema(plain_schema()), avro._typed, avro._ENUMS)
    assert program is not None
    return program, avro.encode(ev)


def refused(program: Program, data: bytes, count: int = 1) -> bool:
    """Both the framer and the builder refuse the bytes."""
    return program.frame(data, count) is None and program.build(data, count) is None


def test_whole_records_are_read(one: tuple[Program, bytes]) -> None:
    program, data = one
    assert program.frame(data, 1) == ([len(data)], ["T-01"])
    assert program.frame(data * 3, 3) == ([len(data), 2 * len(data), 3 * len(data)],
                                          ["T-01"] * 3)
    built = program.build(data * 2, 2)
    assert built is not None and [ev.raw for ev in built] == [data, data]
    assert built[0] == avro.decode(data)
    assert program.frame(b"", 0) == ([], []) and program.build(b"", 0) == []


def test_short_or_long_blocks_are_refused(one: tuple[Program, bytes]) -> None:
    program, data = one
    assert refused(program, data[:-1])  # a record cut short
    assert refused(program, data + b"\x00")  # a byte past the last record
    assert refused(program, data, 2)  # fewer records than the block says
    assert refused(program, data, -1)


def test_indexes_outside_the_schema_are_refused(one: tuple[Program, bytes]) -> None:
    program, data = one
    schema = fastavro.parse_schema(plain_schema())
    # round_id is ["null", "string"]: its index is the byte after seq and ts
    at = data.index(b"\x06R-1") - 1
    assert data[at] == 2  # zigzag 1: the string branch
    assert refused(program, data[:at] + b"\x04" + data[at + 1:])  # branch 2 of 2
    # fastavro reads a negative index as Python indexes a list: from the end
    negative = data[:at] + b"\x01" + data[at + 1:]  # branch -1
    assert fastavro.schemaless_reader(io.BytesIO(negative), schema, None)["round_id"] == "R-1"
    assert refused(program, negative)
    # the wager's kind, an enum: index 63 is past it, -1 fastavro reads as the last
    kind = data.index(b"\x02\x00\x00\x88'") + 2  # seat 1, hand 0, kind MAIN, amount
    assert refused(program, data[:kind] + b"\x7e" + data[kind + 1:])
    assert refused(program, data[:kind] + b"\x01" + data[kind + 1:])


def test_bad_text_lengths_and_booleans_are_refused(one: tuple[Program, bytes]) -> None:
    program, data = one
    bad_utf8 = data.replace(b"T-01", b"T-\xff1")
    with pytest.raises(UnicodeDecodeError):
        fastavro.schemaless_reader(io.BytesIO(bad_utf8), plain_schema(), None)
    assert refused(program, bad_utf8)
    assert refused(program, data.replace(b"\x08T-01", b"\x07T-01"))  # length -4
    wide = data.replace(b"\x08T-01", b"\x88\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00T-01")
    assert refused(program, wide)  # a varint past 64 bits
    accents = data.replace(b"\x08T-01", b"\x0a" + "T-é1".encode())  # 5 bytes of UTF-8
    assert program.frame(accents, 1) == ([len(accents)], ["T-é1"])
    built = program.build(accents, 1)
    assert built is not None and built[0].table_id == "T-é1"
    card = avro.encode(Event("e", "T-01", "shoe-1", 1, 0, "R-1", None,
                             CardDealt("PLAYER", 1, 0, "A", "S", True)))
    assert card.endswith(b"\x01")  # face_up, the last byte: a boolean
    built = program.build(card, 1)
    assert built is not None and built[0].payload.rank == "A"  # the enum's value
    assert program.build(card[:-1] + b"\x02", 1) is None


def test_a_builder_that_raises_refuses_the_block(one: tuple[Program, bytes]) -> None:
    _, data = one

    def builder(name: str, fields: list[str], top: bool) -> Any:
        def refuse(*values: Any) -> Any:
            raise ValueError("no")
        return refuse if name.endswith("WagerPlaced") else as_dicts(name, fields, top)

    program = Program.of(fastavro.parse_schema(plain_schema()), builder)
    assert program is not None and program.buildable
    assert program.build(data, 1) is None
    assert program.frame(data, 1) == ([len(data)], ["T-01"])


def test_a_schema_with_a_record_type_left_unbuilt_is_only_framed() -> None:
    program = Program.of(fastavro.parse_schema(plain_schema()),
                         lambda name, fields, top: None if name.endswith("Rules")
                         else avro._typed(name, fields, top))
    assert program is not None and not program.buildable
    assert program.build(b"", 0) is None


@pytest.mark.parametrize("schema", [
    {"type": "record", "name": "t.NoTable", "fields": [{"name": "x", "type": "string"}]},
    {"type": "record", "name": "t.Optional", "fields": [
        {"name": "table_id", "type": ["null", "string"]}]},
    {"type": "array", "items": "string"},
])
def test_schemas_without_a_string_table_id_have_no_framer(schema: dict[str, Any]) -> None:
    assert Program.of(fastavro.parse_schema(schema), as_dicts) is None


def test_a_record_outside_the_contract_is_rejected_as_fastavro_read_shows_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A record built in C that the ranges refuse is read as fastavro's reading gives it:
    one out of range in its payload alone is given in its place, marked refused with
    the reason; one whose envelope is out of range is rejected with the reason and the
    datum fastavro reads."""
    from pitwatch.events.files import Rejected, read_avro

    good = Event("0b8e0f2c-5a63-4c3e-9d31-52d0f5c1a001", "T-01", "sensor-1", 7, 0, "R-1", None,
                 WagerPlaced(1, 0, "MAIN", 2500))
    bad = Event("0b8e0f2c-5a63-4c3e-9d31-52d0f5c1a002", "T-01", "sensor-1", 8, 0, "R-1", None,
                WagerPlaced(40, 0, "MAIN", 2500))  # seat 40: past the contract's 32
    worse = Event("", "T-01", "sensor-1", 9, 0, "R-1", None, WagerPlaced(1, 0, "MAIN", 2500))
    buf = io.BytesIO()
    avro.write_container(buf, [good, bad, worse, good])

    def read() -> tuple[list[Event], list[Rejected]]:
        buf.seek(0)
        rejects: list[Rejected] = []
        return list(read_avro(buf, "f.avro", rejects.append)), rejects

    native_read = read()
    monkeypatch.setattr(avro.ContainerBlock, "events", lambda self, spans=None: None)
    assert read() == native_read
    evs, rejects = native_read
    assert evs == [good, bad, good]
    assert [e.refused for e in evs] == [
        None, "out of the contract's range: WagerPlaced.seat: 40 is outside 1..32", None]
    assert [(r.line, r.reason) for r in rejects] == [
        (3, "record 3: out of the contract's range: event_id: 0 characters, not 1..128")]
    assert "'event_id': ''" in rejects[0].raw


def test_a_message_is_built_in_c_and_what_it_refuses_fastavro_reads(
        one: tuple[Program, bytes]) -> None:
    """`decode`, the workers' read of a message body: built in C; a body the builder
    refuses (a byte after the record; bytes that are no event) goes to fastavro, with
    its outcome and its error: one event has one byte form, so a byte after the record
    is refused there too."""
    assert avro._current_program() is not None
    _, data = one
    ev = avro.decode(data)
    assert ev.raw == data and ev.payload == WagerPlaced(1, 0, "MAIN", 2500)
    with pytest.raises(avro.DecodeError, match="1 bytes after the record"):
        avro.decode(data + b"\x00")
    with pytest.raises(avro.DecodeError, match="not a TableEvent body"):
        avro.decode(data[:-3])


# --- the JSON Lines body written in C ----------------------------------------------

def python_line(ev: Event) -> bytes:
    return orjson.dumps(jsonl.to_json(ev))


any_text = st.text(min_size=0, max_size=40)  # controls, quotes, backslashes, non-ASCII
wild = st.builds(
    Event, any_text, any_text, any_text, st.integers(-2**63, 2**64 - 1),
    st.integers(-2**63, 2**64 - 1), st.none() | any_text, st.none() | st.binary(max_size=40),
    st.builds(WagerPlaced, st.integers(-2**63, 2**63), st.integers(0, 9), any_text,
              st.integers(-2**70, 2**70)))


@settings(max_examples=300, deadline=None)
@given(events | checkpoints | wild)
def test_the_json_body_written_in_c_is_orjsons_byte_for_byte(ev: Event) -> None:
    """Every payload type, every character a string may hold, ints to 64 bits either
    sign: the C writer gives orjson's bytes of `to_json`, or None where Python must
    write it (a TableOpened's rules; an int orjson refuses, which Python then raises)."""
    line = native.json_body(ev)
    try:
        want = python_line(ev)
    except orjson.JSONEncodeError:
        assert line is None
        return
    assert line == (None if isinstance(ev.payload, TableOpened) else want)
    assert jsonl.dumps(ev) == want


@settings(max_examples=300, deadline=None)
@given(events | checkpoints | wild)
def test_the_row_body_written_in_c_is_the_json_lines_form_less_the_rows_columns(
        ev: Event) -> None:
    """The body of the event's `events` row is its JSON Lines form, in its order, without
    "type" and the envelope fields the row's columns hold (its prev_digest kept): the C
    writer gives orjson's bytes of that, or None where `json_body` gives None. The row
    (its columns and that body) reads back as the whole form, in its order."""
    from pitwatch.store.base import column_names
    from pitwatch.store.columns import ROW_FIELDS, event_values, row_body
    from pitwatch.store.rows import stored_json

    body = store_native.row_body(ev)
    try:
        whole = jsonl.to_json(ev)
        want = orjson.dumps({k: v for k, v in whole.items() if k not in ROW_FIELDS})
    except (orjson.JSONEncodeError, AttributeError):
        assert body is None
        return
    assert body == (None if native.json_body(ev) is None else want)
    assert row_body(ev) == want
    try:  # only an event inside the contract is stored (a round id of '' is none)
        limits.check(ev)
    except limits.OutOfRange:
        return
    row = dict(zip(column_names("events"), event_values(ev, 0), strict=True))
    row["at_ms"] = row["ts"] * 1000 + row["ts_ms"]
    assert list(stored_json(row).items()) == list(orjson.loads(orjson.dumps(whole)).items())


def test_what_the_c_writer_does_not_know_python_writes() -> None:
    """A value outside the model (a float, a list, bytes where the contract has text, a
    string Python cannot encode) is None from C; `dumps` then does what it always did."""
    base = Event("e", "T-1", "d", 1, 0, None, None, WagerPlaced(1, 0, "MAIN", 2500))
    odd = [
        replace(base, seq=1.5),
        replace(base, round_id=["R-1"]),
        replace(base, device_id=b"d"),
        replace(base, prev_digest="00"),
        replace(base, payload=WagerPlaced(1, 0, "MAIN\ud800", 2500)),
        replace(base, payload=RoundStarted("D-1", ((1,),))),
        replace(base, payload=Checkpoint(1, "00", "k", b"\x00")),
    ]
    for ev in odd:
        assert native.json_body(ev) is None, ev
    assert jsonl.dumps(odd[0]) == python_line(odd[0])
    with pytest.raises(AttributeError):
        jsonl.dumps(odd[3])  # str has no .hex(): as before the C writer
    assert native.json_body(base) == python_line(base)


# --- the recent event ids of a table's record clock -------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.lists(st.tuples(st.booleans(), st.text(max_size=40)),
                                   max_size=60))
def test_recent_ids_in_c_answer_as_the_python_dict(
        capacity: int, steps: list[tuple[bool, str]]) -> None:
    """Any ids (empty, non-ASCII, past 16 bytes), asked for or added, and the window
    full many times over: the C window of 96-bit hashes answers every `get` as the dict
    of the ids themselves does, and holds as many."""
    assert native._native is not None
    c, py = store_native.recent_ids(capacity), store_native._PyRecent(capacity)
    for n, (add, event_id) in enumerate(steps):
        if add and py.get(event_id) is None:  # the clock adds only ids it does not hold
            c.add(event_id, n * 1024)
            py.add(event_id, n * 1024)
        assert c.get(event_id) == py.get(event_id)
        assert len(c) == len(py)
    for _, event_id in steps:
        assert c.get(event_id) == py.get(event_id)


@pytest.mark.parametrize("capacity", [4096, 3000])
def test_a_full_window_of_thousands_answers_as_the_python_dict(capacity: int) -> None:
    """A table's window of `order.WINDOW` ids (and one of no power of two), full five
    times over, its buckets' chains as long as they get: every id asked for, the ones
    it holds and the ones that left, answers as the dict does."""
    c, py = store_native.recent_ids(capacity), store_native._PyRecent(capacity)
    ids = [f"{n:08x}-0923-48da-aca6-e0ecc57fcf4c" for n in range(5 * capacity)]
    for n, event_id in enumerate(ids):
        c.add(event_id, n)
        py.add(event_id, n)
        if n % 97 == 0:
            assert [c.get(i) for i in ids[max(0, n - capacity - 50):n + 1]] == \
                [py.get(i) for i in ids[max(0, n - capacity - 50):n + 1]]
    assert [c.get(i) for i in ids] == [py.get(i) for i in ids]
    assert len(c) == len(py) == capacity


def test_recent_ids_keep_the_last_capacity_of_them() -> None:
    r = store_native.recent_ids(3)
    for i in range(5):
        r.add(f"e{i}", 2**64 - 1 - i)
    assert [r.get(f"e{i}") for i in range(5)] == [None, None, 2**64 - 3, 2**64 - 4, 2**64 - 5]
    assert len(r) == 3


@pytest.mark.parametrize("bad", [("e1", -1), ("e1", 2**64), (b"e1", 1), (7, 1), ("e1", 1.0)])
def test_recent_ids_refuse_what_is_not_an_id_and_a_position(bad: tuple[Any, Any]) -> None:
    r = store_native.recent_ids(4)
    with pytest.raises((TypeError, OverflowError)):
        r.add(*bad)
    assert len(r) == 0


# --- the record clock in C ---------------------------------------------------------------

_clock_steps = st.lists(st.one_of(
    st.tuples(st.just("event"), st.sampled_from(["e1", "e2", "e3", "é4", ""]),
              st.sampled_from(["shoe", "console", "wager"]), st.integers(1, 40)),
    st.tuples(st.just("resume"), st.integers(0, 50 * 16 + 15),
              st.dictionaries(st.sampled_from(["shoe", "console"]), st.integers(1, 40)))),
    max_size=80)


@settings(max_examples=300, deadline=None)
@given(_clock_steps)
def test_the_record_clock_in_c_gives_the_positions_python_gives(
        steps: list[tuple[Any, ...]]) -> None:
    """Events of several devices, their seqs stepping forward, back and repeating, their
    ids repeating (a redelivery) within a small window and after it, and resumes at any
    stored position: the C clock gives each event the position the Python clock gives,
    and stands where it stands."""
    from pitwatch.events.model import Event, RoundEnded
    from pitwatch.store import order

    c = store_native.record_clock(4, 16)
    assert c is not None
    py = order._PyTableClock()
    py.recent = store_native._PyRecent(4)
    for step in steps:
        if step[0] == "event":
            _, event_id, device, seq = step
            ev = Event(event_id, "T-1", device, seq, 0, None, None, RoundEnded())
            with pytest.MonkeyPatch.context() as m:
                m.setattr(order, "STRIDE", 16)
                want = py.position(ev)
            assert c.position(ev) == want
        else:
            _, pos, last = step
            for clock in (c, py):
                clock.total, clock.extra = divmod(pos, 16)
                clock.last = dict(last)
        assert (c.total, c.extra, c.last, c.behind) == (py.total, py.extra, py.last,
                                                        py.behind)


def test_the_record_clock_counts_the_events_that_moved_no_device_forward() -> None:
    """`behind`: a redelivery (an id among the recent ones), a copy past the window (its
    seq not past its device's last) and a late seq each count one; an event that steps
    its device forward counts none, C and Python alike."""
    from pitwatch.events.model import Event, RoundEnded
    from pitwatch.store import order

    def ev(event_id: str, device: str, seq: int) -> Event:
        return Event(event_id, "T-1", device, seq, 0, None, None, RoundEnded())

    py = order._PyTableClock()
    py.recent = store_native._PyRecent(2)
    for clock in (store_native.record_clock(2, 1024), py):
        assert clock is not None
        counts = []
        for e in (ev("a", "shoe", 1), ev("b", "shoe", 2), ev("c", "dealer", 1),
                  ev("b", "shoe", 2),  # redelivered: among the last two ids
                  ev("a", "shoe", 1),  # a copy the window forgot: seq 1 is not past 2
                  ev("d", "shoe", 2),  # another event at a seq taken
                  ev("e", "shoe", 5)):
            clock.position(e)
            counts.append(clock.behind)
        assert counts == [0, 0, 0, 1, 2, 3, 3]


def test_the_record_clock_refuses_a_position_past_64_bits() -> None:
    from pitwatch.events.model import Event, RoundEnded

    c = store_native.record_clock(4, 1024)
    assert c is not None
    c.total = 2**54
    with pytest.raises(OverflowError):
        c.position(Event("e1", "T-1", "shoe", 1, 0, None, None, RoundEnded()))
    c.last = []  # type: ignore[assignment]
    with pytest.raises(TypeError, match="dict"):
        c.position(Event("e2", "T-1", "shoe", 1, 0, None, None, RoundEnded()))


def test_the_record_clock_refuses_a_step_past_a_long() -> None:
    """Issue 35, item 11: "a signed overflow in `Clock.position`". A device's last seq
    set (by a writer resuming) far below its next one makes the step past a long: the
    clock raises OverflowError, as past 2**64 - 1, and never wraps round to a position
    that looks right (here 9 x 1024)."""
    from pitwatch.events.model import Event, RoundEnded

    c = store_native.record_clock(4, 1024)
    assert c is not None
    c.total = 2**63 - 1
    c.last = {"shoe": -2**63}
    with pytest.raises(OverflowError):
        c.position(Event("e1", "T-1", "shoe", 10, 0, None, None, RoundEnded()))
    c.total, c.extra, c.last = 0, 2**63 - 1, {"shoe": 5}  # extra past its end stays
    assert c.position(Event("e2", "T-1", "shoe", 1, 0, None, None, RoundEnded())) == 2**63 - 1
    c.total, c.extra = 0, 3
    assert c.position(Event("e3", "T-1", "shoe", 6, 0, None, None, RoundEnded())) == 1024


def test_a_slot_descriptor_of_another_class_is_read_as_getattr_reads_it() -> None:
    """Issue 35, item 11: "a slot-offset cache with no type check on the descriptor".
    A class may hold another class's slot descriptor as an attribute; its offset is
    not within the holder's instances (ASan: a read after free, or past the object).
    Python's getattr refuses it (TypeError); so does C, and never reads the holder's
    own slot at that offset as the event's id."""
    class Owner:
        __slots__ = ("event_id", "x")

    class Holder:
        __slots__ = ("device_id", "p", "q", "seq")

    Holder.event_id = Owner.__dict__["event_id"]  # type: ignore[attr-defined]
    h = Holder()
    h.device_id, h.p, h.q, h.seq = "not an id", "p", "q", 1
    with pytest.raises(TypeError):
        _ = h.event_id  # type: ignore[attr-defined]
    c = store_native.record_clock(4, 1024)
    assert c is not None
    with pytest.raises(TypeError):
        c.position(h)


def test_frame_gives_the_top_level_records_table_id_not_a_nested_ones() -> None:
    """Issue 35, item 11: "`frame` returns a nested record's `table_id` under a recursive
    writer schema". The key is the top-level record's."""
    schema = fastavro.parse_schema({"type": "record", "name": "t.R", "fields": [
        {"name": "table_id", "type": "string"},
        {"name": "child", "type": ["null", "t.R"]}]})
    program = Program.of(schema, as_dicts)
    assert program is not None
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, {"table_id": "T-1", "child": {
        "table_id": "T-EVIL", "child": None}})
    data = out.getvalue()
    assert program.frame(data, 1) == ([len(data)], ["T-1"])


def test_over_long_varints_are_refused(one: tuple[Program, bytes]) -> None:
    """Issue 35, "Each record must re-encode byte-identically under it": a varint with a
    trailing zero byte reads to the same value as its short form; the walk refuses it."""
    program, data = one
    assert data.startswith(b"\x48")  # the event id's length, 36
    longer = b"\xc8\x00" + data[1:]
    assert fastavro.schemaless_reader(io.BytesIO(longer), plain_schema(), None)["event_id"] \
        == fastavro.schemaless_reader(io.BytesIO(data), plain_schema(), None)["event_id"]
    assert refused(program, longer)
    with pytest.raises(avro.DecodeError, match="not its canonical encoding"):
        avro.decode(longer)


def test_a_boolean_but_0_or_1_and_an_int_past_32_bits_are_refused_by_frame_too(
        one: tuple[Program, bytes]) -> None:
    """Both read to values whose one encoding is other bytes (fastavro reads a 2 as
    true, and will not write an int past 32 bits): the walk that frames refuses them,
    as the builder does."""
    program, _ = one
    card = avro.encode(Event("e", "T-01", "shoe-1", 1, 0, "R-1", None,
                             CardDealt("PLAYER", 1, 0, "A", "S", True)))
    assert refused(program, card[:-1] + b"\x02")
    schema = fastavro.parse_schema({"type": "record", "name": "t.I", "fields": [
        {"name": "table_id", "type": "string"}, {"name": "i", "type": "int"}]})
    ints = Program.of(schema, as_dicts)
    assert ints is not None
    edge = b"\x02T" + b"\xfe\xff\xff\xff\x0f"  # 2**31 - 1
    assert ints.frame(edge, 1) == ([len(edge)], ["T"])
    assert refused(ints, b"\x02T" + b"\x80\x80\x80\x80\x10")  # 2**31


def test_attributes_read_at_their_slots_are_what_getattr_gives() -> None:
    """C reads the model's fields at their slots' offsets, found once a class: a class
    changed since (a field made a property) and a subclass that overrides a field are
    read as Python's getattr reads them, and the cache holds no more than it may."""
    base = Event("e", "T-1", "d", 1, 0, "R-1", None, WagerPlaced(1, 0, "MAIN", 2500))
    assert native.json_body(base) == python_line(base)

    class Doubled(WagerPlaced):
        __slots__ = ()

        @property  # type: ignore[override]
        def amount(self) -> int:
            return 5000

    payload = Doubled.__new__(Doubled)
    for name, value in (("seat", 1), ("hand", 0), ("kind", "MAIN"), ("amount", 2500)):
        WagerPlaced.__dict__[name].__set__(payload, value)  # the slot holds 2500
    doubled = replace(base, payload=payload)
    assert native.json_body(doubled) == python_line(doubled)
    cols = store_native.event_columns([doubled], [7], "00" * 8, jsonl.dumps)
    assert cols is not None
    assert int.from_bytes(cols[11], "little") == 5000  # amount, as getattr reads it

    slot = WagerPlaced.__dict__["kind"]
    try:
        WagerPlaced.kind = property(lambda self: "SIDE")  # type: ignore[assignment,method-assign]
        assert b'"kind":"SIDE"' in (native.json_body(base) or b"")
        assert native.json_body(base) == python_line(base)
    finally:
        WagerPlaced.kind = slot  # type: ignore[method-assign]
    assert native.json_body(base) == python_line(base)

    many = [type(f"P{i}", (WagerPlaced,), {"__slots__": ()}) for i in range(400)]
    for cls in many:  # more (class, name) pairs than the cache holds: getattr for the rest
        ev = replace(base, payload=cls(2, 1, "MAIN", 100))
        cols = store_native.event_columns([ev], [7], "00" * 8, jsonl.dumps)
        assert cols is not None
        assert (cols[8], cols[9], cols[11]) == (b"\x02", b"\x01", (100).to_bytes(8, "little"))


# --- a batch's events as their Avro bytes, for a store in a process of its own ---------

def test_event_bytes_keep_this_schemas_bytes_and_hand_the_others_to_the_rows() -> None:
    """An event decoded from this schema's Avro bytes is kept as them and its position
    (C and Python alike); one without them (JSON Lines) or under another schema's is
    written by the rows writer, or refused (False) without one; `take` gives the batch
    and starts again."""
    from pitwatch.producers.simulate import Floor
    from pitwatch.store.arrow import event_rows

    class Looked(Event):  # read through its own __getattribute__, not at its slots
        __slots__ = ()

        def __getattribute__(self, name: str) -> Any:
            return object.__getattribute__(self, name)

    evs = [avro.decode(avro.encode(e)) for e in list(Floor(1, 1, seed=5).events())[:6]]
    evs[5] = Looked(*(getattr(evs[5], f) for f in Event.__slots__))
    other = replace(evs[0], raw=None)
    older = replace(evs[1], writer=b"\x01" * 8)
    for b in (store_native.event_bytes(event_rows()), store_native._PyEventBytes()):
        python = isinstance(b, store_native._PyEventBytes)
        assert [b.add(e, 10 + i) for i, e in enumerate(evs)] == [True] * 6
        assert b.add(other, 99) is not python and b.add(older, 98) is not python
        assert len(b) == 6 + 2 * (not python)
        data, lengths, positions, n, rows, n_rows = b.take()
        assert data == b"".join(e.raw for e in evs)  # type: ignore[misc]
        assert list(memoryview(lengths).cast("I")) == [len(e.raw) for e in evs]  # type: ignore[arg-type]
        assert list(memoryview(positions).cast("Q")) == list(range(10, 16))
        assert n == 6 and n_rows == 2 * (not python)
        if not python:
            want = event_rows()
            assert want is not None and want.add(other, 99) and want.add(older, 98)
            assert rows == want.take()
        assert len(b) == 0 and b.take()[:4] == (b"", b"", b"", 0)
    assert store_native.event_bytes(None).add(other, 1) is False
    with pytest.raises(OverflowError):
        store_native.event_bytes(None).add(evs[0], -1)
    with pytest.raises(TypeError, match="EventRows or None"):
        native._native.EventBytes([])  # type: ignore[union-attr,arg-type]


def test_add_at_is_the_clocks_position_and_add_in_one_call() -> None:
    """`add_at(clock, event)` gives the batch and the clock what `clock.position` then
    `add` give them (C and Python alike); None when the event was taken, else its
    position, the event left to the caller; a redelivery keeps its position. The rows'
    `add_at` takes every event, each at the position `add` would give it."""
    from pitwatch.producers.simulate import Floor
    from pitwatch.store.arrow import event_rows
    from pitwatch.store.order import _PyTableClock, table_clock

    evs = [avro.decode(avro.encode(e)) for e in list(Floor(1, 1, seed=5).events())[:8]]
    evs.append(evs[3])  # redelivered
    other = replace(evs[0], raw=None, event_id="another id")  # not this schema's bytes
    for make, clock_of in ((lambda: store_native.event_bytes(None), table_clock),
                           (store_native._PyEventBytes, _PyTableClock)):
        one, two = make(), make()
        c1, c2 = clock_of(), clock_of()
        got = [one.add_at(c1, e) for e in evs]
        want = [c2.position(e) for e in evs]
        assert got == [None] * len(evs)
        assert [two.add(e, p) for e, p in zip(evs, want, strict=True)] == [True] * len(evs)
        assert one.take() == two.take()
        pos = one.add_at(c1, other)
        assert pos == c2.position(other) and pos is not None and len(one) == 0
        assert (c1.total, c1.extra, c1.last, c1.behind) == (c2.total, c2.extra, c2.last,
                                                            c2.behind)
    with pytest.raises(TypeError, match="a Clock and an event"):
        store_native.event_bytes(None).add_at(_PyTableClock(), evs[0])  # type: ignore[arg-type]
    # the rows' add_at, the same call: every event taken, each row at its position
    rows, by_add = event_rows(), event_rows()
    assert rows is not None and by_add is not None
    c1, c2 = table_clock(), table_clock()
    assert c1 is not None and c2 is not None
    assert [rows.add_at(c1, e) for e in [*evs, other]] == [None] * (len(evs) + 1)
    assert all(by_add.add(e, c2.position(e)) for e in [*evs, other])
    assert rows.take() == by_add.take()
    with pytest.raises(TypeError, match="a Clock and an event"):
        rows.add_at(_PyTableClock(), evs[0])


# --- the store's rows written straight from Avro bytes ---------------------------------

int32 = st.integers(-2**31, 2**31 - 1)
#: Events the schema encodes whose rows a column may refuse: a seat or hand past its
#: column, a negative seq or ts, text that needs escaping or is not ASCII.
encodable = st.builds(
    Event, any_text, any_text, any_text, st.integers(-2**63, 2**63 - 1),
    st.integers(-2**63, 2**63 - 1), st.none() | any_text, st.none() | st.binary(max_size=40),
    st.builds(WagerPlaced, int32, int32, st.sampled_from(["MAIN", "BONUS"]),
              st.integers(-2**63, 2**63 - 1))
    | st.builds(CardsCleared, st.none() | int32, st.none() | int32)
    | st.builds(RoundStarted, any_text, st.lists(int32, max_size=5).map(tuple)))


def rows_both_ways(evs: list[Event], data: bytes | None = None
                   ) -> tuple[Any, Any, list[tuple[Event, int]] | None,
                              list[tuple[Event, int]]]:
    """The rows of `evs` (or of the records in `data`) written straight from their Avro
    bytes, and by `add` from the events `build` makes of them: (the first's rows, the
    second's, what the first left unwritten, what `add` refused)."""
    from pitwatch.store.arrow import event_rows

    raws = [avro.encode(e) for e in evs]
    data = b"".join(raws) if data is None else data
    lengths = array("I", map(len, raws)).tobytes()
    positions = array("Q", range(100, 100 + len(evs))).tobytes()
    program = avro._current_program()
    direct, by_add = event_rows(), event_rows()
    assert program is not None and direct is not None and by_add is not None
    left = store_native.write_rows(program, direct, data, lengths, positions)
    refused = []
    built = program.build(data, len(evs)) or []
    for ev, pos in zip(built, range(100, 100 + len(evs)), strict=True):
        if not by_add.add(ev, pos):
            refused.append((ev, pos))
    return direct.take(), by_add.take(), left, refused


@settings(max_examples=300, deadline=None)
@given(st.lists(events | checkpoints | encodable, min_size=1, max_size=6))
def test_rows_written_from_avro_bytes_are_those_of_the_built_events(evs: list[Event]) -> None:
    """Every payload type, text to escape, a column's value out of its range: the rows
    written from the bytes, with no event built, are byte for byte the rows `add` writes
    of the events built from them (a TableOpened's too, built and given to `add`), and
    what `add` refuses is handed back, built, for Python to write."""
    direct, by_add, left, refused = rows_both_ways(evs)
    assert left is not None
    assert direct == by_add
    assert [(e, p, e.raw) for e, p in left] == [(e, p, e.raw) for e, p in refused]


def test_rows_from_bytes_that_are_not_these_records_are_refused_whole() -> None:
    """Bytes short of a record, or left over after the last, are None, and the rows
    written before are as they were."""
    from pitwatch.store.arrow import event_rows

    evs = [Event("e1", "T-1", "d", 1, 5, None, None, WagerPlaced(1, 0, "MAIN", 2500)),
           Event("e2", "T-1", "d", 2, 6, "R-1", None, CardsCleared(None, None))]
    raws = [avro.encode(e) for e in evs]
    program = avro._current_program()
    rows = event_rows()
    assert program is not None and rows is not None and rows.add(evs[0], 1)
    kept = event_rows()
    assert kept is not None and kept.add(evs[0], 1)
    lengths = array("I", map(len, raws)).tobytes()
    positions = array("Q", [2, 3]).tobytes()
    whole = b"".join(raws)
    for data, lens in ((whole[:-1], lengths), (whole + b"\x00", lengths),
                       (whole, lengths[:4]), (whole, lengths + b"\x00")):
        assert store_native.write_rows(program, rows, data, lens, positions) is None
        assert len(rows) == 1
    assert rows.take() == kept.take()


def test_rows_from_avro_bytes_build_no_event() -> None:
    """The rows of every payload type but a TableOpened (whose rules are built) are
    written with no event built: under an envelope class that cannot be built, the
    same rows as `add` writes of the events."""
    from pitwatch.producers.simulate import Floor

    evs = [e for e in Floor(2, 3, seed=7).events() if not isinstance(e.payload, TableOpened)]
    assert {type(e.payload).__name__ for e in evs} >= {"CardDealt", "WagerPlaced",
                                                     "Checkpoint", "RoundStarted"}
    want, _, _, _ = rows_both_ways(evs)
    program = avro._current_program()
    assert program is not None

    class Unbuilt:
        __slots__ = Event.__slots__

        def __new__(cls, *args: Any) -> Any:
            raise AssertionError("an event was built")

    consts = tuple(Unbuilt if c is Event else c for c in program.consts)
    unbuilt = Program(program.code, consts, True)
    raws = [avro.encode(e) for e in evs]
    rows = store_native.event_rows(avro.current_fingerprint(), jsonl.dumps)
    assert rows is not None
    left = store_native.write_rows(unbuilt, rows, b"".join(raws),
                                   array("I", map(len, raws)).tobytes(),
                                   array("Q", range(100, 100 + len(evs))).tobytes())
    assert left == [] and len(rows) == len(evs)
    assert rows.take() == want


def test_rows_changed_while_a_row_is_written_are_an_error_not_a_crash() -> None:
    """A `body_of` that takes the rows it is writing into (nothing of pitwatch's does)
    would free them under the writer: it is a RuntimeError, from `add` and `add_avro`
    alike, and the rows written before it stay whole."""
    from pitwatch.producers.simulate import Floor

    evs = list(Floor(1, 1, seed=3).events())
    opened = next(e for e in evs if isinstance(e.payload, TableOpened))  # Python's body
    plain = next(e for e in evs if isinstance(e.payload, WagerPlaced))

    def body_of(ev: Event) -> bytes:
        rows.take()
        return jsonl.dumps(ev)

    rows = store_native.event_rows(avro.current_fingerprint(), body_of)
    program = avro._current_program()
    assert rows is not None and program is not None and rows.add(plain, 1)
    raw = avro.encode(opened)
    with pytest.raises(RuntimeError, match="changed while it writes a row"):
        store_native.write_rows(program, rows, raw, array("I", [len(raw)]).tobytes(),
                                array("Q", [2]).tobytes())
    with pytest.raises(RuntimeError, match="changed while it writes a row"):
        rows.add(opened, 2)
    want = store_native.event_rows(avro.current_fingerprint(), jsonl.dumps)
    assert want is not None and want.add(plain, 1)
    assert len(rows) == 1 and rows.take() == want.take()
