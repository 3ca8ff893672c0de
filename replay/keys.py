"""The device key registry the replay stages verify signatures against (`--keys FILE`,
env PITWATCH_KEYS): the same file the audit and the worker take."""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

from pitwatch.events.keys import KEYS_ENV, KeyRegistry


def add_keys_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", metavar="FILE", default=os.environ.get(KEYS_ENV),
                   help="device key registry (JSON; `pitwatch simulate` writes DIR/keys.json, "
                   f"`pitwatch produce --keys-out FILE`). Default: ${KEYS_ENV}. With it, "
                   "every device in it must have signed its chain (SIGNATURE_INVALID "
                   "otherwise) and the output says whether the signatures hold; without "
                   "it, signatures are not checked")


def load_keys(args: argparse.Namespace) -> tuple[KeyRegistry | None, str | None]:
    """The registry `--keys` names and its file's SHA-256 (None, None without one);
    KeyRegistryError when it cannot be used."""
    if not args.keys:
        return None, None
    keys = KeyRegistry.load(args.keys)
    return keys, hashlib.sha256(Path(args.keys).read_bytes()).hexdigest()
