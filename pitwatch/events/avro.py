"""Avro forms of an event: schemaless body, single-object encoding, container files.

fastavro does the byte work (measured in bench/codec.py against the avro package).
The canonical form of an event, the one `prev_digest` hashes, is its schemaless Avro
binary under the schema it was written with.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Final, cast

import fastavro

try:
    from isal import isal_zlib
except ImportError:  # a platform without its wheel: zlib inflates
    isal_zlib = None  # type: ignore[assignment]

from ..blackjack.ratio import Ratio
from . import limits
from .model import (
    POSTED_V5,
    CardDealt,
    CardsCleared,
    Checkpoint,
    Event,
    HoleCardChecked,
    HoleCardInserted,
    HoleCardRevealed,
    InsuranceOffered,
    PayEntry,
    PayoutMade,
    PayTable,
    PlayerDecision,
    PlayerLeft,
    PlayerSeated,
    RoundEnded,
    RoundStarted,
    Rules,
    ShoeLoaded,
    SwitchOffered,
    TableOpened,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
    posts_v5,
)
from .native import Program
from .schema import (
    NAMESPACE,
    SINGLE_OBJECT_MAGIC,
    WriterSchema,
    canonical_form,
    current_writer,
    plain_schema,
    raw_schema,
    released_by_canonical,
    single_object_header,
    strip_logical,
    writer_schemas,
)

RANK_TO_AVRO: Final = {
    "A": "ACE", "2": "TWO", "3": "THREE", "4": "FOUR", "5": "FIVE", "6": "SIX", "7": "SEVEN",
    "8": "EIGHT", "9": "NINE", "10": "TEN", "J": "JACK", "Q": "QUEEN", "K": "KING",
}
RANK_FROM_AVRO: Final = {v: k for k, v in RANK_TO_AVRO.items()}
_PREFIX: Final = NAMESPACE + "."
_EMPTY: Final[dict[str, Any]] = {}


class DecodeError(ValueError):
    """Bytes that are not an event of a schema this reader knows, or an event outside
    the contract's ranges. `event`: the event as sent, when only its payload is outside
    them (its envelope inside, its bytes its one form): still its device's record's,
    marked `refused` with this message, for the auditor to take as refused."""

    def __init__(self, message: str, event: Event | None = None) -> None:
        super().__init__(message)
        self.event = event


# --- typed event <-> Avro datum -----------------------------------------------------


def rules_to_dict(r: Rules, posted_v5: bool = True) -> dict[str, Any]:
    """The rules as their Avro datum or JSON object; without `posted_v5`, the `Rules`
    record's (the fields before schema version 5)."""
    d = {
        "decks": r.decks, "dealer_hits_soft_17": r.dealer_hits_soft_17,
        "blackjack_pays": {"num": r.blackjack_pays.num, "den": r.blackjack_pays.den},
        "insurance_pays": {"num": r.insurance_pays.num, "den": r.insurance_pays.den},
        "hole_card": r.hole_card, "double_on": r.double_on,
        "double_after_split": r.double_after_split, "max_split_hands": r.max_split_hands,
        "resplit_aces": r.resplit_aces, "hit_split_aces": r.hit_split_aces,
        "insurance": r.insurance, "even_money": r.even_money, "surrender": r.surrender,
        "bonus_wager": r.bonus_wager, "bonus_wager_max": r.bonus_wager_max,
        "match_wager": r.match_wager, "push22_wager": r.push22_wager,
        "progressive_wager": r.progressive_wager, "multiple_action": r.multiple_action,
        "min_wager": r.min_wager, "max_wager": r.max_wager, "chip_unit": r.chip_unit,
        "pay_tables": None if r.pay_tables is None else [
            {"name": t.name,
             "entries": [{"key": e.key, "num": e.num, "den": e.den} for e in t.entries]}
            for t in r.pay_tables
        ],
    }
    if posted_v5:
        d.update((k, getattr(r, k)) for k in POSTED_V5)
    return d


def rules_from_dict(d: dict[str, Any]) -> Rules:
    """Rules from their Avro datum or JSON object (the same field names)."""
    tables = d.get("pay_tables")
    return Rules(
        decks=d["decks"], dealer_hits_soft_17=d["dealer_hits_soft_17"],
        blackjack_pays=Ratio(d["blackjack_pays"]["num"], d["blackjack_pays"]["den"]),
        insurance_pays=Ratio(d["insurance_pays"]["num"], d["insurance_pays"]["den"]),
        hole_card=d["hole_card"], double_on=d["double_on"],
        double_after_split=d["double_after_split"], max_split_hands=d["max_split_hands"],
        resplit_aces=d["resplit_aces"], hit_split_aces=d["hit_split_aces"],
        insurance=d["insurance"], even_money=d["even_money"], surrender=d["surrender"],
        bonus_wager=d["bonus_wager"], bonus_wager_max=d.get("bonus_wager_max"),
        match_wager=d["match_wager"], push22_wager=d["push22_wager"],
        progressive_wager=d["progressive_wager"], multiple_action=d["multiple_action"],
        min_wager=d["min_wager"], max_wager=d["max_wager"], chip_unit=d["chip_unit"],
        pay_tables=None if tables is None else tuple(
            PayTable(t["name"], tuple(PayEntry(e["key"], e["num"], e["den"]) for e in t["entries"]))
            for t in tables
        ),
        **{k: d.get(k, v) for k, v in POSTED_V5.items()},  # absent before version 5
    )


def _payload_to_avro(p: object) -> dict[str, Any]:
    if isinstance(p, CardDealt):
        return {"to": p.to, "seat": p.seat, "hand": p.hand, "rank": RANK_TO_AVRO[p.rank],
                "suit": p.suit, "face_up": p.face_up}
    if isinstance(p, TableOpened):
        return {"jurisdiction": p.jurisdiction, "game": p.game,
                "rules": rules_to_dict(p.rules, posts_v5(p.rules))}
    if isinstance(p, RoundStarted):
        return {"dealer_id": p.dealer_id, "seats": list(p.seats)}
    if isinstance(p, Checkpoint) and p.schema_sha256 is None:  # the version 2 form
        if p.order is not None or p.end:
            raise ValueError("a Checkpoint signs an order or an end only with its "
                             "schema_sha256 (a SealedCheckpoint)")
        return {"head_seq": p.head_seq, "head_digest": p.head_digest, "key_id": p.key_id,
                "signature": p.signature}
    return {name: getattr(p, name) for name in p.__slots__}  # type: ignore[attr-defined]


def _branch(p: object) -> str:
    """The union branch of a payload: its class's name, but a Checkpoint with a schema
    hash is a SealedCheckpoint, and a TableOpened whose rules post what only version 5
    can say a PostedTableOpened."""
    if type(p) is Checkpoint and p.schema_sha256 is not None:
        return _PREFIX + "SealedCheckpoint"
    if type(p) is TableOpened and posts_v5(p.rules):
        return _PREFIX + "PostedTableOpened"
    return _PREFIX + type(p).__name__


def to_datum(ev: Event) -> dict[str, Any]:
    """The Avro datum of an event, the union branch named as fastavro's tuple notation."""
    return {
        "event_id": ev.event_id, "table_id": ev.table_id, "device_id": ev.device_id,
        "seq": ev.seq, "ts": ev.ts, "round_id": ev.round_id, "prev_digest": ev.prev_digest,
        "payload": (_branch(ev.payload), _payload_to_avro(ev.payload)),
    }


def _wager(cls: Any) -> Any:
    return lambda d: cls(d["seat"], d["hand"], d["kind"], d["amount"])


_FROM_AVRO: Final[dict[str, Any]] = {
    _PREFIX + "TableOpened": lambda d: TableOpened(d["jurisdiction"], d["game"],
                                                   rules_from_dict(d["rules"])),
    _PREFIX + "PostedTableOpened": lambda d: TableOpened(d["jurisdiction"], d["game"],
                                                         rules_from_dict(d["rules"])),
    _PREFIX + "ShoeLoaded": lambda d: ShoeLoaded(d["shoe_id"], d["decks"]),
    _PREFIX + "RoundStarted": lambda d: RoundStarted(d["dealer_id"], tuple(d["seats"])),
    _PREFIX + "WagerPlaced": _wager(WagerPlaced),
    _PREFIX + "CardDealt": lambda d: CardDealt(d["to"], d["seat"], d["hand"],
                                               RANK_FROM_AVRO[d["rank"]], d["suit"], d["face_up"]),
    _PREFIX + "InsuranceOffered": lambda d: InsuranceOffered(),
    _PREFIX + "SwitchOffered": lambda d: SwitchOffered(d["seat"]),
    _PREFIX + "HoleCardInserted": lambda d: HoleCardInserted(d["dealer_blackjack"]),
    _PREFIX + "HoleCardChecked": lambda d: HoleCardChecked(d["dealer_blackjack"]),
    _PREFIX + "HoleCardRevealed": lambda d: HoleCardRevealed(),
    _PREFIX + "PlayerDecision": lambda d: PlayerDecision(d["seat"], d["hand"], d["decision"]),
    _PREFIX + "PayoutMade": _wager(PayoutMade),
    _PREFIX + "WagerCollected": _wager(WagerCollected),
    _PREFIX + "WagerReturned": _wager(WagerReturned),
    _PREFIX + "CardsCleared": lambda d: CardsCleared(d["seat"], d["hand"]),
    _PREFIX + "RoundEnded": lambda d: RoundEnded(),
    _PREFIX + "Checkpoint": lambda d: Checkpoint(d["head_seq"], d["head_digest"], d["key_id"],
                                                 d["signature"]),
    _PREFIX + "SealedCheckpoint": lambda d: Checkpoint(
        d["head_seq"], d["head_digest"], d["key_id"], d["signature"], d["schema_sha256"],
        d["order"], d["end"]),
    _PREFIX + "PlayerSeated": lambda d: PlayerSeated(d["seat"], d["player_id"],
                                                     d["player_kind"]),
    _PREFIX + "PlayerLeft": lambda d: PlayerLeft(d["seat"]),
}


def from_datum(d: dict[str, Any], raw: bytes | None = None) -> Event:
    """The event of an Avro datum; DecodeError when it is outside the contract's ranges
    (pitwatch.events.limits)."""
    name, body = d["payload"]
    try:
        payload = _FROM_AVRO[name](body)
    except KeyError as e:
        raise DecodeError(f"unknown payload {name!r}") from e
    event_id, ts = d["event_id"], d["ts"]
    if type(ts) is not int:  # a file written under the logical types: datetime and UUID
        ts, event_id = int(ts.timestamp() * 1000), str(event_id)
    return checked(Event(event_id, d["table_id"], d["device_id"], d["seq"], ts,
                         d["round_id"], d["prev_digest"], payload, raw))


def checked(ev: Event) -> Event:
    """The event, if inside the contract's ranges (pitwatch.events.limits); DecodeError
    if not. The half of `from_datum` an event built in C (`native`) still needs."""
    try:
        limits.check(ev)
    except limits.OutOfRange as e:
        why = f"out of the contract's range: {e}"
        if not limits.envelope_in_range(ev):
            raise DecodeError(why) from e
        ev.refused = why
        raise DecodeError(why, ev) from e
    return ev


#: The typed class each record type of the schema is built into by `native`, where the
#: class's fields are the record's, in order (the envelope's: with its bytes after them).
_TYPED: Final[dict[str, Any]] = {
    _PREFIX + cls.__name__: cls
    for cls in (TableOpened, ShoeLoaded, RoundStarted, WagerPlaced, CardDealt,
                InsuranceOffered, SwitchOffered, HoleCardInserted, HoleCardRevealed,
                PlayerDecision, PayoutMade, WagerCollected, WagerReturned, CardsCleared,
                RoundEnded, Checkpoint, HoleCardChecked, PlayerSeated, PlayerLeft, Rules,
                PayTable, PayEntry, Ratio)
} | {_PREFIX + "TableEvent": Event, _PREFIX + "SealedCheckpoint": Checkpoint,
     _PREFIX + "PostedTableOpened": TableOpened, _PREFIX + "PostedRules": Rules}


#: Enums built as other values than their symbols.
_ENUMS: Final = {_PREFIX + "Rank": RANK_FROM_AVRO}


def _typed(name: str, fields: list[str], top: bool) -> Any:
    cls = _TYPED.get(name)
    if cls is None:
        return None
    names = list(cls._fields) if hasattr(cls, "_fields") else [
        f.name for f in dataclasses.fields(cls)]
    expected = fields + ["raw"] * top
    if not top and cls in (Checkpoint, Rules) and names[:len(fields)] == fields:
        return cls  # an earlier form: its later fields keep their defaults
    return cls if names[:len(expected)] == expected and (top or names == fields) else None


def _bounded(data: bytes, what: str) -> None:
    if len(data) > limits.MAX_MESSAGE_BYTES:
        raise DecodeError(f"{what} of {len(data):,} bytes: the contract's limit is "
                          f"{limits.MAX_MESSAGE_BYTES:,}")


# --- bytes ----------------------------------------------------------------------------


def encode(ev: Event) -> bytes:
    """The canonical form: schemaless Avro binary of the event."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, plain_schema(), to_datum(ev))
    return buf.getvalue()


def digest(ev: Event) -> bytes:
    """SHA-256 of the canonical form: what the device's next event carries as prev_digest."""
    return hashlib.sha256(ev.raw if ev.raw is not None else encode(ev)).digest()


def decode(body: bytes) -> Event:
    """The event of a body under this schema: in C (`native`) where the walk takes it,
    else fastavro's datum, held to its one byte form (`_datum`)."""
    _bounded(body, "an event")
    return _decode_current(body)


def _decode_current(body: bytes) -> Event:
    """`decode` of a body already within the message limit."""
    program = _current_program()
    built = None if program is None else program.build(body, 1)
    if built is not None:  # built in C (`native`); what it refuses, fastavro reads
        return checked(built[0])
    return from_datum(_datum(current_writer(), body), body)


def _datum(writer: WriterSchema, body: bytes) -> Any:
    """fastavro's datum of one record's bytes under a released writer schema, resolved
    to this schema; DecodeError unless the bytes are exactly one record in its one
    canonical encoding (`_one_form`)."""
    bio = io.BytesIO(body)
    try:
        d: Any = fastavro.schemaless_reader(bio, writer.plain, None, return_record_name=True)
    except Exception as e:  # fastavro raises many kinds on bad bytes
        raise DecodeError(f"not a TableEvent body under schema {writer.crc.hex()}: {e}") from e
    if bio.tell() != len(body):
        raise DecodeError(f"{len(body) - bio.tell()} bytes after the record")
    return _resolved(writer, d, body, writer.crc == current_writer().crc)


def _resolved(writer: WriterSchema, datum: Any, raw: bytes, current: bool) -> Any:
    """fastavro's datum of `raw` under its released writer schema, held to its one byte
    form (`_one_form`) and resolved to this schema (`current`: the writer is this one,
    else `raw` is read again under both)."""
    _one_form(writer, datum, raw)
    if current:
        return datum
    return fastavro.schemaless_reader(io.BytesIO(raw), writer.plain, plain_schema(),
                                      return_record_name=True)


def _one_form(writer: WriterSchema, datum: Any, raw: bytes) -> None:
    """DecodeError unless `raw` is what `datum` re-encodes to under its writer schema: one
    event has one byte form, so its digest means one thing (no over-long varint, no
    negative or second block count in an array, no boolean but 0 or 1...)."""
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, writer.plain, datum)
    except Exception as e:  # a datum the writer cannot write is not one it wrote
        raise DecodeError(f"the record does not re-encode under its writer schema: {e}") from e
    if buf.getvalue() != raw:
        raise DecodeError(
            f"the record's {len(raw)} bytes are not its canonical encoding (re-encoded "
            f"under its writer schema, its values are {len(buf.getvalue())} other bytes: "
            "an over-long varint, a negative or split block count, a boolean but 0 or 1...)")


def encode_single(ev: Event) -> bytes:
    """Avro single-object encoding: the fingerprint header, then the body (Kafka values)."""
    return single_object_header() + encode(ev)


def message_bytes(ev: Event) -> bytes:
    """The event as a single-object message: its bytes as written, under its writer's
    fingerprint, when it was read from them (so its digest stays), else encoded now."""
    if ev.raw is None:
        return single_object_header() + encode(ev)
    return SINGLE_OBJECT_MAGIC + (ev.writer or single_object_header()[2:]) + ev.raw


def writer_fingerprint(ev: Event) -> str:
    """The hex CRC-64 of the schema the event's bytes were written under (a lookup hint:
    `writer_schema_sha256` is its identity)."""
    return ev.writer.hex() if ev.writer else current_fingerprint()


def writer_schema_sha256(ev: Event) -> bytes:
    """SHA-256 of the Parsing Canonical Form of the schema the event's bytes are under
    (this one when it names none): what gives its bytes (and so its digest) their
    meaning, for a signature to bind."""
    if ev.writer is None:
        return current_writer().sha256
    w = writer_schemas().get(ev.writer)
    if w is None:
        raise DecodeError(f"unknown schema fingerprint {ev.writer.hex()}")
    return w.sha256


@functools.cache
def _current_program() -> Program | None:
    """The C reader of an event body under this schema."""
    return Program.of(current_writer().plain, _typed, _ENUMS)


@functools.cache
def current_fingerprint() -> str:
    return single_object_header()[2:].hex()


def decode_single(message: bytes) -> Event:
    """An event from a single-object message written under any released schema version.
    Its 8 CRC bytes only look the version up (no two released versions share them: see
    `schema.writer_schemas`); the record must then be exactly one record of that schema
    in its one canonical encoding. Its raw bytes are the body as written: the digest is
    computed over them, never over a re-encoding."""
    _bounded(message, "a message")
    header = single_object_header()
    if message[:10] == header:  # this schema: in C where the walk takes it (`decode`)
        return _decode_current(message[10:])
    if message[:2] != header[:2]:
        raise DecodeError("not Avro single-object encoded (no C3 01 marker)")
    fp = message[2:10]
    writer = writer_schemas().get(fp)
    if writer is None:
        raise DecodeError(f"unknown schema fingerprint {fp.hex()}: not the current schema "
                          "nor any released one")
    body = message[10:]
    ev = from_datum(_datum(writer, body), body)
    ev.writer = fp
    return ev


# --- container files ----------------------------------------------------------------


class ContainerError(DecodeError):
    """A container file (or one of its blocks) refused: the reason says why."""


def _deflate_slack(cap: int) -> int:
    """The bytes a deflate stream of `cap` bytes may add to them (5 a stored block of
    64 KiB, its end, zlib's checksum), so that a block of stored records is not refused
    for them."""
    return 5 * (cap // 65_535 + 1) + 64


def _read_exact(src: IO[bytes], n: int, what: str) -> bytes:
    data = src.read(n)
    if len(data) != n:
        raise ContainerError(f"the file ends inside {what} ({len(data)} of {n} bytes)")
    return data


def _read_long(src: IO[bytes], what: str) -> int | None:
    """An Avro long (zigzag varint) read from a file; None at the file's end before it."""
    shift = value = 0
    while True:
        b = src.read(1)
        if not b:
            if shift == 0:
                return None
            raise ContainerError(f"the file ends inside {what}")
        value |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7
        if shift > 63:
            raise ContainerError(f"{what} is longer than a long")


def _long(src: IO[bytes], what: str) -> int:
    n = _read_long(src, what)
    if n is None:
        raise ContainerError(f"the file ends before {what}")
    return n


@dataclasses.dataclass(frozen=True)
class ContainerHeader:
    """What a container file's header says: its writer schema (a released one), its
    codec and its sync marker."""

    writer: WriterSchema
    codec: str
    sync: bytes


def read_header(src: IO[bytes]) -> ContainerHeader:
    """A container file's header, read within `limits.MAX_HEADER_BYTES`. ContainerError
    unless its schema is, by its Parsing Canonical Form, one of the released versions
    (`schema.writer_schemas`): the records are then read under that released schema,
    never under the file's own text (its logical types, docs and defaults are ignored)."""
    if src.read(4) != b"Obj\x01":
        raise ContainerError("not an Avro container file (no Obj 1 magic)")
    left = limits.MAX_HEADER_BYTES
    meta: dict[str, bytes] = {}
    while (count := _long(src, "the header's metadata")) != 0:
        if count < 0:
            count = -count
            _long(src, "the header's metadata")
        for _ in range(count):
            key = _read_exact(src, _text_length(src, left), "the header's metadata")
            left -= len(key)
            value = _read_exact(src, _text_length(src, left), "the header's metadata")
            left -= len(value)
            name = key.decode("utf-8", "replace")
            if name in meta:
                raise ContainerError(f"the header names {name!r} twice")
            meta[name] = value
    sync = _read_exact(src, 16, "the header's sync marker")
    codec = meta.get("avro.codec", b"null").decode("utf-8", "replace")
    if codec not in ("null", "deflate"):
        raise ContainerError(f"codec {codec[:40]!r}: pitwatch reads null and deflate")
    text = meta.get("avro.schema")
    if text is None:
        raise ContainerError("the header has no avro.schema")
    try:
        canonical = canonical_form(json.loads(text))
    except Exception as e:  # any failure to parse a schema is the file's
        raise ContainerError(f"the header's schema is not an Avro schema: {e}"[:300]) from e
    writer = released_by_canonical(canonical)
    if writer is None:
        sha = hashlib.sha256(canonical.encode()).hexdigest()
        raise ContainerError(
            f"the header's writer schema (canonical form SHA-256 {sha[:16]}...) is not a "
            "released one (schemas/avro/released): its records' meaning would come from "
            "the file itself")
    return ContainerHeader(writer, codec, sync)


def _text_length(src: IO[bytes], left: int) -> int:
    n = _long(src, "the header's metadata")
    if not 0 <= n <= left:
        raise ContainerError(f"a header of more than {limits.MAX_HEADER_BYTES:,} bytes")
    return n


def _inflate(data: bytes, cap: int) -> bytes:
    """A deflate block's bytes, never more than `cap` of them inflated: a block that
    would inflate past it is refused, not inflated. ISA-L (`isal`) inflates twice as
    fast as zlib, the same bytes."""
    d = (isal_zlib or zlib).decompressobj(-15)
    try:
        out: bytes = d.decompress(data, cap + 1)
    except Exception as e:  # zlib's or ISA-L's error on a damaged stream
        raise ContainerError(f"a deflate block does not inflate: {e}") from e
    if len(out) > cap or d.unconsumed_tail:
        raise ContainerError(f"a deflate block inflates past {cap:,} bytes (its records "
                             f"x {limits.MAX_MESSAGE_BYTES:,}, at most "
                             f"{limits.MAX_BLOCK_BYTES:,})")
    if not d.eof or len(d.unused_data) > 4:  # fastavro leaves 3 of zlib's checksum
        raise ContainerError("a deflate block's stream is cut short or followed by bytes")
    return out


def read_blocks(src: IO[bytes], header: ContainerHeader) -> Iterator[tuple[int, bytes]]:
    """Each block's record count and its bytes, inflated. A block is refused
    (ContainerError) when it would hold more than its records x the message limit
    (or `limits.MAX_BLOCK_BYTES`), more records than bytes, or its sync marker is not
    the file's."""
    while (count := _read_long(src, "a block's count")) is not None:
        if count < 1:
            raise ContainerError(f"a block of {count} records")
        cap = min(count * limits.MAX_MESSAGE_BYTES, limits.MAX_BLOCK_BYTES)
        size = _long(src, "a block's size")
        most = cap if header.codec == "null" else cap + _deflate_slack(cap)
        if not 0 <= size <= most:
            raise ContainerError(f"a block of {size:,} bytes for {count} records: at most "
                                 f"{most:,}")
        data = _read_exact(src, size, "a block")
        raw = data if header.codec == "null" else _inflate(data, cap)
        if count > len(raw):
            raise ContainerError(f"a block of {count} records in {len(raw)} bytes")
        if _read_exact(src, 16, "a block's sync marker") != header.sync:
            raise ContainerError("a block's sync marker is not the file's")
        yield count, raw


def write_container(out: IO[bytes], events: Iterable[Event], codec: str = "deflate",
                    sync_marker: bytes | None = None) -> int:
    """An Avro container file of events; returns how many. The header carries the schema
    as its file reads, without logical types (same fingerprint; readers get ints and
    strs, not datetimes). With a `sync_marker` the same events give the same bytes."""
    n = 0

    def data() -> Iterator[dict[str, Any]]:
        nonlocal n
        for ev in events:
            n += 1
            yield to_datum(ev)

    fastavro.writer(out, strip_logical(raw_schema()), data(), codec=codec,
                    sync_interval=64 * 1024,
                    sync_marker=sync_marker)  # type: ignore[arg-type]  # None: random
    return n


class ContainerBlock:
    """One block of a container file, inflated, its records read on demand under the
    file's released writer schema."""

    def __init__(self, count: int, raw: bytes, writer: WriterSchema,
                 program: Program | None) -> None:
        self.raw, self.count = raw, count
        self._writer, self._program = writer, program
        self._current = writer.crc == current_writer().crc
        #: the 8 CRC bytes of the file's schema when it is not this one (what an
        #: event's `writer` says: its raw bytes are under that schema)
        self._writer_fp = None if self._current else writer.crc

    def records(self) -> Iterator[tuple[dict[str, Any], bytes]]:
        """Every record's fastavro datum under its writer schema, and its raw bytes (as
        they end where fastavro's read of the record stops). `judged` holds each to its
        one byte form."""
        raw, writer = self.raw, self._writer.plain
        bio = io.BytesIO(raw)
        pos = 0
        for _ in range(self.count):
            d = fastavro.schemaless_reader(bio, writer, None, return_record_name=True)
            end = bio.tell()
            yield cast(dict[str, Any], d), raw[pos:end]
            pos = end
        if pos != len(raw):
            raise ContainerError(f"{len(raw) - pos} bytes after a block's last record")

    def frame(self) -> tuple[list[int], list[str | None]] | None:
        """Where each record ends and its table_id, undecoded (`native`); None when there
        is no program or it refuses the block."""
        return None if self._program is None else self._program.frame(self.raw, self.count)

    def events(self) -> list[Event] | None:
        """Every record built as an event in C (`native`), not yet range-checked
        (`checked`); None when the file is not under this schema, or the block is
        refused: then `records` reads it."""
        return None if self._program is None else self._program.build(self.raw, self.count)

    def pick(self, ours: dict[str | None, bool], decide: Callable[[str | None], bool]
             ) -> tuple[list[int], list[Event]] | None:
        """The records of the tables `ours` maps to True (a table_id not in it is given
        `decide(table_id)` first, in the order met), built as `events` builds them, with
        their indices in the block; None as `events` gives it."""
        if self._program is None:
            return None
        return self._program.pick(self.raw, self.count, ours, decide)

    def read(self) -> Iterator[Event | tuple[dict[str, Any], bytes]]:
        """Every record: built in C when it can be (`events`), else fastavro's datum and
        its bytes (`records`). `judged` makes either an event."""
        built = self.events()
        return iter(built) if built is not None else self.records()

    def judged(self, rec: Event | tuple[dict[str, Any], bytes]) -> Event:
        """The event of a record `read`: DecodeError (or KeyError) when it is not one of
        the contract (`shown` is what to show of it): past the message limit, not in its
        one byte form, or out of its ranges."""
        raw = rec.raw if isinstance(rec, Event) else rec[1]
        if raw is not None:
            _bounded(raw, "a record")
        if isinstance(rec, Event):  # the C walk took only records in their one form
            return checked(rec)
        d, raw = rec
        ev = from_datum(_resolved(self._writer, d, raw, self._current), raw)
        ev.writer = self._writer_fp
        return ev

    def shown(self, rec: Event | tuple[dict[str, Any], bytes]) -> str:
        """What a rejected record shows: fastavro's datum of it, as Python writes it."""
        return repr(self.datum(rec.raw or b"") if isinstance(rec, Event) else rec[0])[:2000]

    def datum(self, raw: bytes) -> dict[str, Any]:
        """fastavro's datum of one record's bytes (what a rejected record shows)."""
        return cast(dict[str, Any], fastavro.schemaless_reader(
            io.BytesIO(raw), self._writer.plain, None, return_record_name=True))


@functools.cache
def _program_of(crc: bytes) -> Program | None:
    """The C walk of a released schema's records: built only under this schema, framed
    under any."""
    writer = writer_schemas()[crc]
    same = crc == current_writer().crc
    return Program.of(writer.plain, _typed if same else None, _ENUMS)


def read_container_blocks(src: IO[bytes]) -> Iterator[ContainerBlock]:
    """The blocks of a container file, each able to read its records with their raw
    bytes as written: the canonical form under the file's writer schema, so digests
    need no re-encoding (and a file of another released version keeps its digests).
    ContainerError when the header's schema is not a released one, or a block breaks a
    bound (`read_header`, `read_blocks`)."""
    header = read_header(src)
    program = _program_of(header.writer.crc)
    for count, raw in read_blocks(src, header):
        yield ContainerBlock(count, raw, header.writer, program)


def read_container_records(src: IO[bytes]) -> Iterator[tuple[dict[str, Any], bytes]]:
    """Each record's datum and its raw bytes as written (`read_container_blocks`)."""
    for block in read_container_blocks(src):
        yield from block.records()


def read_container(src: IO[bytes]) -> Iterator[Event]:
    for block in read_container_blocks(src):
        for d, raw in block.records():
            yield block.judged((d, raw))
