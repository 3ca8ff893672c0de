"""The Avro contract: the schema files in `schemas/avro`, parsed once.

The single-object header (Avro spec, "Single-object encoding") is 0xC3 0x01 followed by
the little-endian CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form, so a
reader can tell schema versions apart on the wire.
"""

from __future__ import annotations

import json
import os
import struct
from functools import cache
from pathlib import Path
from typing import Any, Final

import fastavro
from fastavro.schema import to_parsing_canonical_form

SCHEMA_FILE: Final = "TableEvent.avsc"
NAMESPACE: Final = "pitwatch.events"
SINGLE_OBJECT_MAGIC: Final = b"\xc3\x01"
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


@cache
def writer_schemas() -> dict[bytes, Any]:
    """Every TableEvent schema a reader knows, by the 8 fingerprint bytes of its
    single-object header: the current one and each released version
    (`released/<version>/TableEvent.avsc`), without logical types."""
    out = {single_object_header()[2:]: plain_schema()}
    for d in released_dirs():
        for f in sorted(d.glob(f"*/{SCHEMA_FILE}")):
            with open(f, encoding="utf-8") as fh:
                parsed = fastavro.parse_schema(strip_logical(json.load(fh)))
            out.setdefault(struct.pack("<Q", fingerprint(parsed)), parsed)
    return out
