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
from pathlib import Path

import fastavro

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "bench"
TABLES = 40
EVENTS_PER_ROUND = 40.6  # what the simulator deals on average


def floor_file(events: int) -> Path:
    """A whole simulated floor of about `events` events, 2% of its rounds faulty, and
    beside it the truth of its faults (cached in .cache/bench)."""
    from pitwatch.events.avro import write_container
    from producers.simulate import Floor

    rounds = max(1, round(events / (TABLES * EVENTS_PER_ROUND)))
    path = CACHE / f"floor-{TABLES}x{rounds}.avro"
    if path.exists() and path.with_suffix(".truth.json").exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    floor = Floor(TABLES, rounds, seed=1, inject=0.02)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        write_container(f, floor.events(), sync_marker=b"pitwatch-bench-1")
    path.with_suffix(".truth.json").write_text(json.dumps(floor.truth))
    tmp.rename(path)
    return path


def bare_decode(path: Path) -> tuple[int, float]:
    data = path.read_bytes()
    t = time.perf_counter()
    n = sum(1 for _ in fastavro.reader(io.BytesIO(data)))
    return n, time.perf_counter() - t


def audit(path: Path, store: Path | None) -> tuple[int, float, float, float]:
    """Audit the file; events, seconds, and precision and recall against its truth on
    (code, round)."""
    from collections import Counter

    from pitwatch.audit.run import audit_paths
    from pitwatch.store.embedded import EmbeddedStore

    s = None
    if store is not None:
        s = EmbeddedStore(store)
        s.setup()
    found: Counter[tuple[str, str]] = Counter()
    t = time.perf_counter()
    rep = audit_paths([path], store=s, keep_violations=False,
                      on_violation=lambda v: found.update([(v.code, v.round_id)]))
    dt = time.perf_counter() - t
    if s is not None:
        s.close()
    truth = Counter((t["code"], t["round_id"])
                    for t in json.loads(path.with_suffix(".truth.json").read_text()))
    hit = sum((found & truth).values())
    return rep.events, dt, hit / max(1, sum(found.values())), hit / max(1, sum(truth.values()))


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
    n_a, t_audit, precision, recall = min((audit(path, None) for _ in range(2)),
                                          key=lambda r: r[1])
    print(f"audit bench: {path.name} ({path.stat().st_size / 1e6:.0f} MB, {n:,} events, "
          f"one core)")
    print(f"  bare fastavro decode (baseline)   {n / t_bare:12,.0f} events/s   {t_bare:6.2f} s")
    print(f"  pitwatch audit                    {n_a / t_audit:12,.0f} events/s   "
          f"{t_audit:6.2f} s   {t_audit / t_bare:.2f}x the decode")
    print(f"  against the injected truth: precision {precision:.3f}, recall {recall:.3f}")
    figures = {"events": n, "bare_eps": n / t_bare, "audit_eps": n_a / t_audit,
               "ratio": t_audit / t_bare, "precision": precision, "recall": recall}
    if args.store:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            n_s, t_store, _, _ = audit(path, Path(d))
        print(f"  pitwatch audit into chDB          {n_s / t_store:12,.0f} events/s   "
              f"{t_store:6.2f} s   {t_store / t_bare:.2f}x the decode")
        figures["audit_store_eps"] = n_s / t_store
    small, big = peak_rss_mb(quarter), peak_rss_mb(path)
    print(f"  peak RSS: {small:.0f} MB for a quarter of the events, {big:.0f} MB for all "
          f"({big / small:.2f}x for 4x the input)")
    figures.update(rss_quarter_mb=small, rss_full_mb=big)
    print("  targets: >= 100,000 events/s; <= 4x the bare decode")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
