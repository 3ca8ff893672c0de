"""The key registry refuses what cannot be a registry (issue 35, item 6): "Registry
validation refuses until_seq < from_seq and duplicate key_ids with clear errors", and
the audit prints "the registry's SHA-256"."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pitwatch.events.keys import KeyRegistry, KeyRegistryError, public_bytes


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
