"""Hand arithmetic: totals, soft hands, blackjack, bust, pairs.

Hands are sequences of rank strings (``["A", "7"]``), the cheapest form the hot path
can hold; suits never change a total.
"""

from __future__ import annotations

from collections.abc import Sequence

from .cards import RANK_VALUES, TEN_VALUE_RANKS

__all__ = ["awaits_dealer", "hand_total", "is_blackjack", "is_bust", "is_pair", "is_soft"]


def hand_total(ranks: Sequence[str]) -> tuple[int, bool]:
    """The best total of a hand and whether it is soft.

    Aces count 1, and one ace counts 11 when that does not take the hand over 21; the
    hand is *soft* exactly when an ace is being counted as 11. A busted hand gives its
    hard total (over 21) and ``False``. An empty hand is ``(0, False)``.
    Raises ValueError on a string that is not a rank.
    """
    total = 0
    try:
        for rank in ranks:
            total += RANK_VALUES[rank]
    except KeyError:
        raise ValueError(f"not a card rank in hand {list(ranks)!r}") from None
    if total <= 11 and "A" in ranks:
        return total + 10, True
    return total, False


def is_soft(ranks: Sequence[str]) -> bool:
    return hand_total(ranks)[1]


def is_blackjack(ranks: Sequence[str], *, split_hand: bool = False, switched: bool = False) -> bool:
    """Two cards, an ace and a 10-value card, dealt as the hand's first two cards.

    Never a blackjack after a split (``split_hand``), nor in Blackjack Switch after the
    player switched a card into the hand (``switched``): there an A+10 made by switching
    counts as an ordinary 21 (public summary of the Blackjack Switch rules; the
    regulation files do not cover it).
    """
    if split_hand or switched or len(ranks) != 2:
        return False
    a, b = ranks
    return (a == "A" and b in TEN_VALUE_RANKS) or (b == "A" and a in TEN_VALUE_RANKS)


def is_bust(ranks: Sequence[str]) -> bool:
    return hand_total(ranks)[0] > 21


def is_pair(ranks: Sequence[str], *, by_value: bool = True) -> bool:
    """Two cards of the same point value (``J``+``K`` is a pair of tens).

    The splitting rules are not among the regulation files; by default two 10-value
    cards of different ranks are a pair, as most posted rules allow. Pass
    ``by_value=False`` to require the same rank.
    """
    if len(ranks) != 2:
        return False
    a, b = ranks
    if a == b:
        return a in RANK_VALUES
    return by_value and a in TEN_VALUE_RANKS and b in TEN_VALUE_RANKS


def awaits_dealer(*, bust: bool, blackjack: bool, surrendered: bool, even_money: bool,
                  settled: bool) -> bool:
    """Whether a player's hand still needs the dealer's final hand to be settled (a
    live hand): not bust, not a blackjack, not surrendered, not paid even money, and its
    wager not settled already. While one does, the dealer plays the hand out."""
    return not (bust or blackjack or surrendered or even_money or settled)
