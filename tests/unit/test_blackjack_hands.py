"""Hand totals, soft hands, blackjack, bust and pairs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pitwatch.blackjack import RANKS, hand_total, is_blackjack, is_bust, is_pair, is_soft

ranks_st = st.sampled_from(RANKS)


@pytest.mark.parametrize(
    ("ranks", "total", "soft"),
    [
        ([], 0, False),
        (["10", "7"], 17, False),
        (["K", "Q"], 20, False),
        (["5", "6"], 11, False),
        (["A", "6"], 17, True),
        (["A", "7"], 18, True),
        (["A", "K"], 21, True),
        (["A", "A"], 12, True),
        (["A", "A", "9"], 21, True),
        (["A", "6", "10"], 17, False),  # the ace must count 1 now
        (["A", "A", "A", "A", "7"], 21, True),
        (["A", "5", "5"], 21, True),
        (["A", "5", "6"], 12, False),
        (["10", "6", "6"], 22, False),
        (["J", "Q", "K"], 30, False),
        (["A"], 11, True),
        (["7"], 7, False),
    ],
)
def test_hand_total(ranks: list[str], total: int, soft: bool) -> None:
    assert hand_total(ranks) == (total, soft)
    assert hand_total(tuple(ranks)) == (total, soft)
    assert is_soft(ranks) is soft


def test_hand_total_rejects_non_ranks() -> None:
    with pytest.raises(ValueError, match="not a card rank"):
        hand_total(["A", "T"])


@given(st.lists(ranks_st, max_size=12))
def test_hand_total_matches_the_counting_rule(ranks: list[str]) -> None:
    hard = sum(1 if r == "A" else 10 if r in ("J", "Q", "K") else int(r) for r in ranks)
    total, soft = hand_total(ranks)
    if "A" in ranks and hard + 10 <= 21:
        assert (total, soft) == (hard + 10, True)
    else:
        assert (total, soft) == (hard, False)
    assert not soft or total <= 21
    assert is_bust(ranks) is (hard > 21)


@pytest.mark.parametrize("ten", ["10", "J", "Q", "K"])
def test_ace_and_ten_value_is_blackjack_either_order(ten: str) -> None:
    assert is_blackjack(["A", ten])
    assert is_blackjack([ten, "A"])
    assert is_blackjack(("A", ten))


@pytest.mark.parametrize(
    "ranks", [["A", "9"], ["K", "Q"], ["A", "A"], ["7", "7", "7"], ["A", "5", "5"], ["A"], []]
)
def test_other_hands_are_not_blackjack(ranks: list[str]) -> None:
    assert not is_blackjack(ranks)


def test_no_blackjack_after_a_split() -> None:
    assert not is_blackjack(["A", "K"], split_hand=True)


def test_switched_ace_ten_is_21_not_blackjack() -> None:
    """Blackjack Switch (public summary): an A+10 made by switching counts as 21."""
    assert not is_blackjack(["A", "K"], switched=True)
    assert hand_total(["A", "K"]) == (21, True)


def test_is_bust() -> None:
    assert not is_bust(["K", "Q", "A"])
    assert is_bust(["K", "Q", "2"])
    assert not is_bust(["A", "A", "A", "A", "A", "A"])


def test_is_pair() -> None:
    assert is_pair(["8", "8"])
    assert is_pair(["A", "A"])
    assert is_pair(["10", "K"])  # by point value by default
    assert not is_pair(["10", "K"], by_value=False)
    assert is_pair(["K", "K"], by_value=False)
    assert not is_pair(["8", "9"])
    assert not is_pair(["8", "8", "8"])
    assert not is_pair(["8"])
    assert not is_pair(["X", "X"])
