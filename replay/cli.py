"""`pitwatch replay`: rebuild a round from the store, step by step."""

from __future__ import annotations

import argparse
import sys
from typing import IO

from pitwatch.engine.violation import Violation
from pitwatch.events.keys import KeyRegistry, KeyRegistryError
from pitwatch.money import dollars
from pitwatch.terminal import say_to

from .case import stored_only
from .keys import add_keys_option, load_keys
from .present import decisions, describe, device_time, money_involved, rules_lines
from .rebuild import Rebuilt, rebuild, signature_verdict
from .stores import add_store_options, open_store


class _Replay:
    name = "replay"
    help = "rebuild a round from the store, event by event, with its violations"
    description = """\
Rebuild one round from the events in the store (embedded chDB by default, or a
ClickHouse server), through the same engine, with the table context it had (the posted
rules, the shoe's counts, each device's previous event), and print it step by step:
device time (UTC, to the millisecond) and event id of each event as the devices sent it,
what it says (cards as cards, money in dollars), and each violation at the event that
shows it, with its citation. Each device's digest chain is verified and given a verdict,
with --keys the devices' signed checkpoints too (the round's signatures hold or fail),
and the rebuilt violations are compared with those stored when the round was audited
(give the registry the audit had, or a SIGNATURE_INVALID it stored is not rebuilt).

exit status: 0 the rebuild matches the store, 3 it differs, 1 no such round, 2 a key
registry that cannot be read.
For a case file (HTML, PDF, evidence, manifest) see `pitwatch investigate`.

examples:
  pitwatch replay AC-BJ-01-000042
  pitwatch replay AC-BJ-01-000042 --clickhouse 127.0.0.1:19000 --clickhouse-db pitwatch
  pitwatch replay AC-BJ-01-000042 --keys floor/keys.json"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("round_id", metavar="ROUND_ID")
        add_keys_option(p)
        add_store_options(p)

    def run(self, args: argparse.Namespace) -> int:
        store = open_store(args)
        try:
            keys = load_keys(args, store, "replay").registry
        except KeyRegistryError as e:
            store.close()
            print(f"pitwatch replay: {e}", file=sys.stderr)
            return 2
        try:
            rb = rebuild(store, args.round_id, keys=keys)
            missing = stored_only(store, [rb]).get(rb.round_id, [])
        except LookupError as e:
            print(f"pitwatch replay: {e}", file=sys.stderr)
            return 1
        finally:
            store.close()
        show(rb, sys.stdout, keys, missing)
        return 0 if rb.matches_store else 3


def show(rb: Rebuilt, out: IO[str], keys: KeyRegistry | None = None,
         missing: list[Violation] | None = None) -> None:
    """The round step by step; `missing`: findings the store holds that the rebuild
    did not raise."""
    say = say_to(out)  # ids and messages come from devices
    s = rb.summary
    say(f"round {rb.round_id} at table {rb.table_id}: {len(rb.steps)} events, "
        f"judged by {rb.pack or 'no pack'}" + (f", dealer {s.dealer_id}" if s else ""))
    say("decisions: " + decisions([st.event for st in rb.steps]))
    if rb.rules is not None:
        say("posted rules in force: " + "; ".join(rules_lines(rb.rules, rb.game)))
    say(f"  {'device time (UTC)':23}  {'event id':36}  {'device':18} {'seq':>5}  event")
    events = [st.event for st in rb.steps]

    def money(v: Violation) -> str:
        m = money_involved(v, events, rb.state)
        return "" if m is None else f" (money involved: {m})"

    for st in rb.steps:
        ev = st.event
        say(f"  {device_time(ev.ts)}  {ev.event_id:36}  {ev.device_id:18} {ev.seq:>5}  "
            f"{ev.type} {describe(ev)}".rstrip())
        for v in st.violations:
            say(f"      !! {v.severity} {v.code} [{v.citation}]: {v.message}{money(v)}")
    for v in rb.closing:
        say(f"      !! {v.severity} {v.code} [{v.citation}] (on event {v.event_id}): "
            f"{v.message}{money(v)}")
    for v in missing or []:
        say(f"      ?? stored, NOT rebuilt: {v.severity} {v.code} [{v.citation}] "
            f"(on event {v.event_id}): {v.message}")
    if s is not None:
        say(f"money: wagered {dollars(s.wagered)}, paid {dollars(s.paid)}, collected "
            f"{dollars(s.collected)}, returned {dollars(s.returned)}; "
            f"{'complete' if s.complete else 'INCOMPLETE'}")
    else:
        say("state: open: the store holds no summary (no RoundEnded yet, and the table "
            "has not moved on)")
    for c in rb.chains.values():
        say(f"chain {c.device_id}: {c.verdict}")
    say("digest chains: " + ("VERIFIED for every device" if rb.chain_verified
                             else "BROKEN (see above)"))
    say(signature_verdict([rb], keys, missing or []))
    same = "match" if rb.matches_store else "DIFFER FROM"
    say(f"rebuilt violations {same} the stored ones "
        f"({len(rb.violations)} rebuilt, {len(rb.stored_violation_ids)} stored)")


command = _Replay()
