"""The dealer's fixed drawing rule."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .hands import hand_total

__all__ = ["dealer_must_draw", "dealer_play", "dealer_plays_on"]


def dealer_must_draw(ranks: Sequence[str], *, hits_soft_17: bool) -> bool:
    """Whether the dealer draws another card: under 17, or a soft 17 where posted.

    A one-card hand (the no-hole-card deal, where the dealer's second card comes after
    the players act) always draws.
    """
    total, soft = hand_total(ranks)
    return total < 17 or (hits_soft_17 and soft and total == 17)


def dealer_plays_on(*, hand_in_play: bool, push22_open: bool) -> bool:
    """Whether the dealer completes the hand by the drawing rule: while a player's hand
    is still in play (one `awaits_dealer`) or a Push 22 wager, which the dealer's final
    hand decides, is open. Else the dealer draws no further card (docs/procedure.md,
    step 10; a bonus wager's third card is its own rule,
    `dealer_must_draw_third_for_bonus`)."""
    return hand_in_play or push22_open


def dealer_play(ranks: Sequence[str], draw: Callable[[], str], *, hits_soft_17: bool) -> list[str]:
    """Play the dealer's hand out and return the final hand (a new list).

    ``draw`` returns the rank of the next card; it is called once per card the rule
    requires, so a caller that needs suits (to emit ``CardDealt``) keeps them itself.
    The input is not modified.
    """
    hand = list(ranks)
    total, soft = hand_total(hand)
    while total < 17 or (hits_soft_17 and soft and total == 17):
        hand.append(draw())
        total, soft = hand_total(hand)
    return hand
