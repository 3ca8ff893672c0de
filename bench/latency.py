"""Alert latency under load: device ts -> the alert on its topic, p50 and p99, at fixed
rates (default 1,000, 2,500 and 5,000 events/s), one worker, everything on this machine.

The events are encoded once, ahead of time (bench/stream_feed.py); a producer process
of its own paces them and restamps each with its send time by splicing the ts and the
device's prev_digest into the pre-encoded bytes (a few microseconds, no re-encoding), so
the producer is never what limits the figure: its maximum rate alone is measured first
and printed. A violation's detected_at is the device ts of the event that showed it, so
an alert's latency is the time it is consumed minus detected_at. Baseline, same run: a
bare kafka-python consumer of the events topic (its partition 0: as late as all four,
at a quarter of the CPU), send time -> consumed.

    .venv/bin/python bench/latency.py [--rates 1000,2500,5000] [--seconds 20]

Target (issue 9): p99 <= 250 ms at 2,500 events/s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import subprocess
import threading
import time
import uuid
from typing import Any

from stream_feed import (
    KAFKA,
    ROOT,
    Spliced,
    Worker,
    drop_database,
    floor_events,
    pct,
    send_spliced,
    services_up,
    stop,
)

from pitwatch.events.violation_avro import decode_violation
from pitwatch.topics import ensure_topics


def producer_max(feed: Spliced, n: int) -> float:
    """The bench producer alone, unpaced, on a topic of its own: events/s."""
    prefix = "bp" + uuid.uuid4().hex[:8] + "-"
    ensure_topics(KAFKA, 4, prefix)
    sent, dt = send_spliced(prefix + "table-events", feed, 0, n)
    return sent / dt


def _paced(topic: str, feed: Spliced, start: int, n: int, rate: float, out: Any) -> None:
    out.put(send_spliced(topic, feed, start, n, rate))


class Watch:
    """A consumer thread: for each message, (consumed - stamp) in ms."""

    def __init__(self, topic: str, alerts: bool) -> None:
        self.topic, self.alerts = topic, alerts
        self.lat: list[float] = []
        self.seen = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=KAFKA, auto_offset_reset="latest",
                          fetch_max_wait_ms=10)
        if self.alerts:
            c.assign([TopicPartition(self.topic, p) for p in c.partitions_for_topic(self.topic)])
        else:  # the baseline: one partition is as late as all, at a quarter of the CPU
            c.assign([TopicPartition(self.topic, 0)])
        c.seek_to_end()
        while not self.stop.is_set():
            for msgs in c.poll(timeout_ms=100).values():
                now = time.time() * 1000
                for m in msgs:
                    ts = decode_violation(m.value).detected_at if self.alerts else m.timestamp
                    self.lat.append(now - ts)
                self.seen += len(msgs)
        c.close()

    def take(self) -> list[float]:
        out, self.lat = self.lat, []
        return out

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def quiet(watch: Watch, still_s: float, deadline_s: float) -> None:
    """Wait until no message came for still_s (the worker has caught up)."""
    end = time.monotonic() + deadline_s
    last, since = watch.seen, time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.2)
        if watch.seen != last:
            last, since = watch.seen, time.monotonic()
        elif time.monotonic() - since >= still_s:
            return


def latency(rates: list[float], seconds: float) -> dict[str, Any]:
    """{"producer_max": ev/s, "rates": [(rate, achieved, alerts, p50, p99, bare p50,
    bare p99)]} for one worker."""
    warm = 400
    total = warm + sum(int(r * seconds) for r in rates)
    feed = Spliced.of(floor_events(total, tables=60, seed=4, inject=0.1))
    top = producer_max(Spliced(feed.cuts), min(total, 100_000))
    print(f"  the bench's producer alone, unpaced: {top:,.0f} events/s", flush=True)
    run = "bl" + uuid.uuid4().hex[:8]
    prefix = f"{run}-"
    ensure_topics(KAFKA, 4, prefix)
    procs = [Worker(run)]  # with its ClickHouse sink, as deployed
    alerts, bare = Watch(prefix + "alerts", True), Watch(prefix + "table-events", False)
    rows = []
    ctx = mp.get_context("fork")
    try:
        time.sleep(2)  # the watchers subscribe ("latest") before anything is sent
        send_spliced(prefix + "table-events", feed, 0, warm, 200)
        deadline = time.monotonic() + 300
        while alerts.seen == 0 and time.monotonic() < deadline:
            time.sleep(0.2)  # the worker has joined and audits
        quiet(alerts, 3, 60)
        start = warm
        for rate in rates:
            alerts.take()
            bare.take()
            n = int(rate * seconds)
            out = ctx.Queue()
            p = ctx.Process(target=_paced, args=(prefix + "table-events", feed, start, n,
                                                 rate, out))
            p.start()
            sent, dt = out.get()
            p.join()
            quiet(alerts, 3, 120)
            start += n
            a, b = alerts.take(), bare.take()
            rows.append((rate, sent / dt, len(a), pct(a, 50), pct(a, 99), pct(b, 50),
                         pct(b, 99)))
            print(f"  {rate:6,.0f} ev/s (sent {sent / dt:6,.0f}/s): {len(a):5,} alerts   "
                  f"p50 {pct(a, 50):6.0f} ms   p99 {pct(a, 99):6.0f} ms   "
                  f"bare consumer p50 {pct(b, 50):5.0f} ms  p99 {pct(b, 99):5.0f} ms",
                  flush=True)
    finally:
        alerts.close()
        bare.close()
        stop(procs)
        drop_database(run)
    return {"producer_max": top, "rates": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1000,2500,5000",
                    help="events/s, comma-separated (default %(default)s)")
    ap.add_argument("--seconds", type=float, default=20, help="at each rate")
    args = ap.parse_args()
    started = not services_up()
    if started:
        subprocess.run([str(ROOT / "deploy/services.sh"), "start"], check=True)
    try:
        print("alert latency, one worker (device ts -> alert consumed):")
        latency([float(r) for r in args.rates.split(",")], args.seconds)
    finally:
        if started:
            subprocess.run([str(ROOT / "deploy/services.sh"), "stop"], check=True)


if __name__ == "__main__":
    main()
