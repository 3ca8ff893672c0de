"""Files that hold a secret (a password, a private key, the console's accounts): read
only when their owner alone may open them, so a secret another user could read or
replace is refused with the fix, never used."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class SecretFileError(ValueError):
    """A secret's file that cannot be used; the message names it and says why."""


def read_secret(path: str | Path) -> bytes:
    """The bytes of `path`, a file its group and others may neither read nor write."""
    try:
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            data = f.read()
    except OSError as e:
        raise SecretFileError(f"cannot read {path}: {e.strerror}") from None
    if mode & 0o077:
        who = "others" if mode & 0o007 else "its group"
        raise SecretFileError(f"{path} is open to {who} (mode {stat.S_IMODE(mode):04o}): "
                              f"make it its owner's alone (chmod 600 {path})")
    return data
