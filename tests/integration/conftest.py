"""Fixtures for the tests against real Kafka and ClickHouse, which scripts/test.sh
starts (deploy/services.sh) before and stops after. Each test gets its own topics,
consumer groups and ClickHouse database, so tests never see each other's data."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pitwatch.address import host_port
from pitwatch.audit.run import DEFAULT_ROUND_TIMEOUT_MS, audit_events
from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.violation import Violation
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.kafka_out import make_producer, send_events
from pitwatch.producers.simulate import Floor
from pitwatch.store.server import ServerStore
from pitwatch.topics import ensure_topics

ROOT = Path(__file__).resolve().parents[2]
KAFKA = os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092")
CH_HOST, CH_PORT = "127.0.0.1", int(os.environ.get("CLICKHOUSE_TCP_PORT", "19000"))
PARTITIONS = 4
#: Deadlines are for a loaded 2-core CI machine: a condition that holds returns at once.
STALL_S = 30
#: rounds compared field by field: money, counts, completeness
ROUND_FIELDS = ("wagered", "paid", "collected", "returned", "events", "violations", "complete")

T = TypeVar("T")


def wait_until(what: str, ok: Callable[[], T], timeout: float = 180.0, every: float = 0.25,
               ignore: tuple[type[Exception], ...] = ()) -> T:
    """Poll `ok` until it returns something true, and return that; fail naming `what`
    after `timeout` seconds. Exceptions of the `ignore` types count as not yet (a
    service still starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = ok()
            if got:
                return got
        except ignore:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def end_offsets(topics: list[str]) -> dict[tuple[str, int], int]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=KAFKA)
    try:
        tps = [TopicPartition(t, p) for t in topics for p in (c.partitions_for_topic(t) or ())]
        return {(tp.topic, tp.partition): o for tp, o in c.end_offsets(tps).items()}
    finally:
        c.close()


def committed(group: str) -> dict[tuple[str, int], int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=KAFKA)
    try:
        got = admin.list_group_offsets({group: None}).get(group, {})
        return {(tp.topic, tp.partition): m.offset for tp, m in got.items()}
    finally:
        admin.close()


def read_topic(topic: str) -> list[Any]:
    """Every message on the topic now, up to its end offsets."""
    from kafka import KafkaConsumer, TopicPartition

    ends = {TopicPartition(t, p): o for (t, p), o in end_offsets([topic]).items() if o > 0}
    out: list[Any] = []
    if not ends:
        return out
    c = KafkaConsumer(bootstrap_servers=KAFKA, enable_auto_commit=False)
    try:
        c.assign(list(ends))
        c.seek_to_beginning()
        deadline = time.monotonic() + 120
        while any(c.position(tp) < end for tp, end in ends.items()):
            if time.monotonic() > deadline:
                raise AssertionError(f"could not read {topic} to its end")
            for msgs in c.poll(timeout_ms=500).values():
                out.extend(m for m in msgs if m.offset < ends[TopicPartition(m.topic, m.partition)])
    finally:
        c.close()
    return out


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
    kafka_host, kafka_port = host_port(KAFKA.split(",")[0])
    missing = [name for name, ok in (
        (f"Kafka at {KAFKA}", _reachable(kafka_host, kafka_port)),
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

    def start_worker(self, name: str = "w", *extra: str,
                     env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        self.web_port = _free_port()
        log = open(self.tmp / f"worker-{name}-{len(self.workers)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "pitwatch.cli", "worker", "--kafka", KAFKA,
             "--clickhouse", f"{CH_HOST}:{CH_PORT}", "--clickhouse-db", self.id,
             "--app-id", self.id, "--topic-prefix", self.prefix,
             "--partitions", str(PARTITIONS), "--web-port", str(self.web_port),
             "--data-dir", str(self.tmp / f"worker-{name}"), "--loglevel", "info",
             # a partition standing still (Faust can hang after a rebalance) restarts the
             # worker within STALL_S, not the production two minutes; a test may say less
             "--stall-timeout", str(STALL_S), *extra],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True,
            env=None if env is None else {**os.environ, **env})
        self.workers.append(proc)
        return proc

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.tmp.glob("worker-*.log")))

    def kill(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        proc.send_signal(sig)
        proc.wait(timeout=60)

    def produce(self, events: list[Event]) -> None:
        producer = make_producer(KAFKA)
        try:
            send_events(producer, self.events_topic, events)
        finally:
            producer.close()  # type: ignore[attr-defined]

    def produce_messages(self, messages: list[tuple[bytes, bytes]]) -> None:
        producer = make_producer(KAFKA)
        try:
            for key, value in messages:
                producer.send(self.events_topic, key=key, value=value)  # type: ignore[attr-defined]
            producer.flush()  # type: ignore[attr-defined]
        finally:
            producer.close()  # type: ignore[attr-defined]

    def produce_raw(self, key: bytes, value: bytes | None, topic: str | None = None) -> None:
        producer = make_producer(KAFKA)
        try:
            producer.send(topic or self.events_topic, key=key, value=value)  # type: ignore[attr-defined]
            producer.flush()  # type: ignore[attr-defined]
        finally:
            producer.close()  # type: ignore[attr-defined]

    def count(self, table: str) -> int:
        return int(self.store.query(f"SELECT count() AS n FROM {table} FINAL")[0]["n"])

    def counts(self) -> tuple[int, int, int]:
        return self.count("events"), self.count("rounds"), self.count("violations")

    def caught_up(self) -> bool:
        """Both consumer groups committed everything on their topics: the audit has
        read every event, the sink has landed every event, alert and round sent. The
        audit's group is asked first: the worker commits an event only once Kafka
        acknowledged the alerts and rounds it gave, so the ends of those topics read
        after it cover them."""
        events = end_offsets([self.events_topic])
        audit = committed(self.id)
        if not all(audit.get(tp, 0) >= o for tp, o in events.items()):
            return False
        ends = end_offsets([self.events_topic, self.prefix + "alerts", self.prefix + "rounds"])
        sink = committed(self.id + "-sink")
        return all(sink.get(tp, 0) >= o for tp, o in ends.items())

    def wait_for(self, expected: Expected, timeout: float = 300.0) -> tuple[int, int, int]:
        """Wait until ClickHouse holds at least what is expected and both consumer
        groups have committed everything (so a surplus, a double count, would show);
        returns the counts then."""
        want = (expected.events, expected.rounds, len(expected.violation_ids))
        deadline = time.monotonic() + timeout
        got = self.counts()
        while time.monotonic() < deadline:
            if all(g >= w for g, w in zip(got, want, strict=True)) and self.caught_up():
                return self.counts()
            time.sleep(0.5)
            got = self.counts()
        logs = "\n".join(p.read_text()[-3000:] for p in self.tmp.glob("worker-*.log"))
        warnings = "\n".join(line for line in self.logs().splitlines()
                             if "WARNING" in line or "ERROR" in line)[-6000:]
        missing = sorted(set(expected.round_rows) - set(self.rounds()))
        raise AssertionError(f"ClickHouse has {got}, expected {want} after {timeout:.0f}s; "
                             f"rounds missing: {missing[:20]}\n"
                             f"{self.explain(expected, self.violation_ids(), 'ClickHouse')}"
                             f"\nwarnings and errors:\n{warnings}\nlog tails:\n{logs}")

    def alerted_ids(self) -> list[str]:
        from pitwatch.events.violation_avro import decode_violation

        return [decode_violation(m.value).violation_id
                for m in read_topic(self.prefix + "alerts")]

    def violation_ids(self) -> set[str]:
        return {r["violation_id"] for r in
                self.store.query("SELECT violation_id FROM violations FINAL")}

    def explain(self, exp: Expected, got: set[str], where: str) -> str:
        """The violations `where` has and the embedded audit has not, and the other way
        round, with code, round, event and message (from ClickHouse and the alerts
        topic), and the counts: what a failing comparison prints."""
        from pitwatch.events.violation_avro import decode_violation

        seen: dict[str, str] = {}
        for m in read_topic(self.prefix + "alerts"):
            v = decode_violation(m.value)
            seen.setdefault(v.violation_id, f"alerts p{m.partition}@{m.offset} {v.code} "
                            f"{v.round_id} {v.event_id} {v.message}")
        for r in self.store.query("SELECT violation_id, code, round_id, event_id, message "
                                  "FROM violations FINAL"):
            seen.setdefault(r["violation_id"], f"ClickHouse {r['code']} {r['round_id']} "
                            f"{r['event_id']} {r['message']}")
        mine = {v.violation_id: f"{v.code} {v.round_id} {v.event_id} {v.message}"
                for v in exp.violations}
        lines = [f"{where} differs from the embedded audit (topics {self.prefix}*, "
                 f"database {self.id}); counts (events, rounds, violations) "
                 f"{self.counts()} vs {(exp.events, exp.rounds, len(exp.violation_ids))}"]
        lines += [f"  extra   {i}: {seen.get(i, '?')}" for i in sorted(got - exp.violation_ids)]
        lines += [f"  missing {i}: {mine.get(i, '?')}" for i in sorted(exp.violation_ids - got)]
        return "\n".join(lines)

    def rounds(self) -> dict[str, tuple[Any, ...]]:
        rows = self.store.query(f"SELECT round_id, {', '.join(ROUND_FIELDS)} FROM rounds FINAL")
        return {r["round_id"]: tuple(int(r[f]) for f in ROUND_FIELDS) for r in rows}

    def close(self) -> None:
        # The test is over: every worker is killed at once with whatever it started (its
        # sink, multiprocessing's helpers: all in its process group), none of it outliving
        # the test. Not a graceful stop (about 2 s a worker, in turn): what a worker does
        # on SIGTERM is what the drills that send it assert on.
        self.kill_workers()
        try:  # PITWATCH_KEEP=1 keeps the database for a look after the test
            if not os.environ.get("PITWATCH_KEEP"):
                self.store._execute(f"DROP DATABASE IF EXISTS {self.id}")
        finally:
            self.store.close()

    def kill_workers(self) -> None:
        for p in self.workers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
        for p in self.workers:
            p.wait(timeout=60)


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    p = Pipeline(tmp_path)
    yield p
    p.close()


DAY_MS = 24 * 3600 * 1000


def shifted(events: list[Event], delta_ms: float) -> list[Event]:
    """The same events with every device clock moved by `delta_ms`, each digest chain
    re-linked (a prev_digest that named an event names its shifted copy; a broken one
    stays broken)."""
    from dataclasses import replace

    from pitwatch.events.avro import digest

    renamed: dict[bytes, bytes] = {}
    out = []
    for ev in events:
        new = replace(ev, ts=int(ev.ts + delta_ms), raw=None,
                      prev_digest=None if ev.prev_digest is None
                      else renamed.get(ev.prev_digest, ev.prev_digest))
        renamed[digest(ev)] = digest(new)
        out.append(new)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Expected:
    """What the embedded audit's engine finds in the same events (without closing open
    rounds at the end: a stream has no end), round by round."""

    def __init__(self, events: list[Event], round_timeout_ms: int = DEFAULT_ROUND_TIMEOUT_MS,
                 finish: bool = False, keys: KeyRegistry | None = None) -> None:
        report = audit_events(events, keep_violations=True, finish=finish,
                              round_timeout_ms=round_timeout_ms, keys=keys)  # embedded
        self.violations: list[Violation] = report.violations
        self.violation_ids = {v.violation_id for v in self.violations}
        summaries: list[RoundSummary] = []  # its engine again, for the rounds' contents
        auditor = Auditor(select, lambda v: None, summaries.append,
                          round_timeout_ms=round_timeout_ms, keys=keys, released=released_writers())
        for ev in events:
            auditor.feed(ev)
        if finish:
            auditor.finish()
        self.events = len({e.event_id for e in events})
        self.round_rows = {s.round_id: tuple(int(getattr(s, f)) for f in ROUND_FIELDS)
                           for s in summaries}
        self.rounds = len(self.round_rows)


@pytest.fixture
def floor() -> Callable[..., tuple[list[Event], Expected]]:
    def make(tables: int = 8, rounds: int = 25, seed: int = 11,
             inject: float = 0.15) -> tuple[list[Event], Expected]:
        events = list(Floor(tables, rounds, seed, inject).events())
        return events, Expected(events)
    return make
