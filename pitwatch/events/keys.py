"""Signed device records: the checkpoint message, and the registry of device keys.

A device signs its own chain with Ed25519 (docs/events.md, "Signed checkpoints"): every
`checkpoint_every` events and after its last event of every round it emits a
`Checkpoint` naming the chain head it covers (`head_seq`, `head_digest`), the key that
signed, and the signature over `checkpoint_message(...)`; a sealed one (schema version
3) also signs the writer schema's SHA-256, the table's order (`order_digest`) and
whether the table's record ends there. The auditor holds only public
keys, so it can check a signature and cannot make one.

The registry is a JSON file:

    {"version": 1, "algorithm": "Ed25519", "checkpoint_every": 32,
     "devices": {"AC-BJ-01-rfid": [
        {"key_id": "AC-BJ-01-rfid/1", "public_key": "<base64, 32 bytes>",
         "from_seq": 1, "until_seq": 5000},
        {"key_id": "AC-BJ-01-rfid/2", "public_key": "...", "from_seq": 5001,
         "until_seq": null}]}}

A key signs checkpoints whose `head_seq` is within [from_seq, until_seq] (until_seq
null: no end yet), so keys rotate by device seq, the device's own order of record
(its clock is not trusted for that).

With a registry, a device must be in it: a device it does not name is a stranger whose
events nobody can check (SIGNATURE_INVALID, once a round). A site with devices that
cannot sign yet names them, on purpose, in `"unsigned_devices": ["AC-BJ-09-shoe"]`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from .model import Checkpoint

#: The domain tag that starts every signed checkpoint message (so a signature made for
#: anything else never passes for a checkpoint).
DOMAIN: Final = b"pitwatch checkpoint v1\x00"
#: The domain tag of a sealed checkpoint's message (schema version 3: it also binds the
#: writer schema, the table's order and its end), so neither form passes for the other.
SEALED_DOMAIN: Final = b"pitwatch checkpoint v2\x00"
#: The domain tag before the device ids of a table's order (`order_digest`).
ORDER_DOMAIN: Final = b"pitwatch table order v1\x00"
ALGORITHM: Final = "Ed25519"
REGISTRY_VERSION: Final = 1
#: How many events a device emits at most between two checkpoints, unless the
#: registry posts another figure.
CHECKPOINT_EVERY: Final = 32
#: The registry's name beside a floor's events (`pitwatch simulate --out DIR`): never
#: read as events when DIR is audited.
KEYS_FILE: Final = "keys.json"
#: The environment variable the worker reads the registry's path from.
KEYS_ENV: Final = "PITWATCH_KEYS"


#: The domain tag before a registry file's bytes in the site key's signature of it.
REGISTRY_DOMAIN: Final = b"pitwatch key registry v1\x00"
#: The site key's signature of a registry: FILE.sig beside it, the raw 64 bytes.
SIGNATURE_SUFFIX: Final = ".sig"
#: The environment variable naming the site's public key (PEM) registries are signed by.
SITE_PUBLIC_KEY_ENV: Final = "PITWATCH_SITE_PUBLIC_KEY"
#: What every summary and case says when no registry was there to check signatures.
NOT_CHECKED: Final = "signatures NOT CHECKED"
#: Where a registry comes from, for the messages that say none was found.
WHERE_KEYS: Final = (f"--keys FILE, ${KEYS_ENV}, {KEYS_FILE} beside the input, or one "
                     "pinned in the store")


class KeyRegistryError(ValueError):
    """A key registry file that cannot be used; the message says where and why."""


def site_public_key(path: str | Path) -> bytes:
    """The raw Ed25519 public key in the PEM file `path` (the site's key)."""
    from ..site_key import SiteKeyError, load_public

    try:
        return load_public(path)
    except SiteKeyError as e:
        raise KeyRegistryError(str(e)) from None


def check_registry_signature(raw: bytes, signature: bytes | None, where: str,
                             signature_where: str, site_public: bytes) -> None:
    """Raise KeyRegistryError unless `signature` is the site key's signature of the
    registry file's bytes `raw` (Ed25519 over REGISTRY_DOMAIN + raw, as
    `openssl pkeyutl -sign -rawin` makes it); `where` names the registry and
    `signature_where` its signature (FILE.sig beside a file) in the message."""
    if signature is None:
        raise KeyRegistryError(f"{where}: no site key's signature ({signature_where}): "
                               "an unsigned registry is refused")
    try:
        Ed25519PublicKey.from_public_bytes(site_public).verify(signature,
                                                               REGISTRY_DOMAIN + raw)
    except InvalidSignature:
        raise KeyRegistryError(f"{where}: {signature_where} is not the site key's "
                               "signature of this registry: refused") from None


def registry_path(given: str | None, inputs: Sequence[str | Path] = ()) -> Path | None:
    """The key registry to check signatures against: `given` (--keys, or $PITWATCH_KEYS),
    else the `keys.json` beside the input (in a directory named, or beside a file
    named), so that a registry lying beside a floor is never skipped. Two different
    registries beside the inputs: KeyRegistryError (name one with --keys)."""
    if given:
        return Path(given)
    found: dict[Path, Path] = {}
    for p in map(Path, inputs):
        beside = (p if p.is_dir() else p.parent) / KEYS_FILE
        if beside.is_file():
            found.setdefault(beside.resolve(), beside)
    if len(found) > 1:
        raise KeyRegistryError(
            f"more than one key registry beside the input ({', '.join(map(str, found.values()))}"
            "): name the one to check signatures against with --keys FILE")
    return next(iter(found.values()), None)


def checkpoint_message(table_id: str, device_id: str, head_seq: int, head_digest: bytes,
                       schema_sha256: bytes | None = None, order: bytes | None = None,
                       end: bool = False) -> bytes:
    """The exact bytes a checkpoint signs: DOMAIN, then table and device ids (UTF-8, each
    after its length as 4 bytes big-endian), head_seq (8 bytes big-endian, signed) and
    the 32-byte head digest. A sealed checkpoint (`schema_sha256` given) signs
    SEALED_DOMAIN and the same, then the 32-byte schema hash, the order (a 0 byte when
    none, else a 1 byte and its 32 bytes) and the end (one byte, 0 or 1). ValueError for
    an order or an end without a schema hash (the version 2 form binds neither)."""
    t, d = table_id.encode(), device_id.encode()
    head = (struct.pack(">I", len(t)), t, struct.pack(">I", len(d)), d,
            struct.pack(">q", head_seq), head_digest)
    if schema_sha256 is None:
        if order is not None or end:
            raise ValueError("an order or an end is signed only with a schema_sha256")
        return b"".join((DOMAIN, *head))
    return b"".join((SEALED_DOMAIN, *head, schema_sha256,
                     b"\x00" if order is None else b"\x01" + order,
                     b"\x01" if end else b"\x00"))


def sign_checkpoint(key: Ed25519PrivateKey, table_id: str, device_id: str, head_seq: int,
                    head_digest: bytes, schema_sha256: bytes | None = None,
                    order: bytes | None = None, end: bool = False) -> bytes:
    return key.sign(checkpoint_message(table_id, device_id, head_seq, head_digest,
                                       schema_sha256, order, end))


def order_digest(device_ids: Iterable[str]) -> bytes:
    """What a checkpoint's `order` signs: SHA-256 of ORDER_DOMAIN and the device id of
    each of the table's events in the order recorded (UTF-8, each after its length as 4
    bytes big-endian). With each device's own chain signed, the sequence of device ids
    fixes how the chains interleave (the k-th id of a device is its k-th event)."""
    h = hashlib.sha256(ORDER_DOMAIN)
    for device_id in device_ids:
        b = device_id.encode()
        h.update(struct.pack(">I", len(b)))
        h.update(b)
    return h.digest()


def public_bytes(key: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


@dataclass(frozen=True, slots=True)
class DeviceKey:
    key_id: str
    public_key: bytes  # raw 32 bytes
    from_seq: int = 1
    until_seq: int | None = None

    def covers(self, seq: int) -> bool:
        return self.from_seq <= seq and (self.until_seq is None or seq <= self.until_seq)

    def to_json(self) -> dict[str, Any]:
        return {"key_id": self.key_id,
                "public_key": base64.b64encode(self.public_key).decode(),
                "from_seq": self.from_seq, "until_seq": self.until_seq}


class KeyRegistry:
    """Devices and their public keys. `check` judges one checkpoint."""

    def __init__(self, devices: dict[str, list[DeviceKey]],
                 checkpoint_every: int = CHECKPOINT_EVERY,
                 unsigned_devices: frozenset[str] = frozenset()) -> None:
        if checkpoint_every < 1:
            raise KeyRegistryError(f"checkpoint_every must be at least 1, not {checkpoint_every}")
        both = sorted(unsigned_devices & devices.keys())
        if both:
            raise KeyRegistryError(f"{', '.join(both)}: both signing and unsigned")
        _check_keys(devices)
        self.devices = devices
        self.checkpoint_every = checkpoint_every
        #: devices the site lets send without signing (named on purpose; any other
        #: device the registry does not name is a stranger)
        self.unsigned_devices = unsigned_devices
        self._loaded: dict[bytes, Ed25519PublicKey] = {}
        #: the file it was loaded from (`load`), else its JSON form, and its SHA-256 (hex)
        self.raw = self.dumps()
        self.sha256 = hashlib.sha256(self.raw).hexdigest()

    def signs(self, device_id: str) -> bool:
        """Whether the device is in the registry (and so must sign its chain)."""
        return device_id in self.devices

    def knows(self, device_id: str) -> bool:
        """Whether the registry names the device, as signing or as let unsigned."""
        return device_id in self.devices or device_id in self.unsigned_devices

    def check_checkpoint(self, table_id: str, device_id: str, p: Checkpoint) -> str | None:
        """`check` of a checkpoint payload, in whichever form it came (sealed or not)."""
        return self.check(table_id, device_id, p.head_seq, p.head_digest, p.key_id,
                          p.signature, schema_sha256=p.schema_sha256, order=p.order,
                          end=p.end)

    def check(self, table_id: str, device_id: str, head_seq: int, head_digest: bytes,
              key_id: str, signature: bytes, *, schema_sha256: bytes | None = None,
              order: bytes | None = None, end: bool = False) -> str | None:
        """None when the signature is good; else why not (for the violation's message)."""
        keys = self.devices.get(device_id)
        if keys is None:
            return f"{device_id} is not in the key registry"
        key = next((k for k in keys if k.key_id == key_id), None)
        if key is None:
            return f"key {key_id!r} is not one of {device_id}'s keys"
        if not key.covers(head_seq):
            until = "on" if key.until_seq is None else f"to {key.until_seq}"
            return (f"key {key_id!r} signs {device_id} seq {key.from_seq} {until}, "
                    f"not seq {head_seq}")
        pub = self._loaded.get(key.public_key)
        if pub is None:
            pub = self._loaded[key.public_key] = Ed25519PublicKey.from_public_bytes(
                key.public_key)
        if schema_sha256 is None and (order is not None or end):
            return (f"{device_id} seq {head_seq}: an order or an end signed without a "
                    "schema hash")
        try:
            pub.verify(signature, checkpoint_message(table_id, device_id, head_seq,
                                                     head_digest, schema_sha256, order, end))
        except InvalidSignature:
            return f"the signature of {device_id} seq {head_seq} by key {key_id!r} is not valid"
        return None

    # --- the file ---------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": REGISTRY_VERSION, "algorithm": ALGORITHM,
            "checkpoint_every": self.checkpoint_every,
            "devices": {d: [k.to_json() for k in keys]
                        for d, keys in sorted(self.devices.items())}}
        if self.unsigned_devices:
            out["unsigned_devices"] = sorted(self.unsigned_devices)
        return out

    def dumps(self) -> bytes:
        """The registry's file, as `write` writes it."""
        return orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2) + b"\n"

    def write(self, path: Path) -> None:
        path.write_bytes(self.dumps())

    @classmethod
    def from_json(cls, d: Any, where: str = "key registry") -> KeyRegistry:
        if not isinstance(d, dict) or d.get("version") != REGISTRY_VERSION:
            raise KeyRegistryError(f"{where}: not a version {REGISTRY_VERSION} key registry")
        if d.get("algorithm", ALGORITHM) != ALGORITHM:
            raise KeyRegistryError(f"{where}: algorithm {d.get('algorithm')!r}, "
                                   f"pitwatch verifies {ALGORITHM}")
        devices: dict[str, list[DeviceKey]] = {}
        raw = d.get("devices")
        if not isinstance(raw, dict):
            raise KeyRegistryError(f"{where}: 'devices' is not an object")
        for device, keys in raw.items():
            if not isinstance(keys, list) or not keys:
                raise KeyRegistryError(f"{where}: {device}: not a list of keys")
            out = devices[str(device)] = []
            for n, k in enumerate(keys, 1):
                try:
                    pub = base64.b64decode(k["public_key"], validate=True)
                    until = k.get("until_seq")
                    key = DeviceKey(str(k["key_id"]), pub, int(k.get("from_seq", 1)),
                                    None if until is None else int(until))
                    Ed25519PublicKey.from_public_bytes(pub)
                except (KeyError, TypeError, ValueError) as e:
                    raise KeyRegistryError(f"{where}: {device} key {n}: {e}") from e
                out.append(key)
        try:
            every = int(d.get("checkpoint_every", CHECKPOINT_EVERY))
        except (TypeError, ValueError) as e:
            raise KeyRegistryError(f"{where}: checkpoint_every: {e}") from e
        unsigned = d.get("unsigned_devices", [])
        if not isinstance(unsigned, list) or not all(isinstance(x, str) for x in unsigned):
            raise KeyRegistryError(f"{where}: 'unsigned_devices' is not a list of device ids")
        try:
            return cls(devices, every, frozenset(unsigned))
        except KeyRegistryError as e:
            raise KeyRegistryError(f"{where}: {e}") from None

    @classmethod
    def from_bytes(cls, raw: bytes, where: str) -> KeyRegistry:
        """The registry a file's bytes `raw` hold, knowing those bytes and their SHA-256;
        `where` names it in the messages."""
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise KeyRegistryError(f"{where}: not JSON: {e}") from e
        registry = cls.from_json(data, where)
        registry.raw, registry.sha256 = raw, hashlib.sha256(raw).hexdigest()
        return registry

    @classmethod
    def load(cls, path: str | Path) -> KeyRegistry:
        try:
            raw = Path(path).read_bytes()
        except OSError as e:
            raise KeyRegistryError(f"cannot read key registry {path}: {e.strerror}") from e
        return cls.from_bytes(raw, str(path))


def _check_keys(devices: dict[str, list[DeviceKey]]) -> None:
    """Each key's seq range is a range (from_seq 1 or more, until_seq not before it), a
    key id names one key of the whole registry, and a device's ranges do not overlap (a
    seq is signed by one key)."""
    seen: dict[str, str] = {}
    for device, keys in sorted(devices.items()):
        for k in keys:
            if k.from_seq < 1:
                raise KeyRegistryError(f"{device}: key {k.key_id!r}: from_seq {k.from_seq} "
                                       "(seqs start at 1)")
            if k.until_seq is not None and k.until_seq < k.from_seq:
                raise KeyRegistryError(f"{device}: key {k.key_id!r}: until_seq "
                                       f"{k.until_seq} is before from_seq {k.from_seq}")
            if k.key_id in seen:
                raise KeyRegistryError(f"{device}: key id {k.key_id!r} is given twice "
                                       f"(also for {seen[k.key_id]}): a key id names one key")
            seen[k.key_id] = device
        ordered = sorted(keys, key=lambda k: k.from_seq)
        for a, b in itertools.pairwise(ordered):
            if a.until_seq is None or a.until_seq >= b.from_seq:
                raise KeyRegistryError(f"{device}: keys {a.key_id!r} and {b.key_id!r} both "
                                       f"sign seq {b.from_seq}")
