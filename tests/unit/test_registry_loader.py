"""One registry loader for every command (issue 35, "Fails closed": "The registry is
pinned by hash in the store and signed by the site's key"; docs/events.md, "Signed
checkpoints"): the audit, the worker, replay, investigate and reaudit find the registry
the same way (--keys, $PITWATCH_KEYS, beside the input, the one pinned in the store),
refuse one whose site signature does not verify when the site's public key is given,
and say "NOT CHECKED" of its site signature when it is not."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from pitwatch.events.keys import REGISTRY_DOMAIN, KeyRegistryError
from pitwatch.processors.worker import worker_registry
from pitwatch.registry import SITE_NOT_CHECKED, SITE_VERIFIED, load_registry
from pitwatch.store import registry_pin
from pitwatch.store.embedded import EmbeddedStore

TAMPERED = "is not the site key's signature of this registry: refused"


def _pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PITWATCH_KEYS", "PITWATCH_SITE_PUBLIC_KEY")}
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False, env=env)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A floor audited into the store `d` with its registry signed by the site key
    (floor/keys.json and .sig), the site's public key (site.pub.pem), and a tampered
    copy of the registry with the original signature beside it (tampered.json)."""
    d = tmp_path_factory.mktemp("site")
    r = _pitwatch("simulate", "--tables", "1", "--rounds", "3", "--seed", "5", "--quiet",
                  "--out", "floor", cwd=d)
    assert r.returncode == 0, r.stderr
    key = Ed25519PrivateKey.generate()
    (d / "site.pub.pem").write_bytes(key.public_key().public_bytes(
        Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    raw = (d / "floor" / "keys.json").read_bytes()
    sig = key.sign(REGISTRY_DOMAIN + raw)
    (d / "floor" / "keys.json.sig").write_bytes(sig)
    doc = orjson.loads(raw)
    doc["unsigned_devices"] = ["AC-BJ-09-shoe"]  # one more device let go unsigned
    (d / "tampered.json").write_bytes(orjson.dumps(doc))
    (d / "tampered.json.sig").write_bytes(sig)
    a = _pitwatch("audit", "floor", "--data", "d", "--quiet", "--jobs", "1",
                  "--site-public-key", "site.pub.pem", cwd=d)
    assert a.returncode == 0, a.stderr
    assert SITE_VERIFIED in a.stdout
    return d


# --- the loader --------------------------------------------------------------------


def test_the_loader_checks_the_site_signature_only_when_given_the_site_key(
        site: Path) -> None:
    pub = str(site / "site.pub.pem")
    ok = load_registry(str(site / "floor" / "keys.json"), site_public_key_file=pub)
    assert ok.site_checked and ok.lines()[1] == SITE_VERIFIED
    with pytest.raises(KeyRegistryError, match=TAMPERED):
        load_registry(str(site / "tampered.json"), site_public_key_file=pub)
    unchecked = load_registry(str(site / "tampered.json"))
    assert unchecked.registry is not None and not unchecked.site_checked
    assert unchecked.lines() == [
        f"key registry: {site / 'tampered.json'}, sha256 "
        f"{hashlib.sha256((site / 'tampered.json').read_bytes()).hexdigest()}",
        SITE_NOT_CHECKED]
    assert load_registry(None).lines() == [
        "signatures NOT CHECKED: no key registry (--keys FILE, $PITWATCH_KEYS, keys.json "
        "beside the input, or one pinned in the store)"]


def test_a_file_beside_the_input_is_not_the_stores_unless_named(tmp_path: Path,
                                                               site: Path) -> None:
    pinned = registry_pin.Pinned((site / "floor" / "keys.json").read_bytes(), None, 1)
    floor = tmp_path / "floor"
    floor.mkdir()
    (floor / "keys.json").write_bytes((site / "tampered.json").read_bytes())
    with pytest.raises(KeyRegistryError, match=r"beside the input .* is not the key "
                       r"registry the store S was audited against"):
        load_registry(None, inputs=[floor], pinned=pinned, store_name="the store S")
    named = load_registry(str(floor / "keys.json"), inputs=[floor], pinned=pinned)
    assert named.where == str(floor / "keys.json") and not named.from_store
    (floor / "keys.json").unlink()
    kept = load_registry(None, inputs=[floor], pinned=pinned, store_name="the store S")
    assert kept.from_store and kept.where == "the store S's pinned registry"
    assert kept.raw == pinned.raw


# --- the pin in the store ----------------------------------------------------------


def test_the_store_pins_its_registry_in_a_table_and_moves_an_old_file_pin_in(
        tmp_path: Path, site: Path) -> None:
    """"The registry is pinned by hash in the store": a store made when the pin was a
    file (DATA/keys.json, its signature beside) has it moved into the table on open,
    the file kept as keys.json.migrated: nothing lost."""
    raw = (site / "floor" / "keys.json").read_bytes()
    sig = (site / "floor" / "keys.json.sig").read_bytes()
    data = tmp_path / "old"
    store = EmbeddedStore(data)
    try:
        store.setup()
        (data / "keys.json").write_bytes(raw)
        (data / "keys.json.sig").write_bytes(sig)
        got = registry_pin.read(store, data)
        assert got is not None and (got.raw, got.signature) == (raw, sig)
        assert got.sha256 == hashlib.sha256(raw).hexdigest()
        assert not (data / "keys.json").exists()
        assert (data / "keys.json.migrated").read_bytes() == raw
        assert (data / "keys.json.sig.migrated").read_bytes() == sig
        assert registry_pin.read(store, data) == got  # once
        assert registry_pin.pin(store, raw, sig) is None  # the same: nothing written
        other = (site / "tampered.json").read_bytes()
        assert registry_pin.pin(store, other) == got.sha256  # a change names the old
        now = registry_pin.current(store)
        assert now is not None and (now.raw, now.signature) == (other, None)
        assert registry_pin.pin(store, raw, sig) == hashlib.sha256(other).hexdigest()
        back = registry_pin.current(store)
        assert back is not None and back.raw == raw and back.version > now.version
    finally:
        store.close()


# --- each command ------------------------------------------------------------------


@pytest.mark.parametrize("command", [("replay", "AC-BJ-01-999999"),
                                     ("investigate", "AC-BJ-01-999999", "--out", "case"),
                                     ("reaudit", "AC-BJ-01-999999", "--pack",
                                      "nj-blackjack@2024.09-3")])
def test_each_replay_command_refuses_a_tampered_registry_and_says_when_it_did_not_check(
        site: Path, command: tuple[str, ...]) -> None:
    name = command[0]
    refused = _pitwatch(*command, "--data", "d", "--keys", "tampered.json",
                        "--site-public-key", "site.pub.pem", cwd=site)
    assert refused.returncode == 2, refused.stderr
    assert f"pitwatch {name}: tampered.json: tampered.json.sig {TAMPERED}" in refused.stderr
    unchecked = _pitwatch(*command, "--data", "d", "--keys", "tampered.json", cwd=site)
    assert f"pitwatch {name}: {SITE_NOT_CHECKED}" in unchecked.stderr
    sha = hashlib.sha256((site / "floor" / "keys.json").read_bytes()).hexdigest()
    pinned = _pitwatch(*command, "--data", "d", "--site-public-key", "site.pub.pem",
                       cwd=site)  # none named: the store's, signed
    assert (f"pitwatch {name}: key registry: the store d's pinned registry, sha256 {sha}"
            in pinned.stderr)
    assert f"pitwatch {name}: {SITE_VERIFIED}" in pinned.stderr


def test_the_audit_refuses_a_tampered_registry_and_says_when_it_did_not_check(
        site: Path) -> None:
    refused = _pitwatch("audit", "floor", "--no-store", "--quiet", "--keys",
                        "tampered.json", "--site-public-key", "site.pub.pem", cwd=site)
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"pitwatch audit: tampered.json: tampered.json.sig {TAMPERED}" in refused.stderr
    unchecked = _pitwatch("audit", "floor", "--no-store", "--quiet", "--keys",
                          "tampered.json", cwd=site)
    assert unchecked.returncode == 0, unchecked.stderr
    assert SITE_NOT_CHECKED in unchecked.stdout


def _worker_args(site: Path, keys: str | None, pub: str | None) -> argparse.Namespace:
    return argparse.Namespace(keys=keys, site_public_key=pub, require_signatures=False,
                              clickhouse="127.0.0.1:19000", clickhouse_db="pitwatch",
                              data_dir=str(site / "worker"))


def test_the_worker_refuses_a_tampered_registry_and_uses_the_stores_pin(
        site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = str(site / "site.pub.pem")
    store = EmbeddedStore(site / "w")  # the worker's store: the same table
    try:
        store.setup()
        with pytest.raises(KeyRegistryError, match=TAMPERED):
            worker_registry(_worker_args(site, str(site / "tampered.json"), pub), store)
        assert registry_pin.current(store) is None  # nothing refused is pinned
        named = worker_registry(_worker_args(site, str(site / "tampered.json"), None), store)
        assert named is not None and named.raw == (site / "tampered.json").read_bytes()
        assert f"pitwatch worker: {SITE_NOT_CHECKED}" in capsys.readouterr().err
        pinned = registry_pin.current(store)
        assert pinned is not None and pinned.raw == (site / "tampered.json").read_bytes()
        # none named: the store's pin (pinned with the signature beside it, which is not
        # the tampered registry's), and its site signature is checked
        with pytest.raises(KeyRegistryError, match=re.escape(
                "the store 127.0.0.1:19000/pitwatch's pinned registry: the signature "
                f"pinned with it {TAMPERED}")):
            worker_registry(_worker_args(site, None, pub), store)
        signed = site / "floor" / "keys.json"
        worker_registry(_worker_args(site, str(signed), None), store)
        assert (f"key registry CHANGED since the store's last pin (it was sha256 "
                f"{pinned.sha256}, now sha256 "
                f"{hashlib.sha256(signed.read_bytes()).hexdigest()})"
                ) in capsys.readouterr().err
        got = worker_registry(_worker_args(site, None, pub), store)
        assert got is not None and got.raw == signed.read_bytes()
        assert f"pitwatch worker: {SITE_VERIFIED}" in capsys.readouterr().err
    finally:
        store.close()
