"""The streaming pipeline on real Kafka and ClickHouse (started here if not running):

1. throughput: N simulated events on the topic, one worker started cold; events/s
   end to end into ClickHouse, beside kafka-python consuming the same topic bare;
2. the sink's rows/s (events, rounds and violations rows);
3. alert latency at a fixed load (2,000 events/s): from the device's ts to the alert on
   its topic, p50 and p99, beside the bare consumer's latency on the events topic.

    .venv/bin/python bench/stream.py [--events 200000] [--rate 2000] [--seconds 30]

Targets (issue 4): >= 10,000 events/s through one worker; p99 <= 500 ms.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka import KafkaConsumer  # noqa: E402

from pitwatch.audit.run import audit_events  # noqa: E402
from pitwatch.engine.alerts import decode_violation  # noqa: E402
from pitwatch.events.avro import digest  # noqa: E402
from pitwatch.events.model import Event  # noqa: E402
from pitwatch.store.server import ServerStore  # noqa: E402
from producers.kafka_out import Pacing, ensure_topics, make_producer, send_events  # noqa: E402
from producers.simulate import Floor  # noqa: E402

KAFKA, CH = "127.0.0.1:19092", ("127.0.0.1", 19000)


def services_up() -> bool:
    return subprocess.run([str(ROOT / "deploy/services.sh"), "status"],
                          capture_output=True).returncode == 0


def worker(run_id: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pitwatch.cli", "worker", "--app-id", run_id,
         "--topic-prefix", f"{run_id}-", "--clickhouse-db", run_id,
         "--data-dir", f"/tmp/{run_id}", "--web-port", str(17000 + uuid.uuid4().int % 3000),
         "--loglevel", "warning"],
        stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=ROOT)


def bare_consume(topic: str, n: int) -> float:
    c = KafkaConsumer(topic, bootstrap_servers=KAFKA, auto_offset_reset="earliest",
                      group_id=f"bare-{uuid.uuid4().hex[:6]}", fetch_max_bytes=50 << 20,
                      max_partition_fetch_bytes=8 << 20)
    t, got = time.perf_counter(), 0
    while got < n:
        for msgs in c.poll(timeout_ms=500, max_records=10_000).values():
            got += len(msgs)
    dt = time.perf_counter() - t
    c.close()
    return n / dt


def restamped(events: Iterator[Event]) -> Iterator[Event]:
    """The events as live devices would send them now: ts is the send time, and each
    device's digest chain is recomputed over the restamped events."""
    last: dict[str, Event] = {}
    for ev in events:
        prev = last.get(ev.device_id)
        ev = replace(ev, ts=int(time.time() * 1000),
                     prev_digest=None if prev is None else digest(prev), raw=None)
        last[ev.device_id] = ev
        yield ev


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def throughput(n: int) -> None:
    run = "bt" + uuid.uuid4().hex[:8]
    topic = f"{run}-table-events"
    ensure_topics(KAFKA, 4, f"{run}-")
    events = []
    for ev in Floor(40, 10_000, seed=3, inject=0.02).events():
        events.append(ev)
        if len(events) == n:
            break
    expected_rounds = audit_events(events, finish=False).rounds
    producer = make_producer(KAFKA)
    send_events(producer, topic, events)
    producer.close()  # type: ignore[attr-defined]
    bare = bare_consume(topic, n)
    out = subprocess.run([sys.executable, str(ROOT / "bench/faust_bare.py"), topic, str(n)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    faust_bare = float(re.findall(r"RATE (\d+)", out.stdout + out.stderr)[-1])
    store = ServerStore(*CH, database=run)
    store.setup()
    proc = worker(run, Path(f"/tmp/{run}.log"))

    def landed(table: str = "events") -> int:
        if proc.poll() is not None:
            raise SystemExit(f"the worker stopped:\n{Path(f'/tmp/{run}.log').read_text()}")
        return int(store.query(f"SELECT count() AS n FROM {table}")[0]["n"])

    try:
        # sustained rate: from the first batch in ClickHouse (the worker is up, the sink
        # writing) to the last event landed
        deadline = time.monotonic() + 900
        while (first := landed()) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        t = time.perf_counter()
        while (landed() < n or landed("rounds") < expected_rounds) \
                and time.monotonic() < deadline:
            time.sleep(0.2)  # the sink has the events, the audit has closed every round
        dt = time.perf_counter() - t
        n_timed = n - first
        rows, last = 0, -1
        while rows != last:  # rounds and violations land right behind the events
            last = rows
            time.sleep(2)
            rows = sum(landed(tb) for tb in ("events", "rounds", "violations"))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        store._execute(f"DROP DATABASE IF EXISTS {run}")
        store.close()
    print(f"throughput, {n:,} events on the topic, one worker (sustained, after start-up):")
    print(f"  kafka-python bare consume (baseline)   {bare:10,.0f} events/s")
    print(f"  a Faust agent that only counts         {faust_bare:10,.0f} events/s   "
          "(Faust's own ceiling here)")
    print(f"  one worker, end to end into ClickHouse {n_timed / dt:10,.0f} events/s   "
          f"{n_timed / dt / bare:.2f}x the bare consumer   (target >= 10,000)")
    print(f"  ClickHouse sink                        {rows * n_timed / n / dt:10,.0f} rows/s "
          f"({rows:,} rows: events, rounds, violations)")


def latency(rate: float, seconds: float) -> None:
    run = "bl" + uuid.uuid4().hex[:8]
    prefix = f"{run}-"
    ensure_topics(KAFKA, 4, prefix)
    proc = worker(run, Path(f"/tmp/{run}.log"))
    alert_lat: list[float] = []
    bare_lat: list[float] = []
    stop = threading.Event()

    def watch(topic: str, out: list[float], alerts: bool) -> None:
        c = KafkaConsumer(topic, bootstrap_servers=KAFKA, auto_offset_reset="earliest",
                          group_id=f"lat-{uuid.uuid4().hex[:6]}", fetch_max_wait_ms=10)
        while not stop.is_set():
            for msgs in c.poll(timeout_ms=100).values():
                now = time.time() * 1000
                for m in msgs:
                    ts = decode_violation(m.value).detected_at if alerts else m.timestamp
                    out.append(now - ts)
        c.close()

    threads = [threading.Thread(target=watch, args=(prefix + "alerts", alert_lat, True)),
               threading.Thread(target=watch, args=(prefix + "table-events", bare_lat, False))]
    for th in threads:
        th.start()
    try:
        # warm up: a few events, then wait for their alerts: the worker is live
        store = ServerStore(*CH, database=run)
        warm = list(restamped(ev for ev, _ in zip(Floor(2, 50, seed=9, inject=1.0).events(),
                                                  range(400), strict=False)))
        producer = make_producer(KAFKA)
        send_events(producer, prefix + "table-events", warm)
        deadline = time.monotonic() + 120
        while not alert_lat and time.monotonic() < deadline:
            time.sleep(0.5)
        store.close()
        alert_lat.clear()
        bare_lat.clear()
        n = int(rate * seconds)
        floor = Floor(20, 10_000, seed=4, inject=0.1).events()
        send_events(producer, prefix + "table-events",
                    restamped(ev for ev, _ in zip(floor, range(n), strict=False)),
                    Pacing(rate=rate))
        producer.close()  # type: ignore[attr-defined]
        time.sleep(3)
    finally:
        stop.set()
        for th in threads:
            th.join()
        proc.terminate()
        proc.wait(timeout=60)
    print(f"alert latency at {rate:,.0f} events/s for {seconds:.0f} s "
          f"({len(alert_lat):,} alerts):")
    print(f"  bare consumer, device ts -> consumed (baseline)  p50 {pct(bare_lat, 50):6.0f} ms"
          f"   p99 {pct(bare_lat, 99):6.0f} ms")
    print(f"  device ts -> alert on its topic                  p50 {pct(alert_lat, 50):6.0f} ms"
          f"   p99 {pct(alert_lat, 99):6.0f} ms   (target p99 <= 500)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rate", type=float, default=2000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--only", choices=("throughput", "latency"), help="run one part")
    args = ap.parse_args()
    started = not services_up()
    if started:
        subprocess.run([str(ROOT / "deploy/services.sh"), "start"], check=True)
    try:
        if args.only != "latency":
            throughput(args.events)
        if args.only != "throughput":
            latency(args.rate, args.seconds)
    finally:
        if started:
            subprocess.run([str(ROOT / "deploy/services.sh"), "stop"], check=True)


if __name__ == "__main__":
    main()
