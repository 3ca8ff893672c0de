"""`pitwatch protect`: the game-protection observations of event files."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import orjson

from ..audit.run import audit_events
from ..events.files import Rejected, expand, read_files
from ..events.order import in_record_order
from ..store.process import StoreProcess
from ..terminal import printable
from .observation import CATALOGUE, Observation
from .rounds import FloorReader
from .run import observe
from .stored import store_observations


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

examples:
  pitwatch protect floor/
  pitwatch protect floor/ --format jsonl > observations.jsonl
  pitwatch protect floor/ --data pitwatch-data     # also into the store's observations
"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="+", metavar="PATH",
                       help="event files or directories of them")
        p.add_argument("--format", choices=("table", "jsonl"), default="table",
                       help="a summary and a table (default), or one JSON object a line")
        p.add_argument("--limit", type=int, default=50,
                       help="observations shown in table format (0 = all; default 50)")
        p.add_argument("--data", metavar="DIR",
                       help="also write the observations to the store at DIR (its "
                            "observations table, one row per observation id: the same "
                            "record again changes nothing)")

    def run(self, args: argparse.Namespace) -> int:
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
        found = observe(floor.tables, rep.violations, floor.seatings)
        out = sys.stdout
        if args.data:
            store = StoreProcess(Path(args.data))
            try:
                store.setup()
                n = store_observations(store, found)
            finally:
                store.close()
            print(f"stored {n} observations in {args.data} (pitwatch query --data "
                  f"{args.data} \"SELECT ... FROM observations FINAL\")",
                  file=sys.stderr if args.format == "jsonl" else out)
        if args.format == "jsonl":
            for o in found:
                out.buffer.write(orjson.dumps(o.to_json()) + b"\n")
            return 0
        rounds = sum(len(v) for v in floor.tables.values())
        by_code = Counter(o.code for o in found)
        print(f"{rep.events:,} events, {rounds:,} rounds at {len(floor.tables)} tables, "
              f"{len(rep.violations):,} violations; {len(found)} observations"
              + (f" ({rejected[0]} malformed records skipped)" if rejected[0] else ""),
              file=out)
        for code in CATALOGUE:
            if by_code[code]:
                print(f"  {code:<32} {by_code[code]:>5}  {CATALOGUE[code]}", file=out)
        table(found, out, None if args.limit == 0 else args.limit)
        return 0


PROTECT = _Protect()
