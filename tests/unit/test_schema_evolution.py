"""Schema evolution: a reader finds the writer schema by its fingerprint among the
released versions, keeps the bytes as written (the digest is over them, never over a
re-encoding), and audits v1 and v2 devices side by side with no DIGEST_MISMATCH."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest

from pitwatch.engine.auditor import Auditor
from pitwatch.engine.violation import Violation
from pitwatch.events import schema
from pitwatch.events.avro import (
    DecodeError,
    decode_single,
    message_bytes,
    to_datum,
    writer_fingerprint,
)
from pitwatch.events.files import read_files
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.simulate import Floor
from tests.evolution import as_v2, release_v2


@pytest.fixture
def v2_released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(schema.RELEASED_ENV, str(release_v2(tmp_path)))
    schema.writer_schemas.cache_clear()
    yield
    schema.writer_schemas.cache_clear()


def _audit(events: list) -> list[Violation]:
    found: list[Violation] = []
    a = Auditor(select, found.append, lambda s: None, released=released_writers())
    for ev in events:
        a.feed(ev)
    return found


def test_v1_and_v2_devices_on_one_stream_are_audited_alike(v2_released: None) -> None:
    events = list(Floor(4, 8, seed=51, inject=0.3).events())
    tables = {events[0].table_id, events[-1].table_id}
    messages = as_v2(events, tables)
    decoded = [decode_single(m) for _, m in messages]
    assert sum(ev.writer is not None for ev in decoded) > 50  # v2 events among them
    assert [e.event_id for e in decoded] == [e.event_id for e in events]
    assert {v.violation_id for v in _audit(decoded)} == {v.violation_id for v in _audit(events)}
    # the bytes as written, under their writer's fingerprint, survive a snapshot
    assert [message_bytes(e) for e in decoded] == [m for _, m in messages]


def test_an_unreleased_fingerprint_is_refused_with_its_reason() -> None:
    schema.writer_schemas.cache_clear()
    events = list(Floor(1, 1, seed=52).events())
    _, message = as_v2(events[:1], {events[0].table_id})[0]
    with pytest.raises(DecodeError, match=r"unknown schema fingerprint .* nor any released"):
        decode_single(message)


def _released_v1() -> Any:
    path = schema.schemas_dir() / "avro" / "released" / "v1" / "TableEvent.avsc"
    return fastavro.parse_schema(schema.strip_logical(json.loads(path.read_text())))


def test_a_file_written_under_an_older_version_keeps_its_writer(tmp_path: Path) -> None:
    """An Avro file written under released v1: each event's bytes are v1's, so the event
    names v1 as its writer (its row's `writer` column, and the message it replays as,
    say v1, not the current version over v1's bytes)."""
    v1 = _released_v1()
    events = [e for e in Floor(2, 3, seed=53).events() if e.type != "Checkpoint"]
    path = tmp_path / "v1.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, v1, [to_datum(e) for e in events])
    got = list(read_files([path], lambda r: pytest.fail(r.reason)))
    v1_fp = struct.pack("<Q", schema.fingerprint(v1))
    assert v1_fp != schema.single_object_header()[2:]
    assert got == events
    assert {e.writer for e in got} == {v1_fp}
    assert [decode_single(message_bytes(e)) for e in got] == events
    assert {writer_fingerprint(e) for e in got} == {v1_fp.hex()}
