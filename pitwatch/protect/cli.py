"""`pitwatch protect`: the game-protection observations of event files, or of a store's
history."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import orjson

from ..audit.run import audit_events
from ..connect import add_connection_flags
from ..events.files import Rejected, expand, read_files
from ..events.order import in_record_order
from ..sitetime import add_site_flags, site_from_flags
from ..store.base import Store
from ..store.embedded import holds_store
from ..store.process import StoreProcess
from ..terminal import printable
from .observation import CATALOGUE, Observation
from .rounds import FloorReader
from .run import observe
from .stored import LIVE, judge_stored, store_observations, stored_tables, withdraw_others


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def table(observations: Iterable[Observation], out: IO[str], limit: int | None) -> None:
    """The observations as a table, strongest first (the audit's table shape)."""
    obs = sorted(observations, key=lambda o: (-o.strength, o.code, o.subject))
    shown = obs if limit is None else obs[:limit]
    if not shown:
        return
    print(f"\n{'STRENGTH':8}  {'CODE':32}  {'TABLE':12}  {'SUBJECT':28}  {'SEAT':>4}  "
          "MESSAGE", file=out)
    for o in shown:
        seat = "" if o.seat is None else str(o.seat)
        print(printable(f"{o.strength:8.2f}  {o.code:32}  {_clip(o.table_id, 12):12}  "
                        f"{_clip(o.subject, 28):28}  {seat:>4}  {o.message}"), file=out)
    if len(obs) > len(shown):
        print(f"… and {len(obs) - len(shown):,} more (--limit 0 for all, or --format jsonl)",
              file=out)


class _Protect:
    name = "protect"
    help = "game-protection observations (counting, hole-card play, hold, dealer errors)"
    description = """\
Read the event files named (JSON Lines, Avro, or directories of them) in record order,
audit them (the events are not stored), and print the game-protection observations: seat
sessions whose bets follow the Hi-Lo count or whose departures from basic strategy only
the hole card makes right, tables and dealers whose hold is more than 3 standard
deviations from theoretical, dealers whose error rate is above the floor's. Observations
are evidence to weigh, never violations (docs/analytics.md has each method, its
assumptions and its measured error rates).

With no PATH, a store's history is judged instead (--data DIR, the embedded store, or
--clickhouse HOST:PORT, a server the streaming sink fills): every table's events read
back in their order of record, audited again, and the observations written to the same
store's observations table. The streaming worker publishes the seat sessions' and the
tables' observations as they are decided; a dealer's error rate and hold need every
table, so they come from this run over the store (docs/analytics.md, "Streaming").

examples:
  pitwatch protect floor/
  pitwatch protect floor/ --format jsonl > observations.jsonl
  pitwatch protect floor/ --data pitwatch-data     # also into the store's observations
  pitwatch protect --data pitwatch-data            # the stored history, judged again
  pitwatch protect --clickhouse 127.0.0.1:19000    # the streaming store's history
"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="*", metavar="PATH",
                       help="event files or directories of them (none: the store's "
                            "history, with --data or --clickhouse)")
        p.add_argument("--format", choices=("table", "jsonl"), default="table",
                       help="a summary and a table (default), or one JSON object a line")
        p.add_argument("--limit", type=int, default=50,
                       help="observations shown in table format (0 = all; default 50)")
        p.add_argument("--data", metavar="DIR",
                       help="also write the observations to the store at DIR (its "
                            "observations table, one row per observation id: the same "
                            "record again changes nothing); with no PATH, judge its "
                            "history")
        p.add_argument("--clickhouse", metavar="HOST:PORT[,HOST:PORT...]",
                       help="with no PATH: judge a ClickHouse server's stored history and "
                            "write the observations there")
        p.add_argument("--clickhouse-db", default="pitwatch", metavar="DB",
                       help="its database (default %(default)s)")
        add_site_flags(p, "the hold by shift, as `pitwatch serve`")
        p.add_argument("--quiet", action="store_true",
                       help="no progress bar (judging a store: tables done of all)")
        add_connection_flags(p, kafka=False)

    def run(self, args: argparse.Namespace) -> int:
        try:
            args.site = site_from_flags(args)
        except ValueError as e:
            print(printable(f"pitwatch protect: {e}"), file=sys.stderr)
            return 2
        if not args.paths:
            return self._stored(args)
        if args.clickhouse:
            print("pitwatch protect: --clickhouse judges a store's history: name no PATH "
                  "(or use --data DIR to write a file audit's observations)", file=sys.stderr)
            return 2
        floor = FloorReader()  # reads the audit's own fold: what the record accepted
        rejected = [0]

        def on_reject(r: Rejected) -> None:
            rejected[0] += 1
            print(printable(f"pitwatch protect: {r.source}:{r.line}: {r.reason}"),
                  file=sys.stderr)

        files = in_record_order(expand(args.paths))
        rep = audit_events(read_files(files, on_reject), watch=floor.watch)
        if rep.events == 0:
            print("pitwatch protect: nothing read: no events in " + ", ".join(args.paths),
                  file=sys.stderr)
            return 2
        found = observe(floor.tables, rep.violations, floor.seatings, args.site)
        if args.data:
            store = StoreProcess(Path(args.data))
            try:
                store.setup()
                n = store_observations(store, found)
            finally:
                store.close()
            print(f"stored {n} observations in {args.data} (pitwatch query --data "
                  f"{args.data} \"SELECT ... FROM observations FINAL WHERE {LIVE}\")",
                  file=sys.stderr if args.format == "jsonl" else sys.stdout)
        return report(args, found, len(floor.tables),
                      sum(len(v) for v in floor.tables.values()), rep.events,
                      len(rep.violations),
                      f" ({rejected[0]} malformed records skipped)" if rejected[0] else "")

    def _stored(self, args: argparse.Namespace) -> int:
        """The store's history judged again, its observations written back to it."""
        store: Store
        if args.clickhouse:
            from ..store.server import ServerStore

            where = f"--clickhouse {args.clickhouse} --clickhouse-db {args.clickhouse_db}"
            store = ServerStore.at(args.clickhouse, args.clickhouse_db)
        elif args.data:
            if not holds_store(args.data):
                print(printable(f"pitwatch protect: no store at {args.data}: run `pitwatch "
                                "audit` first, or name event files"), file=sys.stderr)
                return 2
            where, store = f"--data {args.data}", StoreProcess(Path(args.data))
        else:
            print("pitwatch protect: name event files, or a store to judge (--data DIR "
                  "or --clickhouse HOST:PORT)", file=sys.stderr)
            return 2
        try:
            store.setup()
            tables = stored_tables(store)
            bar = _bar(len(tables), not args.quiet and sys.stderr.isatty())
            try:
                judged = judge_stored(store, args.site, tables,
                                      None if bar is None else _tick(bar))
            finally:
                if bar is not None:
                    bar.close()
            if judged.events == 0:
                print(printable(f"pitwatch protect: nothing read: the store ({where}) "
                                "holds no events"), file=sys.stderr)
                return 2
            found = judged.observations
            n = store_observations(store, found)
            gone = withdraw_others(store, found)
        finally:
            store.close()
        print(printable(f"stored {n} observations in the store, {gone} no longer given "
                        f"withdrawn (pitwatch query {where} \"SELECT ... FROM observations "
                        f"FINAL WHERE {LIVE}\")"),
              file=sys.stderr if args.format == "jsonl" else sys.stdout)
        return report(args, found, judged.tables, judged.rounds, judged.events,
                      judged.violations, "")


def _bar(tables: int, shown: bool) -> Any:
    """A progress bar on stderr of the tables judged, when `shown` (a terminal)."""
    if not shown:
        return None
    from tqdm import tqdm

    return tqdm(total=tables, unit=" tables", file=sys.stderr, desc="protect",
                mininterval=0.5)


def _tick(bar: Any) -> Callable[[str, int], None]:
    """`judge_stored`'s `on_table`: a table done, its events counted on the bar."""
    events = [0]

    def done(_table: str, read: int) -> None:
        events[0] += read
        bar.set_postfix_str(f"{events[0]:,} events", refresh=False)
        bar.update(1)
    return done


def report(args: argparse.Namespace, found: list[Observation], tables: int, rounds: int,
           events: int, violations: int, note: str) -> int:
    """The observations in the chosen format: one JSON object a line, or a summary and
    a table."""
    out = sys.stdout
    if args.format == "jsonl":
        for o in found:
            out.buffer.write(orjson.dumps(o.to_json()) + b"\n")
        return 0
    by_code = Counter(o.code for o in found)
    print(f"{events:,} events, {rounds:,} rounds at {tables} tables, "
          f"{violations:,} violations; {len(found)} observations{note}", file=out)
    for code in CATALOGUE:
        if by_code[code]:
            print(f"  {code:<32} {by_code[code]:>5}  {CATALOGUE[code]}", file=out)
    table(found, out, None if args.limit == 0 else args.limit)
    return 0


PROTECT = _Protect()
