"""`pitwatch reaudit`: rebuild a selection of history under another version of a rule
pack and show what changes: new findings, vanished findings, changed severity.

The baseline is what the store holds (the findings made when the rounds were audited),
or, with `--base NAME@VERSION`, the same rounds rebuilt under that version. A finding is
the same finding under both when its identity (round, code, evidence event) is.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import IO, Any

import orjson

from pitwatch.engine.rulepack import RulePack
from pitwatch.engine.violation import Violation
from pitwatch.events.keys import KeyRegistry, KeyRegistryError
from pitwatch.packs import registry
from pitwatch.store.base import Store
from pitwatch.store.lookup import round_spans, violations_of
from pitwatch.store.rows import VIOLATION_COLUMNS, violation_from_row
from pitwatch.terminal import printable

from .case import Selection, parse_time
from .investigate import add_selection_options
from .keys import add_keys_option, load_keys
from .rebuild import REFUSAL_CODES, Rebuilt, rebuild_span, signature_verdict
from .stores import add_store_options, open_store


def available_packs() -> dict[str, RulePack]:
    """Every pack version the registry offers, by `name@version`."""
    return {f"{n}@{v}": registry.get(n, v) for n, v in registry.versions()}


def resolve_pack(label: str) -> RulePack:
    """A pack by `NAME@VERSION` (or `NAME`, its newest version)."""
    name, _, ver = label.partition("@")
    try:
        return registry.get(name, ver or None)
    except KeyError as e:
        raise ValueError(str(e.args[0])) from None


@dataclass(frozen=True)
class Change:
    change: str  # "new", "vanished", "severity"
    violation: Violation  # as the re-audit finds it ("new", "severity") or as it was
    was: str | None = None  # the baseline's severity, for "severity"

    def to_json(self, pack: str) -> dict[str, Any]:
        v = self.violation
        return {"change": self.change, "violation_id": v.violation_id, "code": v.code,
                "severity": v.severity, "was": self.was, "table_id": v.table_id,
                "round_id": v.round_id, "seat": v.seat, "hand": v.hand,
                "event_id": v.event_id, "citation": v.citation, "message": v.message,
                "pack": pack if self.change != "vanished" else f"{v.pack}@{v.pack_version}"}


def diff(base: Iterable[Violation], new: Iterable[Violation]) -> list[Change]:
    """What changes from `base` to `new`, in round and event order of appearance."""
    before = {v.violation_id: v for v in base}
    after = {v.violation_id: v for v in new}
    out: list[Change] = []
    for vid, v in after.items():
        old = before.get(vid)
        if old is None:
            out.append(Change("new", v))
        elif old.severity != v.severity:
            out.append(Change("severity", v, old.severity))
    out += [Change("vanished", v) for vid, v in before.items() if vid not in after]
    return sorted(out, key=lambda c: (c.violation.table_id, c.violation.round_id,
                                      c.violation.detected_at, c.violation.code))


def rebuild_selection(store: Store, sel: Selection, pack: RulePack | None,
                      keys: KeyRegistry | None = None) -> list[Rebuilt]:
    by_table: dict[str, list[str]] = {}
    for table, rid in sel.round_ids(store):
        by_table.setdefault(table, []).append(rid)
    out: list[Rebuilt] = []
    for table, ids in by_table.items():
        spans = [s for s in round_spans(store, ids).values() if s.table_id == table]
        if spans:
            got = rebuild_span(store, table, min(s.first for s in spans),
                               max(s.last for s in spans), ids, pack, keys)
            out += [got[r] for r in ids if r in got]
    return out


def stored_violations(store: Store, rounds: list[tuple[str, str]]) -> list[Violation]:
    """The stored violations of (table, round) pairs."""
    return [violation_from_row(r) for r in violations_of(store, rounds, VIOLATION_COLUMNS)]


def reaudit(store: Store, sel: Selection, pack: RulePack, base: RulePack | None = None,
            keys: KeyRegistry | None = None) -> tuple[list[Rebuilt], list[Change]]:
    """Rebuild the selection under `pack` and diff it against the stored findings (or
    against the same rounds rebuilt under `base`). With `keys`, the devices' signatures
    are judged too, as an audit with the same registry judged them; without, a stored
    SIGNATURE_INVALID shows as vanished."""
    sel = replace(sel, jurisdiction=pack.jurisdiction, game=pack.game)
    rounds = rebuild_selection(store, sel, pack, keys)
    if base is None:
        # a finding on an event the record refused is no rule's: a refused copy is
        # never stored, so no rebuild under any pack raises it again; one the record
        # took in is quarantined and raised again (`history.Quarantine`)
        again = {v.violation_id for rb in rounds for v in rb.violations}
        before = [v for v in stored_violations(store, [(rb.table_id, rb.round_id)
                                                       for rb in rounds])
                  if v.code not in REFUSAL_CODES or v.violation_id in again]
    else:
        before = [v for rb in rebuild_selection(store, sel, base, keys)
                  for v in rb.violations]
    return rounds, diff(before, [v for rb in rounds for v in rb.violations])


def show_table(changes: list[Change], out: IO[str]) -> None:
    if not changes:
        return
    print(f"{'CHANGE':9}  {'SEVERITY':18}  {'CODE':32}  {'ROUND':18}  {'SEAT':>4}  "
          "CITATION", file=out)
    for c in changes:
        v = c.violation
        sev = f"{c.was} -> {v.severity}" if c.change == "severity" else v.severity
        seat = "" if v.seat is None else f"{v.seat}/{v.hand}"
        print(printable(f"{c.change:9}  {sev:18}  {v.code:32}  {v.round_id:18}  {seat:>4}  "
                        f"{v.citation}"), file=out)


class _Reaudit:
    name = "reaudit"
    help = "rebuild history under another pack version and show the diff"
    description = """\
Rebuild the selected rounds (all rounds of the pack's jurisdiction and game in the
store, unless narrowed) under another version of a rule pack (--pack NAME@VERSION) and
print what changes against the stored findings (or against --base NAME@VERSION): new
findings, vanished findings, and findings whose severity changed, as a table for
people or as JSON Lines (--format jsonl, one change a line). Nothing is written to the
store. Give the key registry the rounds were audited with (--keys) so the devices'
signatures are judged again too; without it they are not checked, and a stored
SIGNATURE_INVALID shows as vanished.

examples:
  pitwatch reaudit --pack nj-blackjack-switch@2024.09-1
  pitwatch reaudit --table AC-SW-02 --from 2026-11-30 --pack nj-blackjack-switch@2024.09-1 \\
      --base nj-blackjack-switch@2023.01-1 --format jsonl
  pitwatch reaudit --pack nj-blackjack@2024.09-2 --keys floor/keys.json"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        add_selection_options(p)
        p.add_argument("--pack", required=True, metavar="NAME@VERSION",
                       help="the pack version to judge by (`--pack list` lists them)")
        p.add_argument("--base", metavar="NAME@VERSION",
                       help="compare with this version instead of the stored findings")
        p.add_argument("--format", choices=("table", "jsonl"), default="table")
        add_keys_option(p)
        add_store_options(p)

    def run(self, args: argparse.Namespace) -> int:
        if args.pack == "list":
            for label, pk in sorted(available_packs().items()):
                print(f"{label:40} {pk.title}")
            return 0
        pack = resolve_pack(args.pack)
        base = None if args.base is None else resolve_pack(args.base)
        sel = Selection(args.round_id, args.table,
                        None if args.start is None else parse_time(args.start),
                        None if args.end is None else parse_time(args.end),
                        args.dealer, args.code, args.severity)
        store = open_store(args)
        try:
            keys = load_keys(args, store, "reaudit").registry
        except KeyRegistryError as e:
            store.close()
            print(f"pitwatch reaudit: {e}", file=sys.stderr)
            return 2
        try:
            rounds, changes = reaudit(store, sel, pack, base, keys)
        finally:
            store.close()
        if args.format == "jsonl":
            for c in changes:
                sys.stdout.buffer.write(orjson.dumps(c.to_json(pack.label)) + b"\n")
            return 0
        against = base.label if base is not None else "the stored findings"
        counts = {k: sum(1 for c in changes if c.change == k)
                  for k in ("new", "vanished", "severity")}
        print(f"re-audit of {len(rounds)} round(s) under {pack.label} against {against}: "
              f"{counts['new']} new, {counts['vanished']} vanished, {counts['severity']} "
              "changed severity")
        print(printable(signature_verdict(rounds, keys)))
        show_table(changes, sys.stdout)
        return 0


command = _Reaudit()
