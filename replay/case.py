"""A case: the rounds an investigation selects, rebuilt from the store with their
findings, each finding with the paragraph it cites, and what the case folder holds.

The selection is by round id, or by table, time, dealer, violation code or severity
(`Selection`); the rounds come from the store's `rounds` table (and a round id also from
its events, so an unfinished round can be investigated). Every selected round is rebuilt
with its table context (`rebuild.rebuild_span`) and compared with what was stored.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pitwatch.citations import Quote, quote
from pitwatch.engine.violation import Severity, Violation
from pitwatch.events.avro import digest
from pitwatch.events.keys import KeyRegistry
from pitwatch.packs.registry import all_packs
from pitwatch.protect.touching import touching
from pitwatch.store.base import Store
from pitwatch.store.history import round_span
from pitwatch.store.lookup import RoundQuery, round_spans, select_rounds, violations_of
from pitwatch.store.rows import VIOLATION_COLUMNS, violation_from_row

from .rebuild import Fed, Rebuilt, rebuild_span, signature_verdict

SEVERITIES = [s.value for s in Severity]  # worst first


def parse_time(text: str) -> int:
    """A UTC time as people write it (`2026-11-30`, `2026-11-30T18:05`,
    `2026-11-30 18:05:09.250`), as ms since the epoch."""
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (write it as 2026-11-30T18:05:00, UTC)"
                         ) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


@dataclass(frozen=True)
class Selection:
    round_id: str | None = None
    table: str | None = None
    start_ms: int | None = None  # rounds started at or after
    end_ms: int | None = None  # rounds started before
    dealer: str | None = None
    code: str | None = None
    severity: str | None = None  # this severity or worse
    jurisdiction: str | None = None  # tables of one rule pack (re-audit)
    game: str | None = None

    def empty(self) -> bool:
        return all(v is None for v in self.to_json().values())

    def to_json(self) -> dict[str, Any]:
        return {"round_id": self.round_id, "table": self.table,
                "from": None if self.start_ms is None else iso_time(self.start_ms),
                "to": None if self.end_ms is None else iso_time(self.end_ms),
                "dealer": self.dealer, "code": self.code, "severity": self.severity,
                **({} if self.game is None else {"jurisdiction": self.jurisdiction,
                                                 "game": self.game})}

    def describe(self) -> str:
        parts = [f"{k} {v}" for k, v in self.to_json().items() if v is not None]
        return ", ".join(parts) or "everything"

    def round_ids(self, store: Store) -> list[tuple[str, str]]:
        """(table, round) of each selected round, in table and start order."""
        found = select_rounds(store, RoundQuery(
            self.round_id, self.table, self.start_ms, self.end_ms, self.dealer, self.code,
            None if self.severity is None
            else tuple(SEVERITIES[:SEVERITIES.index(self.severity) + 1]),
            self.jurisdiction, self.game))
        if not found and self.round_id is not None:
            span = round_span(store, self.round_id)  # not closed yet: no summary row
            if span is not None:
                found = [(span[0], self.round_id)]
        return found


def iso_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + \
        f"{ms % 1000:03d}Z"


@dataclass(frozen=True)
class Finding:
    violation: Violation
    status: str  # "rebuilt and stored", "rebuilt only", "stored only"
    quote: Quote | None  # the cited paragraphs; None for a posted or record rule


@dataclass(frozen=True)
class Provenance:
    """Who made a case, where and how: the manifest states it."""

    case_number: str | None = None
    operator: str = ""
    host: str = ""
    command_line: str = ""

    @classmethod
    def here(cls, case_number: str | None, argv: list[str] | None = None) -> Provenance:
        """This process's operator, host and command line."""
        try:
            operator = getpass.getuser()
        except (KeyError, OSError):  # no name for the uid (a bare container)
            operator = f"uid {os.getuid()}"
        args = sys.argv if argv is None else argv
        return cls(case_number, operator, socket.gethostname(),
                   shlex.join(["pitwatch", *args[1:]]))


@dataclass
class Case:
    selection: Selection
    store: str
    rounds: list[Rebuilt]
    stored_only: dict[str, list[Violation]] = field(default_factory=dict)
    generated_ms: int = 0
    #: the key registry the signatures were verified against, and its file's SHA-256
    keys: KeyRegistry | None = None
    keys_sha256: str | None = None
    #: what each table's rebuild read, by role: the evidence
    fed: list[Fed] = field(default_factory=list)
    provenance: Provenance = field(default_factory=Provenance)
    #: the registry file's bytes, copied into the folder
    keys_file: bytes | None = None
    #: the stored game-protection observations that touch the rounds (their JSON form,
    #: `pitwatch.protect.touching`): evidence to weigh, never findings
    observations: list[dict[str, Any]] = field(default_factory=list)

    def findings(self, rb: Rebuilt) -> list[Finding]:
        out = [Finding(v, "rebuilt and stored" if v.violation_id in rb.stored_violation_ids
                       else "rebuilt only", quote(v.citation))
               for v in rb.violations]
        out += [Finding(v, "stored only", quote(v.citation))
                for v in self.stored_only.get(rb.round_id, [])]
        return out

    @property
    def all_findings(self) -> list[Finding]:
        return [f for rb in self.rounds for f in self.findings(rb)]

    @property
    def replay_verdict(self) -> str:
        bad = [rb.round_id for rb in self.rounds if not rb.matches_store]
        if not bad:
            return (f"every round ({len(self.rounds)}) rebuilt from its events to exactly "
                    "the findings stored")
        return f"{len(bad)} of {len(self.rounds)} rounds rebuilt DIFFERENTLY: {', '.join(bad)}"

    @property
    def chain_verdict(self) -> str:
        devices = sum(len(rb.chains) for rb in self.rounds)
        broken = [(rb.round_id, c.device_id) for rb in self.rounds for c in rb.chains.values()
                  if c.breaks]
        if not broken:
            unsigned = ("" if self.signatures_hold else
                        " (digests alone: whoever rewrites the record can chain them again;"
                        " only the signatures prove it)")
            return f"digest chains VERIFIED: {devices} device chain(s), no break{unsigned}"
        return (f"digest chains BROKEN in {len(broken)} of {devices}: "
                + ", ".join(f"{d} in {r}" for r, d in broken))

    @property
    def signature_verdict(self) -> str:
        return signature_verdict(self.rounds, self.keys,
                                 [v for vs in self.stored_only.values() for v in vs])

    @property
    def signatures_hold(self) -> bool | None:
        """True: verified, none bad; False: a bad one; None: not checked."""
        v = self.signature_verdict
        return True if " HOLD" in v else False if " FAIL" in v else None

    def packs(self) -> list[dict[str, str]]:
        titles = {p.label: p.title for p in all_packs()}
        labels = sorted({rb.pack for rb in self.rounds if rb.pack})
        out = []
        for label in labels:
            name, _, ver = label.partition("@")
            out.append({"name": name, "version": ver, "title": titles.get(label, "")})
        return out


def software_version() -> str:
    try:
        return version("pitwatch")
    except PackageNotFoundError:  # run from a source tree without installing
        return "unknown"


@cache
def software_commit() -> str | None:
    """The git commit of the checkout this software runs from, when it runs from one
    (read once a process: the code it runs was loaded then)."""
    here = Path(__file__).resolve().parent.parent
    if not (here / ".git").exists():
        return None
    try:
        got = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = got.stdout.strip()
    return commit if len(commit) == 40 else None


def software() -> dict[str, str | None]:
    return {"name": "pitwatch", "version": software_version(), "commit": software_commit()}


def build_case(store: Store, selection: Selection, store_identity: str,
               generated_ms: int, max_rounds: int = 500, keys: KeyRegistry | None = None,
               keys_sha256: str | None = None, provenance: Provenance | None = None,
               keys_file: bytes | None = None) -> Case:
    picked = selection.round_ids(store)
    if not picked:
        raise LookupError(f"no round in the store matches: {selection.describe()}")
    if len(picked) > max_rounds:
        raise ValueError(f"{len(picked)} rounds selected, at most {max_rounds} a case: "
                         "narrow the selection")
    rounds: list[Rebuilt] = []
    fed: list[Fed] = []
    by_table: dict[str, list[str]] = {}
    for table, rid in picked:
        by_table.setdefault(table, []).append(rid)
    for table, ids in by_table.items():
        spans = [s for s in round_spans(store, ids).values() if s.table_id == table]
        if not spans:
            continue
        got = rebuild_span(store, table, min(s.first for s in spans),
                           max(s.last for s in spans), ids, keys=keys, fed=fed)
        rounds += [got[r] for r in ids if r in got]
    case = Case(selection, store_identity, rounds, generated_ms=generated_ms, keys=keys,
                keys_sha256=keys_sha256, fed=fed, provenance=provenance or Provenance(),
                keys_file=keys_file)
    case.stored_only = stored_only(store, rounds)
    case.observations = touching(store, ((rb.table_id, rb.round_id,
                                          rb.state.dealer_id if rb.state else "")
                                         for rb in rounds))
    return case


def stored_only(store: Store, rounds: list[Rebuilt]) -> dict[str, list[Violation]]:
    """The findings the store holds for `rounds` that their rebuild did not raise."""
    missing = {i for rb in rounds for i in rb.stored_violation_ids
               - {v.violation_id for v in rb.violations}}
    if not missing:
        return {}
    found = [violation_from_row(r) for r in violations_of(
        store, ((rb.table_id, rb.round_id) for rb in rounds), VIOLATION_COLUMNS)
        if r["violation_id"] in missing]
    found.sort(key=lambda v: (v.round_id, v.detected_at, v.code))
    out: dict[str, list[Violation]] = {}
    for v in found:
        out.setdefault(v.round_id, []).append(v)
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def finding_json(v: Violation, status: str) -> dict[str, Any]:
    """A finding as the manifest lists it, and as `pitwatch verify` compares it."""
    return {**v.to_json(), "status": status}


def input_sha256(fed: list[Fed]) -> str:
    """SHA-256 over the digests (SHA-256 of the canonical Avro form) of every event
    read from the store, in the order read: the input the case was made from."""
    h = hashlib.sha256()
    for f in fed:
        for ev in f.events():
            h.update(digest(ev))
    return h.hexdigest()


def manifest(case: Case, files: dict[str, bytes], signed_by: dict[str, str] | None
             ) -> bytes:
    """manifest.json: what the folder holds and where it came from; `signed_by`, the
    site key that signs it (manifest.sig), or None."""
    pv = case.provenance
    doc = {
        "format": CASE_FORMAT,
        "case_number": pv.case_number,
        "made_by": {**software(), "operator": pv.operator, "host": pv.host,
                    "command_line": pv.command_line},
        "generated_at": iso_time(case.generated_ms),
        "store": {"identity": case.store, "input_sha256": input_sha256(case.fed),
                  "events_read": sum(len(f.events()) for f in case.fed)},
        "selection": case.selection.to_json(),
        "rounds": [rb.round_id for rb in case.rounds],
        "packs": case.packs(),
        "evidence": {"file": EVIDENCE, "schema": SCHEMA_FILE, "tables": [
            {"table_id": f.table_id, **f.counts(), "finished": f.finished}
            for f in case.fed]},
        "findings": [finding_json(f.violation, f.status) for f in case.all_findings],
        "replay": case.replay_verdict,
        "chains": case.chain_verdict,
        "signatures": case.signature_verdict,
        "observations": {"file": OBSERVATIONS_FILE, "count": len(case.observations)},
        "key_registry": None if case.keys is None else {
            "file": KEYS_FILE if case.keys_file is not None else None,
            "sha256": case.keys_sha256, "devices": len(case.keys.devices)},
        "files": {name: {"sha256": sha256(data), "bytes": len(data)}
                  for name, data in sorted(files.items())},
        "signed_by": signed_by if signed_by is not None else UNSIGNED,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False).encode() + b"\n"


CASE_FORMAT = "pitwatch case folder 2"
EVIDENCE = "evidence.jsonl"
SCHEMA_FILE = "TableEvent.avsc"
KEYS_FILE = "keys.json"
#: the game-protection observations that touch the case's rounds
OBSERVATIONS_FILE = "observations.json"
MANIFEST = "manifest.json"
SIGNATURE_FILE = "manifest.sig"
UNSIGNED = ("UNSIGNED: no site key was given (--site-key FILE or PITWATCH_SITE_KEY); "
            "nothing proves this manifest is the one the site made")
