"""The Avro contract: the schema files in `schemas/avro`, parsed once.

The single-object header (Avro spec, "Single-object encoding") is 0xC3 0x01 followed by
the little-endian CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form, so a
reader can tell schema versions apart on the wire.
"""

from __future__ import annotations

import json
import struct
from functools import cache
from pathlib import Path
from typing import Any, Final

import fastavro
from fastavro.schema import to_parsing_canonical_form

SCHEMA_FILE: Final = "TableEvent.avsc"
NAMESPACE: Final = "pitwatch.events"
SINGLE_OBJECT_MAGIC: Final = b"\xc3\x01"


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
