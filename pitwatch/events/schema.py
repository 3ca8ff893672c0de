"""The Avro contract: the schema files in `schemas/avro`, parsed once.

The single-object header (Avro spec, "Single-object encoding") is 0xC3 0x01 followed by
the little-endian CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form, so a
reader can tell schema versions apart on the wire.

A writer schema is known only as one of the released versions (`writer_schemas`), and
its identity is its whole Parsing Canonical Form (or the SHA-256 of it), never the CRC:
CRC-64-AVRO is linear, so a forger can solve a schema of another meaning to any CRC. A
CRC only looks a released version up, and no two released versions share one.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import fastavro
from fastavro.schema import to_parsing_canonical_form

SCHEMA_FILE: Final = "TableEvent.avsc"
NAMESPACE: Final = "pitwatch.events"
SINGLE_OBJECT_MAGIC: Final = b"\xc3\x01"
#: The payload whose writers sign checkpoints sealed (version 3 on): binding the writer
#: schema's SHA-256, the table's order and its end.
SEALED_CHECKPOINT: Final = NAMESPACE + ".SealedCheckpoint"
#: More directories of released schema versions (os.pathsep-separated), beside
#: schemas/avro/released: where a deployment (or a test) releases a version.
RELEASED_ENV: Final = "PITWATCH_RELEASED_SCHEMAS"


def schemas_dir() -> Path:
    """`schemas/` of a source checkout, or the copy packed into the wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "schemas", here / "_schemas"):
        if (candidate / "avro" / SCHEMA_FILE).exists():
            return candidate
    raise FileNotFoundError(f"no schemas/avro/{SCHEMA_FILE} beside {here}")


@cache
def raw_schema() -> dict[str, Any]:
    with open(schemas_dir() / "avro" / SCHEMA_FILE, encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


@cache
def parsed_schema() -> Any:
    return fastavro.parse_schema(raw_schema())


def strip_logical(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_logical(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [strip_logical(v) for v in node]
    return node


@cache
def plain_schema() -> Any:
    """The schema without logical types: the same bytes and fingerprint, but ts stays an
    int of milliseconds and event_id a str, with no datetime or UUID objects made."""
    return fastavro.parse_schema(strip_logical(raw_schema()))


@cache
def _crc64_avro_table() -> list[int]:
    empty = 0xC15D213AA4D7A795
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (empty & -(fp & 1))
        table.append(fp)
    return table


def crc64_avro(data: bytes) -> int:
    """The Rabin fingerprint the Avro spec calls CRC-64-AVRO."""
    table = _crc64_avro_table()
    fp = 0xC15D213AA4D7A795
    for b in data:
        fp = (fp >> 8) ^ table[(fp ^ b) & 0xFF]
    return fp


def fingerprint(schema: Any) -> int:
    return crc64_avro(to_parsing_canonical_form(schema).encode("utf-8"))


@cache
def single_object_header() -> bytes:
    return SINGLE_OBJECT_MAGIC + struct.pack("<Q", fingerprint(parsed_schema()))


def schema_version() -> int:
    return int(raw_schema().get("version", 1))


def released_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(RELEASED_ENV, "").split(os.pathsep) if p]
    return [schemas_dir() / "avro" / "released", *extra]


class SchemaError(ValueError):
    """A released schema this reader cannot stand behind (two sharing a CRC, an array
    of zero-width items)."""


@dataclass(frozen=True, slots=True)
class WriterSchema:
    """A released TableEvent schema: what its records' bytes mean."""

    #: its Parsing Canonical Form: its identity
    canonical: str
    #: SHA-256 of `canonical`: its identity as 32 bytes (what a signature binds)
    sha256: bytes
    #: the 8 CRC-64-AVRO bytes of its single-object header: a lookup hint only
    crc: bytes
    #: parsed without logical types: what its records are read and re-encoded under
    plain: Any
    #: the file it was released in
    source: str
    #: its payload union has the sealed checkpoint: a checkpoint written under it binds
    #: its SHA-256 (docs/events.md, "Signed checkpoints")
    seals: bool


@dataclass(frozen=True, slots=True)
class ReleasedWriters:
    """The writer schemas a reader knows, as data: what the audit engine, which reads
    no file and no environment, is given (`released_writers`)."""

    #: the schema this code writes (an event that names no writer is under it)
    current: WriterSchema
    #: every released one by its 8 CRC bytes (`writer_schemas`)
    by_crc: Mapping[bytes, WriterSchema]
    #: their SHA-256s
    sha256: frozenset[bytes]

    def of(self, crc: bytes | None) -> WriterSchema | None:
        """The schema an event's `writer` names (None: the current one); None when it
        is not a known one."""
        return self.current if crc is None else self.by_crc.get(crc)


def canonical_form(schema: Any) -> str:
    """The schema's Parsing Canonical Form (Avro spec)."""
    return str(to_parsing_canonical_form(schema))


def zero_width(node: Any, named: dict[str, bool] | None = None) -> bool:
    """Whether a value of this (parsed) schema can take no bytes: null, a fixed of size
    0, or a record of such fields. An array of them is refused: its count would be read
    with nothing to bound it."""
    named = {} if named is None else named
    if isinstance(node, str):
        return node == "null" or named.get(node, False)
    if isinstance(node, list):
        return False  # a union's branch index takes a byte
    if not isinstance(node, dict):
        return False
    kind = node.get("type")
    if kind in ("record", "error"):
        named[node["name"]] = False  # a record that holds itself takes its fields' bytes
        width = all([zero_width(f["type"], named) for f in node["fields"]])
        named[node["name"]] = width
        return width
    if kind == "fixed":
        named[node["name"]] = int(node["size"]) == 0
        return named[node["name"]]
    if kind == "enum":
        named[node["name"]] = False
        return False
    if kind in ("array", "map"):
        return False
    return zero_width(kind, named) if isinstance(kind, str) else False


def zero_width_items(node: Any, named: dict[str, bool] | None = None) -> str | None:
    """The first array or map (by its path) whose items can take no bytes, or None."""
    named = {} if named is None else named
    if isinstance(node, list):
        for branch in node:
            if (found := zero_width_items(branch, named)) is not None:
                return found
        return None
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if kind in ("array", "map"):
        items: Any = node["items"] if kind == "array" else node["values"]
        if zero_width(items, named):
            return str(kind)
        inner = zero_width_items(items, named)
        return None if inner is None else f"{kind}.{inner}"
    if kind in ("record", "error"):
        zero_width(node, named)
        for f in node["fields"]:
            if (found := zero_width_items(f["type"], named)) is not None:
                return f"{node['name']}.{f['name']}.{found}"
        return None
    if isinstance(kind, (dict, list)):
        return zero_width_items(kind, named)
    return None


def seals(plain: Any) -> bool:
    """Whether a (parsed) TableEvent schema's payload union has the sealed checkpoint."""
    for f in plain.get("fields", ()) if isinstance(plain, dict) else ():
        if f["name"] == "payload" and isinstance(f["type"], list):
            return any((t.get("name") if isinstance(t, dict) else t) == SEALED_CHECKPOINT
                       for t in f["type"])
    return False


def _released(source: Path, schema: Any) -> WriterSchema:
    plain = fastavro.parse_schema(strip_logical(schema))
    where = zero_width_items(plain)
    if where is not None:
        raise SchemaError(f"{source}: {where} has items that take no bytes")
    canonical = canonical_form(plain)
    return WriterSchema(canonical, hashlib.sha256(canonical.encode()).digest(),
                        struct.pack("<Q", crc64_avro(canonical.encode())), plain, str(source),
                        seals(plain))


@cache
def writer_schemas() -> dict[bytes, WriterSchema]:
    """Every TableEvent schema a reader knows, by the 8 CRC bytes of its single-object
    header: the current one and each released version (`released/<version>/TableEvent.avsc`
    in each of `released_dirs`). SchemaError when two of them with different canonical
    forms share a CRC (it would no longer say which one a message is under)."""
    found = []
    for d in released_dirs():
        for f in sorted(d.glob(f"*/{SCHEMA_FILE}")):
            with open(f, encoding="utf-8") as fh:
                found.append(_released(f, json.load(fh)))
    found.append(_released(schemas_dir() / "avro" / SCHEMA_FILE, raw_schema()))
    out: dict[bytes, WriterSchema] = {}
    for w in found:
        known = out.setdefault(w.crc, w)
        if known.canonical != w.canonical:
            raise SchemaError(f"{w.source} and {known.source} share the CRC-64 "
                              f"{w.crc.hex()} with different canonical forms")
    return out


def current_writer() -> WriterSchema:
    """The schema this code writes."""
    return writer_schemas()[single_object_header()[2:]]


def released_writers() -> ReleasedWriters:
    """`writer_schemas` and the current one, read (files, the environment) now: what a
    caller gives the audit engine when it builds it."""
    known = writer_schemas()
    return ReleasedWriters(current_writer(), known,
                           frozenset(w.sha256 for w in known.values()))


def released_by_canonical(canonical: str) -> WriterSchema | None:
    """The released schema whose Parsing Canonical Form is exactly `canonical`."""
    for w in writer_schemas().values():
        if w.canonical == canonical:
            return w
    return None
