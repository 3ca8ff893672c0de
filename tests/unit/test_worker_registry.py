"""The worker hands the audit the registry it loaded: the one pinned in the store
reaches the app's auditors as loaded, and nothing is written to DATA_DIR for it."""

from __future__ import annotations

import argparse
import base64
from pathlib import Path
from typing import Any

import orjson
import pytest

from pitwatch.events.keys import KeyRegistry
from pitwatch.processors import app as worker_app
from pitwatch.processors.observe import ObservedStates
from pitwatch.processors.settings import Settings
from pitwatch.processors.worker import worker_registry
from pitwatch.store import registry_pin
from pitwatch.store.embedded import EmbeddedStore

REGISTRY = orjson.dumps({
    "version": 1, "algorithm": "Ed25519", "checkpoint_every": 50,
    "devices": {"AC-BJ-01-rfid": [{"key_id": "AC-BJ-01-rfid/1",
                                   "public_key": base64.b64encode(bytes(32)).decode(),
                                   "from_seq": 1, "until_seq": None}]}})


def test_the_workers_app_gets_the_pinned_registry_with_no_file_in_data_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = tmp_path / "worker"
    data_dir.mkdir()
    store = EmbeddedStore(tmp_path / "store")
    try:
        store.setup()
        registry_pin.pin(store, REGISTRY, None)
        args = argparse.Namespace(keys=None, site_public_key=None, require_signatures=False,
                                  clickhouse="127.0.0.1:19000", clickhouse_db="pitwatch",
                                  data_dir=str(data_dir))
        keys = worker_registry(args, store)
    finally:
        store.close()
    assert keys is not None and keys.raw == REGISTRY
    assert "pinned registry" in capsys.readouterr().err
    given: list[Any] = []

    class Recorded(ObservedStates):
        def __init__(self, *a: Any, **kw: Any) -> None:
            given.append(a[3])  # (table, select, timeout_ms, keys)
            super().__init__(*a, **kw)

    monkeypatch.setattr(worker_app, "ObservedStates", Recorded)
    worker_app.create_app(Settings(data_dir=str(data_dir), sink=False), keys)
    assert given == [keys] and isinstance(keys, KeyRegistry)
    assert list(data_dir.iterdir()) == []
