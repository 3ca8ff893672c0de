"""A case: the rounds an investigation selects, rebuilt from the store with their
findings, each finding with the paragraph it cites, and what the case folder holds.

The selection is by round id, or by table, time, dealer, violation code or severity
(`Selection`); the rounds come from the store's `rounds` table (and a round id also from
its events, so an unfinished round can be investigated). Every selected round is rebuilt
with its table context (`rebuild.rebuild_span`) and compared with what was stored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pitwatch.citations import Quote, quote
from pitwatch.engine.violation import Severity, Violation
from pitwatch.events.keys import KeyRegistry
from pitwatch.packs.registry import all_packs
from pitwatch.store.base import Store
from pitwatch.store.history import round_span

from .rebuild import Rebuilt, rebuild_span, signature_verdict

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
        where: list[str] = ["1 = 1"]
        params: dict[str, Any] = {}
        if self.round_id is not None:
            where.append("round_id = {r:String}")
            params["r"] = self.round_id
        if self.table is not None:
            where.append("table_id = {t:String}")
            params["t"] = self.table
        if self.dealer is not None:
            where.append("dealer_id = {d:String}")
            params["d"] = self.dealer
        if self.game is not None:
            where.append("jurisdiction = {j:String} AND game = {g:String}")
            params["j"], params["g"] = self.jurisdiction or "", self.game
        started = "(toUInt64(toUnixTimestamp(started)) * 1000 + started_ms)"
        if self.start_ms is not None:
            where.append(started + " >= {a:UInt64}")
            params["a"] = self.start_ms
        if self.end_ms is not None:
            where.append(started + " < {z:UInt64}")
            params["z"] = self.end_ms
        if self.code is not None:
            where.append("round_id IN (SELECT round_id FROM violations FINAL "
                         "WHERE code = {c:String})")
            params["c"] = self.code
        if self.severity is not None:
            where.append("round_id IN (SELECT round_id FROM violations FINAL "
                         "WHERE has({s:Array(String)}, severity))")
            params["s"] = SEVERITIES[:SEVERITIES.index(self.severity) + 1]
        rows = store.query("SELECT table_id, round_id FROM rounds FINAL WHERE "
                           + " AND ".join(where) + " ORDER BY table_id, started, started_ms, "
                           "round_id", params)
        found = [(r["table_id"], r["round_id"]) for r in rows]
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
            return f"digest chains VERIFIED: {devices} device chain(s), no break"
        return (f"digest chains BROKEN in {len(broken)} of {devices}: "
                + ", ".join(f"{d} in {r}" for r, d in broken))

    @property
    def signature_verdict(self) -> str:
        return signature_verdict(self.rounds, self.keys)

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


def build_case(store: Store, selection: Selection, store_identity: str,
               generated_ms: int, max_rounds: int = 500, keys: KeyRegistry | None = None,
               keys_sha256: str | None = None) -> Case:
    picked = selection.round_ids(store)
    if not picked:
        raise LookupError(f"no round in the store matches: {selection.describe()}")
    if len(picked) > max_rounds:
        raise ValueError(f"{len(picked)} rounds selected, at most {max_rounds} a case: "
                         "narrow the selection")
    rounds: list[Rebuilt] = []
    by_table: dict[str, list[str]] = {}
    for table, rid in picked:
        by_table.setdefault(table, []).append(rid)
    for table, ids in by_table.items():
        spans = [s for s in (round_span(store, r) for r in ids) if s is not None]
        if not spans:
            continue
        got = rebuild_span(store, table, min(s[1] for s in spans), max(s[2] for s in spans),
                           ids, keys=keys)
        rounds += [got[r] for r in ids if r in got]
    case = Case(selection, store_identity, rounds, generated_ms=generated_ms, keys=keys,
                keys_sha256=keys_sha256)
    case.stored_only = _stored_only(store, rounds)
    return case


def _stored_only(store: Store, rounds: list[Rebuilt]) -> dict[str, list[Violation]]:
    missing = {i for rb in rounds for i in rb.stored_violation_ids
               - {v.violation_id for v in rb.violations}}
    if not missing:
        return {}
    rows = store.query("SELECT * FROM violations FINAL WHERE has({ids:Array(String)}, "
                       "violation_id) ORDER BY round_id, detected_at, detected_ms, code",
                       {"ids": sorted(missing)})
    out: dict[str, list[Violation]] = {}
    for r in rows:
        out.setdefault(r["round_id"], []).append(violation_from_row(r))
    return out


def violation_from_row(r: dict[str, Any]) -> Violation:
    """A stored violation row as the engine's `Violation`."""
    return Violation(r["code"], r["severity"], r["table_id"], r["round_id"],
                     int(r["seat"]) or None, None if int(r["hand"]) < 0 else int(r["hand"]),
                     r["event_id"], tuple(r["evidence"]), r["citation"], r["message"],
                     r["pack"], r["pack_version"],
                     _ms(r["detected_at"]) + int(r["detected_ms"]))


def _ms(t: Any) -> int:
    if isinstance(t, datetime):
        return int(t.replace(tzinfo=UTC).timestamp()) * 1000
    return int(datetime.fromisoformat(str(t)).replace(tzinfo=UTC).timestamp()) * 1000


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(case: Case, files: dict[str, bytes]) -> bytes:
    """manifest.json: what the folder holds and where it came from."""
    doc = {
        "made_by": f"pitwatch {software_version()}",
        "generated_at": iso_time(case.generated_ms),
        "store": case.store,
        "selection": case.selection.to_json(),
        "rounds": [rb.round_id for rb in case.rounds],
        "packs": case.packs(),
        "replay": case.replay_verdict,
        "chains": case.chain_verdict,
        "signatures": case.signature_verdict,
        "key_registry": None if case.keys is None else {
            "sha256": case.keys_sha256, "devices": len(case.keys.devices)},
        "files": {name: {"sha256": sha256(data), "bytes": len(data)}
                  for name, data in sorted(files.items())},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False).encode() + b"\n"
