"""The dealer's drawing rule, soft 17 both ways."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pitwatch.blackjack import RANKS, dealer_must_draw, dealer_play, dealer_plays_on, hand_total


def drawer(ranks: list[str]) -> Callable[[], str]:
    it: Iterator[str] = iter(ranks)
    return lambda: next(it)


@pytest.mark.parametrize(
    ("ranks", "s17", "h17"),
    [
        (["10", "6"], True, True),
        (["A", "6"], False, True),  # soft 17
        (["A", "2", "4"], False, True),  # soft 17 of three cards
        (["10", "7"], False, False),  # hard 17
        (["A", "6", "10"], False, False),  # hard 17 with an ace
        (["A", "7"], False, False),  # soft 18
        (["9"], True, True),  # one card: the no-hole-card deal
        (["A"], True, True),
        (["A", "K"], False, False),  # blackjack
        (["10", "6", "8"], False, False),  # bust
    ],
)
def test_dealer_must_draw(ranks: list[str], s17: bool, h17: bool) -> None:
    assert dealer_must_draw(ranks, hits_soft_17=False) is s17
    assert dealer_must_draw(ranks, hits_soft_17=True) is h17


def test_dealer_play_soft_17_both_ways() -> None:
    assert dealer_play(["A", "6"], drawer(["4"]), hits_soft_17=False) == ["A", "6"]
    assert dealer_play(["A", "6"], drawer(["4"]), hits_soft_17=True) == ["A", "6", "4"]
    # hitting soft 17 into a hard 17 stops
    assert dealer_play(["A", "6"], drawer(["10", "5"]), hits_soft_17=True) == ["A", "6", "10"]


def test_dealer_play_draws_to_17_and_keeps_the_input() -> None:
    start = ["10", "2"]
    hand = dealer_play(start, drawer(["3", "K"]), hits_soft_17=False)
    assert hand == ["10", "2", "3", "K"]
    assert start == ["10", "2"]


def test_dealer_play_stands_on_a_made_hand_without_drawing() -> None:
    def no_draw() -> str:
        raise AssertionError("must not draw")

    assert dealer_play(["10", "8"], no_draw, hits_soft_17=True) == ["10", "8"]


@given(
    st.lists(st.sampled_from(RANKS), min_size=1, max_size=2),
    st.lists(st.sampled_from(RANKS), min_size=20, max_size=20),
    st.booleans(),
)
def test_dealer_play_stops_at_the_first_standing_hand(
    start: list[str], cards: list[str], h17: bool
) -> None:
    hand = dealer_play(start, drawer(cards), hits_soft_17=h17)
    assert hand[: len(start)] == start
    assert hand[len(start) :] == cards[: len(hand) - len(start)]
    assert not dealer_must_draw(hand, hits_soft_17=h17)
    for n in range(len(start), len(hand)):
        assert dealer_must_draw(hand[:n], hits_soft_17=h17)
    assert hand_total(hand)[0] >= 17


@pytest.mark.parametrize(("hand_in_play", "push22_open", "plays_on"), [
    (True, False, True), (False, True, True), (True, True, True), (False, False, False)])
def test_the_dealer_plays_on_while_a_hand_or_a_push22_wager_waits(
        hand_in_play: bool, push22_open: bool, plays_on: bool) -> None:
    """docs/procedure.md, step 10:

    > The dealer does not draw when no hand is left in play and no `BONUS` or `PUSH22`
    > wager is open

    (the bonus wager's third card is `dealer_must_draw_third_for_bonus`)."""
    assert dealer_plays_on(hand_in_play=hand_in_play, push22_open=push22_open) is plays_on
