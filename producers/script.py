"""A round as a script: the events it will emit, in order, before they get envelopes.

The dealer plays a round into a list of `Step`s (device and payload, with a tag saying
what the step is for). Markers (steps without a device) name the places where the
procedure moves on from one phase to the next. Fault injection edits this list
(inserts, removes, moves and rewrites steps); rendering then gives every remaining
step its envelope (seq, prev_digest, ts, event_id) in `devices.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from pitwatch.events.model import Payload

CONSOLE: Final = "console"
SHOE: Final = "shoe"
READER: Final = "reader"
RFID: Final = "rfid"
DEVICES: Final = (CONSOLE, SHOE, READER, RFID)

Tag = tuple[object, ...]


@dataclass(slots=True, eq=False)
class Step:
    """One event to be: its device, its payload and what it is for.

    A marker has no device and no payload; its tag is ``("M", name, *args)``. The flags
    ask the renderer to break the device record on purpose (EVENTS_LOST,
    DIGEST_MISMATCH, SEQUENCE_CONFLICT). `event_id` is set when the step is rendered.
    """

    device: str
    payload: Payload | None
    tag: Tag = ()
    skip_seq: bool = False
    bad_digest: bool = False
    conflict: Payload | None = None
    #: what a forger sends instead of `payload` (the device signs `payload`)
    forged: Payload | None = None
    event_id: str | None = None
    conflict_id: str | None = None

    @property
    def is_marker(self) -> bool:
        return not self.device


def marker(name: str, *args: object) -> Step:
    return Step("", None, ("M", name, *args))


@dataclass(slots=True)
class RoundScript:
    """The steps of one round and the facts fault injection chooses by."""

    round_id: str
    steps: list[Step]
    facts: RoundFacts

    # --- finding ---------------------------------------------------------------------

    def find(self, *prefix: object) -> list[Step]:
        """Steps whose tag starts with `prefix`, in order."""
        n = len(prefix)
        return [s for s in self.steps if s.tag[:n] == prefix]

    def first(self, *prefix: object) -> Step | None:
        n = len(prefix)
        for s in self.steps:
            if s.tag[:n] == prefix:
                return s
        return None

    def index(self, step: Step) -> int:
        for i, s in enumerate(self.steps):
            if s is step:
                return i
        raise ValueError("step not in the script")

    def marker_index(self, name: str, *args: object) -> int:
        tag = ("M", name, *args)
        for i, s in enumerate(self.steps):
            if s.tag == tag:
                return i
        raise KeyError(f"no marker {tag}")

    # --- editing ---------------------------------------------------------------------

    def insert_at(self, i: int, steps: Iterable[Step]) -> None:
        self.steps[i:i] = list(steps)

    def insert_after(self, anchor: Step, *steps: Step) -> None:
        self.insert_at(self.index(anchor) + 1, steps)

    def insert_before(self, anchor: Step, *steps: Step) -> None:
        self.insert_at(self.index(anchor), steps)

    def insert_after_marker(self, name: str, *args: object, steps: Iterable[Step]) -> None:
        self.insert_at(self.marker_index(name, *args) + 1, steps)

    def remove(self, steps: Iterable[Step]) -> None:
        gone = {id(s) for s in steps}
        self.steps = [s for s in self.steps if id(s) not in gone]

    def seat_turn_index(self, seat: int) -> int:
        """Where a seat's settlement begins: the seats settle from the highest down, so a
        seat without a turn of its own goes before the first lower seat's turn."""
        for i, s in enumerate(self.steps):
            t = s.tag
            if t[:2] == ("M", "seat_turn"):
                turn = t[2]
                assert isinstance(turn, int)
                if turn == seat:
                    return i + 1
                if turn < seat:
                    return i
            elif t == ("M", "settle_end"):
                return i
        raise KeyError("no settlement in the script")


@dataclass(slots=True)
class SeatFacts:
    seat: int
    main: int
    side: tuple[str, int] | None
    hand0_blackjack: bool = False
    even_money: bool = False
    split: bool = False


@dataclass(slots=True)
class RoundFacts:
    """What the round was, beyond its steps: what fault injection needs to know."""

    up: str = ""
    dealer_blackjack: bool = False
    seats: dict[int, SeatFacts] = field(default_factory=dict)
    #: the round reached the players' turn (not a dealer blackjack at a reader table)
    play_phase: bool = False
    #: a real BONUS wager open when the dealer's turn began
    bonus_open: bool = False
    dealer_two_total: int = 0
    #: the dealer stopped with live hands or a Push 22 wager waiting, on 17 to 21
    stopped_on_total: bool = False
    #: hands settled in the final pass with their main/double/split wagers
    final_blocks: list[tuple[int, int]] = field(default_factory=list)
