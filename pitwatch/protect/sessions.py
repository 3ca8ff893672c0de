"""Seat sessions: one player's stay at one seat.

Without seat events in the record, a session is inferred: a seat's run of rounds with
a main wager at one table, ended by GAP_ROUNDS or more rounds in a row without one
(or by the table's record ending). An inferred session says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .rounds import RoundView

#: this many rounds in a row without a wager at a seat end its session
GAP_ROUNDS: Final = 3


@dataclass(frozen=True, slots=True)
class SeatSession:
    table_id: str
    seat: int
    #: the table, seat and first round: unique and the same on every reading
    session_id: str
    rounds: tuple[RoundView, ...]
    inferred: bool = True


def infer_sessions(rounds: Sequence[RoundView], gap: int = GAP_ROUNDS) -> list[SeatSession]:
    """The inferred seat sessions of one table's rounds (in record order), ordered by
    seat, then first round."""
    runs: dict[int, list[list[RoundView]]] = {}
    last: dict[int, int] = {}
    for r in rounds:
        for seat, sr in r.seats.items():
            if sr.main <= 0:
                continue
            seat_runs = runs.setdefault(seat, [])
            if not seat_runs or r.index - last[seat] > gap:
                seat_runs.append([])
            seat_runs[-1].append(r)
            last[seat] = r.index
    out = []
    for seat in sorted(runs):
        for run in runs[seat]:
            first = run[0]
            out.append(SeatSession(first.table_id, seat,
                                   f"{first.table_id}/{seat}/{first.round_id}", tuple(run)))
    return out
