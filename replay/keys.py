"""The device key registry the replay stages verify signatures against (`--keys FILE`,
env PITWATCH_KEYS): the same file the audit and the worker take."""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

import orjson

from pitwatch.events.keys import KEYS_ENV, KeyRegistry, KeyRegistryError


def add_keys_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", metavar="FILE", default=os.environ.get(KEYS_ENV),
                   help="device key registry (JSON; `pitwatch simulate` writes DIR/keys.json, "
                   f"`pitwatch produce --keys-out FILE`). Default: ${KEYS_ENV}. With it, "
                   "every device in it must have signed its chain (SIGNATURE_INVALID "
                   "otherwise) and the output says whether the signatures hold; without "
                   "it, signatures are NOT CHECKED")
    p.add_argument("--require-signatures", action="store_true",
                   help="refuse to run without a key registry (exit 2), rather than "
                   "give a result whose signatures are NOT CHECKED")


def load_keys(args: argparse.Namespace) -> tuple[KeyRegistry | None, str | None]:
    """The registry `--keys` names and its file's SHA-256 (None, None without one);
    KeyRegistryError when it cannot be used."""
    keys, data = load_keys_file(args)
    return keys, None if data is None else hashlib.sha256(data).hexdigest()


def load_keys_file(args: argparse.Namespace) -> tuple[KeyRegistry | None, bytes | None]:
    """The registry `--keys` names and the file's bytes, read once (None, None without
    one); KeyRegistryError when it cannot be used."""
    if not args.keys:
        if getattr(args, "require_signatures", False):
            raise KeyRegistryError(f"--require-signatures: no key registry (--keys FILE or "
                                   f"{KEYS_ENV})")
        return None, None
    try:
        data = Path(args.keys).read_bytes()
    except OSError as e:
        raise KeyRegistryError(f"key registry {args.keys}: {e.strerror}") from None
    return registry_from_bytes(data, str(args.keys)), data


def registry_from_bytes(data: bytes, where: str) -> KeyRegistry:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise KeyRegistryError(f"{where}: not JSON: {e}") from None
    return KeyRegistry.from_json(doc, where)
