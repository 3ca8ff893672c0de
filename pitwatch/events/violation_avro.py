"""Violations on the wire: Avro single-object encoding of schemas/avro/Violation.avsc,
for the alerts topic. It reads the schema file, so it lives beside the other wire
formats and outside pitwatch/engine, which reads no file."""

from __future__ import annotations

import io
import json
import struct
from functools import cache
from typing import Any

import fastavro

from ..engine.violation import Violation
from .schema import SINGLE_OBJECT_MAGIC, fingerprint, schemas_dir, strip_logical


@cache
def _schema() -> Any:
    with open(schemas_dir() / "avro" / "Violation.avsc", encoding="utf-8") as f:
        return fastavro.parse_schema(strip_logical(json.load(f)))


@cache
def _header() -> bytes:
    return SINGLE_OBJECT_MAGIC + struct.pack("<Q", fingerprint(_schema()))


def encode_violation(v: Violation) -> bytes:
    d = v.to_json()
    buf = io.BytesIO()
    buf.write(_header())
    fastavro.schemaless_writer(buf, _schema(), d)
    return buf.getvalue()


def decode_violation(msg: bytes) -> Violation:
    if msg[:10] != _header():
        raise ValueError("not a pitwatch.alerts.Violation (single-object header)")
    d: Any = fastavro.schemaless_reader(io.BytesIO(msg[10:]), _schema(), None)
    return Violation.from_json(d)
