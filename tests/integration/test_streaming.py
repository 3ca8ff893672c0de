"""The streaming pipeline against real Kafka and ClickHouse: the same answers as the
embedded audit (violation ids, and each round's money, counts and completeness), and
no loss or double count through crashes, outages, duplicates, rebalances and bad
messages. Every wait is on a condition with a deadline."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from pitwatch.events.model import Event
from pitwatch.producers.simulate import Floor as SimFloor

from .conftest import (
    DAY_MS,
    KAFKA,
    ROOT,
    Expected,
    Pipeline,
    end_offsets,
    read_topic,
    shifted,
    wait_until,
)

Floor = Callable[..., tuple[list[Event], Expected]]


def _assert_same(p: Pipeline, exp: Expected, counts: tuple[int, int, int]) -> None:
    """ClickHouse holds the embedded audit's answer; a failure names every violation
    and round that differs (the test's topics and database are named too)."""
    got = p.violation_ids()
    assert counts == (exp.events, exp.rounds, len(exp.violation_ids)) and \
        got == exp.violation_ids, p.explain(exp, got, "ClickHouse")
    rounds, want = p.rounds(), exp.round_rows
    assert rounds == want, "rounds that differ (ClickHouse, embedded):\n" + "\n".join(
        f"  {r}: {rounds.get(r)} vs {want.get(r)}"
        for r in sorted(set(rounds) | set(want)) if rounds.get(r) != want.get(r))


def _assert_alerts(p: Pipeline, exp: Expected) -> None:
    """The alerts topic carries exactly the expected violations; a copy only ever
    repeats an id (at-least-once, never a different verdict)."""
    got = set(p.alerted_ids())
    assert got == exp.violation_ids, p.explain(exp, got, "the alerts topic")


def test_readme_streaming_flow_lands_the_embedded_audits_answer(pipeline: Pipeline) -> None:
    """README "Streaming, locally", followed literally: worker, `pitwatch produce
    --tables 8 --rounds 50 --seed 1 --inject 0.1`, then the alerts and ClickHouse. The
    simulated device clock is far in the past (a replay of history)."""
    pipeline.start_worker()
    out = subprocess.run(
        [sys.executable, "-m", "pitwatch.cli", "produce", "--kafka", KAFKA,
         "--topic-prefix", pipeline.prefix, "--tables", "8", "--rounds", "50", "--seed", "1",
         "--inject", "0.1", "--quiet"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "sent" in out.stdout
    events = list(SimFloor(8, 50, 1, 0.1).events())
    # behind the wall clock by more than the time-out: the case that flooded the alerts
    assert time.time() * 1000 - max(e.ts for e in events) > 15 * 60 * 1000
    exp = Expected(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=360))
    _assert_alerts(pipeline, exp)


def test_device_clock_days_behind_with_a_short_time_out(pipeline: Pipeline,
                                                        floor: Floor) -> None:
    """A floor whose device clock is days in the past, audited with a 60 s time-out and
    the processing-time rule checked every second: only the table's own stream decides,
    so the answer is the embedded audit's with the same time-out."""
    events, _ = floor(seed=21)
    events = shifted(events, -(time.time() * 1000 - events[0].ts) - 3 * DAY_MS)
    assert time.time() * 1000 - max(e.ts for e in events) > 2 * DAY_MS
    exp = Expected(events, round_timeout_ms=60_000)
    pipeline.start_worker("w", "--round-timeout", "60", "--idle-check", "1")
    pipeline.produce(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)


def test_a_round_left_open_is_incomplete_by_processing_time(pipeline: Pipeline,
                                                            floor: Floor) -> None:
    """Rounds whose tables go quiet: once the partition is caught up and nothing has
    arrived for the time-out (here 3 s), each open round is incomplete, with the same
    violation id the embedded audit gives at the end of its input."""
    events, _ = floor(tables=4, rounds=6, seed=22, inject=0.0)
    cut = [e for e in events if not (e.type == "RoundEnded" and e.round_id
                                     and e.round_id.endswith("000006"))]
    exp = Expected(cut, finish=True)
    assert sum(not r[-1] for r in exp.round_rows.values()) == 4
    pipeline.start_worker("w", "--round-timeout", "3", "--idle-check", "0.5")
    pipeline.produce(cut)
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)


def test_worker_killed_mid_stream_loses_and_doubles_nothing(pipeline: Pipeline,
                                                            floor: Floor) -> None:
    events, exp = floor(seed=12)
    worker = pipeline.start_worker()
    half = len(events) // 2
    pipeline.produce(events[:half])
    # the sink lands events whether or not the audit has started: wait for snapshots
    changelog = f"{pipeline.id}-{pipeline.prefix}open-rounds-changelog"
    wait_until("a third of the first half in ClickHouse and snapshots on the changelog",
               lambda: pipeline.count("events") >= half // 3
               and sum(end_offsets([changelog]).values()) > 0, 180)
    pipeline.kill(worker)  # SIGKILL, mid-stream (between snapshots and sends)
    pipeline.produce(events[half:])
    pipeline.start_worker()
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)
    restarted = sorted(Path(pipeline.tmp).glob("worker-*.log"))[-1].read_text()
    assert "restored table" in restarted  # tables came back from their snapshots


def test_worker_stopped_then_resumed_loses_and_doubles_nothing(pipeline: Pipeline,
                                                               floor: Floor) -> None:
    """SIGSTOP while events arrive, long enough for its session (6 s here: the
    issue's 60 s proves nothing more) to time out and the group to move on, then
    SIGCONT: the worker notices (frozen, or its partitions stalled) and starts again
    clean; the pipeline's answer is unchanged."""
    events, exp = floor(seed=17)
    worker = pipeline.start_worker("a", "--session-timeout", "6", "--stall-timeout", "20")
    pipeline.produce(events[:200])
    wait_until("the first events in ClickHouse", lambda: pipeline.count("events") > 0, 180)
    worker.send_signal(signal.SIGSTOP)
    try:
        pipeline.start_worker("b", "--session-timeout", "6", "--stall-timeout", "20")
        pipeline.produce(events[200:])
        wait_until("the second worker taking partitions over", lambda: "assigned" in sorted(
            Path(pipeline.tmp).glob("worker-b*.log"))[0].read_text().lower(), 180)
    finally:
        worker.send_signal(signal.SIGCONT)
    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=360))
    _assert_alerts(pipeline, exp)


def test_clickhouse_outage_loses_nothing(pipeline: Pipeline, floor: Floor) -> None:
    """ClickHouse stopped for longer than the sink's max poll interval (set to 5 s):
    the alerts keep flowing, the sink pauses and resumes without eviction or loss."""
    events, exp = floor(seed=13)
    pipeline.start_worker("w", "--sink-max-poll-interval", "5")
    pipeline.produce(events[:200])
    wait_until("the first events in ClickHouse", lambda: pipeline.count("events") > 0, 180)
    subprocess.run([str(ROOT / "deploy/clickhouse.sh"), "stop"], check=True)
    try:
        pipeline.produce(events[200:])
        # the audit goes on without ClickHouse: every alert is out while it is down
        wait_until("every alert while ClickHouse is down",
                   lambda: set(pipeline.alerted_ids()) >= exp.violation_ids, 240)
        wait_until("the sink to see the outage",
                   lambda: pipeline.logs().count("ClickHouse unavailable") >= 4, 120)
    finally:
        subprocess.run([str(ROOT / "deploy/clickhouse.sh"), "start"], check=True)
    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=360))
    assert "exited with code" not in pipeline.logs()  # the sink was never lost


def test_duplicate_deliveries_change_nothing(pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(seed=14)
    pipeline.start_worker()
    pipeline.produce(events)
    pipeline.produce(events[len(events) // 3:])  # everything after a point, again
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)


def test_two_workers_split_the_partitions(pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(tables=12, seed=15)
    pipeline.start_worker("a")
    pipeline.start_worker("b")
    wait_until("both workers assigned partitions", lambda: all(
        "assigned" in p.read_text().lower()
        for p in Path(pipeline.tmp).glob("worker-*.log")), 180)
    pipeline.produce(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=360))
    _assert_alerts(pipeline, exp)


def test_rebalance_under_load(pipeline: Pipeline, floor: Floor) -> None:
    """A second worker joins while the first is busy, then the first is SIGKILLed."""
    events, exp = floor(tables=12, seed=18)
    first = pipeline.start_worker("a")
    pipeline.produce(events[:len(events) // 3])
    pipeline.start_worker("b")
    pipeline.produce(events[len(events) // 3: 2 * len(events) // 3])
    wait_until("the second worker assigned",
               lambda: "assigned" in sorted(Path(pipeline.tmp).glob("worker-b*.log"))[0]
               .read_text().lower(), 180)
    pipeline.kill(first)
    pipeline.produce(events[2 * len(events) // 3:])
    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=360))
    _assert_alerts(pipeline, exp)


def test_bad_messages_go_to_dead_letters_and_the_stream_goes_on(
        pipeline: Pipeline, floor: Floor) -> None:
    """Garbage and tombstones on the events, alerts and rounds topics, and a message
    over the dead-letter size cap: each is a dead letter with its reason, nothing else
    changes, and the sink lives on."""
    events, exp = floor(tables=4, rounds=10, seed=16)
    pipeline.start_worker()
    pipeline.produce_raw(b"AC-BJ-01", b"\xc3\x01not an event at all")
    pipeline.produce_raw(b"AC-BJ-01", b"{\"type\":\"RoundEnded\"}")
    pipeline.produce_raw(b"AC-BJ-01", None)
    pipeline.produce_raw(b"AC-BJ-01", b"\x00" * 200_000)
    pipeline.produce_raw(b"x", b"garbage", topic=pipeline.prefix + "alerts")
    pipeline.produce_raw(b"x", None, topic=pipeline.prefix + "alerts")
    pipeline.produce_raw(b"x", b"[1,2]", topic=pipeline.prefix + "rounds")
    pipeline.produce(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    dead = [orjson.loads(m.value) for m in read_topic(pipeline.prefix + "dead-letters")]
    assert len(dead) == 7
    assert len({(d["topic"], d["partition"], d["offset"]) for d in dead}) == 7
    by_topic = sorted((d["topic"][len(pipeline.prefix):], d["tombstone"]) for d in dead)
    assert by_topic == [("alerts", False), ("alerts", True), ("rounds", False),
                        ("table-events", False), ("table-events", False),
                        ("table-events", False), ("table-events", True)]
    big = next(d for d in dead if d["value_len"] == 200_000)
    assert big["truncated"] and len(big["value_b64"]) < 100_000
    reasons = " ".join(d["reason"] for d in dead)
    assert "fingerprint" in reasons and "C3 01" in reasons and "tombstone" in reasons
    assert "exited with code" not in pipeline.logs()


def test_sink_killed_is_restarted_and_loses_nothing(pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(seed=19)
    worker = pipeline.start_worker()
    pipeline.produce(events[:300])
    wait_until("the sink started", lambda: "sink started (pid" in pipeline.logs(), 120)
    sink_pid = int(pipeline.logs().split("sink started (pid ")[1].split(")")[0])
    subprocess.run(["kill", "-KILL", str(sink_pid)], check=True)
    pipeline.produce(events[300:])
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    assert "restarting" in pipeline.logs() and worker.poll() is None


def test_a_row_clickhouse_rejects_is_a_dead_letter(pipeline: Pipeline, floor: Floor) -> None:
    """A round row with a seat of 300, a start in 2200 and an amount over Int64 (UInt64 range): the
    rest lands, that row goes to dead letters, and it is no outage."""
    events, exp = floor(tables=4, rounds=8, seed=20)
    pipeline.start_worker()
    bad = {"round_id": "BAD-1", "table_id": "BAD", "jurisdiction": "NJ", "game": "BLACKJACK",
           "pack": "x", "pack_version": "1", "dealer_id": "d", "seats": [300], "events": 1,
           "wagered": 2**63, "paid": 0, "collected": 0, "returned": 0, "violations": 0,
           "complete": 1, "started": 7258118400, "started_ms": 0, "ended": 7258118400,
           "ended_ms": 0}
    pipeline.produce_raw(b"BAD", json.dumps(bad).encode(), topic=pipeline.prefix + "rounds")
    pipeline.produce(events)
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    dead = [orjson.loads(m.value) for m in read_topic(pipeline.prefix + "dead-letters")]
    assert [d["topic"] for d in dead] == [pipeline.prefix + "rounds"]
    assert "rejected" in dead[0]["reason"]
    assert "ClickHouse unavailable" not in pipeline.logs()


def test_health_and_metrics_on_the_web_port(pipeline: Pipeline, floor: Floor) -> None:

    events, exp = floor(tables=4, rounds=6, seed=23)
    pipeline.start_worker()
    pipeline.produce(events)
    pipeline.wait_for(exp)
    base = f"http://127.0.0.1:{pipeline.web_port}"
    wait_until("the web port", lambda: _get(base + "/health") == "ok\n", 120)
    text = _get(base + "/metrics") or ""
    values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
              if line and not line.startswith("#")}
    assert values["pitwatch_events_total"] == len(events)
    assert values["pitwatch_alerts_total"] >= len(exp.violation_ids)
    assert values["pitwatch_snapshots_total"] >= 4
    assert values["pitwatch_engine_errors_total"] == 0
    lags = [v for k, v in values.items() if k.startswith("pitwatch_lag{")]
    assert len(lags) == 4 and all(v == 0 for v in lags)
    assert "pitwatch_sink_batch_age_seconds" in values


def _get(url: str) -> str | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return str(r.read().decode())
    except (urllib.error.URLError, OSError):
        return None


def test_v1_and_v2_producers_on_one_topic(pipeline: Pipeline, floor: Floor) -> None:
    """A released v2 (one added optional field): half the tables' devices write it, the
    rest v1, on one topic. Every event is audited and stored with its writer's
    fingerprint; no dead letter, no DIGEST_MISMATCH beyond the floor's own."""
    from tests.evolution import as_v2, release_v2

    events, exp = floor(tables=6, rounds=10, seed=24)
    v2_tables = sorted({e.table_id for e in events})[::2]
    released = release_v2(pipeline.tmp)
    pipeline.start_worker(env={"PITWATCH_RELEASED_SCHEMAS": str(released)})
    pipeline.produce_messages(as_v2(events, set(v2_tables)))
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)
    assert read_topic(pipeline.prefix + "dead-letters") == []
    writers = pipeline.store.query("SELECT table_id, uniqExact(writer) AS n, any(writer) AS w "
                                   "FROM events FINAL GROUP BY table_id")
    by_table = {r["table_id"]: r["w"] for r in writers}
    assert all(r["n"] == 1 for r in writers) and len(set(by_table.values())) == 2
    assert len({by_table[t] for t in v2_tables}) == 1


def test_topic_configs_are_applied_whoever_starts_first(pipeline: Pipeline) -> None:
    """Topics a client auto-created (or someone changed) with other configs: the worker
    sets the project's configs when it starts, and audits the topics it found."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    from pitwatch.topics import TOPIC_CONFIGS

    names = [pipeline.prefix + t for t in TOPIC_CONFIGS]
    admin = KafkaAdminClient(bootstrap_servers=KAFKA)

    def retention() -> dict[str, str]:
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n,
                                                     configs={"retention.ms": None})
                                      for n in names])["topic"]
        return {n[len(pipeline.prefix):]: c["retention.ms"]["value"] for n, c in got.items()}

    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, n,
                                            configs={"retention.ms": "60000"}) for n in names])
        wait_until("the changed configs", lambda: set(retention().values()) == {"60000"}, 60)
        pipeline.start_worker()
        want = {t: c["retention.ms"] for t, c in TOPIC_CONFIGS.items()}
        wait_until("the project's topic configs", lambda: retention() == want, 120)
    finally:
        admin.close()
