"""Schema evolution: a reader finds the writer schema by its fingerprint among the
released versions, keeps the bytes as written (the digest is over them, never over a
re-encoding), and audits v1 and v2 devices side by side with no DIGEST_MISMATCH."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pitwatch.engine.auditor import Auditor
from pitwatch.engine.violation import Violation
from pitwatch.events import schema
from pitwatch.events.avro import DecodeError, decode_single, message_bytes
from pitwatch.packs.registry import select
from producers.simulate import Floor
from tests.evolution import as_v2, release_v2


@pytest.fixture
def v2_released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(schema.RELEASED_ENV, str(release_v2(tmp_path)))
    schema.writer_schemas.cache_clear()
    yield
    schema.writer_schemas.cache_clear()


def _audit(events: list) -> list[Violation]:
    found: list[Violation] = []
    a = Auditor(select, found.append, lambda s: None)
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
