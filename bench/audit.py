"""The embedded audit on one core: a 1,000,000-event Avro file audited (decode, record
checks, rule packs), against a bare fastavro decode of the same file in the same run.
Memory: peak RSS of the audit on a quarter of the input and on all of it, each in a
fresh process, to show it stays flat as the input grows.

    .venv/bin/python bench/audit.py [--events 1000000] [--store]

Targets (issue 3): >= 100,000 events/s, and at most 4x the bare decode time.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import fastavro

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "bench"
TABLES = 40


def floor_file(events: int) -> Path:
    """A simulated floor of about `events` events, with 2% of rounds faulty (cached)."""
    from pitwatch.events.avro import write_container
    from pitwatch.events.model import Event
    from producers.simulate import Floor

    path = CACHE / f"floor-{events}.avro"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    rounds = max(1, events // (TABLES * 40))

    def take() -> Iterator[Event]:
        for n, ev in enumerate(Floor(TABLES, rounds * 2, seed=1, inject=0.02).events(), 1):
            yield ev
            if n == events:
                return

    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        write_container(f, take(), sync_marker=b"pitwatch-bench-1")
    tmp.rename(path)
    return path


def bare_decode(path: Path) -> tuple[int, float]:
    data = path.read_bytes()
    t = time.perf_counter()
    n = sum(1 for _ in fastavro.reader(io.BytesIO(data)))
    return n, time.perf_counter() - t


def audit(path: Path, store: Path | None) -> tuple[int, float, int]:
    from pitwatch.audit.run import audit_paths
    from pitwatch.store.embedded import EmbeddedStore

    s = None
    if store is not None:
        s = EmbeddedStore(store)
        s.setup()
    t = time.perf_counter()
    rep = audit_paths([path], store=s, keep_violations=False)
    dt = time.perf_counter() - t
    if s is not None:
        s.close()
    return rep.events, dt, sum(rep.by_code.values())


def peak_rss_mb(path: Path) -> float:
    """Peak RSS of a fresh process that audits `path` (no store)."""
    code = ("import resource, sys; from pitwatch.audit.run import audit_paths; "
            "audit_paths([sys.argv[1]], keep_violations=False); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return int(out.stdout.strip()) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--store", action="store_true", help="also time the audit into chDB")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args()
    path = floor_file(args.events)
    quarter = floor_file(args.events // 4)
    n, t_bare = min((bare_decode(path) for _ in range(2)), key=lambda r: r[1])
    n_a, t_audit, found = min((audit(path, None) for _ in range(2)), key=lambda r: r[1])
    print(f"audit bench: {path.name} ({path.stat().st_size / 1e6:.0f} MB, {n:,} events, "
          f"one core)")
    print(f"  bare fastavro decode (baseline)   {n / t_bare:12,.0f} events/s   {t_bare:6.2f} s")
    print(f"  pitwatch audit                    {n_a / t_audit:12,.0f} events/s   "
          f"{t_audit:6.2f} s   {t_audit / t_bare:.2f}x the decode ({found:,} violations)")
    figures = {"events": n, "bare_eps": n / t_bare, "audit_eps": n_a / t_audit,
               "ratio": t_audit / t_bare}
    if args.store:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            n_s, t_store, _ = audit(path, Path(d))
        print(f"  pitwatch audit into chDB          {n_s / t_store:12,.0f} events/s   "
              f"{t_store:6.2f} s   {t_store / t_bare:.2f}x the decode")
        figures["audit_store_eps"] = n_s / t_store
    small, big = peak_rss_mb(quarter), peak_rss_mb(path)
    print(f"  peak RSS: {small:.0f} MB for {args.events // 4:,} events, {big:.0f} MB for "
          f"{args.events:,} ({big / small:.2f}x for 4x the input)")
    figures.update(rss_quarter_mb=small, rss_full_mb=big)
    print("  targets: >= 100,000 events/s; <= 4x the bare decode")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
