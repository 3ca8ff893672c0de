"""The key registry a store was audited against, pinned in the store's `key_registry`
table (schemas/clickhouse/013_key_registry.sql), so that a later audit, the worker,
replay, investigate and reaudit that name no registry check signatures against it
instead of not checking them, and a registry changed under a store is said, with both
SHA-256s. The same table in the embedded store and on a ClickHouse server.

An embedded store made before the table kept its registry as a file, `DATA/keys.json`
(with the site key's signature beside it, `keys.json.sig`): `read` moves it into the
table when it opens such a store, and keeps the file as `keys.json.migrated` (its
signature as `keys.json.sig.migrated`), so nothing is lost."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..events.keys import SIGNATURE_SUFFIX, KeyRegistryError
from .base import Store

#: The table the registry is pinned in.
TABLE: Final = "key_registry"
#: The pinned registry's file in an embedded store made before the table.
PIN_FILE: Final = "keys.json"
#: What the file is renamed to once its registry is in the table.
MIGRATED_SUFFIX: Final = ".migrated"


@dataclass(frozen=True, slots=True)
class Pinned:
    """A registry pinned in a store: its file's bytes, the site key's signature of them
    (None: none was given), and the pin's version (the highest is the store's)."""

    raw: bytes
    signature: bytes | None
    version: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()


def ensure_table(store: Store) -> None:
    """Make the store's tables when it has no `key_registry` yet (a store made before
    it): `setup` is idempotent, and on a cluster makes it ON CLUSTER."""
    have = store.query("SELECT count() AS n FROM system.tables WHERE database = "
                       "currentDatabase() AND name = {t:String}", {"t": TABLE})
    if not int(have[0]["n"]):
        store.setup()


def current(store: Store) -> Pinned | None:
    """The registry pinned in `store` (the highest version), if one is."""
    rows = store.query(f"SELECT registry, signature, version FROM {TABLE} "
                       "ORDER BY version DESC LIMIT 1")
    if not rows:
        return None
    r = rows[0]
    try:
        sig = base64.b64decode(str(r["signature"]), validate=True) if r["signature"] else None
    except binascii.Error as e:
        raise KeyRegistryError(f"the store's {TABLE} table holds a signature that is not "
                               f"base64 ({e})") from None
    return Pinned(str(r["registry"]).encode(), sig, int(r["version"]))


def read(store: Store, data: str | Path | None = None) -> Pinned | None:
    """The registry pinned in `store` (its table made first where it is missing); with
    `data`, an embedded store's directory, a registry pinned there as a file is moved
    into the table first (`migrate_file`)."""
    ensure_table(store)
    if data is not None:
        migrate_file(store, data)
    return current(store)


def pin(store: Store, raw: bytes, signature: bytes | None = None) -> str | None:
    """Pin `raw` (a registry file's bytes) in `store`, with the site key's `signature`
    of it (None: none). Returns the SHA-256 of the registry it replaces when that one
    differs, else None. Pinning what is pinned already writes nothing."""
    old = current(store)
    if old is not None and old.raw == raw and old.signature == signature:
        return None
    try:
        text = raw.decode()
    except UnicodeDecodeError as e:  # a registry is JSON, so UTF-8: never stored mangled
        raise KeyRegistryError(f"a key registry that is not UTF-8 cannot be pinned ({e})"
                               ) from None
    store.insert(TABLE, [{"sha256": hashlib.sha256(raw).hexdigest(),
                          "version": 1 if old is None else old.version + 1,
                          "registry": text,
                          "signature": "" if signature is None
                          else base64.b64encode(signature).decode()}])
    store.sync()
    return None if old is None or old.raw == raw else old.sha256


def migrate_file(store: Store, data: str | Path) -> bool:
    """Move a registry pinned as `DATA/keys.json` (and its `.sig`) into the table, then
    keep the files renamed `*.migrated`. Whether there was one to move."""
    f = Path(data) / PIN_FILE
    try:
        raw = f.read_bytes()
    except FileNotFoundError:
        return False
    sig_file = Path(str(f) + SIGNATURE_SUFFIX)
    sig = sig_file.read_bytes() if sig_file.is_file() else None
    pin(store, raw, sig)
    now = current(store)
    if now is None or (now.raw, now.signature) != (raw, sig):
        raise KeyRegistryError(f"{f}: the registry could not be moved into the store's "
                               f"{TABLE} table; the file is left where it is")
    os.replace(f, str(f) + MIGRATED_SUFFIX)
    if sig is not None:
        os.replace(sig_file, str(sig_file) + MIGRATED_SUFFIX)
    return True

