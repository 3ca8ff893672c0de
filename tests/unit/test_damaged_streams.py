"""Bad input never stops the audit: streams with events lost, repeated, swapped or
moved still audit to the end, and everything found carries a code of the catalogue."""

from __future__ import annotations

import io
import random

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import encode, from_datum, read_container_records, write_container
from pitwatch.packs.registry import all_packs
from pitwatch.producers.simulate import Floor

CODES = set().union(*(p.codes() for p in all_packs()))


def _damaged(seed: int) -> list:
    rng = random.Random(seed)
    events = list(Floor(4, 40, seed=seed, inject=0.2).events())
    out = []
    for ev in events:
        roll = rng.random()
        if roll < 0.03:
            continue  # lost
        out.append(ev)
        if roll > 0.98:
            out.append(ev)  # redelivered
    for _ in range(len(out) // 50):  # a few swapped neighbours
        i = rng.randrange(1, len(out))
        out[i - 1], out[i] = out[i], out[i - 1]
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_a_damaged_stream_audits_to_the_end(seed: int) -> None:
    events = _damaged(seed)
    rep = audit_events(events)
    assert rep.events == len(events)
    assert rep.violations, "damage must show"
    assert {v.code for v in rep.violations} <= CODES
    assert {"EVENTS_LOST", "SEQUENCE_CONFLICT"} & {v.code for v in rep.violations}


def test_container_records_carry_their_canonical_bytes() -> None:
    """The digest of an event read from an Avro file is taken over the record's own
    bytes: they must be exactly its canonical encoding."""
    events = list(Floor(2, 5, seed=8).events())
    buf = io.BytesIO()
    write_container(buf, events)
    buf.seek(0)
    pairs = list(read_container_records(buf))
    assert len(pairs) == len(events)
    assert all(raw == encode(from_datum(d)) for d, raw in pairs)
