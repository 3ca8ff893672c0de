"""Signatures in investigations (docs/events.md, "Signed checkpoints": "A regulator or
auditor who holds the registry can check a signature and cannot make one"): `pitwatch
replay` and `pitwatch investigate` take the key registry (`--keys`, PITWATCH_KEYS),
rebuild with it what the audit found, and say whether the record's signatures hold; the
case manifest names the registry by its SHA-256. `pitwatch produce --keys-out` writes
the simulated floor's registry for the worker."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import CardDealt
from pitwatch.producers.devices import device_key, restarted
from pitwatch.producers.produce import command as produce
from pitwatch.producers.simulate import Floor
from pitwatch.producers.table import secret
from pitwatch.replay.case import stored_only
from pitwatch.replay.cli import show
from pitwatch.replay.rebuild import rebuild, signature_verdict
from pitwatch.store.embedded import EmbeddedStore


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A floor with forgeries (an amount changed, the chain recomputed), audited with
    its registry into an embedded store: (store dir, registry file)."""
    d = tmp_path_factory.mktemp("signed")
    f = Floor(4, 4, seed=5, inject=0.3, jurisdiction="NJ", game="BLACKJACK")
    events = list(f.events())
    keys = f.registry()
    assert keys is not None
    keys.write(d / "keys.json")
    store = EmbeddedStore(d / "data")
    store.setup()
    audit_events(events, store=store, keys=keys)
    store.close()
    yield d / "data", d / "keys.json"


def _rounds(data: Path) -> tuple[str, str]:
    """A round with a SIGNATURE_INVALID stored, and one with no finding at all."""
    store = EmbeddedStore(data)
    try:
        forged = store.query("SELECT round_id FROM violations FINAL WHERE code = "
                             "'SIGNATURE_INVALID' AND round_id != '' ORDER BY round_id LIMIT 1")
        clean = store.query("SELECT round_id FROM rounds FINAL WHERE round_id NOT IN "
                            "(SELECT round_id FROM violations FINAL) ORDER BY round_id LIMIT 1")
    finally:
        store.close()
    assert forged and clean
    return forged[0]["round_id"], clean[0]["round_id"]


def test_a_forged_round_rebuilt_with_the_registry_fails_its_signatures(
        signed: tuple[Path, Path]) -> None:
    data, keys_file = signed
    keys = KeyRegistry.load(keys_file)
    forged, clean = _rounds(data)
    store = EmbeddedStore(data)
    try:
        with_keys = rebuild(store, forged, keys=keys)
        without = rebuild(store, forged)
        ok = rebuild(store, clean, keys=keys)
    finally:
        store.close()
    assert with_keys.matches_store and with_keys.bad_signatures
    assert signature_verdict([with_keys], keys).startswith("signatures FAIL")
    assert forged in signature_verdict([with_keys], keys)
    # without the registry the stored SIGNATURE_INVALID is not rebuilt, and it says why
    assert not without.matches_store and not without.bad_signatures
    assert signature_verdict([without], None).startswith("signatures NOT CHECKED")
    assert ok.matches_store and ok.checkpoints > 0
    assert signature_verdict([ok], keys).startswith(
        f"signatures HOLD: {ok.checkpoints} checkpoint(s) of ")


def _pitwatch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def test_replay_and_investigate_take_the_registry_and_say_so(
        signed: tuple[Path, Path], tmp_path: Path) -> None:
    data, keys_file = signed
    forged, clean = _rounds(data)
    r = _pitwatch("replay", forged, "--data", str(data), "--keys", str(keys_file))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "signatures FAIL" in r.stdout and "SIGNATURE_INVALID" in r.stdout
    r = _pitwatch("replay", clean, "--data", str(data), env={"PITWATCH_KEYS": str(keys_file)})
    assert r.returncode == 0 and "signatures HOLD" in r.stdout, r.stdout + r.stderr
    r = _pitwatch("replay", forged, "--data", str(data))  # the audit had keys: it differs
    assert r.returncode == 3 and "signatures NOT CHECKED" in r.stdout
    (tmp_path / "bad.json").write_text("{")
    r = _pitwatch("replay", forged, "--data", str(data), "--keys", str(tmp_path / "bad.json"))
    assert r.returncode == 2 and "not JSON" in r.stderr

    out = tmp_path / "case"
    r = _pitwatch("investigate", "--code", "SIGNATURE_INVALID", "--data", str(data),
                  "--keys", str(keys_file), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["key_registry"]["sha256"] == hashlib.sha256(
        keys_file.read_bytes()).hexdigest()
    assert manifest["signatures"].startswith("signatures FAIL") and forged in \
        manifest["signatures"]
    assert manifest["signatures"] in (out / "report.html").read_text()
    r = _pitwatch("investigate", clean, "--data", str(data), "--out", str(tmp_path / "c2"))
    manifest = json.loads((tmp_path / "c2" / "manifest.json").read_text())
    assert manifest["key_registry"] is None
    assert manifest["signatures"].startswith("signatures NOT CHECKED")


def test_produce_writes_the_floors_registry(tmp_path: Path) -> None:
    """--keys-out writes the simulated devices' public keys: the same registry
    `pitwatch simulate` writes for the same floor; nothing without it."""
    p = argparse.ArgumentParser()
    produce.configure(p)
    args = p.parse_args(["--tables", "2", "--rounds", "3", "--seed", "9",
                         "--keys-out", str(tmp_path / "k.json")])
    assert produce.write_keys(args) == str(tmp_path / "k.json")
    want = Floor(2, 3, 9).registry()
    assert want is not None
    assert KeyRegistry.load(tmp_path / "k.json").to_json() == want.to_json()
    assert produce.write_keys(p.parse_args(["--tables", "2"])) is None
    with pytest.raises(ValueError, match="own registry"):
        produce.write_keys(p.parse_args(["floor/", "--keys-out", str(tmp_path / "x.json")]))


def test_a_gap_in_a_signed_chain_fails_and_names_what_no_signature_covers(
        tmp_path: Path) -> None:
    """"a broken or gapped signed chain is FAIL (listing the events no signature
    covers); 'signatures HOLD' never stands beside a broken chain or a HIGH record
    finding". One shoe card deleted from the middle of a clean signed round: the
    checkpoint after it covers nothing before the gap."""
    f = Floor(1, 6, seed=3, jurisdiction="NJ", game="BLACKJACK")
    events = list(f.events())
    keys = f.registry()
    assert keys is not None
    rid = [e.round_id for e in events if e.round_id is not None][-1]
    cards = [e for e in events if e.round_id == rid and type(e.payload) is CardDealt]
    gone = cards[len(cards) // 2]
    store = EmbeddedStore(tmp_path / "data")
    store.setup()
    audit_events([e for e in events if e is not gone], store=store, keys=keys)
    try:
        rb = rebuild(store, rid, keys=keys)
        missing = stored_only(store, [rb]).get(rid, [])
        unsigned = rebuild(store, rid)
    finally:
        store.close()
    chain = rb.chains[gone.device_id]
    assert chain.breaks and f"seq {gone.seq} missing" in chain.verdict
    assert chain.uncovered and max(chain.uncovered) < gone.seq
    verdict = signature_verdict([rb], keys, missing)
    assert verdict.startswith("signatures FAIL") and "HOLD" not in verdict
    assert f"no signature covers {gone.device_id} seq" in verdict
    assert chain.uncovered_ids[0] in verdict
    out = io.StringIO()
    show(rb, out, keys, missing)
    assert "signatures HOLD" not in out.getvalue()
    # without the registry nothing says the signatures hold either
    assert signature_verdict([unsigned], None).startswith("signatures NOT CHECKED")


def test_replay_lists_the_findings_stored_but_not_rebuilt(signed: tuple[Path, Path]) -> None:
    """"replay lists findings that were stored but not rebuilt": without the registry
    the audit had, its SIGNATURE_INVALID is stored and not rebuilt, and replay says so."""
    data, _ = signed
    forged, _ = _rounds(data)
    r = _pitwatch("replay", forged, "--data", str(data))
    assert r.returncode == 3
    assert "?? stored, NOT rebuilt: HIGH SIGNATURE_INVALID" in r.stdout


def test_require_signatures_refuses_to_run_without_a_registry(
        signed: tuple[Path, Path], tmp_path: Path) -> None:
    """"Running without one prints 'signatures NOT CHECKED' in every summary, case and
    exit code": --require-signatures turns a missing registry into exit 2."""
    data, keys_file = signed
    _, clean = _rounds(data)
    env = {"PITWATCH_KEYS": ""}
    r = _pitwatch("replay", clean, "--data", str(data), "--require-signatures", env=env)
    assert r.returncode == 2 and "--require-signatures: no key registry" in r.stderr
    r = _pitwatch("investigate", clean, "--data", str(data), "--require-signatures",
                  "--out", str(tmp_path / "c"), env=env)
    assert r.returncode == 2 and not (tmp_path / "c").exists()
    r = _pitwatch("replay", clean, "--data", str(data), "--require-signatures", "--keys",
                  str(keys_file), env=env)
    assert r.returncode == 0 and "signatures HOLD" in r.stdout


def test_a_restarted_device_starts_a_new_chain_that_its_signatures_cover(
        tmp_path: Path) -> None:
    """A device that restarts (seq 1 again, prev_digest null: docs/events.md, a new
    chain) and signs its new chain: the round it restarts in says so, a break beside
    which nothing HOLDs; the next round's events are covered by the new chain's
    checkpoints, and HOLD."""
    f = Floor(1, 8, seed=4, jurisdiction="NJ", game="BLACKJACK")
    events = list(f.events())
    keys = f.registry()
    assert keys is not None
    shoe = next(e.device_id for e in events if type(e.payload) is CardDealt)
    rounds = list(dict.fromkeys(e.round_id for e in events if e.round_id is not None))
    at = [e for e in events if e.round_id == rounds[3] and e.device_id == shoe
          and type(e.payload) is CardDealt][2]
    sent = restarted(events, shoe, at.event_id, device_key(secret(f.seed), shoe))
    store = EmbeddedStore(tmp_path / "data")
    store.setup()
    audit_events(sent, store=store, keys=keys)
    try:
        cut = rebuild(store, rounds[3], keys=keys)
        after = rebuild(store, rounds[4], keys=keys)
    finally:
        store.close()
    assert "restarted: seq 1 again, a new chain" in cut.chains[shoe].verdict
    assert "sent again" not in cut.chains[shoe].verdict
    assert signature_verdict([cut], keys).startswith("signatures FAIL")
    assert after.chains[shoe].verdict.startswith("VERIFIED"), after.chains[shoe].verdict
    assert signature_verdict([after], keys).startswith("signatures HOLD")
