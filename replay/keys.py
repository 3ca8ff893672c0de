"""The device key registry the replay stages verify signatures against: the one loader
of the core (`pitwatch.registry.load_registry`) over `--keys FILE` (env PITWATCH_KEYS),
else the registry pinned in the store they read, with the site key's signature checked
when its public key is given (`--site-public-key`, env PITWATCH_SITE_PUBLIC_KEY)."""

from __future__ import annotations

import argparse
import os
import sys

from pitwatch.events.keys import KEYS_ENV, NOT_CHECKED, KeyRegistry, KeyRegistryError
from pitwatch.registry import Loaded, add_site_public_key_option, load_registry
from pitwatch.store import registry_pin
from pitwatch.store.base import Store
from pitwatch.terminal import printable


def add_keys_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", metavar="FILE", default=os.environ.get(KEYS_ENV),
                   help="device key registry (JSON; `pitwatch simulate` writes DIR/keys.json, "
                   f"`pitwatch produce --keys-out FILE`). Default: ${KEYS_ENV}, else the "
                   "registry pinned in the store. With one, every device in it must have "
                   "signed its chain (SIGNATURE_INVALID otherwise) and the output says "
                   "whether the signatures hold; without one, signatures are NOT CHECKED")
    p.add_argument("--require-signatures", action="store_true",
                   help="refuse to run without a key registry (exit 2), rather than "
                   "give a result whose signatures are NOT CHECKED")
    add_site_public_key_option(p)


def load_keys(args: argparse.Namespace, store: Store, command: str) -> Loaded:
    """The registry to verify against (`--keys`, else the store's pin; the embedded
    store's `--data` directory is where an older store kept its pin as a file), said on
    stderr as `pitwatch COMMAND: ...`. KeyRegistryError when it cannot be used, or with
    --require-signatures when there is none."""
    data = None if getattr(args, "clickhouse", None) else args.data
    name = (f"the store {args.clickhouse}/{args.clickhouse_db}" if data is None
            else f"the store {data}")
    loaded = load_registry(args.keys, pinned=registry_pin.read(store, data), store_name=name,
                           site_public_key_file=getattr(args, "site_public_key", None))
    if loaded.registry is None and getattr(args, "require_signatures", False):
        raise KeyRegistryError(f"--require-signatures: no key registry (--keys FILE, "
                               f"${KEYS_ENV}, or one pinned in the store): {NOT_CHECKED}")
    for line in loaded.lines():
        print(printable(f"pitwatch {command}: {line}"), file=sys.stderr)
    return loaded


def registry_from_bytes(data: bytes, where: str) -> KeyRegistry:
    return KeyRegistry.from_bytes(data, where)
