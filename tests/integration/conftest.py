"""Fixtures for the tests against real Kafka and ClickHouse, which scripts/test.sh
starts (deploy/services.sh) before and stops after. Each test gets its own topics,
consumer groups and ClickHouse database, so tests never see each other's data."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.model import Event
from pitwatch.store.server import ServerStore
from producers.kafka_out import ensure_topics, make_producer, send_events
from producers.simulate import Floor

ROOT = Path(__file__).resolve().parents[2]
KAFKA = os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092")
CH_HOST, CH_PORT = "127.0.0.1", int(os.environ.get("CLICKHOUSE_TCP_PORT", "19000"))
PARTITIONS = 4


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def services() -> None:
    kafka_host, kafka_port = KAFKA.rsplit(":", 1)
    missing = [name for name, ok in (
        (f"Kafka at {KAFKA}", _reachable(kafka_host, int(kafka_port))),
        (f"ClickHouse at {CH_HOST}:{CH_PORT}", _reachable(CH_HOST, CH_PORT))) if not ok]
    if missing:
        msg = f"{' and '.join(missing)} not running: start them with deploy/services.sh start"
        if os.environ.get("PITWATCH_SERVICES"):
            pytest.fail(msg)  # the test script started them: their absence is an error
        pytest.skip(msg)


class Pipeline:
    """One isolated pipeline: topic prefix, app id and database of its own."""

    def __init__(self, tmp: Path) -> None:
        self.id = "t" + uuid.uuid4().hex[:10]
        self.prefix = f"{self.id}-"
        self.tmp = tmp
        self.workers: list[subprocess.Popen[bytes]] = []
        ensure_topics(KAFKA, PARTITIONS, self.prefix)
        self.store = ServerStore(CH_HOST, CH_PORT, self.id)
        self.store.setup()

    @property
    def events_topic(self) -> str:
        return self.prefix + "table-events"

    def start_worker(self, name: str = "w") -> subprocess.Popen[bytes]:
        port = 16000 + len(self.workers) + int(uuid.uuid4().int % 2000)
        log = open(self.tmp / f"worker-{name}-{len(self.workers)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "pitwatch.cli", "worker", "--kafka", KAFKA,
             "--clickhouse", f"{CH_HOST}:{CH_PORT}", "--clickhouse-db", self.id,
             "--app-id", self.id, "--topic-prefix", self.prefix,
             "--partitions", str(PARTITIONS), "--web-port", str(port),
             "--data-dir", str(self.tmp / f"worker-{name}"), "--loglevel", "info"],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.workers.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        proc.send_signal(sig)
        proc.wait(timeout=60)

    def produce(self, events: list[Event]) -> None:
        producer = make_producer(KAFKA)
        try:
            send_events(producer, self.events_topic, events)
        finally:
            producer.close()  # type: ignore[attr-defined]

    def produce_raw(self, key: bytes, value: bytes) -> None:
        producer = make_producer(KAFKA)
        try:
            producer.send(self.events_topic, key=key, value=value)  # type: ignore[attr-defined]
            producer.flush()  # type: ignore[attr-defined]
        finally:
            producer.close()  # type: ignore[attr-defined]

    def count(self, table: str) -> int:
        return int(self.store.query(f"SELECT count() AS n FROM {table} FINAL")[0]["n"])

    def counts(self) -> tuple[int, int, int]:
        return self.count("events"), self.count("rounds"), self.count("violations")

    def wait_for(self, expected: Expected, timeout: float = 120.0) -> tuple[int, int, int]:
        """Wait until ClickHouse holds at least what is expected, then a moment more so
        that a surplus (a double count) would show; returns the counts then."""
        want = (expected.events, expected.rounds, len(expected.violation_ids))
        deadline = time.monotonic() + timeout
        got = self.counts()
        while time.monotonic() < deadline:
            if all(g >= w for g, w in zip(got, want, strict=True)):
                time.sleep(3)
                return self.counts()
            time.sleep(1)
            got = self.counts()
        logs = "\n".join(p.read_text()[-3000:] for p in self.tmp.glob("worker-*.log"))
        raise AssertionError(f"ClickHouse has {got}, expected {want} after {timeout:.0f}s"
                             f"\n{logs}")

    def violation_ids(self) -> set[str]:
        return {r["violation_id"] for r in
                self.store.query("SELECT violation_id FROM violations FINAL")}

    def rounds(self) -> dict[str, tuple[Any, ...]]:
        rows = self.store.query("SELECT round_id, wagered, paid, collected, returned, "
                                "violations, complete FROM rounds FINAL")
        return {r["round_id"]: tuple(r.values())[1:] for r in rows}

    def close(self) -> None:
        for p in self.workers:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        try:
            self.store._execute(f"DROP DATABASE IF EXISTS {self.id}")
        finally:
            self.store.close()


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    p = Pipeline(tmp_path)
    yield p
    p.close()


class Expected:
    """What the embedded audit finds in the same events (without closing open rounds
    at the end: a stream has no end)."""

    def __init__(self, events: list[Event]) -> None:
        self.report = audit_events(events, keep_violations=True, finish=False)
        self.violation_ids = {v.violation_id for v in self.report.violations}
        self.events = len({e.event_id for e in events})
        self.rounds = self.report.rounds


@pytest.fixture
def floor() -> Callable[..., tuple[list[Event], Expected]]:
    def make(tables: int = 8, rounds: int = 25, seed: int = 11,
             inject: float = 0.15) -> tuple[list[Event], Expected]:
        events = list(Floor(tables, rounds, seed, inject).events())
        return events, Expected(events)
    return make
