"""Forged and malicious Avro input (issue 35, items 1 and 8), each from its file in
tests/data/hostile/ (made by tests/data/make_hostile.py, which these tests check still
makes exactly them).

Item 1: "A container or message is accepted only under a released writer schema, by its
exact Parsing Canonical Form, never by CRC." and "Each record must re-encode
byte-identically under it."
Item 8: "capped inflation: records × 64 KiB; zero-width array and map items refused;
container records held to the message limit; each bound tested with the malicious file."
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from pitwatch.events import avro, limits, schema
from pitwatch.events.files import Rejected, read_files
from pitwatch.events.model import (
    CardDealt,
    PayoutMade,
    TableOpened,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from tests.data import make_hostile

HOSTILE = Path(make_hostile.__file__).parent / "hostile"
ROOT = HOSTILE.parent.parent.parent


def read(path: Path) -> tuple[list[avro.Event], list[Rejected]]:
    rejected: list[Rejected] = []
    return list(read_files([path], rejected.append)), rejected


@pytest.fixture
def released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory of more released versions (PITWATCH_RELEASED_SCHEMAS) for one test."""
    monkeypatch.setenv(schema.RELEASED_ENV, str(tmp_path))
    schema.writer_schemas.cache_clear()
    avro._program_of.cache_clear()
    yield tmp_path
    monkeypatch.undo()
    schema.writer_schemas.cache_clear()
    avro._program_of.cache_clear()


def release(root: Path, version: str, s: object) -> None:
    (root / version).mkdir()
    (root / version / schema.SCHEMA_FILE).write_text(json.dumps(s))
    schema.writer_schemas.cache_clear()


def test_the_script_makes_exactly_the_kept_files() -> None:
    made = make_hostile.files()
    assert sorted(made) == sorted(p.name for p in HOSTILE.iterdir())
    for name, data in made.items():
        assert (HOSTILE / name).read_bytes() == data, name


# --- item 1: one meaning for signed bytes ----------------------------------------------

SIGNED_TYPES = [WagerPlaced, WagerCollected, WagerReturned, PayoutMade, CardDealt]


def test_the_signed_records_read_under_the_released_header_as_signed(tmp_path: Path) -> None:
    """The other side: the same record bytes under v2's own header keep their meaning."""
    records = [make_hostile.encode(d) for d in make_hostile.SIGNED]
    f = tmp_path / "v2.avro"
    f.write_bytes(make_hostile.container(make_hostile.v2(), [(5, b"".join(records))]))
    events, rejected = read(f)
    assert rejected == []
    assert [type(e.payload) for e in events] == SIGNED_TYPES
    assert [e.raw for e in events] == records
    assert isinstance(events[4].payload, CardDealt) and events[4].payload.rank == "A"
    assert isinstance(events[0].payload, WagerPlaced) and events[0].payload.seat == 1


@pytest.mark.parametrize("name", ["swapped_union.avro", "enum_order.avro",
                                  "renamed_fields.avro", "crc_forged.avro"])
def test_a_header_schema_that_is_not_released_is_refused_naming_the_file(name: str) -> None:
    """The forged header would make WagerCollected a WagerReturned, an ace a ten, a seat
    a hand: no record of the file is read, and the rejection names the file."""
    events, rejected = read(HOSTILE / name)
    assert events == []
    assert len(rejected) == 1 and rejected[0].source == str(HOSTILE / name)
    assert "is not a released one" in rejected[0].reason


def test_a_crc_solved_to_the_released_ones_is_no_identity(released: Path) -> None:
    """crc_forged.avro's header has v2's CRC-64-AVRO and another canonical form: the
    CRC names nothing. Released beside v2, it is refused: no two released versions may
    share a CRC (the single-object header's lookup hint would be ambiguous)."""
    data = (HOSTILE / "crc_forged.avro").read_bytes()
    forged = make_hostile.crc_forged()
    v2 = make_hostile.v2()
    canonical = [schema.canonical_form(s) for s in (forged, v2)]
    assert canonical[0] != canonical[1]
    assert len({schema.crc64_avro(c.encode()) for c in canonical}) == 1
    with pytest.raises(avro.ContainerError, match="not a released one"):
        list(avro.read_container(io.BytesIO(data)))
    release(released, "v9", forged)
    with pytest.raises(schema.SchemaError, match="share the CRC-64"):
        schema.writer_schemas()


def test_the_released_versions_have_distinct_crcs_and_items_that_take_bytes() -> None:
    known = schema.writer_schemas()
    assert len(known) == len({w.canonical for w in known.values()})
    assert schema.current_writer().crc == schema.single_object_header()[2:]
    for w in known.values():
        assert schema.zero_width_items(w.plain) is None
        assert w.sha256 == hashlib.sha256(w.canonical.encode()).digest()
    v2 = schema.released_by_canonical(schema.canonical_form(make_hostile.v2()))
    assert v2 is not None and v2.source.endswith("released/v2/TableEvent.avsc")


def test_the_audit_is_given_the_released_schemas_as_data() -> None:
    """A writer seals its checkpoints when its payload union has SealedCheckpoint (v3
    on); the engine takes the released versions, their SHA-256s and that flag, as data
    (`released_writers`), and reads no file itself."""
    known = schema.writer_schemas()
    by_version = {w.source.split("/")[-2]: w for w in known.values() if "/released/" in w.source}
    assert not by_version["v1"].seals and not by_version["v2"].seals and by_version["v3"].seals
    assert all(w.seals == (schema.SEALED_CHECKPOINT in w.canonical) for w in known.values())
    r = schema.released_writers()
    assert r.current == schema.current_writer() and r.of(None) == r.current
    assert r.of(by_version["v2"].crc) == by_version["v2"] and r.of(b"\0" * 8) is None
    assert r.sha256 == {w.sha256 for w in known.values()}


def test_the_current_schema_is_released() -> None:
    """What this code writes is read back by its canonical form among released/*."""
    current = schema.current_writer()
    released = [w for w in schema.writer_schemas().values() if "/released/" in w.source]
    assert current.canonical in {w.canonical for w in released}


def test_each_event_names_the_sha256_of_its_writer_schema(tmp_path: Path) -> None:
    records = [make_hostile.encode(d) for d in make_hostile.SIGNED]
    f = tmp_path / "v2.avro"
    f.write_bytes(make_hostile.container(make_hostile.v2(), [(5, b"".join(records))]))
    events, _ = read(f)
    v2 = hashlib.sha256(schema.canonical_form(make_hostile.v2()).encode()).digest()
    assert {avro.writer_schema_sha256(e) for e in events} == {v2}
    fresh = avro.decode_single(avro.encode_single(events[0]))
    assert avro.writer_schema_sha256(fresh) == schema.current_writer().sha256


@pytest.mark.parametrize("name", ["overlong_varint.avro", "negative_count.avro",
                                  "boolean_two.avro"])
def test_a_record_not_in_its_one_byte_form_is_rejected(name: str) -> None:
    """Its bytes read to values whose one encoding is other bytes: the same event would
    have two digests. The record is rejected; the ones beside it are read."""
    events, rejected = read(HOSTILE / name)
    assert [e.seq for e in events] == [1, 3]
    assert [(r.line, "not its canonical encoding" in r.reason) for r in rejected] == [(2, True)]


def test_a_message_not_in_its_one_byte_form_is_refused() -> None:
    """The same rule for a single-object message, under this schema and an older one."""
    d = make_hostile.money(7, "WagerPlaced", 2500)
    body = make_hostile.encode(d)
    v2 = schema.released_by_canonical(schema.canonical_form(make_hostile.v2()))
    assert v2 is not None
    head = schema.SINGLE_OBJECT_MAGIC + v2.crc
    assert avro.decode_single(head + body).seq == 7
    for bad in (make_hostile.over_long(body, 7), body + b"\x00"):
        with pytest.raises(avro.DecodeError):
            avro.decode_single(head + bad)
    ev = avro.decode_single(head + body)
    current = avro.encode(ev)
    assert avro.decode(current) == ev
    with pytest.raises(avro.DecodeError, match="not its canonical encoding"):
        avro.decode(make_hostile.over_long(current, 7))


# --- item 8: bounded input ---------------------------------------------------------------

def test_a_deflate_bomb_is_refused_within_its_bound() -> None:
    """64 KB that inflate to 64 MiB, in a block of one record: refused once past 64 KiB,
    and never inflated whole (Python's allocations stay under 2 MiB)."""
    data = (HOSTILE / "deflate_bomb.avro").read_bytes()
    tracemalloc.start()
    try:
        with pytest.raises(avro.DecodeError, match="inflates past 65,536 bytes"):
            list(avro.read_container(io.BytesIO(data)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20


def test_a_block_inflating_to_its_bound_is_read(tmp_path: Path) -> None:
    """The other side: records x 64 KiB is a bound, not a size: a block of two records
    that inflates to less is read."""
    records = [make_hostile.encode(make_hostile.money(s, "WagerPlaced", 100)) for s in (1, 2)]
    f = tmp_path / "ok.avro"
    f.write_bytes(make_hostile.container(make_hostile.v2(), [
        (2, make_hostile.deflate(b"".join(records)))], "deflate"))
    events, rejected = read(f)
    assert [e.seq for e in events] == [1, 2] and rejected == []


def test_an_array_of_nulls_is_refused_at_once() -> None:
    """array_null.avro: its one record claims 2**62 nulls, which take no bytes (fastavro
    loops on them with the GIL held, deaf to SIGINT). Read in a process of its own: it
    is refused in seconds."""
    path = HOSTILE / "array_null.avro"
    assert path.stat().st_size < 300
    code = ("import sys; from pathlib import Path; from pitwatch.events.files import read_files;"
            "r = []; n = len(list(read_files([Path(sys.argv[1])], r.append)));"
            "print(n, r[0].reason)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 ") and "not a released one" in out.stdout


def test_no_schema_with_an_array_of_nulls_can_be_released(released: Path) -> None:
    nulls = {"type": "record", "name": "pitwatch.events.TableEvent", "fields": [
        {"name": "table_id", "type": "string"},
        {"name": "x", "type": {"type": "array", "items": "null"}}]}
    release(released, "v9", nulls)
    with pytest.raises(schema.SchemaError, match="items that take no bytes"):
        schema.writer_schemas()


def test_map_and_record_items_of_no_width_are_found() -> None:
    empty = {"type": "record", "name": "E", "fields": []}
    assert schema.zero_width_items({"type": "map", "values": "null"}) == "map"
    assert schema.zero_width_items({"type": "array", "items": empty}) == "array"
    assert schema.zero_width_items({"type": "array", "items": ["null"]}) is None
    assert schema.zero_width_items({"type": "array", "items": "long"}) is None


def test_a_container_record_past_the_message_limit_is_rejected() -> None:
    """big_record.avro: a TableOpened inside every range, of 109 KB, in a block whose
    8 records stay under 8 x 64 KiB: it is rejected as a message of its size would be;
    the 7 records beside it are read."""
    events, rejected = read(HOSTILE / "big_record.avro")
    assert [e.seq for e in events] == list(range(2, 9))
    assert [r.line for r in rejected] == [1]
    assert f"the contract's limit is {limits.MAX_MESSAGE_BYTES:,}" in rejected[0].reason


def test_a_container_record_under_the_limit_is_read(tmp_path: Path) -> None:
    opened = make_hostile.event(1, "TableOpened", {
        "jurisdiction": "NJ", "game": "BLACKJACK", "rules": {
            **_rules(), "pay_tables": [{"name": f"t{t}", "entries": [
                {"key": f"k{e}" + "y" * 120, "num": 1, "den": 1} for e in range(30)]}
                for t in range(16)]}})
    body = make_hostile.encode(opened)
    assert 60_000 < len(body) <= limits.MAX_MESSAGE_BYTES
    f = tmp_path / "ok.avro"
    f.write_bytes(make_hostile.container(make_hostile.v2(), [(1, body)]))
    events, rejected = read(f)
    assert rejected == [] and isinstance(events[0].payload, TableOpened)


def _rules() -> dict[str, object]:
    return {"decks": 6, "dealer_hits_soft_17": False, "blackjack_pays": {"num": 3, "den": 2},
            "insurance_pays": {"num": 2, "den": 1}, "hole_card": "PEEK", "double_on": "ANY",
            "double_after_split": True, "max_split_hands": 4, "resplit_aces": False,
            "hit_split_aces": False, "insurance": True, "even_money": True,
            "surrender": False, "bonus_wager": False, "bonus_wager_max": None,
            "match_wager": False, "push22_wager": False, "progressive_wager": False,
            "multiple_action": False, "min_wager": 1000, "max_wager": 500000,
            "chip_unit": 100}


def test_a_header_past_its_bound_is_refused() -> None:
    head = b"Obj\x01" + make_hostile.zigzag(1) + make_hostile.text(b"avro.schema")
    data = head + make_hostile.zigzag(limits.MAX_HEADER_BYTES + 1)
    with pytest.raises(avro.DecodeError, match="a header of more than"):
        avro.read_header(io.BytesIO(data))


def test_a_codec_but_null_or_deflate_is_refused(tmp_path: Path) -> None:
    """A snappy (or any other) block would be inflated by code with no bound: refused."""
    records = make_hostile.encode(make_hostile.money(1, "WagerPlaced", 100))
    data = make_hostile.container(make_hostile.v2(), [(1, records)], "snappy")
    with pytest.raises(avro.DecodeError, match="pitwatch reads null and deflate"):
        avro.read_header(io.BytesIO(data))


def test_a_stored_deflate_block_at_its_bound_is_not_refused_for_its_framing() -> None:
    """Incompressible records are stored by deflate in slightly more bytes than they
    hold: a block of exactly records x 64 KiB of them is inflated, not refused."""
    import random
    import zlib

    raw = random.Random(5).randbytes(2 * limits.MAX_MESSAGE_BYTES)
    c = zlib.compressobj(0, zlib.DEFLATED, -15)
    stored = c.compress(raw) + c.flush()
    assert len(stored) > len(raw)
    data = make_hostile.container(make_hostile.v2(), [(2, stored)], "deflate")
    src = io.BytesIO(data)
    header = avro.read_header(src)
    assert list(avro.read_blocks(src, header)) == [(2, raw)]
