"""The key registry a store was audited against, kept in the store's directory
(`DATA/keys.json`), so that a later audit into the same store that names no registry
checks signatures against it instead of not checking them, and a registry changed
under a store is said, with both SHA-256s."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Final

from ..events.keys import SIGNATURE_SUFFIX

#: The pinned registry's name in the data directory.
PIN_FILE: Final = "keys.json"


def pinned(data: str | Path) -> Path | None:
    """The registry pinned in the store at `data`, if one is."""
    p = Path(data) / PIN_FILE
    return p if p.is_file() else None


def pin(data: str | Path, raw: bytes, signature: bytes | None = None) -> str | None:
    """Keep `raw` (a registry file's bytes) as the store's registry, with the site key's
    `signature` of it beside (`keys.json.sig`; none: none kept). Returns the SHA-256 of
    the registry it replaces when that one differs, else None. Each file is written
    whole or not at all (a temporary file renamed into place)."""
    target = Path(data) / PIN_FILE
    try:
        old = target.read_bytes()
    except FileNotFoundError:
        old = None
    sig = Path(str(target) + SIGNATURE_SUFFIX)
    if signature is None:
        sig.unlink(missing_ok=True)
    elif not sig.is_file() or sig.read_bytes() != signature:
        _write(sig, signature)
    if old == raw:
        return None
    _write(target, raw)
    return None if old is None else hashlib.sha256(old).hexdigest()


def _write(target: Path, raw: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".keys-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
