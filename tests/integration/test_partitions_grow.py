"""Partitions added to the events topic under a running worker (issue 40): tables move
to other partitions and their state does not follow, so the worker stops auditing and
says so (/health 503, /metrics, the log, with the steps) within a minute, never
auditing half a floor in silence; a worker started on the grown topic refuses to
start; and `pitwatch produce` reports the count it did not ask for in one line and
sends by key."""

from __future__ import annotations

import subprocess
import sys
import time

from pitwatch.producers.simulate import Floor

from .conftest import KAFKA, PARTITIONS, ROOT, Pipeline, committed, end_offsets, wait_until
from .test_streaming import _get

GROWN = 8


def _grow(topic: str, count: int) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=KAFKA)
    try:
        admin.create_partitions({topic: count})
    finally:
        admin.close()


def _health(port: int) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode()
    except (urllib.error.URLError, OSError):
        return 0, ""


def test_a_partition_increase_is_refused_visibly(pipeline: Pipeline) -> None:
    events = list(Floor(8, 20, 40, 0.1).events())
    half = len(events) // 2
    pipeline.start_worker()
    port = pipeline.web_port
    pipeline.produce(events[:half])

    def audited() -> bool:
        ends = end_offsets([pipeline.events_topic])
        return all(committed(pipeline.id).get(tp, 0) >= o for tp, o in ends.items())

    wait_until("the first half audited", audited, 180)
    wait_until("the worker ready", lambda: _health(port) == (200, "ok\n"), 30)

    _grow(pipeline.events_topic, GROWN)
    grown_at = time.monotonic()
    pipeline.produce(events[half:])  # a new producer: keys spread over 8 partitions
    assert any(p >= PARTITIONS for (_, p), o in end_offsets([pipeline.events_topic]).items()
               if o > 0)

    def refused() -> str:
        status, text = _health(port)
        # a 503 "not ready" (a rebalance under way, say) is not the refusal
        return text if status == 503 and text.startswith("refusing: ") else ""

    text = wait_until("the refusal in /health", refused, 90)
    assert time.monotonic() - grown_at <= 60, "refused more than a minute after the growth"
    assert text.startswith("refusing: ") and f"has {GROWN} partitions" in text
    assert "docs/deployment.md" in text
    metrics = _get(f"http://127.0.0.1:{port}/metrics") or ""
    assert "pitwatch_refusing 1" in metrics and f"pitwatch_events_partitions {GROWN}" in metrics
    assert "REFUSING TO AUDIT" in pipeline.logs()

    # a worker started on the grown topic refuses to start, saying why
    pipeline.kill(pipeline.workers[0], 15)
    again = pipeline.start_worker("again")
    assert again.wait(timeout=120) == 2
    assert "refusing to start" in pipeline.logs()

    # produce: one line for the count it did not ask for, then it sends by key
    out = subprocess.run(
        [sys.executable, "-m", "pitwatch.cli", "produce", "--kafka", KAFKA,
         "--topic-prefix", pipeline.prefix, "--tables", "2", "--rounds", "1", "--seed", "3",
         "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    warned = [line for line in out.stderr.splitlines() if "partitions" in line]
    assert len(warned) == 1 and f"has {GROWN} partitions, not the 4 asked" in warned[0]
    assert "sent" in out.stdout
