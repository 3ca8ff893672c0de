"""The streaming pipeline on real Kafka and ClickHouse (started here if not running),
everything on this machine, every figure beside baselines measured in the same run:

1. throughput: N pre-encoded events on the topic; events/s audited and landed in
   ClickHouse (events, and every round closed) by 1 and by 2 workers, beside a bare
   kafka-python consumer and a Faust agent that only counts (bench/faust_bare.py), all
   reading the same topic, each timed from its first event read (the workers': their
   /metrics) so that no group join is in any figure; and CPU microseconds per event
   (worker and sink processes against the bare Faust agent's);
2. alert latency, device ts -> alert consumed, p50/p99 at 1,000, 2,500 and 5,000
   events/s with one worker and its sink (bench/latency.py: pre-encoded events,
   restamped by splicing, the producer's own maximum printed first);
3. the scaling table (printed, Markdown) and docs/scaling-stream.png (matplotlib).

    .venv/bin/python bench/stream.py [--events 100000] [--seconds 20] [--only ...]

Targets (issue 9): one worker >= 10,000 events/s into ClickHouse, or >= 1.3x the bare
Faust agent; p99 <= 250 ms at 2,500 events/s.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
import uuid
from typing import Any

from latency import latency
from stream_feed import (
    CH,
    KAFKA,
    ROOT,
    Worker,
    bench_producer,
    cpu_seconds,
    drop_database,
    floor_events,
    services_up,
    stop,
)

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import encode_single
from pitwatch.store.server import ServerStore
from pitwatch.topics import ensure_topics


def bare_consume(topic: str, n: int) -> float:
    """kafka-python, no decode: events/s from its first message to the n-th."""
    from kafka import KafkaConsumer

    c = KafkaConsumer(topic, bootstrap_servers=KAFKA, auto_offset_reset="earliest",
                      group_id=f"bare-{uuid.uuid4().hex[:6]}", fetch_max_bytes=50 << 20,
                      max_partition_fetch_bytes=8 << 20)
    t, got = 0.0, 0
    while got < n:
        for msgs in c.poll(timeout_ms=500, max_records=10_000).values():
            if not got:
                t = time.perf_counter()
            got += len(msgs)
    dt = time.perf_counter() - t
    c.close()
    return n / dt


def faust_bare(topic: str, n: int) -> tuple[float, float]:
    out = subprocess.run([sys.executable, str(ROOT / "bench/faust_bare.py"), topic, str(n)],
                         capture_output=True, text=True, timeout=1200, cwd=ROOT)
    text = out.stdout + out.stderr
    return (float(re.findall(r"RATE (\d+)", text)[-1]),
            float(re.findall(r"CPU_US ([\d.]+)", text)[-1]))


def workers(topic_run: str, n: int, rounds: int, count: int) -> tuple[float, float]:
    """`count` workers of a new group on the loaded topic: events/s from the first
    event read by any of them (their /metrics: the group join is not timed, as for the
    baselines) to the n-th event in ClickHouse with every round landed, and CPU
    microseconds per event (workers and their sinks) over the same span."""
    run = f"{topic_run}w{count}{uuid.uuid4().hex[:4]}"
    store = ServerStore(*CH, database=run)
    store.setup()
    # the workers read the loaded topics: same prefix, a group and database of their own
    procs = [Worker(run, "--topic-prefix", f"{topic_run}-", "--app-id", run)
             for _ in range(count)]

    def landed(table: str = "events") -> int:
        for p in procs:
            if p.poll() is not None:
                raise SystemExit(f"a worker stopped (log in {p.log})")
        return int(store.query(f"SELECT count() AS n FROM {table}")[0]["n"])

    try:
        deadline = time.monotonic() + 1200
        while (first := sum(p.events_read() for p in procs)) == 0 \
                and time.monotonic() < deadline:
            landed()
            time.sleep(0.05)
        t, cpu = time.perf_counter(), sum(cpu_seconds(p.pid) for p in procs)
        while (landed() < n or landed("rounds") < rounds) and time.monotonic() < deadline:
            time.sleep(0.1)
        dt = time.perf_counter() - t
        cpu = sum(cpu_seconds(p.pid) for p in procs) - cpu
        if time.monotonic() >= deadline:
            raise SystemExit(f"{count} worker(s) did not land {n:,} events and "
                             f"{rounds:,} rounds in time")
    finally:
        stop(procs)
        store.close()
        drop_database(run)
    return (n - first) / dt, cpu / (n - first) * 1e6


def throughput(n: int) -> dict[str, Any]:
    run = "bt" + uuid.uuid4().hex[:8]
    topic = f"{run}-table-events"
    ensure_topics(KAFKA, 4, f"{run}-")
    events = floor_events(n)
    rounds = audit_events(events, finish=False).rounds
    producer = bench_producer()
    for ev in events:  # as simulated: their own ts and chains (nothing timed here)
        producer.send(topic, key=ev.table_id.encode(), value=encode_single(ev))
    producer.flush()
    producer.close()
    res: dict[str, Any] = {"events": n}
    res["bare"] = bare_consume(topic, n)
    print(f"  kafka-python bare consume (baseline)       {res['bare']:9,.0f} events/s",
          flush=True)
    res["faust"], res["faust_cpu"] = faust_bare(topic, n)
    print(f"  a Faust agent that only counts (baseline)  {res['faust']:9,.0f} events/s   "
          f"{res['faust_cpu']:6.0f} us CPU/event", flush=True)
    for count in (1, 2):
        rate, cpu = workers(run, n, rounds, count)
        res[f"w{count}"], res[f"w{count}_cpu"] = rate, cpu
        print(f"  {count} worker(s), into ClickHouse              {rate:9,.0f} events/s   "
              f"{cpu:6.0f} us CPU/event (audit + sink)   {rate / res['faust']:.2f}x the "
              f"bare Faust agent", flush=True)
    return res


def table(tp: dict[str, Any] | None, lat: dict[str, Any] | None) -> str:
    lines = []
    if tp:
        f = tp["faust"]
        lines += ["| reader | events/s | × bare Faust | CPU µs/event |", "|---|---:|---:|---:|",
                  f"| kafka-python, bare | {tp['bare']:,.0f} | {tp['bare'] / f:.2f} | |",
                  f"| Faust agent that only counts | {f:,.0f} | 1.00 | {tp['faust_cpu']:.0f} |",
                  f"| 1 worker → ClickHouse | {tp['w1']:,.0f} | {tp['w1'] / f:.2f} | "
                  f"{tp['w1_cpu']:.0f} |",
                  f"| 2 workers → ClickHouse | {tp['w2']:,.0f} | {tp['w2'] / f:.2f} | "
                  f"{tp['w2_cpu']:.0f} |", ""]
    if lat:
        lines += [f"producer alone: {lat['producer_max']:,.0f} events/s", "",
                  "| rate (events/s) | sent/s | alerts | p50 ms | p99 ms | bare p50 | bare p99 |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r:,.0f} | {s:,.0f} | {a:,} | {p50:.0f} | {p99:.0f} | {b50:.0f} | "
                  f"{b99:.0f} |" for r, s, a, p50, p99, b50, b99 in lat["rates"]]
    return "\n".join(lines)


def plot(tp: dict[str, Any] | None, lat: dict[str, Any] | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    if tp:
        names = ["kafka-python\nbare", "Faust agent\ncounting", "1 worker\n→ ClickHouse",
                 "2 workers\n→ ClickHouse"]
        vals = [tp["bare"], tp["faust"], tp["w1"], tp["w2"]]
        bars = left.bar(names, vals, color=["#999", "#bbb", "#3a7", "#2a5"])
        for b, v in zip(bars, vals, strict=True):
            left.annotate(f"{v:,.0f}", (b.get_x() + b.get_width() / 2, v), ha="center",
                          va="bottom", fontsize=8)
        left.set_ylabel("events/s (from the first event read)")
        left.set_title(f"Throughput, {tp['events']:,} events on the topic")
    if lat:
        rates = [r[0] for r in lat["rates"]]
        for i, label, style in ((3, "alert p50", "o-"), (4, "alert p99", "s-"),
                                (5, "bare consumer p50", "k:"), (6, "bare consumer p99", "k--")):
            right.plot(rates, [r[i] for r in lat["rates"]], style, label=label)
        right.axhline(250, color="r", lw=0.8, label="target p99 at 2,500/s")
        right.set_yscale("log")
        right.set_xlabel("events/s (paced; producer alone: "
                         f"{lat['producer_max']:,.0f}/s)")
        right.set_ylabel("device ts → consumed, ms")
        right.set_title("Alert latency, one worker and its sink")
        right.grid(True, which="both", alpha=0.3)
        right.legend(fontsize=8)
    fig.suptitle("pitwatch streaming on one shared 2-core machine (Kafka, ClickHouse, "
                 "producer and workers on it)", fontsize=9)
    fig.tight_layout()
    out = ROOT / "docs" / "scaling-stream.png"
    fig.savefig(out)
    print(f"  plot: {out.relative_to(ROOT)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=100_000, help="throughput load")
    ap.add_argument("--rates", default="1000,2500,5000", help="latency rates, events/s")
    ap.add_argument("--seconds", type=float, default=20, help="latency: seconds a rate")
    ap.add_argument("--only", choices=("throughput", "latency"), help="run one part")
    ap.add_argument("--no-plot", action="store_true", help="leave docs/ as it is")
    args = ap.parse_args()
    started = not services_up()
    if started:
        subprocess.run([str(ROOT / "deploy/services.sh"), "start"], check=True)
    tp = lat = None
    try:
        if args.only != "latency":
            print(f"throughput, {args.events:,} events on the topic:", flush=True)
            tp = throughput(args.events)
        if args.only != "throughput":
            print("alert latency, one worker and its sink (device ts -> alert consumed):",
                  flush=True)
            lat = latency([float(r) for r in args.rates.split(",")], args.seconds)
    finally:
        if started:
            subprocess.run([str(ROOT / "deploy/services.sh"), "stop"], check=True)
    print(table(tp, lat))
    if not args.no_plot:
        plot(tp, lat)


if __name__ == "__main__":
    main()
