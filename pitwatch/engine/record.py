"""One device's record as the auditor holds it (docs/events.md, "The record"): its last
seq and digest, and a compact history of what it recorded, to tell an identical copy
(a no-op) from a substitution (a different event under a recorded seq).

The history keeps the first `PREFIX` bytes of each recorded event's digest (SHA-256 of
its canonical bytes), indexed by seq, for at least the last `HISTORY_SEQS` seqs of the
device's current chain: 8 bytes a seq, 36 KiB a device at most (49 KB in a snapshot).
A device that restarts (seq 1 again, prev_digest null: a new chain) keeps its earlier
chains' histories, the last `OLD_CHAINS` of them, so a late copy of an event from
before the restart is still known. Seqs lost in a gap are held as `HOLE`: an event for
them arriving after the record moved on is a late one, not a copy.

Nothing here reads a clock or does I/O; the auditor decides what each answer means.
"""

from __future__ import annotations

import base64
import enum
from typing import Any, Final

#: Bytes of each recorded event's digest kept: a forger would need about 2^64 tries to
#: make a different event pass for a recorded one.
PREFIX: Final = 8
#: Seqs of a device's current chain whose digests are kept (older copies cannot be
#: compared: docs/events.md, "The record"): a worker's snapshot of a table of four
#: devices stays near 200 KB, well inside its 900 KB bound.
HISTORY_SEQS: Final = 4096
#: Earlier chains (before restarts) whose histories are kept.
OLD_CHAINS: Final = 4
#: The history grows this many seqs past HISTORY_SEQS before its oldest are dropped.
TRIM: Final = 512
_TRIM_AT: Final = (HISTORY_SEQS + TRIM) * PREFIX
#: What a seq lost in a gap holds in the history.
HOLE: Final = bytes(PREFIX)
#: A gap longer than this starts the history again at the seq after it (no holes kept).
MAX_HOLES: Final = 1024


class Fed(enum.Enum):
    """What the record did with an event handed to `feed`: the store keeps only what
    the record accepted."""

    #: taken into the device's record (and judged, where the record allows)
    ACCEPTED = "accepted"
    #: an identical copy of an event already recorded: a no-op
    REDELIVERY = "redelivery"
    #: not applied (a different copy of a recorded seq, a late or uncomparable one, a
    #: device over the table's limit): reported, never evidence
    REFUSED = "refused"


class Device:
    """One device's record. `last_digest` is None until the device is first seen (or
    primed from stored history)."""

    __slots__ = ("broke_at", "hist", "hist_from", "last_digest", "last_seq", "old",
                 "stranger_round", "unsigned", "unsigned_from", "unsigned_last",
                 "unsigned_round")

    def __init__(self) -> None:
        self.last_seq = 0
        self.last_digest: bytes | None = None
        #: the current chain's digest prefixes, seq `hist_from` first
        self.hist = bytearray()
        self.hist_from = 1
        #: earlier chains: (first seq, prefixes)
        self.old: list[tuple[int, bytes]] = []
        #: the seq at which the chain last resumed after a break (0: never)
        self.broke_at = 0
        #: events since the device's last checkpoint (counted only for a device that
        #: signs), the seq of the first of them, the last one (seq, event id, ts) and
        #: its round
        self.unsigned = 0
        self.unsigned_from = 0
        self.unsigned_last: tuple[int, str, int] = (0, "", 0)
        self.unsigned_round: str | None = None
        #: for a device the key registry does not know: the round (or "" between
        #: rounds) it was last reported in, so it is reported once a round
        self.stranger_round: str | None = None

    @property
    def seen(self) -> bool:
        return self.last_digest is not None

    # --- questions ----------------------------------------------------------------------

    def recorded(self, seq: int) -> bytes | None:
        """The digest prefix recorded for `seq` in the current chain (HOLE for a lost
        seq), or None when the history does not reach it."""
        k = seq - self.hist_from
        if k < 0 or seq > self.last_seq:
            return None
        return bytes(self.hist[k * PREFIX:(k + 1) * PREFIX])

    def known(self, seq: int, prefix: bytes) -> bool:
        """Whether an event with this seq and digest prefix is already recorded, in the
        current chain or an earlier one."""
        if self.recorded(seq) == prefix:
            return True
        for first, hist in self.old:
            k = seq - first
            if k >= 0 and (k + 1) * PREFIX <= len(hist) \
                    and hist[k * PREFIX:(k + 1) * PREFIX] == prefix:
                return True
        return False

    # --- moving on ----------------------------------------------------------------------

    def start(self, seq: int, digest: bytes) -> None:
        """The device's first known event (seen, or primed): its chain starts here."""
        self.last_seq, self.last_digest = seq, digest
        self.hist = bytearray(digest[:PREFIX])
        self.hist_from = seq

    def append(self, seq: int, digest: bytes) -> None:
        """The next event of the chain, `seq` above `last_seq` (holes for a gap)."""
        missing = seq - self.last_seq - 1
        if missing > MAX_HOLES:
            self.hist = bytearray()
            self.hist_from = seq
        elif missing > 0:
            self.hist += HOLE * missing
        hist = self.hist
        hist += digest[:PREFIX]
        self.last_seq, self.last_digest = seq, digest
        if len(hist) > _TRIM_AT:  # the oldest dropped TRIM seqs at a time, not one by one
            over = len(hist) // PREFIX - HISTORY_SEQS
            del hist[:over * PREFIX]
            self.hist_from += over

    def lost_before(self, first: int) -> None:
        """The seqs from `first` to the chain's first known one were lost: held as holes
        (a back-fill may bring them), when there are at most MAX_HOLES of them."""
        missing = self.hist_from - first
        if 0 < missing <= MAX_HOLES and len(self.hist) == PREFIX:
            self.hist[:0] = HOLE * missing
            self.hist_from = first

    def fill(self, seq: int, digest: bytes) -> None:
        """A seq lost in a gap, recorded after all (a back-fill): a copy of it is a
        redelivery from now on."""
        k = seq - self.hist_from
        if k >= 0 and seq <= self.last_seq and self.hist[k * PREFIX:(k + 1) * PREFIX] == HOLE:
            self.hist[k * PREFIX:(k + 1) * PREFIX] = digest[:PREFIX]

    def restart(self, digest: bytes) -> None:
        """A new chain from seq 1; the current one is kept as an earlier chain."""
        if self.hist:
            self.old.append((self.hist_from, bytes(self.hist)))
            del self.old[:-OLD_CHAINS]
        self.start(1, digest)

    # --- snapshots ----------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {"last_seq": self.last_seq,
                "last_digest": None if self.last_digest is None else _b64(self.last_digest),
                "hist_from": self.hist_from, "hist": _b64(bytes(self.hist)),
                "old": [[first, _b64(h)] for first, h in self.old],
                "broke_at": self.broke_at,
                "unsigned": self.unsigned, "unsigned_from": self.unsigned_from,
                "unsigned_last": list(self.unsigned_last),
                "unsigned_round": self.unsigned_round, "stranger_round": self.stranger_round}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Device:
        dev = cls()
        dev.last_seq = int(d["last_seq"])
        last = d["last_digest"]
        dev.last_digest = None if last is None else _unb64(last)
        dev.hist_from = int(d["hist_from"])
        dev.hist = bytearray(_unb64(d["hist"]))
        dev.old = [(int(first), _unb64(h)) for first, h in d["old"]]
        if len(dev.hist) % PREFIX or len(dev.hist) > _TRIM_AT \
                or len(dev.old) > OLD_CHAINS:
            raise ValueError("a device's history of another size")
        dev.broke_at = int(d["broke_at"])
        dev.unsigned = int(d["unsigned"])
        dev.unsigned_from = int(d["unsigned_from"])
        seq, event_id, ts = d["unsigned_last"]
        dev.unsigned_last = (int(seq), str(event_id), int(ts))
        r = d["unsigned_round"]
        dev.unsigned_round = None if r is None else str(r)
        s = d["stranger_round"]
        dev.stranger_round = None if s is None else str(s)
        return dev

    @classmethod
    def from_v1(cls, d: dict[str, Any]) -> dict[str, Any]:
        """A version-1 snapshot's device (a seq window of event ids, the last digest) as
        version 2: the history then holds only the last event's digest, so older copies
        cannot be compared."""
        last = d["last_digest"]
        seq = int(d["last_seq"])
        raw = _unb64(last) if last else b""
        return {"last_seq": seq, "last_digest": last if raw else None,
                "hist_from": seq, "hist": _b64(raw[:PREFIX]) if raw else "",
                "old": [], "broke_at": 0,
                "unsigned": int(d.get("unsigned", 0)),
                "unsigned_from": int(d.get("unsigned_from", 0)),
                "unsigned_last": list(d.get("unsigned_last", (0, "", 0))),
                "unsigned_round": d.get("unsigned_round"),
                "stranger_round": d.get("stranger_round")}


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _unb64(s: str) -> bytes:
    return base64.b64decode(s, validate=True)
