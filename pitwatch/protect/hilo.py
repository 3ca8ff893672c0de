"""The Hi-Lo count and its true count.

Hi-Lo (Braun; Thorp's ten-count family, as popularised by Wong, *Professional
Blackjack*): 2-6 count +1, 7-9 count 0, tens and aces count -1. The running count is
the sum of the tags of every card seen since the shoe was loaded; the true count is
the running count per deck still to be dealt. Here the decks remaining are exact
(cards left / 52), not rounded to half decks as a player at the table estimates them:
with exact decks the true count is a martingale over the shoe (its expected value
after the next card is its value now), which the count-betting test relies on.
"""

from __future__ import annotations

from typing import Final

from ..blackjack import RANK_VALUES

#: Hi-Lo tag of each rank
TAGS: Final[dict[str, int]] = {
    r: (1 if 2 <= v <= 6 else -1 if v in (1, 10) else 0) for r, v in RANK_VALUES.items()
}
CARDS_PER_DECK: Final = 52


def true_count(running: int, decks: int, seen: int) -> float:
    """The running count per deck still in the shoe (0 when the shoe is spent)."""
    left = decks * CARDS_PER_DECK - seen
    return running * CARDS_PER_DECK / left if left > 0 else 0.0


class HiLo:
    """The running count of one shoe, card by card."""

    __slots__ = ("decks", "running", "seen")

    def __init__(self, decks: int) -> None:
        self.decks = decks
        self.running = 0
        self.seen = 0

    def see(self, rank: str) -> None:
        self.running += TAGS.get(rank, 0)
        self.seen += 1

    @property
    def true(self) -> float:
        return true_count(self.running, self.decks, self.seen)
