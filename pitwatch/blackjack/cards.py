"""Cards, ranks and the shoe.

Ranks and suits are the strings of the event contract (docs/events.md):
ranks ``A``, ``2``-``10``, ``J``, ``Q``, ``K``; suits ``C``, ``D``, ``H``, ``S``.
Everything here is pure except :meth:`Shoe.shuffled`, which takes the random source
as an argument, so a seeded :class:`random.Random` always gives the same shoe.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Final, NamedTuple, Self

__all__ = [
    "RANKS",
    "RANK_VALUES",
    "SUITS",
    "TEN_VALUE_RANKS",
    "Card",
    "Shoe",
    "ShoeEmptyError",
    "card_limit",
    "is_ten_value",
    "is_valid_rank",
    "is_valid_suit",
    "rank_value",
]

RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS: Final = ("C", "D", "H", "S")
TEN_VALUE_RANKS: Final = frozenset(("10", "J", "Q", "K"))

# Point value of each rank with the ace counted as 1 (hands.hand_total adds the 10).
RANK_VALUES: Final[Mapping[str, int]] = {
    "A": 1,
    "2": 2,
    "3": 3,
    "4": 4,
    "5": 5,
    "6": 6,
    "7": 7,
    "8": 8,
    "9": 9,
    "10": 10,
    "J": 10,
    "Q": 10,
    "K": 10,
}
_SUIT_SET: Final = frozenset(SUITS)


class Card(NamedTuple):
    """One card: its rank and suit, as the event contract spells them."""

    rank: str
    suit: str


# One deck in "fresh" order: suit by suit (C, D, H, S), each suit A..K. The Card objects
# are shared by every shoe, so building or shuffling a shoe allocates no new cards.
_ONE_DECK: Final[tuple[Card, ...]] = tuple(Card(r, s) for s in SUITS for r in RANKS)


def rank_value(rank: str) -> int:
    """Point value of a rank: ``A`` is 1, ``2``-``10`` their number, ``J``/``Q``/``K`` 10.

    Raises ValueError for a string that is not a rank.
    """
    try:
        return RANK_VALUES[rank]
    except KeyError:
        raise ValueError(f"not a card rank: {rank!r}") from None


def is_ten_value(rank: str) -> bool:
    """True for ``10``, ``J``, ``Q`` and ``K``."""
    return rank in TEN_VALUE_RANKS


def is_valid_rank(rank: str) -> bool:
    return rank in RANK_VALUES


def is_valid_suit(suit: str) -> bool:
    return suit in _SUIT_SET


def card_limit(decks: int) -> int:
    """How many copies of one card (one rank of one suit) a shoe of ``decks`` decks holds."""
    if decks < 1:
        raise ValueError(f"a shoe holds at least one deck, not {decks}")
    return decks


class ShoeEmptyError(IndexError):
    """Raised by :meth:`Shoe.draw` when every card has been dealt."""


class Shoe:
    """The cards of a shoe in dealing order, and how far the deal has gone.

    ``cut_card`` is the number of cards in front of the cut card: once that many have
    been dealt, :attr:`cut_card_reached` is true and the shoe should be changed after
    the round. It defaults to three quarters of the shoe (75 % penetration).

    Build one with :meth:`fresh` (new-deck order), :meth:`shuffled` (an injected
    :class:`random.Random`), or the constructor with a stacked order (tests, replays).
    The constructor checks every card and that no card occurs more often than
    :func:`card_limit` allows for ``decks``; a stacked shoe may hold fewer cards.
    """

    __slots__ = ("_cards", "_pos", "cut_card", "decks")

    def __init__(self, cards: Iterable[Card], *, decks: int, cut_card: int | None = None) -> None:
        order = tuple(cards)
        limit = card_limit(decks)
        counts: dict[Card, int] = {}
        for card in order:
            if card.rank not in RANK_VALUES or card.suit not in _SUIT_SET:
                raise ValueError(f"not a card: {card!r}")
            n = counts.get(card, 0) + 1
            if n > limit:
                raise ValueError(f"{card.rank}{card.suit} occurs more than {limit} times")
            counts[card] = n
        if cut_card is None:
            cut_card = len(order) * 3 // 4
        elif not 0 <= cut_card <= len(order):
            raise ValueError(f"cut card position {cut_card} outside a shoe of {len(order)}")
        self._cards: tuple[Card, ...] = order
        self._pos = 0
        self.decks: int = decks
        self.cut_card: int = cut_card

    @classmethod
    def fresh(cls, decks: int, *, cut_card: int | None = None) -> Self:
        """``decks`` new decks, unshuffled: deck by deck, suits C, D, H, S, each A..K."""
        card_limit(decks)
        return cls(_ONE_DECK * decks, decks=decks, cut_card=cut_card)

    @classmethod
    def shuffled(cls, decks: int, rng: random.Random, *, cut_card: int | None = None) -> Self:
        """``decks`` decks shuffled with ``rng`` (the only randomness in the package)."""
        card_limit(decks)
        order = list(_ONE_DECK * decks)
        rng.shuffle(order)
        return cls(order, decks=decks, cut_card=cut_card)

    def draw(self) -> Card:
        """The next card. Raises :class:`ShoeEmptyError` when the shoe is empty."""
        pos = self._pos
        if pos >= len(self._cards):
            raise ShoeEmptyError("the shoe is empty")
        self._pos = pos + 1
        return self._cards[pos]

    @property
    def size(self) -> int:
        """Cards in the shoe when it was loaded."""
        return len(self._cards)

    @property
    def dealt(self) -> int:
        return self._pos

    @property
    def remaining(self) -> int:
        return len(self._cards) - self._pos

    @property
    def penetration(self) -> float:
        """Share of the shoe dealt so far, 0.0 to 1.0 (a statistic, never money)."""
        return self._pos / len(self._cards) if self._cards else 0.0

    @property
    def cut_card_reached(self) -> bool:
        return self._pos >= self.cut_card

    @property
    def cards(self) -> tuple[Card, ...]:
        """The whole order, dealt cards included (for recording or replaying a shoe)."""
        return self._cards

    def __repr__(self) -> str:
        return (
            f"Shoe(decks={self.decks}, size={self.size}, dealt={self._pos}, "
            f"cut_card={self.cut_card})"
        )
