"""A schema version 2 for the evolution tests: the released TableEvent with one added
optional field, released into a directory of its own (PITWATCH_RELEASED_SCHEMAS), and
devices that write it."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import struct
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro

from pitwatch.events.avro import digest, to_datum
from pitwatch.events.model import Event
from pitwatch.events.schema import SINGLE_OBJECT_MAGIC, fingerprint, raw_schema, strip_logical

FIELD = {"name": "firmware", "type": ["null", "string"], "default": None,
         "doc": "The device's firmware version (added in version 2)."}


def v2_schema() -> dict[str, Any]:
    s = copy.deepcopy(raw_schema())
    s["version"] = 2
    s["fields"].append(FIELD)
    return s


def release_v2(root: Path) -> Path:
    """Write released/v2/TableEvent.avsc under `root`; returns the directory to name in
    PITWATCH_RELEASED_SCHEMAS."""
    d = root / "released"
    (d / "v2").mkdir(parents=True, exist_ok=True)
    (d / "v2" / "TableEvent.avsc").write_text(json.dumps(v2_schema(), indent=2))
    return d


def as_v2(events: Iterable[Event], tables: set[str]) -> list[tuple[bytes, bytes]]:
    """(key, single-object message) of each event, the given tables' devices writing
    version 2 (with a firmware string), each digest chain re-linked over the bytes as
    written (a chain the floor broke on purpose stays broken)."""
    schema = fastavro.parse_schema(strip_logical(v2_schema()))
    header = SINGLE_OBJECT_MAGIC + struct.pack("<Q", fingerprint(schema))
    renamed: dict[bytes, bytes] = {}
    out = []
    from pitwatch.events.avro import encode_single

    for ev in events:
        if ev.table_id not in tables:
            out.append((ev.table_id.encode(), encode_single(ev)))
            continue
        prev = ev.prev_digest
        new = replace(ev, prev_digest=None if prev is None else renamed.get(prev, prev))
        datum = to_datum(new)
        datum["firmware"] = "2.0.1"
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, schema, datum)
        body = buf.getvalue()
        renamed[digest(ev)] = hashlib.sha256(body).digest()
        out.append((ev.table_id.encode(), header + body))
    return out
