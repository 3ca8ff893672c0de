"""The quarantine through streaming (issue 36), on the real services: a signed floor
with a negative wager its decoder refuses, streamed through the worker and its sink.

Issue 36: "A rejected event of the record must surface as what it is (a HIGH finding
naming the event and why it was refused), not as a gap." The worker sends the
quarantine row of the refused event the record took in, the sink keeps it in
`refused_events`, so a rebuild from the ClickHouse store raises EVENT_REFUSED again,
no EVENTS_LOST, its device's chain verifies across it, and its findings are the
embedded audit's of the same floor. A message on the refused topic that is no
quarantine row goes to the dead letters with its reason."""

from __future__ import annotations

from pathlib import Path

import orjson

from pitwatch.events.model import Event
from pitwatch.producers.simulate import Floor
from pitwatch.replay.rebuild import rebuild

from .conftest import Expected, Pipeline, committed, end_offsets, read_topic, wait_until


def test_a_streamed_store_rebuilds_the_refused_wager_as_refused_not_lost(
        pipeline: Pipeline, tmp_path: Path) -> None:
    f = Floor(2, 4, seed=2, inject=0.5, jurisdiction="NJ", game="BLACKJACK", contract=True)
    events = list(f.events())
    keys = f.registry()
    assert keys is not None
    refused: list[Event] = [e for e in events if e.refused is not None]
    assert refused, "the contract floor carries a refused negative wager"
    keys.write(tmp_path / "keys.json")
    exp = Expected(events, keys=keys)  # the embedded audit of the same floor
    assert "EVENT_REFUSED" in {v.code for v in exp.violations}

    pipeline.start_worker("w", "--keys", str(tmp_path / "keys.json"))
    pipeline.produce(events)
    refused_topic = pipeline.prefix + "refused"
    pipeline.produce_raw(b"AC-BJ-01", b'{"not": "a quarantine row"}', refused_topic)
    stored = len({e.event_id for e in events if e.refused is None})

    def landed() -> bool:
        ends = end_offsets([refused_topic])
        sink = committed(pipeline.id + "-sink")
        return (pipeline.count("events") == stored
                and pipeline.count("refused_events") == len(refused)
                and pipeline.violation_ids() >= exp.violation_ids
                and pipeline.caught_up()
                and all(sink.get(tp, 0) >= o for tp, o in ends.items()))

    wait_until("the floor, its findings and its quarantine in ClickHouse", landed, 120)
    assert pipeline.violation_ids() == exp.violation_ids, \
        pipeline.explain(exp, pipeline.violation_ids(), "ClickHouse")
    # the worker's quarantine rows are on the topic; the sink dead-lettered the other
    rows = [orjson.loads(m.value) for m in read_topic(refused_topic)]
    assert {r["event_id"] for r in rows if "raw" in r} == {e.event_id for e in refused}
    reasons = [orjson.loads(m.value)["reason"] for m in
               read_topic(pipeline.prefix + "dead-letters")]
    assert any(r.startswith("not a refused event") for r in reasons), reasons

    for bad in refused:
        assert bad.round_id is not None
        rb = rebuild(pipeline.store, bad.round_id, keys=keys)
        codes = {v.code for v in rb.violations}
        assert "EVENT_REFUSED" in codes and "EVENTS_LOST" not in codes, codes
        assert rb.matches_store
        assert rb.chains[bad.device_id].verdict.startswith("VERIFIED"), \
            rb.chains[bad.device_id].verdict
        assert {v.violation_id for v in rb.violations} == \
            {v.violation_id for v in exp.violations if v.round_id == bad.round_id}
