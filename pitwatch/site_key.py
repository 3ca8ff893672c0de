"""The site's key: the Ed25519 key (as the device keys are) a site signs its case
manifests with, so a case folder that leaves the site cannot be changed unseen.

The private key is a PEM file (PKCS#8), made for example with
`openssl genpkey -algorithm ed25519 -out site-key.pem`, readable by its owner alone;
`--site-key FILE` or PITWATCH_SITE_KEY names it. Whoever verifies a case holds only the
public key (`openssl pkey -in site-key.pem -pubout -out site-key.pub.pem`), which
`pitwatch verify --site-public-key FILE` pins. Ed25519 signatures are deterministic, so
the same manifest signed again gives the same bytes.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from .secret_file import SecretFileError, read_secret

SITE_KEY_ENV: Final = "PITWATCH_SITE_KEY"
ALGORITHM: Final = "Ed25519"
#: The domain tag before the signed bytes, so a manifest signature never passes for
#: anything else the key signs.
DOMAIN: Final = b"pitwatch case manifest v1\x00"


class SiteKeyError(ValueError):
    """A site key that cannot be used; the message says which and why."""


def add_site_key_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--site-key", metavar="FILE", default=os.environ.get(SITE_KEY_ENV),
                   help="the site's Ed25519 private key (PEM, readable by its owner "
                   "alone) to sign the manifest with. Default: $" + SITE_KEY_ENV +
                   ". Without it the manifest says it is unsigned, and "
                   "`pitwatch verify` says so")


def load_private(path: str | Path) -> Ed25519PrivateKey:
    p = Path(path)
    try:
        data = read_secret(p)
    except SecretFileError as e:
        raise SiteKeyError(f"site key: {e}") from None
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise SiteKeyError(f"site key {p} is not a PEM private key without a passphrase "
                           f"({e})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SiteKeyError(f"site key {p} is not an Ed25519 key (make one with openssl "
                           "genpkey -algorithm ed25519)")
    return key


def load_public(path: str | Path) -> bytes:
    """The raw 32 bytes of a PEM public key file."""
    p = Path(path)
    try:
        key = load_pem_public_key(p.read_bytes())
    except OSError as e:
        raise SiteKeyError(f"site public key {p}: {e.strerror}") from None
    except ValueError as e:
        raise SiteKeyError(f"site public key {p} is not a PEM public key ({e})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SiteKeyError(f"site public key {p} is not an Ed25519 key")
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def public_raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def fingerprint(public: bytes) -> str:
    """SHA-256 of the raw public key, hex: how a report names the key."""
    return hashlib.sha256(public).hexdigest()


def signer(public: bytes) -> dict[str, str]:
    """The key as a manifest names it."""
    return {"algorithm": ALGORITHM, "public_key": base64.b64encode(public).decode(),
            "fingerprint": fingerprint(public)}


def sign(key: Ed25519PrivateKey, data: bytes) -> dict[str, str]:
    """The signature of `data`, as manifest.sig holds it."""
    return {**signer(public_raw(key)),
            "signature": base64.b64encode(key.sign(DOMAIN + data)).decode()}


def check(sig: dict[str, Any], data: bytes, pinned: bytes | None) -> str | None:
    """None when `sig` is a good signature of `data` (by the `pinned` key, when
    given); else why not."""
    try:
        if sig.get("algorithm") != ALGORITHM:
            return f"not an {ALGORITHM} signature: {sig.get('algorithm')!r}"
        public = base64.b64decode(str(sig["public_key"]), validate=True)
        signature = base64.b64decode(str(sig["signature"]), validate=True)
        key = Ed25519PublicKey.from_public_bytes(public)
    except (KeyError, ValueError) as e:
        return f"a malformed signature ({e})"
    if pinned is not None and public != pinned:
        return (f"signed by key {fingerprint(public)}, not the site's key "
                f"{fingerprint(pinned)}")
    try:
        key.verify(signature, DOMAIN + data)
    except InvalidSignature:
        return f"the signature by key {fingerprint(public)} does not match the manifest"
    return None
