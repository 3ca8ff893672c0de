"""Basic strategy for the simulator's players.

The tables are the standard multi-deck (4 to 8 decks) basic strategy, with the
soft-17 variations and late surrender, as widely published. They decide what a
well-playing simulated player does; they are not a rule the audit enforces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from .cards import RANK_VALUES, TEN_VALUE_RANKS
from .hands import hand_total, is_blackjack
from .settlement import free_double_allowed, free_split_allowed

__all__ = [
    "DOUBLE",
    "HIT",
    "SPLIT",
    "STAND",
    "SURRENDER",
    "decide",
    "should_switch",
    "switch_score",
]

HIT: Final = "HIT"
STAND: Final = "STAND"
DOUBLE: Final = "DOUBLE"
SPLIT: Final = "SPLIT"
SURRENDER: Final = "SURRENDER"

# Column of the dealer's up card in every table row: 2 3 4 5 6 7 8 9 T A.
_UP: Final[Mapping[str, int]] = {
    "2": 0,
    "3": 1,
    "4": 2,
    "5": 3,
    "6": 4,
    "7": 5,
    "8": 6,
    "9": 7,
    "10": 8,
    "J": 8,
    "Q": 8,
    "K": 8,
    "A": 9,
}

# H hit, S stand, D double (else hit), X double (else stand).
# Columns: dealer up card 2 3 4 5 6 7 8 9 T A.
_HARD_S17: Final[Mapping[int, str]] = {
    9: "HDDDDHHHHH",
    10: "DDDDDDDDHH",
    11: "DDDDDDDDDH",
    12: "HHSSSHHHHH",
    13: "SSSSSHHHHH",
    14: "SSSSSHHHHH",
    15: "SSSSSHHHHH",
    16: "SSSSSHHHHH",
}
_HARD_H17: Final[Mapping[int, str]] = {**_HARD_S17, 11: "DDDDDDDDDD"}

_SOFT_S17: Final[Mapping[int, str]] = {
    12: "HHHHHHHHHH",
    13: "HHHDDHHHHH",
    14: "HHHDDHHHHH",
    15: "HHDDDHHHHH",
    16: "HHDDDHHHHH",
    17: "HDDDDHHHHH",
    18: "SXXXXSSHHH",
    19: "SSSSSSSSSS",
    20: "SSSSSSSSSS",
}
_SOFT_H17: Final[Mapping[int, str]] = {**_SOFT_S17, 18: "XXXXXSSHHH", 19: "SSSSXSSSSS"}

# Pairs by card value (ace 11): P split, - play the total instead. 5s and 10s never split.
_PAIRS_DAS: Final[Mapping[int, str]] = {
    2: "PPPPPP----",
    3: "PPPPPP----",
    4: "---PP-----",
    6: "PPPPP-----",
    7: "PPPPPP----",
    8: "PPPPPPPPPP",
    9: "PPPPP-PP--",
    11: "PPPPPPPPPP",
}
_PAIRS_NO_DAS: Final[Mapping[int, str]] = {
    **_PAIRS_DAS,
    2: "--PPPP----",
    3: "--PPPP----",
    4: "----------",
    6: "-PPPP-----",
}

# Late surrender of hard two-card totals: R surrender.
_SURRENDER_S17: Final[Mapping[int, str]] = {15: "--------R-", 16: "-------RRR"}
_SURRENDER_H17: Final[Mapping[int, str]] = {
    15: "--------RR",
    16: "-------RRR",
    17: "---------R",
}


def decide(
    player_ranks: Sequence[str],
    dealer_up_rank: str,
    *,
    can_double: bool,
    can_split: bool,
    can_surrender: bool,
    hits_soft_17: bool,
    dealer_22_pushes: bool = False,
    free_bet: bool = False,
    double_after_split: bool = True,
) -> str:
    """The basic-strategy play: ``HIT``, ``STAND``, ``DOUBLE``, ``SPLIT`` or ``SURRENDER``.

    ``can_double``, ``can_split`` and ``can_surrender`` say what the table allows on this
    hand now (the caller applies ``double_on``, split limits, and so on); doubling,
    splitting and surrender are only ever chosen on two cards. ``double_after_split``
    selects the split table for 2s, 3s, 4s and 6s. A hand of 21 or more stands; a
    one-card hand (just split) hits.

    Free Bet Blackjack (``free_bet``): every free split offered is taken (except 5s,
    which take the free double on 10), then every free double; other hands use the
    ordinary tables. ``dealer_22_pushes`` is accepted so callers can pass the full rule
    set, but the ordinary tables are used for Blackjack Switch too (a simplification).
    """
    del dealer_22_pushes  # the ordinary tables are used; see the docstring
    total, soft = hand_total(player_ranks)
    up = _UP.get(dealer_up_rank)
    if up is None:
        raise ValueError(f"not a card rank: {dealer_up_rank!r}")
    if total >= 21:
        return STAND
    if len(player_ranks) < 2:
        return HIT  # a split hand waiting for its second card
    two = len(player_ranks) == 2
    pair_value = 0
    if two:
        a, b = player_ranks
        if a == b:
            pair_value = 11 if a == "A" else RANK_VALUES[a]
        elif a in TEN_VALUE_RANKS and b in TEN_VALUE_RANKS:
            pair_value = 10

    if free_bet and two:
        if can_split and pair_value != 5 and free_split_allowed(player_ranks):
            return SPLIT
        if can_double and free_double_allowed(player_ranks):
            return DOUBLE

    if two and can_surrender and not soft:
        row = (_SURRENDER_H17 if hits_soft_17 else _SURRENDER_S17).get(total)
        # A pair of 8s is split rather than surrendered, except against an ace where
        # the dealer hits soft 17.
        if (
            row is not None
            and row[up] == "R"
            and (pair_value != 8 or not can_split or (hits_soft_17 and up == 9))
        ):
            return SURRENDER

    if pair_value and can_split:
        row = (_PAIRS_DAS if double_after_split else _PAIRS_NO_DAS).get(pair_value)
        if row is not None and row[up] == "P":
            return SPLIT

    if soft:
        code = (_SOFT_H17 if hits_soft_17 else _SOFT_S17)[total][up]
    elif total <= 8:
        code = "H"
    elif total >= 17:
        code = "S"
    else:
        code = (_HARD_H17 if hits_soft_17 else _HARD_S17)[total][up]

    if code == "H":
        return HIT
    if code == "S":
        return STAND
    if two and can_double:
        return DOUBLE
    return HIT if code == "D" else STAND


# Rough worth of a two-card hand, in hundredths of a stake, for the switch heuristic.
_HARD_SCORE: Final[Mapping[int, int]] = {
    4: -10,
    5: -12,
    6: -14,
    7: -12,
    8: -5,
    9: 5,
    10: 20,
    11: 28,
    12: -25,
    13: -30,
    14: -35,
    15: -40,
    16: -45,
    17: -15,
    18: 10,
    19: 30,
    20: 55,
}
_SOFT_SCORE: Final[Mapping[int, int]] = {
    12: 30,  # A,A: split
    13: 0,
    14: 0,
    15: 0,
    16: 0,
    17: 2,
    18: 12,
    19: 32,
    20: 58,
    21: 88,  # A+10 made by switching: an ordinary 21
}
_BLACKJACK_SCORE: Final = 100
_WEAK_UP: Final = frozenset(("2", "3", "4", "5", "6"))


def switch_score(hand: Sequence[str], dealer_up: str, *, switched: bool) -> int:
    """Heuristic worth of a two-card Blackjack Switch hand, in hundredths of a stake.

    Not a computed expectation: a hand-tuned ordering that prefers blackjack (only when
    dealt, not switched), then 21, 20, 19, soft hands, 11 and 10, and dislikes 12 to 16
    (less so against a dealer 2 to 6). A pair of 8s counts as the split it will get.
    """
    if len(hand) != 2:
        raise ValueError(f"Blackjack Switch hands have two cards, not {len(hand)}")
    if is_blackjack(hand, switched=switched):
        return _BLACKJACK_SCORE
    total, soft = hand_total(hand)
    if soft:
        return _SOFT_SCORE[total]
    score = -20 if hand[0] == hand[1] == "8" else _HARD_SCORE[total]
    if 12 <= total <= 16 and dealer_up in _WEAK_UP:
        score += 20
    return score


def should_switch(hand0: Sequence[str], hand1: Sequence[str], dealer_up: str) -> bool:
    """Blackjack Switch: whether to exchange the second cards of the two hands.

    A heuristic, not an optimal strategy: switch when the summed :func:`switch_score`
    of the switched hands is strictly higher than that of the dealt hands.
    """
    if len(hand0) != 2 or len(hand1) != 2:
        raise ValueError("Blackjack Switch hands have two cards each")
    if dealer_up not in RANK_VALUES:
        raise ValueError(f"not a card rank: {dealer_up!r}")
    dealt = switch_score(hand0, dealer_up, switched=False) + switch_score(
        hand1, dealer_up, switched=False
    )
    swapped = switch_score((hand0[0], hand1[1]), dealer_up, switched=True) + switch_score(
        (hand1[0], hand0[1]), dealer_up, switched=True
    )
    return swapped > dealt
