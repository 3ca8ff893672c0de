"""Dead letters: a message that cannot be used, with the reason and where it was read,
as JSON that always fits the broker's message limit (the value is cut to
MAX_VALUE_BYTES; its length and SHA-256 stay, so the original can be matched)."""

from __future__ import annotations

import base64
import hashlib

import orjson

#: The most of a bad message's value a dead letter carries (Kafka's default limit is
#: 1 MB; the key is cut to MAX_KEY_BYTES).
MAX_VALUE_BYTES = 64 * 1024
MAX_KEY_BYTES = 1024


def dead_letter(reason: str, topic: str, partition: int, offset: int,
                key: bytes | None, value: bytes | None) -> bytes:
    v = value or b""
    k = key or b""
    return orjson.dumps({
        "reason": reason[:2000], "topic": topic, "partition": partition, "offset": offset,
        "key": k[:MAX_KEY_BYTES].decode("utf-8", "replace"),
        "tombstone": value is None,
        "value_len": len(v), "value_sha256": hashlib.sha256(v).hexdigest(),
        "truncated": len(v) > MAX_VALUE_BYTES,
        "value_b64": base64.b64encode(v[:MAX_VALUE_BYTES]).decode(),
    })
