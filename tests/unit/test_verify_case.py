"""`pitwatch verify CASE_DIR` (issue 35, "Case folders a third party verifies"): "on
another machine with no store, re-audits the case from its own files, checks every
signature and the manifest, and prints whether the case's findings are reproduced
exactly"; it "refuses a folder where one byte of evidence, or the manifest, was
changed"; "--generated-at TIME makes a re-run byte-identical"; "--out refuses a
non-empty folder". Each case here is made by the commands a site runs (simulate, audit
with the key registry, investigate with the site key), copied to a fresh folder away
from the store, and verified there."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from pitwatch.replay.present import device_time
from pitwatch.store.embedded import EmbeddedStore

#: The kinds of round a case must verify: money paid wrongly, a dealer's wrong draw
#: (the shoe's history and posted rules behind it), a round the next one cut short
#: (the next event it cites), too many copies of a card (the shoe since ShoeLoaded),
#: events lost from a signed chain, a side wager, a void wager.
KINDS = ["PAYOUT_WRONG", "DEALER_DREW_WRONG", "ROUND_INCOMPLETE", "CARD_COUNT_EXCEEDED",
         "EVENTS_LOST", "SIDE_WAGER_SETTLEMENT_WRONG", "WAGER_OUTSIDE_LIMITS",
         "SURRENDER_SETTLEMENT_WRONG"]
GENERATED = "2026-12-01T09:30:00Z"


def _pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PITWATCH_KEYS", "PITWATCH_SITE_KEY")}
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A signed floor with injected faults, audited with its registry into an embedded
    store, and the site's key pair (site-key.pem, 0600; site-key.pub.pem)."""
    d = tmp_path_factory.mktemp("site")
    r = _pitwatch("simulate", "--tables", "3", "--rounds", "30", "--seed", "12",
                  "--inject", "0.25", "--out", "floor", cwd=d)
    assert r.returncode == 0, r.stderr
    r = _pitwatch("audit", "floor", "--data", "data", "--keys", "floor/keys.json",
                  "--format", "jsonl", cwd=d)
    assert r.returncode in (0, 1), r.stderr
    key = Ed25519PrivateKey.generate()
    pem = d / "site-key.pem"
    pem.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    pem.chmod(0o600)
    (d / "site-key.pub.pem").write_bytes(key.public_key().public_bytes(
        Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    yield d


def _rounds(site: Path) -> dict[str, str]:
    """A round of each kind the floor has: code -> round id."""
    store = EmbeddedStore(site / "data")
    try:
        rows = store.query("SELECT code, min(round_id) AS r FROM violations FINAL WHERE "
                           "round_id != '' AND has({k:Array(String)}, code) GROUP BY code",
                           {"k": KINDS})
    finally:
        store.close()
    return {r["code"]: r["r"] for r in rows}


def _investigate(site: Path, round_id: str, out: Path, *extra: str
                 ) -> subprocess.CompletedProcess[str]:
    return _pitwatch("investigate", round_id, "--data", "data", "--keys", "floor/keys.json",
                     "--case-number", "PW-2026-0042", "--generated-at", GENERATED,
                     "--out", str(out), *extra, cwd=site)


def _verify(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Verify from a folder with no store in it or above it."""
    return _pitwatch("verify", str(folder), *extra, cwd=folder.parent)


def test_verify_reproduces_five_kinds_of_round_from_a_copied_folder(
        site: Path, tmp_path: Path) -> None:
    kinds = _rounds(site)
    assert len(kinds) >= 5, kinds
    for code, rid in sorted(kinds.items()):
        made = _investigate(site, rid, site / f"case-{code}", "--site-key", "site-key.pem")
        assert made.returncode == 0, made.stderr
        fresh = tmp_path / code / "case"
        fresh.parent.mkdir()
        shutil.copytree(site / f"case-{code}", fresh)
        assert not (fresh.parent / "data").exists()
        r = _verify(fresh, "--site-public-key", str(site / "site-key.pub.pem"))
        assert r.returncode == 0, (code, r.stdout, r.stderr)
        assert "findings REPRODUCED exactly" in r.stdout
        assert "signed by site key" in r.stdout and r.stdout.rstrip().endswith("VERIFIED")
        m = json.loads((fresh / "manifest.json").read_text())
        assert code in {f["code"] for f in m["findings"]}


def test_the_evidence_carries_what_the_findings_depend_on(site: Path) -> None:
    kinds = _rounds(site)
    rid = kinds["CARD_COUNT_EXCEEDED"]
    out = site / "case-cards"
    assert _investigate(site, rid, out).returncode == 0
    m = json.loads((out / "manifest.json").read_text())
    events = [json.loads(x) for x in (out / "evidence.jsonl").read_text().splitlines()]
    types = [e["type"] for e in events]
    # the posted rules and the shoe behind the card counts, before the round's own events
    assert "TableOpened" in types and "ShoeLoaded" in types
    first = next(i for i, e in enumerate(events) if e["round_id"] == rid)
    assert types.index("TableOpened") < first and types.index("ShoeLoaded") < first
    # each device's chain from its first event (seq 1) or back to a checkpoint's head
    heads = {(e["device_id"], e["head_seq"]) for e in events if e["type"] == "Checkpoint"}
    first_seq: dict[str, int] = {}
    for e in events:
        first_seq.setdefault(e["device_id"], e["seq"])
    assert all(s == 1 or (d, s) in heads for d, s in first_seq.items()), first_seq
    table = m["evidence"]["tables"][0]
    assert sum(table.get(k, 0) for k in ("rules", "before", "context", "rounds", "after")) \
        == len(events)
    # the schema, the registry and the pack versions are in the folder
    assert (out / "TableEvent.avsc").read_bytes() == (
        Path(__file__).parents[2] / "schemas" / "avro" / "TableEvent.avsc").read_bytes()
    assert m["key_registry"]["file"] == "keys.json"
    assert (out / "keys.json").read_bytes() == (site / "floor" / "keys.json").read_bytes()
    assert m["packs"] and all(p["version"] for p in m["packs"])
    # ROUND_INCOMPLETE's next event is there, and the CSV's time is that event's
    rid = kinds["ROUND_INCOMPLETE"]
    out = site / "case-incomplete"
    assert _investigate(site, rid, out).returncode == 0
    ts = {json.loads(x)["event_id"]: json.loads(x)["ts"]
          for x in (out / "evidence.jsonl").read_text().splitlines()}
    rows = [r for r in csv.DictReader((out / "violations.csv").open())
            if r["code"] == "ROUND_INCOMPLETE"]
    assert rows
    for r in rows:
        assert r["event_id"] in ts
        assert r["device_time_utc"] == device_time(ts[r["event_id"]])


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_verify_refuses_one_byte_changed_in_the_evidence_or_the_manifest(
        site: Path, tmp_path: Path) -> None:
    rid = _rounds(site)["PAYOUT_WRONG"]
    case = tmp_path / "made" / "case"
    case.parent.mkdir()
    assert _investigate(site, rid, case, "--site-key", "site-key.pem").returncode == 0
    pub = str(site / "site-key.pub.pem")

    evidence = tmp_path / "ev" / "case"
    shutil.copytree(case, evidence)
    text = (evidence / "evidence.jsonl").read_bytes()
    _flip(evidence / "evidence.jsonl", text.index(b'"amount":') + 10)
    r = _verify(evidence, "--site-public-key", pub)
    assert r.returncode == 1 and "REFUSED" in r.stdout and "evidence.jsonl" in r.stdout

    # the forger rewrites the manifest's entry for the changed file too: the site's
    # signature no longer matches
    m = json.loads((evidence / "manifest.json").read_text())
    m["files"]["evidence.jsonl"]["sha256"] = hashlib.sha256(
        (evidence / "evidence.jsonl").read_bytes()).hexdigest()
    (evidence / "manifest.json").write_text(json.dumps(m, indent=2, ensure_ascii=False)
                                            + "\n")
    r = _verify(evidence, "--site-public-key", pub)
    assert r.returncode == 1 and "does not match the manifest" in r.stdout

    manifest = tmp_path / "m" / "case"
    shutil.copytree(case, manifest)
    raw = (manifest / "manifest.json").read_bytes()
    _flip(manifest / "manifest.json", raw.index(b"PW-2026-0042") + 3)
    r = _verify(manifest, "--site-public-key", pub)
    assert r.returncode == 1 and "REFUSED" in r.stdout

    # a manifest re-signed with another key passes only for whoever does not pin the
    # site's key
    other = Ed25519PrivateKey.generate()
    pem = tmp_path / "other.pem"
    pem.write_bytes(other.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    pem.chmod(0o600)
    forged = tmp_path / "forged" / "case"
    forged.parent.mkdir()
    assert _investigate(site, rid, forged, "--site-key", str(pem)).returncode == 0
    r = _verify(forged, "--site-public-key", pub)
    assert r.returncode == 1 and "not the site's key" in r.stdout

    # a file added beside the case
    extra = tmp_path / "x" / "case"
    shutil.copytree(case, extra)
    (extra / "notes.txt").write_text("unrelated\n")
    r = _verify(extra)
    assert r.returncode == 1 and "notes.txt" in r.stdout

    # untouched, it verifies
    r = _verify(case, "--site-public-key", pub)
    assert r.returncode == 0, r.stdout


def test_an_unsigned_case_says_so_and_never_verifies_green(site: Path, tmp_path: Path) -> None:
    rid = _rounds(site)["PAYOUT_WRONG"]
    case = tmp_path / "u" / "case"
    case.parent.mkdir()
    made = _investigate(site, rid, case)
    assert made.returncode == 0 and "manifest UNSIGNED" in made.stdout
    m = json.loads((case / "manifest.json").read_text())
    assert m["signed_by"].startswith("UNSIGNED")
    assert not (case / "manifest.sig").exists()
    r = _verify(case)
    assert r.returncode == 4 and "UNSIGNED" in r.stdout
    assert "findings REPRODUCED exactly" in r.stdout
    r = _verify(case, "--site-public-key", str(site / "site-key.pub.pem"))
    assert r.returncode == 1 and "UNSIGNED" in r.stdout


def test_a_rerun_with_generated_at_is_byte_identical_and_out_must_be_empty(
        site: Path, tmp_path: Path) -> None:
    rid = _rounds(site)["DEALER_DREW_WRONG"]
    out = tmp_path / "case"
    first = _investigate(site, rid, out, "--site-key", "site-key.pem")
    assert first.returncode == 0, first.stderr
    again = _investigate(site, rid, out, "--site-key", "site-key.pem")
    assert again.returncode == 2 and "not an empty folder" in again.stderr
    a = {p.name: p.read_bytes() for p in out.iterdir()}
    shutil.rmtree(out)
    assert _investigate(site, rid, out, "--site-key", "site-key.pem").returncode == 0
    b = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(a) == sorted(b) and {"report.html", "report.pdf", "manifest.json",
                                       "manifest.sig"} <= set(a)
    for name in a:
        assert a[name] == b[name], name
    m = json.loads(a["manifest.json"])
    assert m["generated_at"] == "2026-12-01T09:30:00.000Z"
    assert m["case_number"] == "PW-2026-0042"
    made = m["made_by"]
    assert made["operator"] and made["host"] and made["version"]
    assert made["command_line"].startswith("pitwatch investigate " + rid)
    assert m["store"]["identity"].startswith("chdb:") and len(m["store"]["input_sha256"]) == 64
    assert set(m["files"]) == set(a) - {"manifest.json", "manifest.sig"}


def test_hold_never_stands_beside_a_gap_in_a_signed_chain(site: Path, tmp_path: Path) -> None:
    """"a broken or gapped signed chain is FAIL (listing the events no signature
    covers); 'signatures HOLD' never stands beside a broken chain or a HIGH record
    finding". Both sides: a clean round HOLDs."""
    kinds = _rounds(site)
    case = tmp_path / "gap"
    made = _investigate(site, kinds["EVENTS_LOST"], case)
    assert made.returncode == 0, made.stderr
    m = json.loads((case / "manifest.json").read_text())
    assert m["signatures"].startswith("signatures FAIL")
    assert "HOLD" not in m["signatures"] and "HOLD" not in made.stdout
    assert "missing" in m["signatures"] and "EVENTS_LOST" in m["signatures"]
    html = (case / "report.html").read_text()
    assert "signatures HOLD" not in html
    if "no signature covers" in m["signatures"]:  # each such event named in the report
        assert "events no signature covers" in html
    store = EmbeddedStore(site / "data")
    try:
        clean = store.query("SELECT round_id FROM rounds FINAL WHERE complete = 1 AND "
                            "round_id NOT IN (SELECT round_id FROM violations FINAL) "
                            "ORDER BY round_id LIMIT 1")[0]["round_id"]
    finally:
        store.close()
    ok = tmp_path / "clean"
    assert _investigate(site, clean, ok).returncode == 0
    assert json.loads((ok / "manifest.json").read_text())["signatures"].startswith(
        "signatures HOLD")
    # none named: the registry pinned in the store is checked, never an unchecked case
    pinned = _pitwatch("investigate", clean, "--data", "data", "--generated-at", GENERATED,
                       "--out", str(tmp_path / "pinned"), cwd=site)
    assert pinned.returncode == 0, pinned.stderr
    assert "key registry: the store data's pinned registry" in pinned.stderr
    assert "signatures NOT CHECKED" not in pinned.stdout
    # a store audited without a registry: NOT CHECKED, never a green case
    shutil.copytree(site / "floor", tmp_path / "floor",
                    ignore=shutil.ignore_patterns("keys.json*"))
    a = _pitwatch("audit", "floor", "--data", "bare-data", "--quiet", cwd=tmp_path)
    assert a.returncode in (0, 1), a.stderr
    bare = tmp_path / "bare"
    r = _pitwatch("investigate", clean, "--data", "bare-data", "--generated-at", GENERATED,
                  "--out", str(bare), cwd=tmp_path)
    assert r.returncode == 0 and "signatures NOT CHECKED" in r.stdout
    assert 'class="ok">signatures' not in (bare / "report.html").read_text()


def test_findings_the_evidence_does_not_give_are_not_reproduced(
        site: Path, tmp_path: Path) -> None:
    """The comparison's other side: a manifest (unsigned, so it can be edited unseen)
    whose findings are not what its evidence gives is NOT REPRODUCED, each difference
    listed."""
    rid = _rounds(site)["PAYOUT_WRONG"]
    case = tmp_path / "u" / "case"
    case.parent.mkdir()
    assert _investigate(site, rid, case).returncode == 0
    m = json.loads((case / "manifest.json").read_text())
    dropped = m["findings"].pop(0)
    (case / "manifest.json").write_text(json.dumps(m, indent=2, ensure_ascii=False) + "\n")
    r = _verify(case)
    assert r.returncode == 3 and "findings NOT REPRODUCED" in r.stdout
    assert f"+ re-audit only: {dropped['severity']} {dropped['code']}" in r.stdout
