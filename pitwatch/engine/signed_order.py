"""The table's order across devices and its end, as sealed checkpoints sign them
(docs/events.md, "Signed checkpoints": ends and order).

Each device signs its own chain; how the chains interleave (which device's event came
before which) is signed by a device whose sealed checkpoints carry `order`: the SHA-256
(`keys.order_digest`) of the device ids of the table's events since that device's
previous order, in the order the table recorded them. `TableOrder` keeps the same
sequence as the audit accepts events, so a checkpoint's order is compared with the
record's. A break in the record (events lost, a restart, a table read from its middle)
leaves a window unknown: that checkpoint is not compared (the break is its own
finding), and the next window starts after it.
"""

from __future__ import annotations

from typing import Any, Final

from ..events.keys import order_digest

#: How many device ids are kept at most; older ones are dropped half at a time and the
#: windows that began in them are unknown (the state stays bounded whatever the stream).
MAX_LOG: Final = 8192
#: How many are kept while no order was signed yet (a signer's first order covers the
#: table from its first event, and comes within its first round): past it, that first
#: window is unknown, and a table whose devices sign no order keeps a small state.
FIRST_WINDOW: Final = 1024


class TableOrder:
    """The device ids of the table's accepted events since the oldest open window."""

    __slots__ = ("base", "end_reported", "ended", "held", "last", "log", "signed", "start",
                 "whole")

    def __init__(self) -> None:
        #: device ids of the accepted events, from absolute position `base`
        self.log: list[str] = []
        self.base = 0
        #: signer -> absolute position where its window starts (None: unknown)
        self.start: dict[str, int | None] = {}
        #: the log holds the table's record from its first event (a new signer's window
        #: starts there)
        self.whole = True
        #: a sealed checkpoint signed the table's order: its record must end signed
        self.signed = False
        #: the table's last event is a checkpoint that says its record ends there
        self.ended = False
        #: a missing end was reported for the table's last event (not said again)
        self.end_reported = False
        #: the table's last accepted event: (event id, ts, round id, device id, seq)
        self.last: tuple[str, int, str | None, str, int] | None = None
        #: an order found contradicted, not reported yet: (event id, ts, round id,
        #: message). Events lost before a checkpoint show as a gap only at their
        #: device's next event, which may come after it: a break found before the
        #: signer's next order (or the end of input) explains it, and it is dropped
        self.held: tuple[str, int, str | None, str] | None = None

    def note(self, device_id: str, event_id: str, ts: int, round_id: str | None,
             seq: int) -> None:
        """An event the record accepted, in the table's order."""
        self.log.append(device_id)
        self.last = (event_id, ts, round_id, device_id, seq)
        self.ended = self.end_reported = False
        if not self.signed and len(self.log) > FIRST_WINDOW:
            self.lost()
        elif len(self.log) > MAX_LOG:
            drop = MAX_LOG // 2
            del self.log[:drop]
            self.base += drop
            self.whole = False
            for k, v in self.start.items():
                if v is not None and v < self.base:
                    self.start[k] = None

    def lost(self) -> None:
        """A break in the record: every window open now is unknown."""
        self.base += len(self.log)
        self.log.clear()
        self.whole = False
        self.held = None
        for k in self.start:
            self.start[k] = None

    def window(self, signer: str) -> list[str] | None:
        """The device ids since the signer's previous order (from the table's first
        event for its first), or None when the record cannot say."""
        at = self.start.get(signer, 0 if self.whole else None)
        if at is None or at < self.base:
            return None
        return self.log[at - self.base:]

    def matches(self, signer: str, order: bytes) -> tuple[bool, int] | None:
        """Whether the signer's window is the order it signed, and its length; None
        when the window is unknown."""
        w = self.window(signer)
        if w is None:
            return None
        return order_digest(w) == order, len(w)

    def signed_here(self, signer: str) -> None:
        """The signer's order checkpoint was just noted: its next window starts after it."""
        self.start[signer] = self.base + len(self.log)
        self.signed = True
        self._trim()

    def _trim(self) -> None:
        """Drop what no window needs any more."""
        if self.whole and not self.signed:
            return
        starts = [v for v in self.start.values() if v is not None]
        keep = min(starts) if starts else self.base + len(self.log)
        if keep > self.base:
            del self.log[:keep - self.base]
            self.base = keep
            self.whole = False

    def to_json(self) -> dict[str, Any]:
        return {"log": list(self.log), "base": self.base, "start": dict(self.start),
                "whole": self.whole, "signed": self.signed, "ended": self.ended,
                "end_reported": self.end_reported,
                "last": None if self.last is None else list(self.last),
                "held": None if self.held is None else list(self.held)}

    @classmethod
    def from_json(cls, d: Any) -> TableOrder:
        """The state `to_json` gave; a snapshot without one: nothing known (windows
        unknown until each signer's next order)."""
        out = cls()
        if not isinstance(d, dict):
            out.whole = False
            return out
        out.log = [str(x) for x in d["log"]]
        out.base = int(d["base"])
        out.start = {str(k): None if v is None else int(v) for k, v in d["start"].items()}
        out.whole, out.signed = bool(d["whole"]), bool(d["signed"])
        out.ended, out.end_reported = bool(d["ended"]), bool(d["end_reported"])
        held = d.get("held")
        out.held = None if held is None else (
            str(held[0]), int(held[1]), None if held[2] is None else str(held[2]), str(held[3]))
        last = d["last"]
        out.last = None if last is None else (
            str(last[0]), int(last[1]), None if last[2] is None else str(last[2]),
            str(last[3]), int(last[4]))
        return out
