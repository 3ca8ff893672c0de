"""Make the malicious files of tests/data/hostile/ (issue 35, items 1 and 8), byte for
byte the same each run: `python tests/data/make_hostile.py [DIR]` (DIR defaults to
tests/data/hostile). tests/unit/test_forged_containers.py reads them, and checks that
this script still makes exactly them.

Every file is an Avro container written here by hand (its own header and blocks, so
that nothing in pitwatch shapes it), with records under the released schema version 2
(schemas/avro/released/v2), so the files stay valid while newer versions are released.

- swapped_union.avro, enum_order.avro, renamed_fields.avro: records written under v2,
  copied byte for byte into a file whose header schema swaps the payload union's
  WagerCollected and WagerReturned, the Rank enum's ACE and TEN, or WagerPlaced's
  seat and hand: the same signed bytes, another meaning.
- crc_forged.avro: the swapped union, with a symbol added to the Suit enum and solved
  so that the schema's CRC-64-AVRO is v2's (CRC-64 is linear over GF(2)).
- deflate_bomb.avro: one record's block that inflates to 64 MiB from 64 KB.
- array_null.avro: 237 bytes; its header schema has an array of nulls, its one record
  claims 2**62 of them (fastavro loops on it with the GIL held).
- big_record.avro: a TableOpened inside every range of the contract but of 105 KB, in a
  block whose other 7 records keep it under 8 x 64 KiB.
- overlong_varint.avro, negative_count.avro, boolean_two.avro: a record whose bytes read
  to the same values as v2's one encoding of them, but are other bytes (an over-long
  varint, an array in a block of negative count, a boolean of 2).
"""

from __future__ import annotations

import copy
import io
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import to_parsing_canonical_form

HERE = Path(__file__).resolve().parent
V2 = HERE.parent.parent / "schemas" / "avro" / "released" / "v2" / "TableEvent.avsc"
SYNC = b"pitwatch-hostile"  # 16 bytes
NS = "pitwatch.events."


def zigzag(n: int) -> bytes:
    """An Avro long in its one encoding."""
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def text(b: bytes) -> bytes:
    return zigzag(len(b)) + b


def container(schema: Any, blocks: list[tuple[int, bytes]], codec: str = "null") -> bytes:
    """An Avro container file of these (count, bytes) blocks (bytes already compressed
    for a deflate codec), the header schema written as given."""
    meta = {b"avro.schema": json.dumps(schema, separators=(",", ":")).encode(),
            b"avro.codec": codec.encode()}
    out = b"Obj\x01" + zigzag(len(meta))
    for k, v in meta.items():
        out += text(k) + text(v)
    out += zigzag(0) + SYNC
    for count, data in blocks:
        out += zigzag(count) + zigzag(len(data)) + data + SYNC
    return out


def deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def v2() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(V2.read_text())
    return schema


def plain(schema: Any) -> Any:
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "logicalType"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    return fastavro.parse_schema(strip(schema))


def encode(datum: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, plain(v2()), datum)
    return buf.getvalue()


def event(seq: int, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"event_id": f"00000000-0000-4000-8000-{seq:012d}", "table_id": "T-H",
            "device_id": "T-H-rfid", "seq": seq, "ts": 1_796_000_000_000 + seq,
            "round_id": "T-H-000001", "prev_digest": None, "payload": (NS + kind, body)}


def money(seq: int, kind: str, amount: int) -> dict[str, Any]:
    return event(seq, kind, {"seat": 1, "hand": 0, "kind": "MAIN", "amount": amount})


#: The records the forged headers give another meaning: a lost wager collected, a pushed
#: one returned, a win paid; a card dealt.
SIGNED: list[dict[str, Any]] = [
    money(1, "WagerPlaced", 2500), money(2, "WagerCollected", 2500),
    money(3, "WagerReturned", 1000), money(4, "PayoutMade", 5000),
    event(5, "CardDealt", {"to": "PLAYER", "seat": 2, "hand": 0, "rank": "ACE", "suit": "S",
                           "face_up": True}),
]


def payload_types(schema: dict[str, Any]) -> list[Any]:
    types: list[Any] = next(f for f in schema["fields"] if f["name"] == "payload")["type"]
    return types


def named(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The named type `name` (short) defined somewhere in the schema."""
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("name") == name and "type" in node and node["type"] in (
                    "record", "enum", "fixed"):
                return node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise KeyError(name)


def swapped_union() -> dict[str, Any]:
    s = copy.deepcopy(v2())
    types = payload_types(s)
    i = next(k for k, t in enumerate(types) if t["name"] == "WagerCollected")
    j = next(k for k, t in enumerate(types) if t["name"] == "WagerReturned")
    types[i], types[j] = types[j], types[i]
    return s


def enum_order() -> dict[str, Any]:
    s = copy.deepcopy(v2())
    symbols = named(s, "Rank")["symbols"]
    i, j = symbols.index("ACE"), symbols.index("TEN")
    symbols[i], symbols[j] = symbols[j], symbols[i]
    return s


def renamed_fields() -> dict[str, Any]:
    s = copy.deepcopy(v2())
    fields = named(s, "WagerPlaced")["fields"]
    fields[0]["name"], fields[1]["name"] = fields[1]["name"], fields[0]["name"]
    return s


def crc64_avro(data: bytes) -> int:
    fp = 0xC15D213AA4D7A795
    for b in data:
        fp ^= b
        for _ in range(8):
            fp = (fp >> 1) ^ (0xC15D213AA4D7A795 & -(fp & 1))
    return fp


def crc_forged() -> dict[str, Any]:
    """The swapped union, its CRC-64-AVRO solved to v2's: a symbol of 96 letters, each
    A or C (one bit apart), added to the Suit enum. For messages of one length the CRC
    is affine in their bits, so the letters are a solution of 64 linear equations."""
    target = crc64_avro(to_parsing_canonical_form(v2()).encode())
    s = swapped_union()
    suit = named(s, "Suit")["symbols"]
    n = 96

    def crc_of(symbol: str) -> int:
        suit.append(symbol)
        try:
            return crc64_avro(to_parsing_canonical_form(s).encode())
        finally:
            suit.pop()

    base = crc_of("A" * n)
    # each letter flipped to C changes the CRC by a fixed vector; solve for the flips
    rows = [(crc_of("A" * i + "C" + "A" * (n - i - 1)) ^ base, 1 << i) for i in range(n)]
    want, pivots = base ^ target, []
    for bit in range(64):
        at = next((k for k, (v, _) in enumerate(rows) if v >> bit & 1), None)
        if at is None:
            continue
        pv, pm = rows.pop(at)
        rows = [(v ^ pv, m ^ pm) if v >> bit & 1 else (v, m) for v, m in rows]
        pivots = [(v ^ pv, m ^ pm) if v >> bit & 1 else (v, m) for v, m in pivots]
        pivots.append((pv, pm))
    flips = 0
    for v, m in pivots:
        bit = (v & -v).bit_length() - 1
        if want >> bit & 1:
            want ^= v
            flips ^= m
    assert want == 0, "no solution"
    suit.append("".join("C" if flips >> i & 1 else "A" for i in range(n)))
    assert crc64_avro(to_parsing_canonical_form(s).encode()) == target
    return s


def over_long(body: bytes, value: int) -> bytes:
    """`body` with the first one-byte varint of `value` written in two bytes."""
    short = zigzag(value)
    assert len(short) == 1
    at = body.index(short)
    return body[:at] + bytes([short[0] | 0x80, 0]) + body[at + 1:]


def files() -> dict[str, bytes]:
    records = [encode(d) for d in SIGNED]
    signed = (len(records), b"".join(records))
    out = {
        "swapped_union.avro": container(swapped_union(), [signed]),
        "enum_order.avro": container(enum_order(), [signed]),
        "renamed_fields.avro": container(renamed_fields(), [signed]),
        "crc_forged.avro": container(crc_forged(), [signed]),
    }
    # 8: an inflation past 64 KiB x its one record
    out["deflate_bomb.avro"] = container(v2(), [(1, deflate(bytes(64 << 20)))], "deflate")
    nulls = {"type": "record", "name": NS + "TableEvent", "fields": [
        {"name": "table_id", "type": "string"},
        {"name": "x", "type": {"type": "array", "items": "null"}}]}
    out["array_null.avro"] = container(nulls, [(1, text(b"T-H") + zigzag(2**62) + zigzag(0))])
    tables = [{"name": f"table-{t:02d}" + "x" * 119, "entries": [
        {"key": f"k{t:02d}-{e:02d}" + "y" * 121, "num": 1, "den": 1} for e in range(25)]}
        for t in range(32)]
    rules = {"decks": 6, "dealer_hits_soft_17": False, "blackjack_pays": {"num": 3, "den": 2},
             "insurance_pays": {"num": 2, "den": 1}, "hole_card": "PEEK", "double_on": "ANY",
             "double_after_split": True, "max_split_hands": 4, "resplit_aces": False,
             "hit_split_aces": False, "insurance": True, "even_money": True,
             "surrender": False, "bonus_wager": False, "bonus_wager_max": None,
             "match_wager": False, "push22_wager": False, "progressive_wager": False,
             "multiple_action": False, "min_wager": 1000, "max_wager": 500000,
             "chip_unit": 100, "pay_tables": tables}
    big = [encode(event(1, "TableOpened", {"jurisdiction": "NJ", "game": "BLACKJACK",
                                           "rules": rules}))]
    big += [encode(money(s, "WagerPlaced", 2500)) for s in range(2, 9)]
    out["big_record.avro"] = container(v2(), [(8, deflate(b"".join(big)))], "deflate")
    # one byte form: the same values from other bytes, in the second of three records
    wagers = [encode(money(s, "WagerPlaced", 2500)) for s in (1, 2, 3)]
    out["overlong_varint.avro"] = container(
        v2(), [(3, wagers[0] + over_long(wagers[1], 2) + wagers[2])])
    seats = encode(event(2, "RoundStarted", {"dealer_id": "D-1", "seats": [1, 2]}))
    one_block = zigzag(2) + zigzag(1) + zigzag(2) + zigzag(0)
    assert one_block in seats
    negative = zigzag(-2) + zigzag(2) + zigzag(1) + zigzag(2) + zigzag(0)
    out["negative_count.avro"] = container(
        v2(), [(3, wagers[0] + seats.replace(one_block, negative) + wagers[2])])
    card = encode(SIGNED[4])
    assert card.endswith(b"\x01")  # face_up: a boolean, the record's last byte
    out["boolean_two.avro"] = container(v2(), [(3, wagers[0] + card[:-1] + b"\x02"
                                                + wagers[2])])
    return out


def main(argv: list[str]) -> None:
    out = Path(argv[1]) if len(argv) > 1 else HERE / "hostile"
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files().items():
        (out / name).write_bytes(data)


if __name__ == "__main__":
    main(sys.argv)
