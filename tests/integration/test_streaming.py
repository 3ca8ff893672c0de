"""The streaming pipeline against real Kafka and ClickHouse: the same answers as the
embedded audit, and no loss or double count through crashes, outages, duplicates,
rebalances and bad messages."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from kafka import KafkaConsumer

from pitwatch.engine.alerts import decode_violation
from pitwatch.events.model import Event

from .conftest import KAFKA, ROOT, Expected, Pipeline

Floor = Callable[..., tuple[list[Event], Expected]]


def _assert_same(p: Pipeline, exp: Expected, counts: tuple[int, int, int]) -> None:
    assert counts == (exp.events, exp.rounds, len(exp.violation_ids))
    assert p.violation_ids() == exp.violation_ids
    assert len(p.rounds()) == exp.rounds


def test_streaming_finds_what_the_embedded_audit_finds(pipeline: Pipeline, floor: Floor
                                                       ) -> None:
    events, exp = floor()
    assert exp.violation_ids, "the floor must hold injected faults"
    pipeline.start_worker()
    pipeline.produce(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    # the alerts topic carries the same violations, Avro-encoded
    consumer = KafkaConsumer(pipeline.prefix + "alerts", bootstrap_servers=KAFKA,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    alerted = {decode_violation(m.value).violation_id for m in consumer}
    consumer.close()
    assert alerted == exp.violation_ids


def test_worker_killed_mid_stream_loses_and_doubles_nothing(pipeline: Pipeline,
                                                            floor: Floor) -> None:
    events, exp = floor(seed=12)
    worker = pipeline.start_worker()
    half = len(events) // 2
    pipeline.produce(events[:half])
    deadline = time.monotonic() + 60
    while pipeline.count("events") < half // 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    pipeline.kill(worker)  # SIGKILL, mid-stream
    pipeline.produce(events[half:])
    pipeline.start_worker()
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    restarted = sorted(Path(pipeline.tmp).glob("worker-*.log"))[-1].read_text()
    assert "restored table" in restarted  # tables came back from their snapshots


def test_clickhouse_outage_loses_nothing(pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(seed=13)
    pipeline.start_worker()
    pipeline.produce(events[:200])
    time.sleep(5)
    subprocess.run([str(ROOT / "deploy/clickhouse.sh"), "stop"], check=True)
    try:
        pipeline.produce(events[200:])
        time.sleep(30)
    finally:
        subprocess.run([str(ROOT / "deploy/clickhouse.sh"), "start"], check=True)
    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=180))
    logs = "".join(p.read_text() for p in Path(pipeline.tmp).glob("worker-*.log"))
    assert "ClickHouse unavailable" in logs  # the sink saw the outage and backed off


def test_duplicate_deliveries_change_nothing(pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(seed=14)
    pipeline.start_worker()
    pipeline.produce(events)
    pipeline.produce(events[len(events) // 3:])  # everything after a point, again
    _assert_same(pipeline, exp, pipeline.wait_for(exp))


def test_two_workers_split_the_partitions(pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(tables=12, seed=15)
    pipeline.start_worker("a")
    pipeline.start_worker("b")
    time.sleep(10)  # let both join before the load arrives
    pipeline.produce(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=180))
    logs = [p.read_text() for p in sorted(Path(pipeline.tmp).glob("worker-*.log"))]
    assert all("assigned" in log.lower() for log in logs)


def test_malformed_message_goes_to_dead_letters_and_the_stream_goes_on(
        pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(tables=4, rounds=10, seed=16)
    pipeline.start_worker()
    pipeline.produce_raw(b"AC-BJ-01", b"\xc3\x01not an event at all")
    pipeline.produce_raw(b"AC-BJ-01", b"{\"type\":\"RoundEnded\"}")
    pipeline.produce(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    consumer = KafkaConsumer(pipeline.prefix + "dead-letters", bootstrap_servers=KAFKA,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    dead = [orjson.loads(m.value) for m in consumer]
    consumer.close()
    assert len(dead) == 2
    assert len({(d["partition"], d["offset"]) for d in dead}) == 2  # two messages, named
    assert "fingerprint" in dead[0]["reason"] and "C3 01" in dead[1]["reason"]
