"""The synthetic floor (producers/synthetic.py) keeps the simulator's contract: its
events are what the audit reads (the digest chain of each device right, the
canonical Avro form the digests are taken over the same as the simulator's), the audit
finds exactly the faults its truth file names, a clean one audits clean, and the same
arguments give the same bytes."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import orjson

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import encode
from pitwatch.events.jsonl import loads
from pitwatch.producers.simulate import main as simulate
from pitwatch.producers.synthetic import SyntheticFloor, envelope


def _audit(floor: SyntheticFloor) -> tuple[Counter[tuple[str, str, str]], int, list]:
    events = [loads(line) for line in floor.lines()]
    rep = audit_events(events)
    return Counter((v.code, v.table_id, v.round_id) for v in rep.violations), rep.rounds, \
        events


def test_a_clean_synthetic_floor_audits_clean_past_many_copies_of_its_shoe() -> None:
    floor = SyntheticFloor(5, 120, 9)
    found, rounds, events = _audit(floor)
    assert rounds == 5 * 120 and found == Counter() and floor.truth == []
    assert len({e.event_id for e in events}) == len(events)
    # each device's chain: every prev_digest is the digest of the canonical Avro form of
    # the device's previous event, as the simulator's
    last: dict[str, bytes] = {}
    for ev in events:
        assert ev.prev_digest == last.get(ev.device_id)
        last[ev.device_id] = hashlib.sha256(encode(ev)).digest()


def test_an_injected_synthetic_floor_audits_to_exactly_its_truth() -> None:
    floor = SyntheticFloor(6, 100, 202, inject=0.3)
    found, _, _ = _audit(floor)
    injected = Counter((t["code"], t["table_id"], t["round_id"]) for t in floor.truth)
    assert len(injected) > 40
    assert found - injected == Counter(), "false alarms"
    assert injected - found == Counter(), "missed faults"


def test_the_envelope_is_the_canonical_form_the_digests_take() -> None:
    ev = next(iter(loads(line) for line in SyntheticFloor(1, 2, 3).lines()))
    raw = encode(ev)
    assert raw.startswith(envelope(ev.event_id.encode(), ev.table_id.encode(),
                                   ev.device_id.encode(), ev.seq, ev.ts, None,
                                   ev.prev_digest))


def test_the_same_arguments_write_the_same_bytes(tmp_path: Path) -> None:
    for d in ("a", "b"):
        assert simulate(["--synthetic", "--tables", "3", "--rounds", "40", "--seed", "4",
                         "--inject", "0.2", "--quiet", "--out", str(tmp_path / d)]) == 0
    for name in ("events.jsonl", "truth.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    truth = [orjson.loads(x) for x in (tmp_path / "a/truth.jsonl").read_bytes().splitlines()]
    assert truth and all(set(t) >= {"code", "table_id", "round_id", "event_id"} for t in truth)
