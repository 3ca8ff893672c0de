"""Lookups against history (issue 33): the time to replay one round and to investigate
one table's hour, on stores of growing history, on chDB and on a ClickHouse server, in
one run, each size's time against the smallest size's.

A floor is simulated and audited into the store, then stored again as its tables' later
days (`producers/history.py`) until the store holds each size in turn; the same rounds
(of the floor itself) are looked up at every size: `rebuild` (what `pitwatch replay
ROUND` runs) and `build_case` (what `pitwatch investigate --table T --from --to` runs
before it writes the folder). Each figure is the median of --repeat runs.

    .venv/bin/python bench/scale.py [--sizes 250000,1000000,10000000] [--repeat 5]
        [--clickhouse 127.0.0.1:39000] [--data DIR]

Target (issue 33, done when): with 40x the history, a replay and a one-table-hour
investigation take at most 1.3x as long.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pitwatch.audit.run import audit_events
from pitwatch.store.base import Store
from producers.history import copy_floor, extent
from producers.simulate import simulate_floor
from replay.case import Selection, build_case
from replay.rebuild import rebuild

#: Copies stored in one statement: an insert's rows stay a few hundred thousand.
COPIES_A_STATEMENT = 10


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm: the first read of a part loads its index
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def targets(store: Store) -> tuple[list[str], Selection]:
    """Three rounds of the floor's middle, and an hour of the first one's table."""
    rows = store.query("SELECT round_id, table_id, toUInt64(started) * 1000 AS s FROM "
                       "rounds FINAL WHERE position(round_id, '~') = 0 ORDER BY table_id, "
                       "started, round_id")
    first = rows[len(rows) // 2]
    tid = first["table_id"]
    mine = [r["round_id"] for r in rows if r["table_id"] == tid]
    at = mine.index(first["round_id"])
    rounds = mine[at:at + 3]
    start = int(first["s"])
    return rounds, Selection(table=tid, start_ms=start, end_ms=start + 3_600_000)


def measure(store: Store, rounds: list[str], hour: Selection, repeat: int
            ) -> tuple[float, float, int]:
    replay = median_time(lambda: [rebuild(store, r) for r in rounds], repeat) / len(rounds)
    n = len(hour.round_ids(store))
    investigate = median_time(lambda: build_case(store, hour, "bench", 0, 500), repeat)
    return replay, investigate, n


def run(name: str, store: Store, sizes: list[int], tables: int, rounds: int,
        repeat: int) -> list[tuple[int, float, float, int]]:
    store.setup()
    t0 = time.perf_counter()
    audit_events(simulate_floor(tables, rounds, 33, 0.05)[0], store=store)
    sync = getattr(store, "sync", None)
    if sync is not None:
        sync()
    floor = int(store.query("SELECT count() AS n FROM events")[0]["n"])
    print(f"{name}: floor of {floor:,} events simulated and audited in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    at = extent(store)
    copies = 0
    picked = targets(store)
    out = []
    for size in sizes:
        want = max(0, size // floor - 1)
        t0 = time.perf_counter()
        while copies < want:
            last = min(want, copies + COPIES_A_STATEMENT)
            copy_floor(store, copies + 1, last, at=at)
            copies = last
        held = int(store.query("SELECT count() AS n FROM events")[0]["n"])
        built = time.perf_counter() - t0
        replay, investigate, n = measure(store, *picked, repeat)
        out.append((held, replay, investigate, n))
        print(f"{name}: {held:>12,} events (built in {built:6.1f} s)  replay one round "
              f"{replay * 1000:8.1f} ms  investigate one table's hour ({n} rounds) "
              f"{investigate * 1000:8.1f} ms", flush=True)
    return out


def report(name: str, rows: list[tuple[int, float, float, int]]) -> None:
    base = rows[0]
    print(f"\n{name}: against {base[0]:,} events")
    print(f"  {'events':>12}  {'history':>8}  {'replay':>7}  {'investigate':>11}")
    for held, replay, investigate, _ in rows:
        print(f"  {held:>12,}  {held / base[0]:>7.1f}x  {replay / base[1]:>6.2f}x  "
              f"{investigate / base[2]:>10.2f}x")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="250000,1000000,10000000")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--tables", type=int, default=12)
    p.add_argument("--rounds", type=int, default=45)
    p.add_argument("--clickhouse", metavar="HOST:PORT",
                   help="also a ClickHouse server (a database of its own, dropped after)")
    p.add_argument("--no-chdb", action="store_true")
    p.add_argument("--data", type=Path, help="where chDB's store goes (default a temp dir)")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    if not args.no_chdb:
        from pitwatch.store.embedded import EmbeddedStore

        where = Path(tempfile.mkdtemp(prefix="pitwatch-scale-", dir=args.data))
        try:
            store = EmbeddedStore(where)
            results["chDB"] = run("chDB", store, sizes, args.tables, args.rounds, args.repeat)
            store.close()
        finally:
            shutil.rmtree(where, ignore_errors=True)
    if args.clickhouse:
        from pitwatch.store.server import ServerStore

        host, _, port = args.clickhouse.rpartition(":")
        db = "pitwatch_scale"
        server = ServerStore(host, int(port), db)
        server._admin.execute(f"DROP DATABASE IF EXISTS {db}")
        try:
            results["server"] = run("ClickHouse server", server, sizes, args.tables,
                                    args.rounds, args.repeat)
        finally:
            server._admin.execute(f"DROP DATABASE IF EXISTS {db}")
            server.close()
    for name, rows in results.items():
        report(name, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
