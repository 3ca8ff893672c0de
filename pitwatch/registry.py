"""Which device key registry a command checks signatures against, and whether the site
key signed it: the one loader of `pitwatch audit`, the worker, `replay`, `investigate`
and `reaudit` (docs/events.md, "Signed checkpoints").

The registry is, in order: the file named (`--keys FILE`, else $PITWATCH_KEYS), the
`keys.json` beside the input (the audit's files), the one pinned in the store
(`store.registry_pin`). A file beside the input that differs from the store's is
refused unless named: whoever can put a file beside the input must not choose the keys.
Given the site's public key (`--site-public-key PEM`, else $PITWATCH_SITE_PUBLIC_KEY),
the registry must carry the site key's signature (FILE.sig beside a file; the one
pinned with it in the store) or it is refused. Every command says the same words:
`lines()`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .events.keys import (
    NOT_CHECKED,
    SIGNATURE_SUFFIX,
    SITE_PUBLIC_KEY_ENV,
    WHERE_KEYS,
    KeyRegistry,
    KeyRegistryError,
    check_registry_signature,
    registry_path,
    site_public_key,
)
from .store.registry_pin import Pinned

#: What a command says of a registry the site key's signature was checked on.
SITE_VERIFIED: Final = "key registry signed by the site key: verified"
#: ... and of one it was not.
SITE_NOT_CHECKED: Final = ("key registry's site signature NOT CHECKED (--site-public-key "
                           f"FILE or ${SITE_PUBLIC_KEY_ENV})")


@dataclass(frozen=True, slots=True)
class Loaded:
    """The registry a command checks signatures against (None: none found), where it
    came from (a file, or the store), the site key's signature of it (None: none), and
    whether that signature was checked (and so verified: else it was refused)."""

    registry: KeyRegistry | None
    where: str | None = None
    signature: bytes | None = None
    site_checked: bool = False
    #: it came from the store's pin (not from a file named or beside the input)
    from_store: bool = False

    @property
    def sha256(self) -> str | None:
        return None if self.registry is None else self.registry.sha256

    @property
    def raw(self) -> bytes | None:
        return None if self.registry is None else self.registry.raw

    def site_words(self) -> str:
        """SITE_VERIFIED or SITE_NOT_CHECKED (for a registry; none: NOT_CHECKED)."""
        if self.registry is None:
            return f"{NOT_CHECKED}: no key registry ({WHERE_KEYS})"
        return SITE_VERIFIED if self.site_checked else SITE_NOT_CHECKED

    def lines(self) -> list[str]:
        """What a command says of its registry: which one, its SHA-256, and whether the
        site key's signature of it was verified; or that signatures are NOT CHECKED."""
        if self.registry is None:
            return [self.site_words()]
        return [f"key registry: {self.where}, sha256 {self.sha256}", self.site_words()]


def add_site_public_key_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--site-public-key", metavar="PEM",
                   default=os.environ.get(SITE_PUBLIC_KEY_ENV),
                   help="the site's Ed25519 public key: the key registry must carry its "
                   f"signature (REGISTRY{SIGNATURE_SUFFIX} beside a file; the one pinned "
                   "with it in the store), or the command is refused (exit 2). Default: "
                   f"${SITE_PUBLIC_KEY_ENV}; without it the output says the registry's "
                   "site signature is NOT CHECKED")


def load_registry(given: str | None, *, inputs: Sequence[str | Path] = (),
                  pinned: Pinned | None = None, store_name: str = "the store",
                  site_public_key_file: str | None = None) -> Loaded:
    """The registry to check signatures against (module doc): `given` the file named
    (--keys or $PITWATCH_KEYS), `inputs` the files whose `keys.json` beside them counts,
    `pinned` the store's (named `store_name` in the messages), `site_public_key_file`
    the site's public key (PEM). KeyRegistryError when it cannot be used: a file that
    cannot be read or is no registry, a file beside the input that is not the store's,
    or a registry the site key did not sign when its public key is given."""
    path = registry_path(given, inputs)
    if path is None and pinned is None:
        if site_public_key_file:
            site_public_key(site_public_key_file)  # a bad key file is said even so
        return Loaded(None)
    if path is None:
        assert pinned is not None
        raw, signature = pinned.raw, pinned.signature
        where = f"{store_name}'s pinned registry"
        signature_where = "the signature pinned with it"
    else:
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise KeyRegistryError(f"cannot read key registry {path}: {e.strerror}") from None
        if not given and pinned is not None and raw != pinned.raw:
            raise KeyRegistryError(
                f"{path} beside the input (sha256 {KeyRegistry.from_bytes(raw, str(path)).sha256})"
                f" is not the key registry {store_name} was audited against (sha256 "
                f"{pinned.sha256}): name the one to check signatures against with --keys "
                "FILE (the store then keeps it)")
        sig_file = Path(str(path) + SIGNATURE_SUFFIX)
        try:
            signature = sig_file.read_bytes()
        except FileNotFoundError:
            signature = None
        except OSError as e:
            raise KeyRegistryError(f"{path}: the site key's signature {sig_file} cannot be "
                                   f"read ({e.strerror})") from None
        where, signature_where = str(path), str(sig_file)
    registry = KeyRegistry.from_bytes(raw, where)
    if site_public_key_file:
        check_registry_signature(raw, signature, where, signature_where,
                                 site_public_key(site_public_key_file))
    return Loaded(registry, where, signature, bool(site_public_key_file),
                  from_store=path is None)
