"""Who sits where, as the seat events record it (`PlayerSeated`, `PlayerLeft`: schema
version 6 on), in a table's round indexes (`RoundView.index`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..events.model import PlayerLeft, PlayerSeated


@dataclass(frozen=True, slots=True)
class Seating:
    """A stay at a seat as the seat events record it, in the table's round indexes:
    rounds `start` .. `end - 1` (`end` None: to the end of the record)."""

    seat: int
    player_id: str
    #: RATED (a loyalty card's id) or ANONYMOUS (a session id)
    player_kind: str
    start: int
    end: int | None = None

    def holds(self, index: int) -> bool:
        return self.start <= index and (self.end is None or index < self.end)


class SeatLog:
    """One table's seat events read in order: `seatings` holds each stay. A player
    seated where another sits ends the other's stay there; a PlayerLeft for a seat
    with nobody recorded in it changes nothing."""

    def __init__(self) -> None:
        self.seatings: list[Seating] = []
        self._open: dict[int, int] = {}  # seat -> its stay's place in `seatings`

    def seated(self, p: PlayerSeated, index: int) -> None:
        self.left(p.seat, index)
        self._open[p.seat] = len(self.seatings)
        self.seatings.append(Seating(p.seat, p.player_id, p.player_kind, index))

    def left(self, seat: int, index: int) -> None:
        at = self._open.pop(seat, None)
        if at is not None:
            s = self.seatings[at]
            self.seatings[at] = Seating(s.seat, s.player_id, s.player_kind, s.start, index)

    def feed(self, p: PlayerSeated | PlayerLeft, index: int) -> None:
        """A seat event, `index` the index of the table's next round to start: a stay
        holds the rounds that start while the player is seated."""
        if type(p) is PlayerSeated:
            self.seated(p, index)
        else:
            self.left(p.seat, index)
