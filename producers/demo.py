"""`pitwatch demo`: a shift on a simulated floor, with injected faults, audited
embedded and stored in chDB; then what a surveillance lead wants to see first."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import IO

from pitwatch.audit import report
from pitwatch.audit.run import AuditReport, audit_events
from pitwatch.events.keys import KEYS_FILE, KeyRegistry
from pitwatch.store.embedded import EmbeddedStore

from .simulate import Floor, write_floor


class _Demo:
    name = "demo"
    help = "simulate a shift with faults, audit it embedded, show what matters first"
    description = """\
Deal a shift on a simulated floor (the four games of the regulation files, each table
with its own devices), inject faults into a share of the rounds, audit every event with
the rules engine in process, store events, rounds and violations in the embedded store
(chDB, no server), and print what a surveillance lead wants first: money moved wrongly,
the tables to watch, and how the audit's findings compare with the injected truth.

The floor is dealt as `pitwatch simulate --contract` deals it: a table that peeks at
the hole card, two whose postings a text bars (13:69F-2.25(h), 2.2(a)4), and events a
decoder refuses.

Every device signs its chain (Ed25519 checkpoints) and the audit verifies the
signatures against the floor's key registry, DATA/floor/keys.json.

The floor's files stay in DATA/floor/ (events.jsonl, truth.jsonl, keys.json); the
store answers SQL afterwards with `pitwatch query --data DATA "..."`."""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--tables", type=int, default=12)
        p.add_argument("--rounds", type=int, default=100)
        p.add_argument("--seed", type=int, default=2026)
        p.add_argument("--inject", type=float, default=0.04,
                       help="share of rounds with one fault (default %(default)s)")
        p.add_argument("--data", default="pitwatch-data", metavar="DIR",
                       help="embedded store and floor files (default ./%(default)s)")
        p.add_argument("--serve", action="store_true",
                       help="then open the surveillance console on the shift "
                       "(pitwatch serve --clock store, http://127.0.0.1:8080/)")

    def run(self, args: argparse.Namespace) -> int:
        out = sys.stdout
        data = Path(args.data)
        floor = Floor(args.tables, args.rounds, args.seed, args.inject, contract=True)
        n = write_floor(floor, data / "floor", progress=sys.stderr.isatty())
        print(f"shift simulated: {len(floor.configs)} tables, {floor.rounds_done:,} rounds, "
              f"{n:,} events, {len(floor.truth)} faults injected -> {data / 'floor'}/",
              file=out)
        store = EmbeddedStore(data)
        try:
            store.setup()
            from pitwatch.events.files import read_files

            events = read_files([data / "floor" / "events.jsonl"], lambda r: None)
            keys = KeyRegistry.load(data / "floor" / KEYS_FILE)  # the devices sign
            rep = audit_events(events, store=store, keys=keys)
            rep.files = 1
            print(file=out)
            report.summary(rep, out)
            self._first_look(rep, floor.truth, out)
            top = store.query(
                "SELECT table_id, count() AS violations, "
                "countIf(severity = 'CRITICAL') AS critical FROM violations FINAL "
                "GROUP BY table_id ORDER BY critical DESC, violations DESC LIMIT 5")
        finally:
            store.close()
        print("\ntables to watch (from the store):", file=out)
        for r in top:
            print(f"  {r['table_id']:10} {r['violations']:4} violations, "
                  f"{r['critical']} critical", file=out)
        print(f"\nstore: {data}/  try:\n  pitwatch query --data {data} \"SELECT code, count() "
              "AS n FROM violations FINAL GROUP BY code ORDER BY n DESC\"", file=out)
        if args.serve:  # through the CLI: the console is another stage's command
            from pitwatch.cli import main

            return main(["serve", "--data", str(data), "--clock", "store"])
        return 0

    @staticmethod
    def _first_look(rep: AuditReport, truth: list[dict[str, str]], out: IO[str]) -> None:
        vs = rep.violations
        critical = [v for v in vs if v.severity == "CRITICAL"]
        print(f"\nmoney moved wrongly ({len(critical)}):", file=out)
        report.table(critical, out, limit=10)
        high = [v for v in vs if v.severity == "HIGH"]
        print(f"\nwagers that should not stand ({len(high)}):", file=out)
        report.table(high, out, limit=5)
        found = Counter((v.code, v.round_id) for v in vs)
        injected = Counter((t["code"], t["round_id"]) for t in truth)
        hit = sum((found & injected).values())
        print(f"\nagainst the injected truth: {hit} of {sum(injected.values())} faults found, "
              f"{sum((found - injected).values())} other findings", file=out)


command = _Demo()
