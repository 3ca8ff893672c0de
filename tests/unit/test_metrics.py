"""The worker's /metrics and /health (processors/metrics.py, processors/health.py)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pitwatch.processors.health import Probe, Readiness
from pitwatch.processors.metrics import Metrics, checks
from pitwatch.processors.settings import Settings

TOPIC = "table-events"


def _tp(partition: int) -> Any:
    return SimpleNamespace(topic=TOPIC, partition=partition)


def _samples(m: Metrics, next_to_read: Any = lambda tp: -1,
             ends: dict[tuple[str, int], int] | None = None) -> dict[str, float]:
    body, content_type = m.render(next_to_read, ends)
    assert content_type.startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


def _metrics(tmp_path: Any, now: list[float], sink: bool = False) -> Metrics:
    settings = Settings(data_dir=str(tmp_path), web_port=0, sink=sink)
    states = SimpleNamespace(snapshots=3, open_rounds=lambda: 2)
    return Metrics(None, states, settings,  # type: ignore[arg-type]
                   Readiness(checks(settings), clock=lambda: now[0]))


def test_counters_not_rates(tmp_path: Any) -> None:
    """"counters rather than per-second gauges that depend on scrape time\""""
    m = _metrics(tmp_path, [0.0])
    m.events, m.alerts, m.dead_letters = 10, 2, 1
    m.lost("table-events[1] offsets 10..19", 10)
    got = _samples(m)
    assert got["pitwatch_events_total"] == 10 and got["pitwatch_alerts_total"] == 2
    assert got["pitwatch_dead_letters_total"] == 1
    assert got["pitwatch_events_lost_total"] == 10 and got["pitwatch_losses_total"] == 1
    assert got["pitwatch_snapshots_total"] == 3 and got["pitwatch_open_rounds"] == 2
    assert got["pitwatch_refusing"] == 0 and got["pitwatch_engine_errors_total"] == 0
    assert not any("per_second" in name for name in got)
    m.events += 5
    assert _samples(m)["pitwatch_events_total"] == 15  # a second scrape changes nothing else
    families = {f.name: f.type for f in text_string_to_metric_families(
        m.render(lambda tp: -1, None)[0].decode())}
    assert families["pitwatch_events"] == "counter" and families["pitwatch_lag"] == "gauge"


def test_openmetrics_when_the_scraper_asks(tmp_path: Any) -> None:
    m = _metrics(tmp_path, [0.0])
    body, content_type = m.render(lambda tp: -1, None,
                                  "application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n")


def test_lag_per_partition_and_unknown_while_kafka_is_away(tmp_path: Any) -> None:
    """"`pitwatch_lag` reports unknown (NaN or absent, documented) while Kafka is away,
    never 0\""""
    m = _metrics(tmp_path, [0.0])
    read = {0: 100, 1: -1}
    got = _samples(m, lambda tp: read[tp.partition], {(TOPIC, 0): 130, (TOPIC, 1): 7})
    assert got[f'pitwatch_lag{{partition="0",topic="{TOPIC}"}}'] == 30
    assert got[f'pitwatch_lag{{partition="1",topic="{TOPIC}"}}'] == 7  # nothing read yet
    got = _samples(m, lambda tp: read[tp.partition], None)  # the broker did not answer
    assert not [k for k in got if k.startswith("pitwatch_lag")]
    assert got['pitwatch_up{check="kafka"}'] == 0


class _Reader:
    """A PartitionReader whose broker is up or away."""

    def __init__(self) -> None:
        self.up = True

    async def end_offset(self, topic: str, partition: int) -> int:
        if not self.up:
            raise ConnectionError("111 ECONNREFUSED")
        return 50 + partition

    async def partition_count(self, topic: str) -> int | None:
        if not self.up:
            raise ConnectionError("111 ECONNREFUSED")
        return 2


def _probe(m: Metrics, held: list[Any] | None, sink_alive: bool | None = None
           ) -> tuple[Probe, _Reader]:
    def assignment() -> list[Any]:
        if held is None:
            raise RuntimeError("consumer not started")
        return held

    app = SimpleNamespace(consumer=SimpleNamespace(assignment=assignment))
    reader = _Reader()
    return Probe(app, m.settings, m.readiness, reader,  # type: ignore[arg-type]
                 lambda: sink_alive), reader


def test_ready_only_when_kafka_answers_and_partitions_are_held(tmp_path: Any) -> None:
    """"`/health/ready` (Kafka connected, store answering, partitions assigned), with
    `/health` kept as ready; never "ok" when it is not\""""
    now = [0.0]
    m = _metrics(tmp_path, now)
    assert m.health() == (503, "not ready: kafka: not checked yet; partitions: not "
                          "checked yet\n")
    held: list[Any] = []
    probe, reader = _probe(m, held)
    asyncio.run(probe.run())
    assert m.health() == (503, "not ready: partitions: none assigned to this worker\n")
    held.append(_tp(0))
    asyncio.run(probe.run())
    assert m.health() == (200, "ok\n")
    ends = asyncio.run(probe.kafka())
    assert ends == {(TOPIC, 0): 50}
    reader.up = False
    assert asyncio.run(probe.kafka()) is None  # the lag is unknown
    status, text = m.health()
    assert status == 503 and text.startswith("not ready: kafka: no answer (ConnectionError")
    reader.up = True
    asyncio.run(probe.run())
    assert m.health() == (200, "ok\n")
    now[0] += 16.0  # no answer since: old news is not ok
    assert m.health() == (503, "not ready: kafka: no answer for 16 s; partitions: no "
                          "answer for 16 s\n")


def test_the_sink_and_the_store_are_checks_of_a_worker_with_a_sink(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pitwatch.processors import health

    m = _metrics(tmp_path, [0.0], sink=True)
    answers = {"up": False}

    def clickhouse(settings: Settings) -> None:
        if not answers["up"]:
            raise ConnectionError("Code: 210. Connection refused (127.0.0.1:19000)")

    monkeypatch.setattr(health, "clickhouse_answers", clickhouse)
    probe, _ = _probe(m, [_tp(0)], sink_alive=False)
    asyncio.run(probe.run())
    status, text = m.health()
    assert status == 503
    assert "clickhouse: no answer (ConnectionError: Code: 210. Connection refused" in text
    assert "sink: the process is not running" in text
    answers["up"] = True
    probe.sink_alive = lambda: True
    asyncio.run(probe.run())
    assert m.health() == (200, "ok\n")
    assert _samples(m)['pitwatch_up{check="clickhouse"}'] == 1


def test_refusal_and_losses_in_health(tmp_path: Any) -> None:
    m = _metrics(tmp_path, [0.0])
    probe, _ = _probe(m, [_tp(0)])
    asyncio.run(probe.run())
    m.lost("table-events[1] offsets 10..19 (10 offsets) were deleted", 10)
    assert m.health() == (200, "ok\nlost: table-events[1] offsets 10..19 (10 offsets) "
                          "were deleted\n")
    m.refusal = "table-events has 8 partitions, not the 4"
    assert m.health() == (503, "refusing: table-events has 8 partitions, not the 4\n")


def test_a_check_logs_its_changes_not_each_answer(caplog: pytest.LogCaptureFixture) -> None:
    r = Readiness(["kafka"], clock=lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger="pitwatch.worker"):
        r.report("kafka", True)
        for _ in range(100):
            r.report("kafka", False, "no answer (KafkaConnectionError)")
        r.report("kafka", True)
        r.report("kafka", True)
    assert [rec.getMessage() for rec in caplog.records] == [
        "not ready: kafka: no answer (KafkaConnectionError) (said again only when it "
        "changes)",
        "kafka is back: ok"]


def test_a_check_not_passed_since_the_start_is_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    r = Readiness(["partitions"], clock=lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger="pitwatch.worker"):
        r.report("partitions", False, "none assigned to this worker")
        r.report("partitions", False, "none assigned to this worker")
        r.report("partitions", True, "4 assigned")
    assert [(rec.levelname, rec.getMessage()) for rec in caplog.records] == [
        ("WARNING", "not ready yet: partitions: none assigned to this worker"),
        ("WARNING", "partitions is back: 4 assigned")]
