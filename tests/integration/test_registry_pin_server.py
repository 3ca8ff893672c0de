"""The key registry pinned in a ClickHouse store (schemas/clickhouse/013_key_registry.sql,
issue 35: "The registry is pinned by hash in the store and signed by the site's key"):
the worker pins the registry it is given there, a worker or `replay` that names none
checks against that pin, and with the site's public key a registry whose site signature
does not verify is refused."""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from pitwatch.events.keys import REGISTRY_DOMAIN, KeyRegistryError
from pitwatch.processors.worker import worker_registry
from pitwatch.producers.simulate import Floor
from pitwatch.registry import SITE_NOT_CHECKED, SITE_VERIFIED
from pitwatch.store import registry_pin
from pitwatch.store.server import ServerStore

from .conftest import CH_HOST, CH_PORT


@pytest.fixture
def server() -> Iterator[ServerStore]:
    db = f"pw_registry_{uuid.uuid4().hex[:12]}"
    store = ServerStore(CH_HOST, CH_PORT, db)
    store.setup()
    try:
        yield store
    finally:
        try:
            store._execute(f"DROP DATABASE IF EXISTS {db}")
        finally:
            store.close()


def _site(tmp: Path) -> tuple[Path, Path, Path]:
    """A floor's registry signed by a site key (keys.json and .sig), the site's public
    key, and the registry changed with the old signature beside it (tampered.json)."""
    keys = Floor(1, 1, seed=3).registry()
    assert keys is not None
    raw = keys.dumps()
    key = Ed25519PrivateKey.generate()
    pub = tmp / "site.pub.pem"
    pub.write_bytes(key.public_key().public_bytes(Encoding.PEM,
                                                  PublicFormat.SubjectPublicKeyInfo))
    sig = key.sign(REGISTRY_DOMAIN + raw)
    (tmp / "keys.json").write_bytes(raw)
    (tmp / "keys.json.sig").write_bytes(sig)
    doc = orjson.loads(raw)
    doc["unsigned_devices"] = ["X-09-shoe"]
    (tmp / "tampered.json").write_bytes(orjson.dumps(doc))
    (tmp / "tampered.json.sig").write_bytes(sig)
    return tmp / "keys.json", pub, tmp / "tampered.json"


def _args(server: ServerStore, tmp: Path, keys: Path | None, pub: Path | None
          ) -> argparse.Namespace:
    return argparse.Namespace(keys=None if keys is None else str(keys),
                              site_public_key=None if pub is None else str(pub),
                              require_signatures=False,
                              clickhouse=f"{CH_HOST}:{CH_PORT}",
                              clickhouse_db=server.database, data_dir=str(tmp / "worker"))


def test_the_worker_pins_its_registry_in_the_server_store_and_checks_against_it(
        server: ServerStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys, pub, tampered = _site(tmp_path)
    with pytest.raises(KeyRegistryError, match="is not the site key's signature"):
        worker_registry(_args(server, tmp_path, tampered, pub), server)
    assert registry_pin.read(server) is None
    named = worker_registry(_args(server, tmp_path, keys, pub), server)
    assert named is not None and named.raw == keys.read_bytes()
    assert f"pitwatch worker: {SITE_VERIFIED}" in capsys.readouterr().err
    pinned = registry_pin.read(server)
    assert pinned is not None and pinned.raw == keys.read_bytes()
    assert pinned.signature == (tmp_path / "keys.json.sig").read_bytes()
    # another worker that names none: the store's pin, handed to its audit
    got = worker_registry(_args(server, tmp_path, None, pub), server)
    assert got is not None and got.raw == keys.read_bytes()
    assert (f"key registry: the store {CH_HOST}:{CH_PORT}/{server.database}'s pinned "
            f"registry, sha256 {hashlib.sha256(keys.read_bytes()).hexdigest()}"
            ) in capsys.readouterr().err
    # a changed registry named is pinned, said with both SHA-256s
    worker_registry(_args(server, tmp_path, tampered, None), server)
    said = capsys.readouterr().err
    assert f"pitwatch worker: {SITE_NOT_CHECKED}" in said
    assert (f"(it was sha256 {hashlib.sha256(keys.read_bytes()).hexdigest()}, now sha256 "
            f"{hashlib.sha256(tampered.read_bytes()).hexdigest()})") in said


def test_replay_on_the_server_checks_the_registry_pinned_there(
        server: ServerStore, tmp_path: Path) -> None:
    keys, pub, tampered = _site(tmp_path)
    registry_pin.pin(server, tampered.read_bytes(), (tmp_path / "tampered.json.sig"
                                                      ).read_bytes())
    env = {k: v for k, v in os.environ.items()
           if k not in ("PITWATCH_KEYS", "PITWATCH_SITE_PUBLIC_KEY")}

    def replay(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pitwatch.cli", "replay", "X-000001", "--clickhouse",
             f"{CH_HOST}:{CH_PORT}", "--clickhouse-db", server.database, *extra],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False, env=env)

    refused = replay("--site-public-key", str(pub))
    assert refused.returncode == 2
    assert "pinned registry: the signature pinned with it is not the site key's signature" \
        in refused.stderr
    unchecked = replay()
    assert f"pitwatch replay: {SITE_NOT_CHECKED}" in unchecked.stderr
    registry_pin.pin(server, keys.read_bytes(), (tmp_path / "keys.json.sig").read_bytes())
    assert f"pitwatch replay: {SITE_VERIFIED}" in replay("--site-public-key", str(pub)).stderr
