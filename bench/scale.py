"""Lookups against history (issue 33): the time to replay one round and to investigate
one table's hour, on stores of growing history, on chDB and on a ClickHouse server, in
one run, each size's time against the smallest size's.

A floor is simulated and audited into the store, then stored again as its tables' later
days (`producers/history.py`) until the store holds each size in turn; the same rounds
(of the floor itself) are looked up at every size: `rebuild` (what `pitwatch replay
ROUND` runs) and `build_case` (what `pitwatch investigate --table T --from --to` runs
before it writes the folder). Each figure is the median of --repeat runs.

    .venv/bin/python bench/scale.py [--sizes 250000,1000000,10000000] [--repeat 7]
        [--clickhouse 127.0.0.1:39000] [--cluster HOST:PORT,...] [--data DIR] [--keep]

Then the sink's sustained insert rate (its write path: first copies, then insert) into
chDB, the one server and the cluster (`--cluster`, `--cluster-name`), one after the
other in the same run, each against the first.

Target (issue 33, done when): with 40x the history, a replay and a one-table-hour
investigation take at most 1.3x as long.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pitwatch.address import host_port, host_ports
from pitwatch.audit.run import audit_events
from pitwatch.producers.history import copy_floor, extent
from pitwatch.producers.simulate import simulate_floor
from pitwatch.replay.case import Selection, build_case
from pitwatch.replay.rebuild import rebuild
from pitwatch.store.base import Store

#: Copies stored in one statement: an insert's rows stay a few hundred thousand.
COPIES_A_STATEMENT = 10


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


def once(store: Store, rounds: list[str], hour: Selection) -> tuple[float, float]:
    """One replay of each round (the mean a round) and one investigation of the hour."""
    t0 = time.perf_counter()
    for r in rounds:
        rebuild(store, r)
    t1 = time.perf_counter()
    build_case(store, hour, "bench", 0, 500)
    return (t1 - t0) / len(rounds), time.perf_counter() - t1


def active_parts(store: Store) -> int:
    return int(store.query("SELECT count() AS n FROM system.parts WHERE active AND "
                           "database = currentDatabase()")[0]["n"])


def compact(store: Store, run: Callable[[str], Any]) -> tuple[int, int]:
    """Merge each partition of each table to one part, as a store in its steady state
    holds its past months; the measured rounds lie in the oldest month. Without this
    a big build's lookups read its merge backlog (hundreds of fresh parts), not its
    history. `run`: a statement without the store's time-out (a month of 100M events
    merges for minutes). Returns the active parts before and after."""
    before = active_parts(store)
    for row in store.query(
            "SELECT table, partition, count() AS n FROM system.parts WHERE active AND "
            "database = currentDatabase() GROUP BY table, partition HAVING n > 1"):
        name = str(row["table"]).replace("`", "")
        run(f"OPTIMIZE TABLE `{name}` PARTITION {row['partition']} FINAL")
    return before, active_parts(store)


def open_side(backend: str, where: str) -> tuple[Store, Callable[[str], Any]]:
    """The store, and how to run a long statement on it."""
    if backend == "chDB":
        from pitwatch.store.embedded import EmbeddedStore

        embedded = EmbeddedStore(where)
        return embedded, embedded.query
    from clickhouse_driver import Client

    from pitwatch.store.server import ServerStore

    address, _, db = where.rpartition(":")
    host, port = host_port(address)
    long = Client(host=host, port=port, database=db, send_receive_timeout=4 * 3600)
    return ServerStore(host, port, db), long.execute


def side(conn: Connection, backend: str, where: str, size: int, tables: int,
         rounds: int, keep: bool) -> None:
    """A worker holding one store of `size` events: builds it (or, with `keep`, takes
    the one an earlier run kept), then measures on demand."""
    store, run_long = open_side(backend, where)
    db = where.rpartition(":")[2]
    if backend != "chDB" and not keep:
        store._admin.execute(f"DROP DATABASE IF EXISTS {db}")  # type: ignore[attr-defined]
    store.setup()
    t0 = time.perf_counter()
    if not int(store.query("SELECT count() AS n FROM events")[0]["n"]):
        audit_events(simulate_floor(tables, rounds, 33, 0.05)[0], store=store)
        getattr(store, "sync", lambda: None)()
        floor = int(store.query("SELECT count() AS n FROM events")[0]["n"])
        at, copies, want = extent(store), 0, max(0, size // floor - 1)
        while copies < want:
            last = min(want, copies + COPIES_A_STATEMENT)
            copy_floor(store, copies + 1, last, at=at)
            copies = last
    parts = compact(store, run_long)
    held = int(store.query("SELECT count() AS n FROM events")[0]["n"])
    picked = targets(store)
    once(store, *picked)  # warm: the first read of a part loads its index
    conn.send((held, time.perf_counter() - t0, len(picked[1].round_ids(store)), parts))
    while conn.recv() == "measure":
        conn.send(once(store, *picked))
    if backend != "chDB" and not keep:
        store._admin.execute(f"DROP DATABASE IF EXISTS {db}")  # type: ignore[attr-defined]
    store.close()


def run(backend: str, wheres: list[str], sizes: list[int], tables: int, rounds: int,
        repeat: int, keep: bool = False) -> None:
    """Build a store of each size (one after the other), then measure them in turns,
    `repeat` rounds, each round every size once (the order turning): on a shared host
    that drifts, a round's sizes meet the same host. Ratios: each round's own against
    its smallest size, the median of the rounds."""
    ctx = mp.get_context("spawn")
    sides = []
    for size, where in zip(sizes, wheres, strict=True):
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=side, args=(theirs, backend, where, size, tables, rounds,
                                                      keep))
        proc.start()
        held, built, n, (before, after) = mine.recv()
        print(f"{backend}: {held:>12,} events built and merged in {built:6.1f} s "
              f"(the hour: {n} rounds; active parts {before:,} -> {after:,})", flush=True)
        sides.append((held, mine, proc))
    times: list[list[tuple[float, float]]] = [[] for _ in sides]
    for k in range(repeat):
        order = list(range(len(sides)))
        order = order[k % len(order):] + order[:k % len(order)]
        for i in order:
            sides[i][1].send("measure")
            times[i].append(sides[i][1].recv())
    for _, conn, proc in sides:
        conn.send("stop")
        proc.join()
    print(f"\n{backend}: the median of {repeat} rounds; ratios against {sides[0][0]:,} "
          "events, each round's own")
    print(f"  {'events':>12}  {'history':>8}  {'replay ms':>9}  {'ratio':>6}  "
          f"{'investigate ms':>14}  {'ratio':>6}")
    for (held, _, _), ts in zip(sides, times, strict=True):
        rep = statistics.median(t[0] for t in ts)
        inv = statistics.median(t[1] for t in ts)
        r_rep = statistics.median(t[0] / b[0] for t, b in zip(ts, times[0], strict=True))
        r_inv = statistics.median(t[1] / b[1] for t, b in zip(ts, times[0], strict=True))
        print(f"  {held:>12,}  {held / sides[0][0]:>7.1f}x  {rep * 1000:>9.1f}  "
              f"{r_rep:>5.2f}x  {inv * 1000:>14.1f}  {r_inv:>5.2f}x", flush=True)


#: Events a batch of the sink (processors/settings.py: `sink_batch_rows`).
SINK_BATCH = 5000


def insert_side(conn: Connection, backend: str, where: str, cluster: str, n: int) -> None:
    """A worker measuring the sink's write path into one store: each batch of `n`
    events sorted against what the store holds (`first_copies`, the first copy wins)
    and inserted (`insert_distributed_sync` on a cluster: an insert returns once every
    shard holds its rows), positions from the record clocks; sends (events, seconds)."""
    from pitwatch.store.columns import event_row
    from pitwatch.store.first_copy import first_copies
    from pitwatch.store.order import Positions

    drop = ""
    if backend == "chDB":
        store = open_side(backend, where)
    else:
        from dataclasses import replace

        from pitwatch.connect import CLICKHOUSE_PORT, ClickHouseAuth
        from pitwatch.store.server import ServerStore

        address, _, db = where.rpartition(":")
        (host, port), *alt = host_ports(address, CLICKHOUSE_PORT)
        server = ServerStore(host, port, db, auth=replace(ClickHouseAuth.from_env(),
                                                          cluster=cluster), alt_hosts=alt)
        drop = f"DROP DATABASE IF EXISTS {db}" + (f" ON CLUSTER {cluster}" if cluster else "")
        server._admin.execute(drop)
        store = server
    store.setup()
    tables = max(1, n // 20_000)
    events = simulate_floor(tables, max(1, n // (tables * 45)), 34, 0.0)[0][:n]
    positions = Positions(store)
    t0 = time.perf_counter()
    for i in range(0, len(events), SINK_BATCH):
        batch = [(ev, event_row(ev, positions.of(ev))) for ev in events[i:i + SINK_BATCH]]
        store.insert("events", first_copies(store, batch).new)
    conn.send((len(events), time.perf_counter() - t0))
    if drop:
        server._admin.execute(drop)
    store.close()


def insert_rates(targets: list[tuple[str, str, str]], n: int) -> None:
    """The sink's sustained insert rate into each target (name, where, cluster), one
    after the other in this run, each against the first."""
    ctx = mp.get_context("spawn")
    rates: list[tuple[str, int, float]] = []
    for name, where, cluster in targets:
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=insert_side, args=(theirs, name, where, cluster, n))
        proc.start()
        got, secs = mine.recv()
        proc.join()
        rates.append((name, got, got / secs))
    print(f"\nthe sink's write path (first copies, then insert; batches of {SINK_BATCH:,} "
          "events): sustained insert rate")
    for name, got, rate in rates:
        print(f"  {name:<28} {got:>10,} events  {rate:>10,.0f} events/s  "
              f"{rate / rates[0][2]:>5.2f}x", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="250000,1000000,10000000")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--tables", type=int, default=12)
    p.add_argument("--rounds", type=int, default=45)
    p.add_argument("--clickhouse", metavar="HOST:PORT",
                   help="also a ClickHouse server (a database a size, dropped after)")
    p.add_argument("--cluster", metavar="HOST:PORT[,HOST:PORT...]",
                   help="a ClickHouse cluster (e.g. deploy/cluster.sh's): the sink's insert "
                   "rate into it, against --clickhouse's one server, in the same run")
    p.add_argument("--cluster-name", default="pitwatch", metavar="NAME",
                   help="its remote_servers cluster (default %(default)s)")
    p.add_argument("--insert-events", type=int, default=200_000, metavar="N",
                   help="events the insert rate is measured with (0: not measured)")
    p.add_argument("--no-chdb", action="store_true")
    p.add_argument("--keep", action="store_true",
                   help="keep the server's databases after the run, and measure the ones "
                   "an earlier run kept rather than build them again")
    p.add_argument("--data", type=Path, help="where chDB's stores go (default a temp dir)")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if not args.no_chdb:
        where = Path(tempfile.mkdtemp(prefix="pitwatch-scale-", dir=args.data))
        try:
            run("chDB", [str(where / f"s{i}") for i in range(len(sizes))], sizes,
                args.tables, args.rounds, args.repeat)
        finally:
            shutil.rmtree(where, ignore_errors=True)
    if args.clickhouse:
        run("ClickHouse server", [f"{args.clickhouse}:pitwatch_scale_{i}"
                                  for i in range(len(sizes))],
            sizes, args.tables, args.rounds, args.repeat, args.keep)
    if args.insert_events:
        targets: list[tuple[str, str, str]] = []
        if not args.no_chdb:
            targets.append(("chDB", tempfile.mkdtemp(prefix="pitwatch-insert-",
                                                     dir=args.data), ""))
        if args.clickhouse:
            targets.append(("one ClickHouse server", f"{args.clickhouse}:pitwatch_insert",
                            ""))
        if args.cluster:
            targets.append((f"cluster {args.cluster_name}", f"{args.cluster}:pitwatch_insert",
                            args.cluster_name))
        try:
            insert_rates(targets, args.insert_events)
        finally:
            if not args.no_chdb:
                shutil.rmtree(targets[0][1], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
