"""The key registry refuses what cannot be a registry (issue 35, item 6): "Registry
validation refuses until_seq < from_seq and duplicate key_ids with clear errors", and
the audit prints "the registry's SHA-256"."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pitwatch.events.keys import KeyRegistry, KeyRegistryError, public_bytes, registry_path


def _pub() -> str:
    return base64.b64encode(public_bytes(Ed25519PrivateKey.generate())).decode()


def _registry(devices: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"version": 1, "algorithm": "Ed25519", "devices": devices}


def _key(key_id: str, from_seq: int = 1, until_seq: int | None = None) -> dict[str, Any]:
    return {"key_id": key_id, "public_key": _pub(), "from_seq": from_seq,
            "until_seq": until_seq}


def test_until_seq_before_from_seq_is_refused() -> None:
    bad = _registry({"T-rfid": [_key("T-rfid/1", 50, 10)]})
    with pytest.raises(KeyRegistryError, match=r"T-rfid: key 'T-rfid/1': until_seq 10 is "
                       r"before from_seq 50"):
        KeyRegistry.from_json(bad)
    KeyRegistry.from_json(_registry({"T-rfid": [_key("T-rfid/1", 10, 10)]}))  # one seq


def test_a_key_id_given_twice_is_refused() -> None:
    within = _registry({"T-rfid": [_key("k", 1, 10), _key("k", 11)]})
    with pytest.raises(KeyRegistryError, match=r"key id 'k' is given twice"):
        KeyRegistry.from_json(within)
    across = _registry({"T-rfid": [_key("k")], "T-shoe": [_key("k")]})
    with pytest.raises(KeyRegistryError, match=r"key id 'k' is given twice \(also for "):
        KeyRegistry.from_json(across)
    KeyRegistry.from_json(_registry({"T-rfid": [_key("a")], "T-shoe": [_key("b")]}))


def test_two_keys_for_the_same_seq_are_refused() -> None:
    overlap = _registry({"T-rfid": [_key("T-rfid/1", 1, 40), _key("T-rfid/2", 40)]})
    with pytest.raises(KeyRegistryError, match=r"both sign seq 40"):
        KeyRegistry.from_json(overlap)
    open_ended = _registry({"T-rfid": [_key("T-rfid/1"), _key("T-rfid/2", 41)]})
    with pytest.raises(KeyRegistryError, match=r"both sign seq 41"):
        KeyRegistry.from_json(open_ended)
    KeyRegistry.from_json(_registry({"T-rfid": [_key("T-rfid/1", 1, 40),
                                                _key("T-rfid/2", 41)]}))


def test_a_seq_range_starts_at_one_or_later() -> None:
    with pytest.raises(KeyRegistryError, match=r"from_seq 0 \(seqs start at 1\)"):
        KeyRegistry.from_json(_registry({"T-rfid": [_key("T-rfid/1", 0)]}))


def test_the_error_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "keys.json"
    f.write_bytes(orjson.dumps(_registry({"T-rfid": [_key("k", 5, 1)]})))
    with pytest.raises(KeyRegistryError, match="^" + re.escape(str(f)) + ": "):
        KeyRegistry.load(f)


def test_the_registry_knows_its_files_sha256(tmp_path: Path) -> None:
    f = tmp_path / "keys.json"
    raw = orjson.dumps(_registry({"T-rfid": [_key("T-rfid/1")]}))
    f.write_bytes(raw)
    assert KeyRegistry.load(f).sha256 == hashlib.sha256(raw).hexdigest()


# --- fails closed (issue 35, item 6): "where a key registry exists (keys.json beside the
# floor, configured via PITWATCH_KEYS, or given), signatures are checked ...; running
# without one prints "signatures NOT CHECKED" in every summary"; "The audit summary
# prints the registry's SHA-256".

def test_the_registry_beside_the_input_is_found(tmp_path: Path) -> None:
    floor = tmp_path / "floor"
    floor.mkdir()
    (floor / "events.jsonl").write_text("")
    assert registry_path(None, [floor]) is None
    (floor / "keys.json").write_text("{}")
    assert registry_path(None, [floor]) == floor / "keys.json"
    assert registry_path(None, [floor / "events.jsonl"]) == floor / "keys.json"
    assert registry_path(None, [floor, floor / "events.jsonl"]) == floor / "keys.json"
    assert registry_path("given.json", [floor]) == Path("given.json")
    other = tmp_path / "other"
    other.mkdir()
    (other / "keys.json").write_text("{}")
    with pytest.raises(KeyRegistryError, match=r"more than one key registry beside the "
                       r"input .*: name the one to check signatures against with --keys"):
        registry_path(None, [floor, other])


def _pitwatch(*args: str, cwd: Path, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "PITWATCH_KEYS"}
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False,
                          env=base | (env or {}))


def test_the_audit_checks_signatures_wherever_a_registry_is_and_says_when_none_is(
        tmp_path: Path) -> None:
    r = _pitwatch("simulate", "--tables", "1", "--rounds", "4", "--seed", "5", "--quiet",
                  "--out", "floor", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    keys = tmp_path / "floor" / "keys.json"
    sha = hashlib.sha256(keys.read_bytes()).hexdigest()
    beside = _pitwatch("audit", "floor", "--no-store", "--quiet", cwd=tmp_path)
    assert beside.returncode == 0, beside.stderr
    assert "signatures: verified; 4 device(s)" in beside.stdout
    assert f"key registry: floor/keys.json, sha256 {sha}" in beside.stdout
    jsonl = _pitwatch("audit", "floor", "--no-store", "--quiet", "--format", "jsonl",
                      cwd=tmp_path)
    assert f"sha256 {sha}" in jsonl.stderr
    keys.rename(tmp_path / "site-keys.json")
    none = _pitwatch("audit", "floor", "--no-store", "--quiet", cwd=tmp_path)
    assert none.returncode == 0
    assert "signatures NOT CHECKED: no key registry (--keys FILE, $PITWATCH_KEYS, " \
        "keys.json beside the input, or one pinned in the store)" in none.stdout
    assert "signatures: verified" not in none.stdout
    refused = _pitwatch("audit", "floor", "--no-store", "--quiet", "--require-signatures",
                        cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("pitwatch audit: --require-signatures: no key registry")
    configured = _pitwatch("audit", "floor", "--no-store", "--quiet", "--require-signatures",
                           cwd=tmp_path, env={"PITWATCH_KEYS": "site-keys.json"})
    assert configured.returncode == 0, configured.stderr
    assert f"key registry: site-keys.json, sha256 {sha}" in configured.stdout


def test_the_worker_refuses_to_start_without_a_registry_when_told_to(tmp_path: Path) -> None:
    r = _pitwatch("worker", "--require-signatures", cwd=tmp_path,
                  env={"PITWATCH_CLICKHOUSE": "127.0.0.1:1"})  # no store to find one in
    assert r.returncode == 2
    assert r.stderr.strip().endswith(
        "pitwatch worker: --require-signatures: no key registry (--keys FILE or "
        "$PITWATCH_KEYS, or one pinned in the store): signatures NOT CHECKED, so the worker "
        "did not start")


def test_the_store_keeps_its_registry_and_checks_against_it_when_none_is_named(
        tmp_path: Path) -> None:
    """"Where a registry exists (beside the floor, configured, or in the store),
    signatures are checked"."""
    r = _pitwatch("simulate", "--tables", "1", "--rounds", "3", "--seed", "5", "--quiet",
                  "--out", "floor", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first = (tmp_path / "floor" / "keys.json").read_bytes()
    a = _pitwatch("audit", "floor", "--data", "d", "--quiet", cwd=tmp_path)
    assert a.returncode == 0, a.stderr
    assert not (tmp_path / "d" / "keys.json").exists()  # pinned in the store's table
    (tmp_path / "floor" / "keys.json").rename(tmp_path / "keys.json")
    again = _pitwatch("audit", "floor", "--data", "d", "--quiet", cwd=tmp_path)
    assert "signatures: verified; 4 device(s)" in again.stdout
    assert ("key registry: the store d's pinned registry, sha256 "
            f"{hashlib.sha256(first).hexdigest()}") in again.stdout
    judged_alone = _pitwatch("audit", "floor", "--data", "d", "--no-store", "--quiet",
                             cwd=tmp_path)
    assert "signatures NOT CHECKED" in judged_alone.stdout
    other = orjson.loads(first)
    other["unsigned_devices"] = ["AC-BJ-09-shoe"]  # the same keys, one device let unsigned
    (tmp_path / "other.json").write_bytes(orjson.dumps(other))
    changed = _pitwatch("audit", "floor", "--data", "d", "--quiet", "--keys", "other.json",
                        cwd=tmp_path)
    assert changed.returncode == 0, changed.stderr
    other_sha = hashlib.sha256((tmp_path / "other.json").read_bytes()).hexdigest()
    assert ("key registry CHANGED since this store's last audit (it was sha256 "
            f"{hashlib.sha256(first).hexdigest()}, now sha256 {other_sha}): the store now "
            "holds this one") in changed.stdout
    # a registry put beside the input does not replace the store's unless named
    (tmp_path / "floor" / "keys.json").write_bytes(first)
    beside = _pitwatch("audit", "floor", "--data", "d", "--quiet", cwd=tmp_path)
    assert beside.returncode == 2 and beside.stdout == ""
    assert "beside the input (sha256 " in beside.stderr
    assert (f"is not the key registry the store d was audited against (sha256 {other_sha})"
            in beside.stderr)
    (tmp_path / "floor" / "keys.json").unlink()
    kept = _pitwatch("audit", "floor", "--data", "d", "--quiet", cwd=tmp_path)
    assert f"key registry: the store d's pinned registry, sha256 {other_sha}" in kept.stdout


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_a_registry_must_carry_the_site_keys_signature_when_the_site_key_is_given(
        tmp_path: Path) -> None:
    """"The registry is ... signed by the site's key": signed with openssl as the README
    says, checked by the audit; a changed or unsigned registry is refused."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl("genpkey", "-algorithm", "ed25519", "-out", "site-key.pem")
    openssl("pkey", "-in", "site-key.pem", "-pubout", "-out", "site-key.pub.pem")
    r = _pitwatch("simulate", "--tables", "1", "--rounds", "3", "--seed", "5", "--quiet",
                  "--out", "floor", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    keys = tmp_path / "floor" / "keys.json"
    (tmp_path / "msg.bin").write_bytes(b"pitwatch key registry v1\0" + keys.read_bytes())
    openssl("pkeyutl", "-sign", "-inkey", "site-key.pem", "-rawin", "-in", "msg.bin",
            "-out", "floor/keys.json.sig")
    pub = ("--site-public-key", "site-key.pub.pem")
    ok = _pitwatch("audit", "floor", "--data", "d", "--quiet", *pub, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "key registry signed by the site key: verified" in ok.stdout
    unchecked = _pitwatch("audit", "floor", "--no-store", "--quiet", cwd=tmp_path)
    assert "key registry's site signature NOT CHECKED" in unchecked.stdout
    keys.rename(tmp_path / "keys.json")  # the store's own, with its signature, is used
    pinned = _pitwatch("audit", "floor", "--data", "d", "--quiet", *pub, cwd=tmp_path)
    assert pinned.returncode == 0, pinned.stderr
    assert "key registry: the store d's pinned registry" in pinned.stdout
    assert "key registry signed by the site key: verified" in pinned.stdout
    doc = orjson.loads((tmp_path / "keys.json").read_bytes())
    doc["unsigned_devices"] = ["AC-BJ-09-shoe"]
    keys.write_bytes(orjson.dumps(doc))  # changed, the old signature beside it
    changed = _pitwatch("audit", "floor", "--no-store", "--quiet", *pub, cwd=tmp_path)
    assert changed.returncode == 2 and changed.stdout == ""
    assert "keys.json.sig is not the site key's signature of this registry: refused" \
        in changed.stderr
    (tmp_path / "floor" / "keys.json.sig").unlink()
    unsigned = _pitwatch("audit", "floor", "--no-store", "--quiet", *pub, cwd=tmp_path)
    assert unsigned.returncode == 2
    assert "an unsigned registry is refused" in unsigned.stderr
