"""Pre-encoded events for the streaming benches, restamped at send time by splicing.

Encoding an event costs tens of microseconds in Python; a bench that encodes while it
paces measures its own producer. Here each event is encoded once, ahead of time, and
cut at two places its schema fixes (TableEvent: event_id, table_id, device_id, seq,
**ts**, round_id, **prev_digest**, payload): the bytes before `ts`, those between `ts`
and `prev_digest`, and those after. Sending an event "now" joins the pieces around the
send time as an Avro long (zig-zag varint) and the SHA-256 of the device's previous
message body as it was sent (so every device's digest chain stays whole): a few
microseconds, no fastavro, no Event objects.

    Spliced.of(events) -> Spliced;  spliced.restamp(i, ts_ms) -> (key, message)

Also what bench/stream.py and bench/latency.py share: the services' addresses (from
PITWATCH_KAFKA and CLICKHOUSE_TCP_PORT, as deploy/services.sh reads them), the bench's
producer, starting and stopping workers, CPU seconds from /proc.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pitwatch.events.avro import encode  # noqa: E402
from pitwatch.events.model import Event  # noqa: E402
from pitwatch.events.schema import single_object_header  # noqa: E402


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The zig-zag long at `pos` and the position after it."""
    shift = acc = 0
    while True:
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7


def zigzag_long(n: int) -> bytes:
    """An Avro long: zig-zag, then base-128 varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


@dataclass(frozen=True, slots=True)
class _Cut:
    key: bytes
    device: str
    head: bytes  # single-object header + body up to ts
    mid: bytes  # after ts, up to prev_digest (round_id)
    chained: bool  # prev_digest is not null
    tail: bytes  # after prev_digest (payload)


class Spliced:
    """Events encoded once, each re-sendable with a new ts and its device's chain."""

    def __init__(self, cuts: list[_Cut]) -> None:
        self.cuts = cuts
        self._last: dict[str, bytes] = {}  # device -> SHA-256 of its last body sent

    @classmethod
    def of(cls, events: Iterable[Event]) -> Spliced:
        header = single_object_header()
        cuts = []
        for ev in events:
            body = encode(ev)
            pos = 0
            for _ in range(3):  # event_id, table_id, device_id: length-prefixed
                n, pos = _varint(body, pos)
                pos += n
            _, pos = _varint(body, pos)  # seq
            ts_at = pos
            _, pos = _varint(body, pos)  # ts
            ts_end = pos
            branch, pos = _varint(body, pos)  # round_id: null | string
            if branch == 1:
                n, pos = _varint(body, pos)
                pos += n
            pd_at = pos
            branch, pos = _varint(body, pos)  # prev_digest: null | bytes
            if branch == 1:
                n, pos = _varint(body, pos)
                pos += n
            cuts.append(_Cut(ev.table_id.encode(), ev.device_id, header + body[:ts_at],
                             body[ts_end:pd_at], branch == 1, body[pos:]))
        return cls(cuts)

    def __len__(self) -> int:
        return len(self.cuts)

    def restamp(self, i: int, ts_ms: int) -> tuple[bytes, bytes]:
        """Event `i` as its device would send it at `ts_ms`: (key, message)."""
        c = self.cuts[i]
        prev = self._last.get(c.device) if c.chained else None
        pd = b"\x00" if prev is None else b"\x02\x40" + prev
        msg = c.head + zigzag_long(ts_ms) + c.mid + pd + c.tail
        self._last[c.device] = hashlib.sha256(memoryview(msg)[10:]).digest()
        return c.key, msg


# --- what the streaming benches share --------------------------------------------------

KAFKA = os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092")
CH = ("127.0.0.1", int(os.environ.get("CLICKHOUSE_TCP_PORT", "19000")))


def services_up() -> bool:
    return subprocess.run([str(ROOT / "deploy/services.sh"), "status"],
                          capture_output=True).returncode == 0


def floor_events(n: int, tables: int = 40, seed: int = 3, inject: float = 0.02) -> list[Event]:
    """The first n events of a simulated floor (unsigned: a restamped chain keeps no
    device signature)."""
    from pitwatch.producers.simulate import Floor

    return [ev for ev, _ in zip(Floor(tables, 100_000, seed=seed, inject=inject,
                                      sign=False).events(), range(n), strict=False)]


def bench_producer() -> Any:
    """kafka-python, acks=all, batching, no compression: loads a topic before a run."""
    from kafka import KafkaProducer

    return KafkaProducer(bootstrap_servers=KAFKA, acks="all", linger_ms=2,
                         batch_size=512 * 1024,
                         max_in_flight_requests_per_connection=5)


#: The paced producer sends what is due every TICK_S, as a devices' gateway with a 5 ms
#: linger would: a request per partition a tick, not a few events a request. Each event
#: is stamped as it goes, so the tick adds nothing to a latency.
TICK_S = 0.005


def send_spliced(topic: str, feed: Spliced, start: int, n: int,
                 rate: float | None = None) -> tuple[int, float]:
    """Send events start..start+n of the feed at `rate` events/s (None: as fast as it
    can), each restamped to its send time; returns (sent, seconds incl. acks).

    aiokafka's batch API (records appended to a per-partition batch in C, one request
    per batch), partitioned like kafka-python's default (murmur2 of the key): the
    events due at each tick (TICK_S) go out together, stamped then."""
    import asyncio

    return asyncio.run(_send(topic, feed, start, n, rate))


async def _send(topic: str, feed: Spliced, start: int, n: int,
                rate: float | None) -> tuple[int, float]:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from kafka.partitioner.default import murmur2

    producer = AIOKafkaProducer(bootstrap_servers=KAFKA, acks="all", linger_ms=0,
                                max_batch_size=1 << 20, max_request_size=8 << 20)
    await producer.start()
    try:
        parts = sorted(await producer.partitions_for(topic))
        where: dict[bytes, int] = {}
        acks = []
        t0 = time.monotonic()
        k = 0
        while k < n:
            due = min(n, k + 5000) if not rate else \
                min(n, int((time.monotonic() - t0) * rate) + 1)
            if due <= k:
                await asyncio.sleep(TICK_S)
                continue
            now = int(time.time() * 1000)
            batches: dict[int, Any] = {}
            for i in range(start + k, start + due):
                key, msg = feed.restamp(i, now)
                p = where.get(key)
                if p is None:
                    p = where[key] = parts[(murmur2(key) & 0x7FFFFFFF) % len(parts)]
                b = batches.get(p)
                if b is None:
                    b = batches[p] = producer.create_batch()
                if b.append(key=key, value=msg, timestamp=None) is None:  # full
                    acks.append(await producer.send_batch(b, topic, partition=p))
                    b = batches[p] = producer.create_batch()
                    b.append(key=key, value=msg, timestamp=None)
            for p, b in batches.items():
                acks.append(await producer.send_batch(b, topic, partition=p))
            k = due
            if rate:
                await asyncio.sleep(TICK_S)
        await asyncio.gather(*acks)
        return n, time.monotonic() - t0
    finally:
        await producer.stop()


class Worker:
    """One `pitwatch worker` of group `run_id` on its own topics and database."""

    def __init__(self, run_id: str, *extra: str) -> None:
        tag = uuid.uuid4().hex[:4]
        self.port = 17000 + uuid.uuid4().int % 3000
        self.log = f"/tmp/{run_id}-{tag}.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pitwatch.cli", "worker", "--app-id", run_id,
                 "--kafka", KAFKA, "--clickhouse", f"{CH[0]}:{CH[1]}",
                 "--topic-prefix", f"{run_id}-", "--clickhouse-db", run_id,
                 "--data-dir", f"/tmp/{run_id}-{tag}", "--web-port", str(self.port),
                 "--loglevel", "warning", *extra],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        self.pid = self.proc.pid

    def events_read(self) -> int:
        """The worker's count of events read (its /metrics), 0 while it is not up."""
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics",
                                        timeout=2) as r:
                body = r.read().decode()
        except OSError:
            return 0
        for line in body.splitlines():
            if line.startswith("pitwatch_events_total "):
                return int(float(line.split()[1]))
        return 0

    def poll(self) -> int | None:
        return self.proc.poll()

    def terminate(self) -> None:
        self.proc.terminate()

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)


def stop(procs: list[Worker]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def drop_database(name: str) -> None:
    from pitwatch.store.server import ServerStore

    store = ServerStore(*CH, database="default")
    try:
        store._execute(f"DROP DATABASE IF EXISTS {name}")
    finally:
        store.close()


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a process and its children, from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")
