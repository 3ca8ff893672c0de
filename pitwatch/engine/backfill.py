"""A stretch of a table's record lost before the audit, audited when it is re-sent
(docs/events.md, "Back-fill").

When the worker tells a table that events were deleted before it read them
(`TableAuditor.lost`), the table keeps its state as it was at that moment: the state
just before the lost stretch, since the stretch is a run of the partition's offsets and
nothing after it has been read yet. The break that follows (EVENTS_LOST) names, for each
device, the seqs missing from its record (its holes) and the digest the event after the
hole names as its predecessor (its join).

Events later re-sent for those seqs are not judged by the table's record, which has
moved on: they go to a second auditor, the fold, started from the kept state, which
audits the stretch in order as if it had never been lost. What it finds is raised with
the same deterministic ids an unbroken audit gives; rounds that end inside the stretch
are summarised. Once every hole is filled and each device's last back-filled event is the
one its join names, the stretch is whole: the loss finding is raised again under its own
id (a store keeps the last copy), LOW, saying so. A stretch whose chain does not join is
reported as a digest mismatch and the loss stands; so does one that skipped seqs (the
fold reports them lost, as any audit would).

The round that runs on past the end of the stretch was cut by the break and stays
unjudged: nothing is judged twice. Nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .auditor import TableAuditor
    from .violation import Violation


@dataclass
class Hole:
    """A device's seqs missing from the record, the digest of the event before the
    first seq after them (None when that event starts a chain), the next seq the
    back-fill needs, and whether it skipped one (then the stretch is not whole)."""

    first: int
    last: int
    join: bytes | None
    next: int = 0
    skipped: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.last or self.next > self.last + 1:
            raise ValueError("a hole of no seqs")
        self.next = self.next or self.first

    def took(self, seq: int) -> None:
        """The fold recorded `seq` of this hole."""
        if seq > self.next:
            self.skipped = True
        self.next = max(self.next, seq + 1)

    def to_json(self) -> list[Any]:
        return [self.first, self.last,
                None if self.join is None else base64.b64encode(self.join).decode(),
                self.next, self.skipped]

    @classmethod
    def from_json(cls, d: list[Any]) -> Hole:
        first, last, join, nxt, skipped = d
        return cls(int(first), int(last),
                   None if join is None else base64.b64decode(join, validate=True),
                   int(nxt), bool(skipped))


@dataclass
class Backfill:
    """A lost stretch awaiting its events: the holes, the loss finding that reported it,
    and the fold that audits what is re-sent."""

    fold: TableAuditor
    holes: dict[str, Hole] = field(default_factory=dict)
    loss: Violation | None = None

    def wants(self, device_id: str, seq: int) -> bool:
        h = self.holes.get(device_id)
        return h is not None and h.first <= seq <= h.last

    def done(self) -> bool:
        """Each device's back-fill has reached the seq before its join."""
        return all(h.next > h.last for h in self.holes.values())

    def skipped(self) -> list[str]:
        """The devices whose back-fill skipped seqs (the fold reported them lost)."""
        return sorted(d for d, h in self.holes.items() if h.skipped)

    def unjoined(self) -> list[str]:
        """The devices whose last back-filled event is not the one their join names."""
        devices = self.fold.devices
        return sorted(device_id for device_id, h in self.holes.items()
                      if devices[device_id].last_seq != h.last
                      or devices[device_id].last_digest != h.join)

    def stretch(self) -> str:
        return ", ".join(f"{d} seq {h.first}" + ("" if h.first == h.last else f"–{h.last}")
                         for d, h in sorted(self.holes.items()))
