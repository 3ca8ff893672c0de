"""Seat sessions: one player's stay at one seat.

Where the record has seat events (`PlayerSeated`, `PlayerLeft`: schema version 6 on), a
session runs from the player seated to the player leaving (or to the end of the table's
record, or to another player seated there), and names the player (a rated player's id
from a loyalty card, or an anonymous session id). Its rounds are those in that stretch
with a main wager at the seat.

Where they are absent, a session is inferred: a seat's run of rounds with a main wager
at one table, ended by GAP_ROUNDS or more rounds in a row without one (or by the
table's record ending). An inferred session says so (`inferred`), and a round a
recorded session holds is never in an inferred one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .rounds import RoundView
from .seating import Seating

#: this many rounds in a row without a wager at a seat end its session
GAP_ROUNDS: Final = 3


@dataclass(frozen=True, slots=True)
class SeatSession:
    table_id: str
    seat: int
    #: the table, seat and first round: unique and the same on every reading
    session_id: str
    rounds: tuple[RoundView, ...]
    #: True: inferred from the wagers; False: from the seat events
    inferred: bool = True
    player_id: str | None = None
    player_kind: str | None = None


def _session(seat: int, run: Sequence[RoundView], s: Seating | None = None) -> SeatSession:
    first = run[0]
    return SeatSession(first.table_id, seat, f"{first.table_id}/{seat}/{first.round_id}",
                       tuple(run), s is None, None if s is None else s.player_id,
                       None if s is None else s.player_kind)


def infer_sessions(rounds: Sequence[RoundView], gap: int = GAP_ROUNDS,
                   seatings: Sequence[Seating] = ()) -> list[SeatSession]:
    """The seat sessions of one table's rounds (in record order): one for each recorded
    seating with a wagered round, and the inferred ones of the rounds no seating holds;
    ordered by seat, then first round."""
    recorded: list[tuple[int, int, SeatSession]] = []
    for s in seatings:
        run = [r for r in rounds if s.holds(r.index) and (sr := r.seats.get(s.seat))
               is not None and sr.main > 0]
        if run:
            recorded.append((s.seat, run[0].index, _session(s.seat, run, s)))
    runs: dict[int, list[list[RoundView]]] = {}
    last: dict[int, int] = {}
    for r in rounds:
        for seat, sr in r.seats.items():
            if sr.main <= 0:
                continue
            if any(s.seat == seat and s.holds(r.index) for s in seatings):
                last.pop(seat, None)  # a recorded stay: an inferred run ends before it
                continue
            seat_runs = runs.setdefault(seat, [])
            if not seat_runs or seat not in last or r.index - last[seat] > gap:
                seat_runs.append([])
            seat_runs[-1].append(r)
            last[seat] = r.index
    inferred = [(seat, run[0].index, _session(seat, run))
                for seat in runs for run in runs[seat]]
    return [s for _, _, s in sorted(recorded + inferred, key=lambda x: (x[0], x[1]))]
