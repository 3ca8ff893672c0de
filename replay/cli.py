"""`pitwatch replay`: rebuild a round from the store, step by step."""

from __future__ import annotations

import argparse
import sys

from pitwatch.events.jsonl import to_json
from pitwatch.money import dollars
from pitwatch.store.base import Store

from .rebuild import rebuild

_ENVELOPE = {"type", "event_id", "table_id", "device_id", "seq", "ts", "round_id",
             "prev_digest"}


class _Replay:
    name = "replay"
    help = "rebuild a round from the store, event by event, with its violations"
    description = """\
Rebuild one round from the events in the store (embedded chDB by default, or a
ClickHouse server), through the same engine, and print it step by step: each event as
the devices sent it, and each violation at the event that showed it, with its citation.
The digest chain of every device is re-verified on the way, and the rebuilt violations
are compared with those stored when the round was first audited.

examples:
  pitwatch replay AC-BJ-01-000042
  pitwatch replay AC-BJ-01-000042 --clickhouse 127.0.0.1:19000 --clickhouse-db pitwatch"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("round_id", metavar="ROUND_ID")
        p.add_argument("--data", default="pitwatch-data", metavar="DIR",
                       help="embedded store (default ./%(default)s)")
        p.add_argument("--clickhouse", metavar="HOST:PORT",
                       help="read from a ClickHouse server instead")
        p.add_argument("--clickhouse-db", default="pitwatch")

    def _store(self, args: argparse.Namespace) -> Store:
        if args.clickhouse:
            from pitwatch.store.server import ServerStore

            host, _, port = args.clickhouse.rpartition(":")
            return ServerStore(host, int(port), args.clickhouse_db)
        from pathlib import Path

        from pitwatch.store.embedded import EmbeddedStore

        if not Path(args.data).exists():
            raise FileNotFoundError(f"no store at {args.data}")
        return EmbeddedStore(args.data)

    def run(self, args: argparse.Namespace) -> int:
        store = self._store(args)
        try:
            rb = rebuild(store, args.round_id)
        except LookupError as e:
            print(f"pitwatch replay: {e}", file=sys.stderr)
            return 1
        finally:
            store.close()
        print(f"round {rb.round_id} at table {rb.table_id}: {len(rb.steps)} events")
        for st in rb.steps:
            d = to_json(st.event)
            detail = " ".join(f"{k}={v}" for k, v in d.items()
                              if k not in _ENVELOPE and k != "rules" and v is not None)
            print(f"  {st.pos:7}  {st.event.device_id:18} #{st.event.seq:<5} "
                  f"{st.event.type:17} {detail}")
            for v in st.violations:
                print(f"           !! {v.severity} {v.code} [{v.citation}]: {v.message}")
        s = rb.summary
        if s is not None:
            print(f"wagered {dollars(s.wagered)}, paid {dollars(s.paid)}, collected "
                  f"{dollars(s.collected)}, returned {dollars(s.returned)}; "
                  f"{s.violations} violation(s); "
                  f"{'complete' if s.complete else 'INCOMPLETE'}")
        same = "matches" if rb.matches_store else "DIFFERS FROM"
        print(f"rebuilt violations {same} the stored ones "
              f"({len(rb.violations)} rebuilt, {len(rb.stored_violation_ids)} stored)")
        return 0 if rb.matches_store else 3


command = _Replay()
