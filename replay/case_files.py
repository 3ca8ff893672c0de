"""The case folder: report.html, report.pdf, evidence.jsonl, violations.csv and
manifest.json (the SHA-256 of every other file, the selection, the packs, the software
version, the store and when it was made)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from pitwatch.events.jsonl import dumps

from .case import Case, manifest
from .case_html import render_html
from .present import device_time

VIOLATION_COLUMNS = ("violation_id", "status", "severity", "code", "table_id", "round_id",
                     "seat", "hand", "event_id", "device_time_utc", "citation", "message",
                     "pack", "pack_version")


def evidence(case: Case) -> bytes:
    """Every event of the selected rounds as the devices sent it (its JSON Lines form,
    lossless: the canonical Avro bytes and digest are rebuilt from it), in the order of
    record."""
    return b"".join(dumps(st.event) + b"\n" for rb in case.rounds for st in rb.steps)


def violations_csv(case: Case) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(VIOLATION_COLUMNS)
    for rb in case.rounds:
        for f in case.findings(rb):
            v = f.violation
            w.writerow([v.violation_id, f.status, v.severity, v.code, v.table_id, v.round_id,
                        "" if v.seat is None else v.seat, "" if v.hand is None else v.hand,
                        v.event_id, device_time(v.detected_at), v.citation, v.message,
                        v.pack, v.pack_version])
    return buf.getvalue().encode()


def write_case(case: Case, out: Path) -> dict[str, bytes]:
    """Write the folder; returns every file's bytes by name."""
    from .case_pdf import render_pdf  # needs the optional extra (ReportLab)

    files = {
        "report.html": render_html(case),
        "report.pdf": render_pdf(case),
        "evidence.jsonl": evidence(case),
        "violations.csv": violations_csv(case),
    }
    files["manifest.json"] = manifest(case, files)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    return files
