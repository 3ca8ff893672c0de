"""Cards, ranks and the shoe."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pitwatch.blackjack import (
    RANKS,
    SUITS,
    Card,
    Shoe,
    ShoeEmptyError,
    card_limit,
    is_ten_value,
    rank_value,
)


def test_ranks_and_suits_spell_the_event_contract() -> None:
    assert RANKS == ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
    assert SUITS == ("C", "D", "H", "S")


@pytest.mark.parametrize(
    ("rank", "value"),
    [("A", 1), ("2", 2), ("5", 5), ("9", 9), ("10", 10), ("J", 10), ("Q", 10), ("K", 10)],
)
def test_rank_value(rank: str, value: int) -> None:
    assert rank_value(rank) == value


@pytest.mark.parametrize("bad", ["1", "T", "11", "a", "", "10H"])
def test_rank_value_rejects_non_ranks(bad: str) -> None:
    with pytest.raises(ValueError, match="not a card rank"):
        rank_value(bad)


def test_is_ten_value() -> None:
    assert [r for r in RANKS if is_ten_value(r)] == ["10", "J", "Q", "K"]


def test_card_limit_is_one_copy_per_deck() -> None:
    assert card_limit(1) == 1
    assert card_limit(6) == 6
    assert card_limit(8) == 8
    with pytest.raises(ValueError):
        card_limit(0)


@given(st.integers(min_value=1, max_value=8))
def test_fresh_shoe_holds_n_copies_of_each_card(decks: int) -> None:
    shoe = Shoe.fresh(decks)
    assert shoe.size == shoe.remaining == 52 * decks
    counts = Counter(shoe.cards)
    assert set(counts) == {Card(r, s) for r in RANKS for s in SUITS}
    assert set(counts.values()) == {card_limit(decks)}


def test_fresh_shoe_is_in_new_deck_order() -> None:
    shoe = Shoe.fresh(2)
    first = [shoe.draw() for _ in range(14)]
    assert first[0] == Card("A", "C")
    assert first[12] == Card("K", "C")
    assert first[13] == Card("A", "D")
    assert shoe.cards[52] == Card("A", "C")  # the second deck starts over


@given(st.integers(min_value=1, max_value=8), st.integers(min_value=0, max_value=2**32))
def test_shuffled_shoe_is_a_permutation_of_a_fresh_one(decks: int, seed: int) -> None:
    shuffled = Shoe.shuffled(decks, random.Random(seed))
    assert Counter(shuffled.cards) == Counter(Shoe.fresh(decks).cards)


def test_same_seed_same_order_other_seed_other_order() -> None:
    a = Shoe.shuffled(6, random.Random(912))
    b = Shoe.shuffled(6, random.Random(912))
    c = Shoe.shuffled(6, random.Random(913))
    assert a.cards == b.cards
    assert a.cards != c.cards
    assert a.cards != Shoe.fresh(6).cards


def test_shuffle_uses_only_the_injected_rng() -> None:
    random.seed(1)
    a = Shoe.shuffled(1, random.Random(5)).cards
    random.seed(2)
    b = Shoe.shuffled(1, random.Random(5)).cards
    assert a == b


def test_draw_remaining_penetration_and_cut_card() -> None:
    shoe = Shoe.fresh(1)
    assert shoe.cut_card == 39  # default: three quarters of 52
    assert shoe.penetration == 0.0
    for _ in range(13):
        shoe.draw()
    assert shoe.dealt == 13
    assert shoe.remaining == 39
    assert shoe.penetration == 0.25
    assert not shoe.cut_card_reached
    for _ in range(26):
        shoe.draw()
    assert shoe.cut_card_reached
    for _ in range(13):
        shoe.draw()
    assert shoe.remaining == 0
    with pytest.raises(ShoeEmptyError):
        shoe.draw()


def test_explicit_cut_card() -> None:
    shoe = Shoe.fresh(6, cut_card=260)
    assert shoe.cut_card == 260
    with pytest.raises(ValueError):
        Shoe.fresh(1, cut_card=53)
    with pytest.raises(ValueError):
        Shoe.fresh(1, cut_card=-1)


def test_stacked_shoe_deals_in_the_given_order() -> None:
    order = [Card("A", "S"), Card("K", "H"), Card("7", "D")]
    shoe = Shoe(order, decks=1)
    assert [shoe.draw() for _ in range(3)] == order


def test_stacked_shoe_rejects_more_copies_than_its_decks_hold() -> None:
    with pytest.raises(ValueError, match="more than 1 times"):
        Shoe([Card("8", "H"), Card("8", "H")], decks=1)
    Shoe([Card("8", "H"), Card("8", "H")], decks=2)


def test_stacked_shoe_rejects_non_cards() -> None:
    with pytest.raises(ValueError, match="not a card"):
        Shoe([Card("1", "H")], decks=1)
    with pytest.raises(ValueError, match="not a card"):
        Shoe([Card("A", "X")], decks=1)
