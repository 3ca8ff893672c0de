"""Histograms where a distribution matters (processors/metrics.py): "the time from an
event's arrival to its alert being acknowledged, and the sink's insert duration
(buckets that suit seconds-scale alerts)", exposed on the worker's /metrics and
observed where they happen."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pitwatch.processors.health import Readiness
from pitwatch.processors.metrics import SECONDS_BUCKETS, Metrics, checks
from pitwatch.processors.settings import Settings
from pitwatch.processors.sink import Batches, Source, Writer


def _histograms(m: Metrics) -> dict[str, Any]:
    body, _ = m.render(lambda tp: -1, None)
    return {f.name: f for f in text_string_to_metric_families(body.decode())
            if f.type == "histogram"}


def _sample(family: Any, suffix: str, **labels: str) -> float:
    return float(next(s.value for s in family.samples
                      if s.name == family.name + suffix and s.labels == labels))


def _metrics(tmp_path: Path) -> Metrics:
    settings = Settings(data_dir=str(tmp_path), sink=True)
    return Metrics(None, SimpleNamespace(), settings,  # type: ignore[arg-type]
                   Readiness(checks(settings)))


def test_buckets_suit_seconds_scale_alerts() -> None:
    assert SECONDS_BUCKETS[0] <= 0.01 and SECONDS_BUCKETS[-1] >= 60
    assert list(SECONDS_BUCKETS) == sorted(SECONDS_BUCKETS)
    assert {0.1, 0.5, 1.0, 5.0, 10.0} <= set(SECONDS_BUCKETS)


def test_the_time_from_arrival_to_the_alerts_acknowledgement(tmp_path: Path) -> None:
    m = _metrics(tmp_path)
    assert _sample(_histograms(m)["pitwatch_alert_seconds"], "_count") == 0
    m.alert_acknowledged(time.monotonic() - 0.3)  # arrived 0.3 s before Kafka's ack
    m.alert_acknowledged(time.monotonic() - 4.0)
    h = _histograms(m)["pitwatch_alert_seconds"]
    assert _sample(h, "_count") == 2 and 4.3 <= _sample(h, "_sum") < 5.0
    assert _sample(h, "_bucket", le="0.25") == 0
    assert _sample(h, "_bucket", le="0.5") == 1
    assert _sample(h, "_bucket", le="5.0") == 2


class _Store:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        self.rows += rows


def test_the_sinks_inserts_reach_the_workers_metrics(tmp_path: Path) -> None:
    m = _metrics(tmp_path)
    assert "pitwatch_sink_insert_seconds" not in _histograms(m)  # no batch landed yet
    store = _Store()

    async def land() -> None:  # in the sink's process: a batch landed, then published
        b = Batches()
        b.add("rounds", {"round_id": "r1"}, Source("rounds", 0, 0, b"k", b"v"), 0.0)
        w = Writer(store, None, None, m.settings, lambda: False)  # type: ignore[arg-type]
        assert await w.write(b) == 1
        w.metrics.publish()

    asyncio.run(land())
    assert store.rows == [{"round_id": "r1"}]
    h = _histograms(m)["pitwatch_sink_insert_seconds"]
    assert _sample(h, "_count", table="rounds") == 1
    assert _sample(h, "_bucket", table="rounds", le="+Inf") == 1
    assert 0 <= _sample(h, "_sum", table="rounds") < 1.0
    # OpenMetrics, as a scraper may ask, carries it too
    body, _ = m.render(lambda tp: -1, None, "application/openmetrics-text; version=1.0.0")
    assert b'pitwatch_sink_insert_seconds_count{table="rounds"} 1.0' in body
