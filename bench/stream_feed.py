"""Pre-encoded events for the streaming benches, restamped at send time by splicing.

Encoding an event costs tens of microseconds in Python; a bench that encodes while it
paces measures its own producer. Here each event is encoded once, ahead of time, and
cut at two places its schema fixes (TableEvent: event_id, table_id, device_id, seq,
**ts**, round_id, **prev_digest**, payload): the bytes before `ts`, those between `ts`
and `prev_digest`, and those after. Sending an event "now" joins the pieces around the
send time as an Avro long (zig-zag varint) and the SHA-256 of the device's previous
message body as it was sent (so every device's digest chain stays whole): a few
microseconds, no fastavro, no Event objects.

    Spliced.of(events) -> Spliced;  spliced.restamp(i, ts_ms) -> message bytes
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from pitwatch.events.avro import encode
from pitwatch.events.model import Event
from pitwatch.events.schema import single_object_header


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The zig-zag long at `pos` and the position after it."""
    shift = acc = 0
    while True:
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7


def zigzag_long(n: int) -> bytes:
    """An Avro long: zig-zag, then base-128 varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


@dataclass(frozen=True, slots=True)
class _Cut:
    key: bytes
    device: str
    head: bytes  # single-object header + body up to ts
    mid: bytes  # after ts, up to prev_digest (round_id)
    chained: bool  # prev_digest is not null
    tail: bytes  # after prev_digest (payload)


class Spliced:
    """Events encoded once, each re-sendable with a new ts and its device's chain."""

    def __init__(self, cuts: list[_Cut]) -> None:
        self.cuts = cuts
        self._last: dict[str, bytes] = {}  # device -> SHA-256 of its last body sent

    @classmethod
    def of(cls, events: Iterable[Event]) -> Spliced:
        header = single_object_header()
        cuts = []
        for ev in events:
            body = encode(ev)
            pos = 0
            for _ in range(3):  # event_id, table_id, device_id: length-prefixed
                n, pos = _varint(body, pos)
                pos += n
            _, pos = _varint(body, pos)  # seq
            ts_at = pos
            _, pos = _varint(body, pos)  # ts
            ts_end = pos
            branch, pos = _varint(body, pos)  # round_id: null | string
            if branch == 1:
                n, pos = _varint(body, pos)
                pos += n
            pd_at = pos
            branch, pos = _varint(body, pos)  # prev_digest: null | bytes
            if branch == 1:
                n, pos = _varint(body, pos)
                pos += n
            cuts.append(_Cut(ev.table_id.encode(), ev.device_id, header + body[:ts_at],
                             body[ts_end:pd_at], branch == 1, body[pos:]))
        return cls(cuts)

    def __len__(self) -> int:
        return len(self.cuts)

    def restamp(self, i: int, ts_ms: int) -> tuple[bytes, bytes]:
        """Event `i` as its device would send it at `ts_ms`: (key, message)."""
        c = self.cuts[i]
        prev = self._last.get(c.device) if c.chained else None
        pd = b"\x00" if prev is None else b"\x02\x40" + prev
        msg = c.head + zigzag_long(ts_ms) + c.mid + pd + c.tail
        self._last[c.device] = hashlib.sha256(memoryview(msg)[10:]).digest()
        return c.key, msg
