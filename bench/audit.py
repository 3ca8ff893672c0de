"""The embedded audit on one core: a 1,000,000-event Avro file audited (decode, record
checks, rule packs), without a store (`pitwatch audit --no-store`) and into chDB (the
default `pitwatch audit`), against a bare fastavro decode of the same file, all read from
disk and each the best of the same number of runs, in the same run. Memory: peak RSS of
each, in a fresh process, on a quarter of the input and on all of it, to show it stays
flat as the input grows.

    .venv/bin/python bench/audit.py [--events 1000000] [--repeat 2] [--no-store]

Targets (issue 3): >= 100,000 events/s, and at most 4x the bare decode time.
"""

from __future__ import annotations

import argparse
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
    """A bare fastavro read of the file from disk, as the audit reads it."""
    t = time.perf_counter()
    with open(path, "rb") as f:
        n = sum(1 for _ in fastavro.reader(f))
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


_RSS = {
    "bare": "import fastavro; n = sum(1 for _ in fastavro.reader(open(sys.argv[1], 'rb')))",
    "audit": "from pitwatch.audit.run import audit_paths; "
             "audit_paths([sys.argv[1]], keep_violations=False)",
    "store": "import tempfile; from pathlib import Path; "
             "from pitwatch.audit.run import audit_paths; "
             "from pitwatch.store.embedded import EmbeddedStore; "
             "d = tempfile.mkdtemp(); s = EmbeddedStore(Path(d)); s.setup(); "
             "audit_paths([sys.argv[1]], store=s, keep_violations=False); s.close()",
}


def peak_rss_mb(path: Path, what: str) -> float:
    """Peak RSS of a fresh process that runs `what` (bare, audit or store) on `path`."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over an exec from the (large) parent
    code = f"import sys; {_RSS[what]}; " \
           "print([ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0])"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2, help="runs per side; the best counts")
    ap.add_argument("--no-store", action="store_true", help="leave the chDB audit out")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args()
    path = floor_file(args.events)
    quarter = floor_file(args.events // 4)
    k = args.repeat
    n, t_bare = min((bare_decode(path) for _ in range(k)), key=lambda r: r[1])
    n_a, t_audit, precision, recall = min((audit(path, None) for _ in range(k)),
                                          key=lambda r: r[1])
    print(f"audit bench: {path.name} ({path.stat().st_size / 1e6:.0f} MB, {n:,} events, "
          f"one core, best of {k} each)")
    print(f"  bare fastavro read (baseline)     {n / t_bare:12,.0f} events/s   {t_bare:6.2f} s")
    print(f"  pitwatch audit --no-store         {n_a / t_audit:12,.0f} events/s   "
          f"{t_audit:6.2f} s   {t_audit / t_bare:.2f}x the read")
    figures = {"events": n, "bare_eps": n / t_bare, "audit_eps": n_a / t_audit,
               "ratio": t_audit / t_bare, "precision": precision, "recall": recall}
    sides = ["bare", "audit"]
    if not args.no_store:
        import tempfile

        def stored() -> tuple[int, float, float, float]:
            with tempfile.TemporaryDirectory() as d:
                return audit(path, Path(d))

        n_s, t_store, _, _ = min((stored() for _ in range(k)), key=lambda r: r[1])
        print(f"  pitwatch audit (into chDB)        {n_s / t_store:12,.0f} events/s   "
              f"{t_store:6.2f} s   {t_store / t_bare:.2f}x the read, "
              f"{t_store / t_audit:.2f}x --no-store")
        figures.update(audit_store_eps=n_s / t_store, store_ratio=t_store / t_audit)
        sides.append("store")
    print(f"  against the injected truth: precision {precision:.3f}, recall {recall:.3f}")
    for side in sides:
        small, big = peak_rss_mb(quarter, side), peak_rss_mb(path, side)
        print(f"  peak RSS {side:6} {small:6.0f} MB on a quarter of the events, {big:6.0f} MB "
              f"on all ({big / small:.2f}x for 4x the input)")
        figures.update({f"rss_{side}_quarter_mb": small, f"rss_{side}_mb": big})
    print("  targets (issue 9): --no-store <= 1.8x the read; into chDB <= 1.3x --no-store, "
          "peak RSS <= 2x --no-store's")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
