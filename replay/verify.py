"""`pitwatch verify CASE_DIR`: check a case folder from its own files alone, on any
machine, with no store: the manifest's signature (the site's key), every file's SHA-256,
then the evidence re-audited through the same engine, under the rule-pack versions and
the key registry the case names, and whether that gives the case's findings exactly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitwatch import site_key
from pitwatch.engine.violation import Violation
from pitwatch.events.jsonl import InvalidEvent, loads
from pitwatch.events.keys import KeyRegistry, KeyRegistryError
from pitwatch.events.model import Event
from pitwatch.events.schema import schemas_dir
from pitwatch.packs.registry import get
from pitwatch.store.history import Quarantine
from pitwatch.terminal import printable

from .case import (
    CASE_FORMAT,
    EVIDENCE,
    KEYS_FILE,
    MANIFEST,
    SCHEMA_FILE,
    SIGNATURE_FILE,
    Case,
    Selection,
    finding_json,
    software,
)
from .keys import registry_from_bytes
from .rebuild import Rebuilt, TableRebuild, pinned

#: exit status
VERIFIED, REFUSED, NOT_REPRODUCED, UNSIGNED = 0, 1, 3, 4


class Refused(ValueError):
    """The folder is not what its manifest says (or the manifest is not the site's)."""


@dataclass
class Outcome:
    lines: list[str] = field(default_factory=list)
    reproduced: bool = True
    signed: bool = False

    def say(self, line: str) -> None:
        self.lines.append(line)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_files(folder: Path, pinned_key: bytes | None, out: Outcome) -> dict[str, Any]:
    """The manifest, once its signature and every file's SHA-256 check; Refused else."""
    try:
        raw = (folder / MANIFEST).read_bytes()
    except OSError as e:
        raise Refused(f"no {MANIFEST} in {folder}: {e.strerror}") from None
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise Refused(f"{MANIFEST} is not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != CASE_FORMAT:
        raise Refused(f"{MANIFEST} is not a {CASE_FORMAT!r} manifest")
    signed_by = doc.get("signed_by")
    sig_path = folder / SIGNATURE_FILE
    if isinstance(signed_by, dict):
        try:
            sig = json.loads(sig_path.read_bytes())
        except (OSError, ValueError):
            raise Refused(f"the manifest says it is signed, and {SIGNATURE_FILE} is "
                          "missing or not JSON") from None
        if not isinstance(sig, dict) or sig.get("public_key") != signed_by.get("public_key"):
            raise Refused(f"{SIGNATURE_FILE} is by another key than the manifest names")
        why = site_key.check(sig, raw, pinned_key)
        if why is not None:
            raise Refused(f"{MANIFEST}: {why}")
        out.signed = True
        out.say(f"manifest: signed by site key {signed_by.get('fingerprint')}: VALID"
                + ("" if pinned_key is not None else
                   " (the key is not pinned: pass --site-public-key to check it is the "
                   "site's)"))
    else:
        if sig_path.exists():
            raise Refused(f"{SIGNATURE_FILE} beside a manifest that says it is unsigned")
        if pinned_key is not None:
            raise Refused("the manifest is UNSIGNED, and --site-public-key demands the "
                          "site's signature")
        out.say("manifest: UNSIGNED (made without a site key): nothing proves it is the "
                "one the site made")
    files = doc.get("files")
    if not isinstance(files, dict):
        raise Refused(f"{MANIFEST} lists no files")
    listed = set(files) | {MANIFEST} | ({SIGNATURE_FILE} if out.signed else set())
    extra = sorted(p.name for p in folder.iterdir() if p.name not in listed)
    if extra:
        raise Refused(f"files the manifest does not list: {', '.join(extra)}")
    for name, entry in sorted(files.items()):
        try:
            data = (folder / name).read_bytes()
        except OSError as e:
            raise Refused(f"{name}: {e.strerror}") from None
        if not isinstance(entry, dict) or _sha256(data) != entry.get("sha256"):
            raise Refused(f"{name} is not the file the manifest lists (SHA-256 differs)")
    out.say(f"files: {len(files)} file(s), every SHA-256 as listed")
    return doc


def _evidence(folder: Path) -> list[Event]:
    """The evidence's events, in order; one its decoder refuses for its payload alone
    (a quarantined event of the record: `history.Quarantine`) comes back marked
    refused, and must lie where the manifest lays refused events out (`reaudit`)."""
    events = []
    with open(folder / EVIDENCE, "rb") as f:
        for n, line in enumerate(f, 1):
            try:
                events.append(loads(line))
            except InvalidEvent as e:
                if e.event is None:
                    raise Refused(f"{EVIDENCE} line {n}: not an event ({e})") from None
                events.append(e.event)
            except ValueError as e:
                raise Refused(f"{EVIDENCE} line {n}: not an event ({e})") from None
    return events


def reaudit(folder: Path, doc: dict[str, Any], out: Outcome) -> Case:
    """The case rebuilt from its own evidence, under its packs and registry."""
    keys: KeyRegistry | None = None
    reg = doc.get("key_registry")
    if isinstance(reg, dict):
        if reg.get("file") != KEYS_FILE:
            raise Refused("the case was checked against a key registry it does not hold")
        try:
            keys = registry_from_bytes((folder / KEYS_FILE).read_bytes(), KEYS_FILE)
        except KeyRegistryError as e:
            raise Refused(str(e)) from None
        if _sha256((folder / KEYS_FILE).read_bytes()) != reg.get("sha256"):
            raise Refused(f"{KEYS_FILE} is not the registry the case names")
    try:
        packs = [get(p["name"], p["version"]) for p in doc.get("packs", [])]
    except KeyError as e:
        raise Refused(f"this pitwatch cannot judge by the case's rule packs: {e}") from None
    mine = (schemas_dir() / "avro" / SCHEMA_FILE).read_bytes()
    if (folder / SCHEMA_FILE).read_bytes() != mine:
        out.say(f"schema: the case's {SCHEMA_FILE} is not this pitwatch's: its events' "
                "digests may not be reproduced")
    events = _evidence(folder)
    wanted = [str(r) for r in doc.get("rounds", [])]
    at = 0
    rebuilt: dict[str, Rebuilt] = {}
    for t in doc.get("evidence", {}).get("tables", []):
        tr = TableRebuild(str(t["table_id"]), wanted, pinned(*packs), keys)
        n_before, n_ctx, n_rounds, n_after = (int(t[k]) for k in
                                              ("before", "context", "rounds", "after"))
        n_rules = int(t.get("rules", 0))  # the posted rules read ahead of the context
        n_refused = int(t.get("refused", 0))  # the quarantined events, last
        n_read = n_rules + n_before + n_ctx + n_rounds + n_after
        part = events[at:at + n_read + n_refused]
        if len(part) != n_read + n_refused or any(
                ev.table_id != t["table_id"] or (ev.refused is not None) != (i >= n_read)
                for i, ev in enumerate(part)):
            raise Refused(f"{EVIDENCE} does not hold the events the manifest lays out for "
                          f"table {t['table_id']}")
        tr.held = Quarantine.of(part[n_read:])
        part = part[:n_read]
        tr.rules(part[:n_rules])
        part, at = part[n_rules:], at + n_rules
        tr.before(part[:n_before])
        for ev in part[n_before:n_before + n_ctx]:
            tr.warm(ev)
        for i, ev in enumerate(part[n_before + n_ctx:n_before + n_ctx + n_rounds]):
            tr.step(ev, at + n_before + n_ctx + i)
        for ev in part[n_before + n_ctx + n_rounds:]:
            tr.after(ev)
        rebuilt.update(tr.end(bool(t.get("finished"))))
        at += len(part) + n_refused
    if at != len(events):
        raise Refused(f"{EVIDENCE} holds {len(events) - at} event(s) the manifest does "
                      "not lay out")
    findings = doc.get("findings", [])
    stored: dict[str, list[Violation]] = {}
    for f in findings:
        rb = rebuilt.get(f["round_id"])
        if f["status"] != "rebuilt only" and rb is not None:
            rb.stored_violation_ids.add(f["violation_id"])
        if f["status"] == "stored only":
            stored.setdefault(f["round_id"], []).append(Violation.from_json(f))
    rounds = [rebuilt[r] for r in wanted if r in rebuilt]
    return Case(Selection(), "", rounds, stored, keys=keys)


def compare(doc: dict[str, Any], case: Case, out: Outcome) -> None:
    """Whether the re-audit gives the case's findings and verdicts exactly."""
    def key(f: dict[str, Any]) -> str:
        return json.dumps(f, sort_keys=True)

    want = {key(f): f for f in doc.get("findings", [])}
    got = {key(finding_json(f.violation, f.status)): finding_json(f.violation, f.status)
           for f in case.all_findings}
    missing = [want[k] for k in sorted(want.keys() - got.keys())]
    extra = [got[k] for k in sorted(got.keys() - want.keys())]
    if len(case.rounds) != len(doc.get("rounds", [])):
        out.reproduced = False
        out.say(f"rounds: {len(case.rounds)} of the case's {len(doc.get('rounds', []))} "
                "rebuilt from the evidence")
    if missing or extra:
        out.reproduced = False
        out.say(f"findings NOT REPRODUCED: {len(missing)} of the case's not found again, "
                f"{len(extra)} found that the case does not list")
        for f in missing:
            out.say(f"  - in the case only: {f['severity']} {f['code']} {f['round_id']} "
                    f"on {f['event_id']}: {f['message']}")
        for f in extra:
            out.say(f"  + re-audit only: {f['severity']} {f['code']} {f['round_id']} "
                    f"on {f['event_id']}: {f['message']}")
    else:
        stored_only = sum(f["status"] == "stored only" for f in want.values())
        out.say(f"findings REPRODUCED exactly: {len(want)} finding(s) of "
                f"{len(case.rounds)} round(s) from the case's own evidence"
                + (f" ({stored_only} stored only, as the case lists them: the store's "
                   "own rebuild did not raise them either)" if stored_only else ""))
    for name, mine in (("replay", case.replay_verdict), ("chains", case.chain_verdict),
                       ("signatures", case.signature_verdict)):
        if doc.get(name) != mine:
            out.reproduced = False
            out.say(f"{name}: the case says {doc.get(name)!r}; the evidence gives {mine!r}")
    out.say(case.chain_verdict)
    out.say(case.signature_verdict)


def verify(folder: Path, pinned_key: bytes | None = None) -> tuple[int, Outcome]:
    out = Outcome()
    try:
        doc = check_files(folder, pinned_key, out)
        case = reaudit(folder, doc, out)
        compare(doc, case, out)
    except Refused as e:
        out.say(f"REFUSED: {e}")
        return REFUSED, out
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        # a manifest that checks but is not laid out as pitwatch writes one
        out.say(f"REFUSED: {MANIFEST} is not laid out as a case manifest "
                f"({type(e).__name__}: {e})")
        return REFUSED, out
    number = doc.get("case_number")
    made_by = doc.get("made_by")
    made: dict[str, Any] = made_by if isinstance(made_by, dict) else {}
    out.lines.insert(0, f"case {number or '(no case number)'}: {len(case.rounds)} round(s), "
                     f"made {doc.get('generated_at')} by {made.get('operator')} "
                     f"on {made.get('host')} with pitwatch {made.get('version')}")
    mine = software()
    if (made.get("version"), made.get("commit")) != (mine["version"], mine["commit"]):
        out.lines.insert(1, f"re-audited with pitwatch {mine['version']}"
                         + (f" (commit {mine['commit']})" if mine["commit"] else "")
                         + f", not the case's {made.get('version')}"
                         + (f" (commit {made.get('commit')})" if made.get("commit") else ""))
    if not out.reproduced:
        return NOT_REPRODUCED, out
    return (VERIFIED if out.signed else UNSIGNED), out


class _Verify:
    name = "verify"
    help = "check a case folder from its own files: signature, hashes, findings re-audited"
    description = """\
Check a case folder written by `pitwatch investigate`, from its own files alone (no
store, on any machine): the manifest's signature by the site's key, the SHA-256 of every
file it lists (and no file it does not), then the evidence re-audited through this
pitwatch's engine, under the rule-pack versions and the key registry the case holds;
prints whether that gives the case's findings and its chain and signature verdicts
exactly.

exit status: 0 verified (signed, intact, findings reproduced); 1 REFUSED (a file changed,
missing or added, a bad or missing signature, evidence that is not what the manifest
lays out); 3 intact, but the re-audit does not give the case's findings; 4 intact and
reproduced, but the manifest is unsigned (nothing proves it is the site's).

examples:
  pitwatch verify cases/0042
  pitwatch verify cases/0042 --site-public-key site-key.pub.pem"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("case_dir", metavar="CASE_DIR", type=Path)
        p.add_argument("--site-public-key", metavar="FILE",
                       help="the site's Ed25519 public key (PEM): the manifest must be "
                       "signed by it")

    def run(self, args: argparse.Namespace) -> int:
        try:
            pinned_key = (None if args.site_public_key is None
                          else site_key.load_public(args.site_public_key))
        except site_key.SiteKeyError as e:
            print(f"pitwatch verify: {e}", file=sys.stderr)
            return 2
        if not args.case_dir.is_dir():
            print(f"pitwatch verify: {args.case_dir} is not a folder", file=sys.stderr)
            return 2
        code, out = verify(args.case_dir, pinned_key)
        for line in out.lines:  # device ids and messages: escaped for the terminal
            print(printable(line))
        print({VERIFIED: "VERIFIED", REFUSED: "REFUSED", NOT_REPRODUCED: "NOT REPRODUCED",
               UNSIGNED: "INTACT and reproduced, but UNSIGNED"}[code])
        return code


command = _Verify()
