"""`pitwatch audit` and `pitwatch query`: the embedded audit and its store."""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path
from typing import Any

import orjson

from ..connect import add_connection_flags
from ..engine.violation import Severity, Violation
from ..events.files import Rejected
from ..events.keys import KEYS_ENV, KEYS_FILE, NOT_CHECKED, WHERE_KEYS, KeyRegistryError
from ..registry import Loaded, add_site_public_key_option, load_registry
from ..spreadsheet import csv_row
from ..store import registry_pin
from ..store.embedded import holds_store
from ..store.process import StoreProcess
from ..store.readonly import check_read_only, run_read_only
from ..terminal import printable
from . import report
from .parallel import audit_parallel, default_jobs
from .run import audit_paths

DEFAULT_DATA = "pitwatch-data"


class _Audit:
    name = "audit"
    help = "audit event files (JSON Lines or Avro) against the rules"
    description = """\
Rebuild every round in the files named (JSON Lines, Avro container files, or
directories of them), judge it against its table's rule pack, print a summary and the
violations, and store events, rounds and violations in the embedded store (chDB).

A malformed line never stops the audit: it is reported with its line number and kept
aside in DATA/rejects.jsonl. So is an event the record refused (a different copy of a
recorded event, a late one: source "record", with the finding's reason): it is never
stored.

Several files are read in the order their record fixes (each device's seq says which
file continues which), whatever their names or the order they are named in; files
whose order the record cannot fix (they overlap) are refused before anything is
audited, naming the files, the device and the seq (docs/events.md § A set of files).

History in batches: audit one day's file after another into the same store and the
result is that of one audit of the whole. A round still open when a file ends is not a
verdict: the store keeps it open, with each table's state (devices' seqs and chains,
the shoe, the posted rules), and the next file continues it; it is judged when its
table's next events come (the table moves on, or its device clock passes the
time-out). When no more input will come (the end of a regulator's period, a table
closed for good), --final closes the books: rounds still open are judged incomplete,
a signing device's unsigned tail a truncated chain, and a table whose order is signed
but whose record has no signed end a truncated record, in every table of the store;
`pitwatch audit --final` with no PATH closes them without new input. --no-store judges
each run on its own: the end of its input closes its rounds.

Auditing input already in the store again adds no duplicates, and says so: findings
whose violation id the store holds already are counted apart ("already in the store",
and "already_stored": true in JSON Lines); the exit status and --fail-on count only
new ones.

examples:
  pitwatch audit floor/events.jsonl
  pitwatch audit floor/ --format jsonl > violations.jsonl
  pitwatch audit shift.avro --data /var/lib/pitwatch --limit 0
  pitwatch audit night/ --quiet --fail-on HIGH     # for cron or CI: exit 1 on HIGH or worse
  pitwatch audit floor/ --keys floor/keys.json     # devices must sign (Ed25519 checkpoints)
  pitwatch audit monday.jsonl --data S && pitwatch audit tuesday.jsonl --data S
  pitwatch audit --final --data S                    # the period is over: close the books
  pitwatch audit year/ --jobs 8                      # tables shared among 8 processes

--jobs N shares the tables among N processes (default: the machine's cores); a
table's events stay in one process, in input order, and the results are merged in the
input's order: the output, the store and the exit status are those of --jobs 1. The
store's work (each event's row, chDB's inserts) runs in a process of its own: beside
the audit at --jobs 1, in the process that merges at --jobs N.

exit status: 0 done (and nothing new at or above --fail-on), 1 a new violation at or
above --fail-on, 2 bad input: no file, no event in the files, no readable event at all,
or a key registry that cannot be read."""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or directories (none: with --final, only close the "
                       "books of the store)")
        p.add_argument("--format", choices=("table", "jsonl"), default="table",
                       help="table: summary and violations for people (default); jsonl: one "
                       "violation per line on stdout, the summary on stderr")
        p.add_argument("--data", default=DEFAULT_DATA, metavar="DIR",
                       help=f"embedded store directory (default ./{DEFAULT_DATA})")
        p.add_argument("--no-store", action="store_true",
                       help="judge only; store nothing (the end of the input closes every "
                       "round still open, as --final does)")
        p.add_argument("--final", action="store_true",
                       help="no more input will come: close the store's books, judging "
                       "every round still open incomplete (ROUND_INCOMPLETE) and every "
                       "signing device's unsigned tail a truncated chain. Without it, "
                       "rounds open at the end of the input stay open in the store and "
                       "the next audit into it continues them")
        p.add_argument("--limit", type=int, default=50,
                       help="violations shown in table format (0 = all; default 50)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        p.add_argument("--keys", metavar="FILE", default=os.environ.get(KEYS_ENV),
                       help="key registry (JSON: device -> Ed25519 public keys): every device "
                       "in it must sign its chain, or SIGNATURE_INVALID (HIGH). Default: "
                       f"${KEYS_ENV}, else {KEYS_FILE} beside the input (in a directory "
                       "named, or beside a file named), else the one the store was last "
                       "audited against (pinned in its key_registry table); without one the "
                       "summary "
                       f"says {NOT_CHECKED!r}")
        add_site_public_key_option(p)
        p.add_argument("--require-signatures", action="store_true",
                       help="refuse to audit without a key registry (exit 2): for cron and "
                       "CI, where an audit whose signatures were not checked must not pass")
        p.add_argument("--jobs", type=_jobs, default=default_jobs(), metavar="N",
                       help="processes to share the tables among (default: the machine's "
                       f"cores, {default_jobs()} here; 1: the audit in one process)")
        p.add_argument("--fail-on", choices=[s.value for s in Severity], metavar="SEVERITY",
                       help="exit 1 when a violation of this severity or worse is found "
                       "(CRITICAL, HIGH, MEDIUM, LOW)")

    def run(self, args: argparse.Namespace) -> int:
        if not args.paths and not (args.final and not args.no_store):
            print("pitwatch audit: no PATH: name the files or directories to audit, or "
                  "give --final alone to close the books of the store (--data DIR)",
                  file=sys.stderr)
            return 2
        if not args.paths and not holds_store(args.data):
            print(f"pitwatch audit: no store at {args.data}: no books to close (--data DIR "
                  "names the store the batches went into)", file=sys.stderr)
            return 2
        data = Path(args.data)
        store = None
        jobs = args.jobs if args.paths else 1
        if not args.no_store:
            store = StoreProcess(data)  # chDB's work on a core of its own
            store.setup()
        try:
            pinned = None if store is None else registry_pin.read(store, data)
            loaded = load_registry(args.keys, inputs=args.paths, pinned=pinned,
                                   store_name=f"the store {args.data}",
                                   site_public_key_file=args.site_public_key)
        except KeyRegistryError as e:
            if store is not None:
                store.close()
            print(f"pitwatch audit: {e}", file=sys.stderr)
            return 2
        keys = loaded.registry
        if keys is None and args.require_signatures:
            if store is not None:
                store.close()
            print(f"pitwatch audit: --require-signatures: no key registry ({WHERE_KEYS}): "
                  f"{NOT_CHECKED}, so nothing was audited", file=sys.stderr)
            return 2
        if store is not None and jobs > 1:  # the parallel audit opens the store itself
            store.close()
            store = None
        finish = args.final or args.no_store
        data.mkdir(parents=True, exist_ok=True)
        rejects_path = data / "rejects.jsonl"
        rejects = open(rejects_path, "a", encoding="utf-8")  # noqa: SIM115
        jsonl = args.format == "jsonl"
        out = sys.stdout

        def on_violation(v: Violation) -> None:
            if jsonl:
                out.buffer.write(orjson.dumps({**v.to_json(), "already_stored": False})
                                 + b"\n")

        def on_known(v: Violation) -> None:
            if jsonl:
                out.buffer.write(orjson.dumps({**v.to_json(), "already_stored": True})
                                 + b"\n")

        def on_reject(r: Rejected) -> None:
            rejects.write(r.to_json() + "\n")
            print(printable(f"pitwatch audit: {r.source}:{r.line}: {r.reason}"),
                  file=sys.stderr)

        progress = not args.quiet and sys.stderr.isatty()
        try:
            if jobs > 1:
                rep = audit_parallel(args.paths, jobs,
                                     data=None if args.no_store else data,
                                     on_violation=on_violation, on_known=on_known,
                                     on_reject=on_reject, on_refused=on_reject,
                                     progress=progress,
                                     keep_violations=not jsonl, keys=keys, finish=finish)
            else:
                rep = audit_paths(args.paths, store=store, on_violation=on_violation,
                                  on_known=on_known, on_reject=on_reject,
                                  on_refused=on_reject, progress=progress,
                                  keep_violations=not jsonl, keys=keys, finish=finish)
            # the store keeps the registry it was audited against, once the audit is done
            replaced = None
            if (keys is not None and not args.no_store and (rep.events or not args.paths)
                    and (pinned is None
                         or (pinned.raw, pinned.signature) != (loaded.raw, loaded.signature))):
                replaced = _pin(store, data, loaded)
        finally:
            rejects.close()
            if store is not None:
                store.close()
        if rep.events == 0 and args.paths:
            what = (f"all {rep.rejected:,} record(s) malformed (see {rejects_path})"
                    if rep.rejected else "no events in " + ", ".join(args.paths))
            print(f"pitwatch audit: nothing audited: {what}", file=sys.stderr)
            return 2
        said = sys.stderr if jsonl else out
        report.summary(rep, said, keys, loaded.where)
        if replaced is not None:
            print(f"key registry CHANGED since this store's last audit (it was sha256 "
                  f"{replaced}, now sha256 {loaded.sha256}): the store now holds this one",
                  file=said)
        if keys is not None:
            print(loaded.site_words(), file=said)
        if rep.rejected or rep.refused:
            print(f"rejects: {rejects_path}", file=sys.stderr if jsonl else out)
        if not args.no_store:
            print(f"store: {data}/ (pitwatch query --data {data} \"SELECT ...\")",
                  file=sys.stderr if jsonl else out)
        if not jsonl:
            report.tables(rep, out, None if args.limit == 0 else args.limit)
        return 1 if args.fail_on and failing(rep.by_severity, args.fail_on) else 0


def _pin(store: StoreProcess | None, data: Path, loaded: Loaded) -> str | None:
    """Pin the registry the audit checked signatures against in the store at `data`
    (`store`, or opened for it when the parallel audit has closed its own): the SHA-256
    of the one it replaces, when it differs."""
    assert loaded.raw is not None
    if store is not None:
        return registry_pin.pin(store, loaded.raw, loaded.signature)
    store = StoreProcess(data)
    try:
        return registry_pin.pin(store, loaded.raw, loaded.signature)
    finally:
        store.close()


def _jobs(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be 1 or more, not {n}")
    return n


def failing(by_severity: dict[str, int], threshold: str) -> bool:
    """Whether a violation at `threshold` or worse was found (`AuditReport.by_severity`:
    the new ones)."""
    rank = report.SEVERITY_ORDER
    return any(n and rank[s] <= rank[threshold] for s, n in by_severity.items())


class _Query:
    name = "query"
    help = "read the embedded store with SQL (read-only), as a table, CSV or JSON"
    description = """\
Answer SQL on the embedded store (the tables events, rounds, violations; see
schemas/clickhouse). The tables are ReplacingMergeTree: add FINAL to read through
any row not merged yet. Money columns are integer cents.

Read-only: one SELECT (or WITH, SHOW, DESCRIBE, EXISTS, EXPLAIN) at a time; anything
that writes, changes the schema or reads files or other servers (file(), url(), INTO
OUTFILE, SETTINGS, ...) is refused. A bad statement is reported in one line (exit 2).
The embedded query runs in a process of its own that Linux Landlock confines: it can
write no file, read no file but the store's and the libraries', and open no TCP
connection; where the kernel has no Landlock it is refused, not run unconfined.

examples:
  pitwatch query "SELECT code, count() FROM violations FINAL GROUP BY code"
  pitwatch query --format jsonl "SELECT * FROM rounds FINAL WHERE violations > 0 LIMIT 5"
  pitwatch query --format csv "SELECT * FROM violations FINAL" > violations.csv
  PITWATCH_CLICKHOUSE_USER=pitwatch_reader pitwatch query --clickhouse 127.0.0.1:19000 \\
      "SELECT count() FROM violations FINAL"      a ClickHouse server, as its read-only user"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("sql", help="the query")
        p.add_argument("--data", default=DEFAULT_DATA, metavar="DIR",
                       help=f"embedded store directory (default ./{DEFAULT_DATA})")
        p.add_argument("--format", choices=("table", "csv", "json", "jsonl"), default="table",
                       help="table for people (default); csv with a header; json: one "
                       "array; jsonl: one object a line")
        p.add_argument("--clickhouse", metavar="HOST:PORT[,HOST:PORT...]",
                       help="read a ClickHouse server's native port instead, in a read-only "
                       "session (log in as a read-only user: see the README's Security)")
        p.add_argument("--clickhouse-db", default="pitwatch", metavar="DB",
                       help="its database (default %(default)s)")
        add_connection_flags(p, kafka=False)

    def run(self, args: argparse.Namespace) -> int:
        check_read_only(args.sql)
        if args.clickhouse:
            from ..store.server import ServerStore

            server = ServerStore.at(args.clickhouse, args.clickhouse_db)
            try:
                server.read_only()
                return export(server.query(args.sql), args.format)
            finally:
                server.close()
        if not holds_store(args.data):
            raise FileNotFoundError(f"no store at {args.data}: run `pitwatch audit` or "
                                    "`pitwatch demo` first, or pass --data")
        return export(run_read_only(args.data, args.sql), args.format)


def export(rows: list[dict[str, Any]], fmt: str) -> int:
    """Rows on stdout in `fmt`."""
    if fmt == "jsonl":
        for r in rows:
            sys.stdout.buffer.write(orjson.dumps(r) + b"\n")
        return 0
    if fmt == "json":
        sys.stdout.buffer.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    if fmt == "csv":
        if rows:
            w = csv.writer(sys.stdout, lineterminator="\n")
            w.writerow(csv_row(rows[0]))
            for r in rows:
                w.writerow(csv_row(orjson.dumps(v).decode() if isinstance(v, list | dict)
                                   else v for v in r.values()))
        return 0
    if not rows:
        print("(no rows)")
        return 0
    cols = list(rows[0])
    cells = [[printable(str(r[c])) for c in cols] for r in rows]
    heads = [printable(c) for c in cols]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(heads)]
    print("  ".join(c.ljust(w) for c, w in zip(heads, widths, strict=True)))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return 0


AUDIT = _Audit()
QUERY = _Query()
