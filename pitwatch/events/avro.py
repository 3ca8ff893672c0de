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
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Final, cast

import fastavro
import fastavro.read

try:
    from isal import isal_zlib
except ImportError:  # a platform without its wheel: fastavro inflates with zlib
    isal_zlib = None  # type: ignore[assignment]

from ..blackjack.ratio import Ratio
from . import limits
from .model import (
    CardDealt,
    CardsCleared,
    Checkpoint,
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
from .native import Program
from .schema import (
    NAMESPACE,
    SINGLE_OBJECT_MAGIC,
    fingerprint,
    plain_schema,
    raw_schema,
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
    """Bytes that are not an event of a schema this reader knows."""


# --- typed event <-> Avro datum -----------------------------------------------------


def rules_to_dict(r: Rules) -> dict[str, Any]:
    return {
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
    )


def _payload_to_avro(p: object) -> dict[str, Any]:
    if isinstance(p, CardDealt):
        return {"to": p.to, "seat": p.seat, "hand": p.hand, "rank": RANK_TO_AVRO[p.rank],
                "suit": p.suit, "face_up": p.face_up}
    if isinstance(p, TableOpened):
        return {"jurisdiction": p.jurisdiction, "game": p.game, "rules": rules_to_dict(p.rules)}
    if isinstance(p, RoundStarted):
        return {"dealer_id": p.dealer_id, "seats": list(p.seats)}
    return {name: getattr(p, name) for name in p.__slots__}  # type: ignore[attr-defined]


def to_datum(ev: Event) -> dict[str, Any]:
    """The Avro datum of an event, the union branch named as fastavro's tuple notation."""
    return {
        "event_id": ev.event_id, "table_id": ev.table_id, "device_id": ev.device_id,
        "seq": ev.seq, "ts": ev.ts, "round_id": ev.round_id, "prev_digest": ev.prev_digest,
        "payload": (_PREFIX + type(ev.payload).__name__, _payload_to_avro(ev.payload)),
    }


def _wager(cls: Any) -> Any:
    return lambda d: cls(d["seat"], d["hand"], d["kind"], d["amount"])


_FROM_AVRO: Final[dict[str, Any]] = {
    _PREFIX + "TableOpened": lambda d: TableOpened(d["jurisdiction"], d["game"],
                                                   rules_from_dict(d["rules"])),
    _PREFIX + "ShoeLoaded": lambda d: ShoeLoaded(d["shoe_id"], d["decks"]),
    _PREFIX + "RoundStarted": lambda d: RoundStarted(d["dealer_id"], tuple(d["seats"])),
    _PREFIX + "WagerPlaced": _wager(WagerPlaced),
    _PREFIX + "CardDealt": lambda d: CardDealt(d["to"], d["seat"], d["hand"],
                                               RANK_FROM_AVRO[d["rank"]], d["suit"], d["face_up"]),
    _PREFIX + "InsuranceOffered": lambda d: InsuranceOffered(),
    _PREFIX + "SwitchOffered": lambda d: SwitchOffered(d["seat"]),
    _PREFIX + "HoleCardInserted": lambda d: HoleCardInserted(d["dealer_blackjack"]),
    _PREFIX + "HoleCardRevealed": lambda d: HoleCardRevealed(),
    _PREFIX + "PlayerDecision": lambda d: PlayerDecision(d["seat"], d["hand"], d["decision"]),
    _PREFIX + "PayoutMade": _wager(PayoutMade),
    _PREFIX + "WagerCollected": _wager(WagerCollected),
    _PREFIX + "WagerReturned": _wager(WagerReturned),
    _PREFIX + "CardsCleared": lambda d: CardsCleared(d["seat"], d["hand"]),
    _PREFIX + "RoundEnded": lambda d: RoundEnded(),
    _PREFIX + "Checkpoint": lambda d: Checkpoint(d["head_seq"], d["head_digest"], d["key_id"],
                                                 d["signature"]),
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
        raise DecodeError(f"out of the contract's range: {e}") from e
    return ev


#: The typed class each record type of the schema is built into by `native`, where the
#: class's fields are the record's, in order (the envelope's: with its bytes after them).
_TYPED: Final[dict[str, Any]] = {
    _PREFIX + cls.__name__: cls
    for cls in (TableOpened, ShoeLoaded, RoundStarted, WagerPlaced, CardDealt,
                InsuranceOffered, SwitchOffered, HoleCardInserted, HoleCardRevealed,
                PlayerDecision, PayoutMade, WagerCollected, WagerReturned, CardsCleared,
                RoundEnded, Checkpoint, Rules, PayTable, PayEntry, Ratio)
} | {_PREFIX + "TableEvent": Event}


#: Enums built as other values than their symbols.
_ENUMS: Final = {_PREFIX + "Rank": RANK_FROM_AVRO}


def _typed(name: str, fields: list[str], top: bool) -> Any:
    cls = _TYPED.get(name)
    if cls is None:
        return None
    names = list(cls._fields) if hasattr(cls, "_fields") else [
        f.name for f in dataclasses.fields(cls)]
    expected = fields + ["raw"] * top
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
    _bounded(body, "an event")
    program = _current_program()
    built = None if program is None else program.build(body, 1)
    if built is not None:  # built in C (`native`); what it refuses, fastavro reads
        return checked(built[0])
    try:
        d: Any = fastavro.schemaless_reader(io.BytesIO(body), plain_schema(), None,
                                       return_record_name=True)
    except Exception as e:  # fastavro raises many kinds on bad bytes
        raise DecodeError(f"not a TableEvent body: {e}") from e
    return from_datum(d, body)


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
    """The hex fingerprint of the schema the event's bytes were written under."""
    return ev.writer.hex() if ev.writer else current_fingerprint()


@functools.cache
def _current_program() -> Program | None:
    """The C reader of an event body under this schema."""
    return Program.of(fastavro.parse_schema(plain_schema()), _typed, _ENUMS)


@functools.cache
def current_fingerprint() -> str:
    return single_object_header()[2:].hex()


def decode_single(message: bytes) -> Event:
    """An event from a single-object message written under any schema version this
    reader knows (found by its fingerprint among the released ones). Its raw bytes are
    the body as written: the digest is computed over them, never over a re-encoding."""
    _bounded(message, "a message")
    header = single_object_header()
    if message[:10] == header:
        return decode(message[10:])
    if message[:2] != header[:2]:
        raise DecodeError("not Avro single-object encoded (no C3 01 marker)")
    fp = message[2:10]
    writer = writer_schemas().get(fp)
    if writer is None:
        raise DecodeError(f"unknown schema fingerprint {fp.hex()}: not the current schema "
                          "nor any released one")
    body = message[10:]
    try:
        d: Any = fastavro.schemaless_reader(io.BytesIO(body), writer, plain_schema(),
                                            return_record_name=True)
    except Exception as e:  # fastavro raises many kinds on bad bytes
        raise DecodeError(f"not a TableEvent body under schema {fp.hex()}: {e}") from e
    ev = from_datum(d, body)
    ev.writer = fp
    return ev


# --- container files ----------------------------------------------------------------


def _inflate_block(fo: Any) -> io.BytesIO:
    """A "deflate" block of a container file, inflated by ISA-L (`isal`) rather than zlib:
    the same bytes in about half the time (0.41 s against 0.78 s of CPU for the 85 MB of
    a 1.08M-event file), and every worker of `audit --jobs N` inflates the whole file.
    fastavro's compiled reader hands over the file (the block's size, then its bytes),
    its pure-Python one a decoder."""
    read_bytes = getattr(fo, "read_bytes", None)
    if read_bytes is not None:
        data: bytes = read_bytes()
    else:
        size = _read_long(fo)
        if size < 0:
            raise ValueError(f"a deflate block of {size} bytes")
        data = fo.read(size)
        if len(data) != size:
            raise EOFError(f"a deflate block of {size} bytes ends after {len(data)}")
    return io.BytesIO(isal_zlib.decompress(data, -15))


def _read_long(fo: IO[bytes]) -> int:
    """An Avro long (zigzag varint) read from a file."""
    shift = value = 0
    while True:
        b = fo.read(1)
        if not b:
            raise EOFError("the file ends inside a block's header")
        value |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7
        if shift > 63:
            raise ValueError("a block's size is longer than a long")


#: Every container file pitwatch reads in this process is inflated so: fastavro's own
#: registry of block readers is the documented place for a codec's reader.
if isal_zlib is not None:
    fastavro.read.BLOCK_READERS["deflate"] = _inflate_block


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
    """One block of a container file, decompressed, its records read on demand."""

    def __init__(self, block: Any, fast: bool, writer_plain: Any, reader: Any,
                 program: Program | None, writer_fp: bytes | None = None) -> None:
        self._block, self._fast = block, fast
        self._writer, self._reader, self._program = writer_plain, reader, program
        #: the 8 fingerprint bytes of the file's schema when it is not this one (what an
        #: event's `writer` says: its raw bytes are under that schema)
        self._writer_fp = writer_fp
        self._bio: io.BytesIO = block.bytes_
        self.raw = self._bio.getvalue()
        self.count: int = block.num_records

    def records(self) -> Iterator[tuple[dict[str, Any], bytes]]:
        """Every record's fastavro datum and raw bytes. With fastavro's own record
        iteration when the file is under this schema: it reads the block's bytes lazily,
        so where the read position stands after a record is where its bytes end."""
        bio, raw = self._bio, self.raw
        bio.seek(0)
        records: Iterable[Any]
        if self._fast:
            records = self._block
        else:  # the same bytes, read under the writer's schema without logical types
            records = (fastavro.schemaless_reader(bio, self._writer, self._reader,
                                                  return_record_name=True)
                       for _ in range(self.count))
        pos = 0
        for d in records:
            end = bio.tell()
            yield cast(dict[str, Any], d), raw[pos:end]
            pos = end

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
        """The event of a record `read`, range-checked: DecodeError (or KeyError) when it
        is not one of the contract (`shown` is what to show of it)."""
        if isinstance(rec, Event):
            return checked(rec)
        ev = from_datum(*rec)
        ev.writer = self._writer_fp
        return ev

    def shown(self, rec: Event | tuple[dict[str, Any], bytes]) -> str:
        """What a rejected record shows: fastavro's datum of it, as Python writes it."""
        return repr(self.datum(rec.raw or b"") if isinstance(rec, Event) else rec[0])[:2000]

    def datum(self, raw: bytes) -> dict[str, Any]:
        """fastavro's datum of one record's bytes (what a rejected record shows)."""
        return cast(dict[str, Any], fastavro.schemaless_reader(
            io.BytesIO(raw), self._writer, self._reader, return_record_name=True))


def read_container_blocks(src: IO[bytes]) -> Iterator[ContainerBlock]:
    """The blocks of a container file, each able to read its records with their raw
    bytes as written: the canonical form under the file's writer schema, so digests
    need no re-encoding (and a file of another released version keeps its digests)."""
    plain = plain_schema()
    same = logical = False
    writer_plain: Any = None
    program: Program | None = None
    writer_fp: bytes | None = None
    for n, block in enumerate(fastavro.block_reader(src, return_record_name=True)):
        if n == 0:  # one writer schema per file
            writer = block.writer_schema
            writer_plain = fastavro.parse_schema(strip_logical(writer))
            same = fingerprint(writer_plain) == fingerprint(plain)
            writer_fp = None if same else struct.pack("<Q", fingerprint(writer_plain))
            logical = strip_logical(writer) != writer
            # built in C only under this schema; framed under any
            program = Program.of(writer_plain, _typed if same else None, _ENUMS)
        yield ContainerBlock(block, same and not logical, writer_plain,
                             None if same else plain, program, writer_fp)


def read_container_records(src: IO[bytes]) -> Iterator[tuple[dict[str, Any], bytes]]:
    """Each record's datum and its raw bytes as written (`read_container_blocks`)."""
    for block in read_container_blocks(src):
        yield from block.records()


def read_container(src: IO[bytes]) -> Iterator[Event]:
    for block in read_container_blocks(src):
        for d, raw in block.records():
            yield block.judged((d, raw))
