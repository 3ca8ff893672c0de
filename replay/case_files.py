"""The case folder: report.html, report.pdf, evidence.jsonl (every event the findings
depend on), TableEvent.avsc (the Avro schema the events' digests are taken under),
keys.json (the key registry the signatures were checked against, when one was),
violations.csv, observations.json (the game-protection observations that touch the
rounds), manifest.json (provenance, the findings, every other file's SHA-256)
and manifest.sig (the site key's signature of manifest.json, when one was given)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pitwatch import site_key
from pitwatch.events.jsonl import dumps
from pitwatch.events.schema import schemas_dir
from pitwatch.spreadsheet import csv_row

from .case import (
    EVIDENCE,
    KEYS_FILE,
    MANIFEST,
    OBSERVATIONS_FILE,
    SCHEMA_FILE,
    SIGNATURE_FILE,
    Case,
    manifest,
)
from .case_html import render_html
from .present import device_time, money_involved

VIOLATION_COLUMNS = ("violation_id", "status", "severity", "code", "table_id", "round_id",
                     "seat", "hand", "event_id", "device_time_utc", "money_involved",
                     "citation", "message", "pack", "pack_version")


def evidence(case: Case) -> bytes:
    """Every event each table's rebuild read, as the devices sent it (its JSON Lines
    form, lossless: the canonical Avro bytes and digest are rebuilt from it), table by
    table in the order of record: the chains before the context, the context, the
    rounds and what closed them, the chains after (the manifest gives the counts)."""
    return b"".join(dumps(ev) + b"\n" for f in case.fed for ev in f.events())


def violations_csv(case: Case) -> bytes:
    """One row a finding; `device_time_utc` is the device time of the event the row's
    `event_id` names (for a ROUND_INCOMPLETE, the next event that showed it)."""
    ts = {ev.event_id: ev.ts for f in case.fed for ev in f.events()}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(csv_row(VIOLATION_COLUMNS))  # every cell through csv_row: devices chose ids
    for rb in case.rounds:
        events = [st.event for st in rb.steps]
        for f in case.findings(rb):
            v = f.violation
            w.writerow(csv_row([
                v.violation_id, f.status, v.severity, v.code, v.table_id, v.round_id,
                "" if v.seat is None else v.seat, "" if v.hand is None else v.hand,
                v.event_id, device_time(ts.get(v.event_id, v.detected_at)),
                money_involved(v, events, rb.state) or "", v.citation, v.message, v.pack,
                v.pack_version]))
    return buf.getvalue().encode()


def observations_json(case: Case) -> bytes:
    """The stored observations that touch the case's rounds (`Case.observations`), by
    table, subject and code; an empty list when none does."""
    doc = {"rounds": [rb.round_id for rb in case.rounds],
           "touch": "an observation touches a round when it names the round among the "
                    "rounds that carry its weight, or is about the round's table, its "
                    "dealer, or a seat session at its table that began with it",
           "observations": case.observations}
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False).encode() + b"\n"


def case_files(case: Case, key: Ed25519PrivateKey | None = None) -> dict[str, bytes]:
    """Every file of the folder by name, the manifest signed with the site's `key`."""
    from .case_pdf import render_pdf  # needs the optional extra (ReportLab)

    files = {
        "report.html": render_html(case),
        "report.pdf": render_pdf(case),
        EVIDENCE: evidence(case),
        SCHEMA_FILE: (schemas_dir() / "avro" / SCHEMA_FILE).read_bytes(),
        "violations.csv": violations_csv(case),
        OBSERVATIONS_FILE: observations_json(case),
    }
    if case.keys_file is not None:
        files[KEYS_FILE] = case.keys_file
    signed_by = None if key is None else site_key.signer(site_key.public_raw(key))
    files[MANIFEST] = manifest(case, files, signed_by)
    if key is not None:
        files[SIGNATURE_FILE] = json.dumps(site_key.sign(key, files[MANIFEST]), indent=2
                                           ).encode() + b"\n"
    return files


def write_case(case: Case, out: Path, key: Ed25519PrivateKey | None = None
               ) -> dict[str, bytes]:
    """Write the folder, which must be new or empty (a case never mixes with files it
    does not list); returns every file's bytes by name."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} is not an empty folder: give --out a new folder "
                              "(a case folder holds only its own files)")
    files = case_files(case, key)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    return files
