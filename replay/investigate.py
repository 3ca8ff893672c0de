"""`pitwatch investigate`: a case folder a regulator can file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pitwatch import site_key
from pitwatch.engine.violation import Severity
from pitwatch.events.keys import KeyRegistryError
from pitwatch.terminal import printable

from .case import Provenance, Selection, build_case, parse_time, sha256
from .keys import add_keys_option, load_keys
from .stores import add_store_options, open_store, store_identity

MAX_ROUNDS = 500


def add_selection_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("selection (any together; at least one)")
    g.add_argument("round_id", nargs="?", metavar="ROUND_ID", help="one round")
    g.add_argument("--table", metavar="T", help="rounds of this table")
    g.add_argument("--from", dest="start", metavar="TIME",
                   help="rounds started at or after TIME (UTC, e.g. 2026-11-30T18:00)")
    g.add_argument("--to", dest="end", metavar="TIME", help="rounds started before TIME (UTC)")
    g.add_argument("--dealer", metavar="D", help="rounds this dealer dealt")
    g.add_argument("--code", metavar="C", help="rounds with a violation of this code")
    g.add_argument("--severity", choices=[s.value for s in Severity], metavar="S",
                   help="rounds with a violation of this severity or worse "
                   "(CRITICAL, HIGH, MEDIUM, LOW)")


def selection(args: argparse.Namespace) -> Selection:
    sel = Selection(args.round_id, args.table,
                    None if args.start is None else parse_time(args.start),
                    None if args.end is None else parse_time(args.end),
                    args.dealer, args.code, args.severity)
    if sel.empty():
        raise ValueError("select something: a ROUND_ID, or --table, --from/--to, --dealer, "
                         "--code or --severity")
    return sel


class _Investigate:
    name = "investigate"
    help = "write a case folder (HTML, PDF, evidence, violations, manifest) for a selection"
    description = f"""\
Select rounds from the store (embedded chDB by default, or a ClickHouse server), rebuild
each from its events with the table context it had, and write a case folder:

  report.html     self-contained: per round the timeline with device time (UTC, to the
                  ms) and event ids, the cards as cards, money in dollars, the decisions,
                  the posted rules in force, each finding at the event that proves it
                  with the money involved and the paragraph it cites quoted beside it
                  (a summary marked as pitwatch's own), each device's digest chain with
                  its verdict, and whether the signatures hold (with --keys)
  report.pdf      the same, for filing (ReportLab)
  evidence.jsonl  every event the findings depend on, as the devices sent them, in the
                  order of record: the table context (the TableOpened of the posted
                  rules, the shoe since its ShoeLoaded), each device's previous event
                  and, with --keys, its chain back to its last checkpoint, the rounds,
                  the event that closed each, and each signing device's chain on to the
                  checkpoint that covers it
  TableEvent.avsc the Avro schema the events' digests are taken under
  keys.json       the key registry the signatures were checked against (with --keys)
  violations.csv  the findings, each marked as rebuilt and stored, rebuilt only, or
                  stored only, with the device time of its event and the money involved
  manifest.json   the case number, operator, host, command line, software version and
                  commit, the store and the SHA-256 of the input read from it, the
                  selection, the rule packs and versions, the evidence's layout, every
                  finding, the verdicts, and the SHA-256 of every other file
  manifest.sig    the site key's signature of manifest.json (with --site-key)

`pitwatch verify DIR` checks such a folder anywhere, with no store: it re-audits the
evidence and says whether it gives the case's findings exactly.
--generated-at TIME makes a re-run byte-identical; without it the time is the clock's
(marked in the HTML as `data-field="generated-at"`). At most {MAX_ROUNDS} rounds a case
(narrow the selection).

exit status: 0 written, and every round rebuilt to what was stored; 3 written, but a
round rebuilt differently (the report says which); 1 nothing matches the selection;
2 a key registry or site key that cannot be read, or --out not empty.

examples:
  pitwatch investigate AC-BJ-01-000042 --case-number 2026-0117 --site-key site.pem \\
      --out cases/0042
  pitwatch investigate --table AC-BJ-01 --from 2026-11-30T18:00 --to 2026-11-30T19:00 \\
      --out cases/ac1
  pitwatch investigate --dealer D137 --severity CRITICAL --out cases/d137
  pitwatch investigate --code SIGNATURE_INVALID --keys floor/keys.json --out cases/sig
  pitwatch investigate --code INSURANCE_OVER_LIMIT --clickhouse 127.0.0.1:19000 --out cases/ins"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        add_selection_options(p)
        p.add_argument("--out", required=True, type=Path, metavar="DIR",
                       help="the case folder: a new or empty folder")
        p.add_argument("--case-number", metavar="N",
                       help="the case number the manifest and report carry")
        p.add_argument("--generated-at", metavar="TIME",
                       help="the generation time to state (UTC), for a byte-identical "
                       "re-run; default now")
        add_keys_option(p)
        site_key.add_site_key_option(p)
        add_store_options(p)

    def run(self, args: argparse.Namespace) -> int:
        from .case_files import write_case  # ReportLab only when a case is written

        sel = selection(args)
        generated = (int(time.time() * 1000) if args.generated_at is None
                     else parse_time(args.generated_at))
        if args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
            print(f"pitwatch investigate: {args.out} is not an empty folder: give --out a "
                  "new folder (a case folder holds only its own files)", file=sys.stderr)
            return 2
        try:
            key = None if not args.site_key else site_key.load_private(args.site_key)
        except site_key.SiteKeyError as e:
            print(f"pitwatch investigate: {e}", file=sys.stderr)
            return 2
        store = open_store(args)
        try:
            loaded = load_keys(args, store, "investigate")
        except KeyRegistryError as e:
            store.close()
            print(f"pitwatch investigate: {e}", file=sys.stderr)
            return 2
        keys, keys_file = loaded.registry, loaded.raw
        try:
            case = build_case(store, sel, store_identity(args), generated, MAX_ROUNDS, keys,
                              None if keys_file is None else sha256(keys_file),
                              Provenance.here(args.case_number), keys_file)
        except LookupError as e:
            print(f"pitwatch investigate: {e}", file=sys.stderr)
            return 1
        finally:
            store.close()
        try:
            files = write_case(case, args.out, key)
        except FileExistsError as e:
            print(f"pitwatch investigate: {e}", file=sys.stderr)
            return 2
        findings = case.all_findings
        print(f"case of {len(case.rounds)} round(s), {len(findings)} finding(s) -> "
              f"{args.out}/")
        for name, data in files.items():
            print(f"  {name:15} {len(data):>9,} bytes")
        print(printable(f"replay: {case.replay_verdict}"))  # ids come from devices
        print(printable(case.chain_verdict))
        print(printable(case.signature_verdict))
        print("manifest signed by the site key" if key is not None else
              "manifest UNSIGNED: no site key (--site-key FILE or PITWATCH_SITE_KEY)")
        return 0 if all(rb.matches_store for rb in case.rounds) else 3


command = _Investigate()
