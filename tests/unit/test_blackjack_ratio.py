"""Integer-cent payouts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pitwatch.blackjack import (
    EVEN_MONEY,
    ONE_TO_ONE,
    SIX_TO_FIVE,
    THREE_TO_TWO,
    TWO_TO_ONE,
    Ratio,
    Rounding,
    pay,
    rounded,
)


def test_common_ratios() -> None:
    assert pay(2_000, THREE_TO_TWO) == 3_000
    assert pay(2_500, SIX_TO_FIVE) == 3_000
    assert pay(1_500, TWO_TO_ONE) == 3_000
    assert pay(1_500, ONE_TO_ONE) == 1_500
    assert EVEN_MONEY == ONE_TO_ONE == Ratio(1, 1)
    assert pay(0, THREE_TO_TWO) == 0


def test_odd_cents_go_to_the_player_unless_posted_otherwise() -> None:
    """docs/procedure.md, "Rounding": no text fixes it; the default is up to the cent."""
    assert pay(1_001, THREE_TO_TWO) == 1_502  # 1,501.5
    assert pay(501, SIX_TO_FIVE) == 602  # 601.2
    assert pay(999, Ratio(15, 1)) == 14_985
    house = Rounding("HOUSE", 100)
    assert pay(1_001, THREE_TO_TWO, house) == 1_501
    assert pay(501, SIX_TO_FIVE, house) == 601


def test_chip_unit_rounding_is_to_the_nearest_chip_a_half_to_the_player() -> None:
    chips = Rounding("CHIP_UNIT", 500)
    assert pay(2_500, THREE_TO_TWO, chips) == 4_000  # 3,750: a half chip, to the player
    assert pay(2_500, SIX_TO_FIVE, chips) == 3_000  # exact
    assert pay(2_100, THREE_TO_TWO, chips) == 3_000  # 3,150: nearer 3,000
    assert pay(2_300, THREE_TO_TWO, chips) == 3_500  # 3,450: nearer 3,500
    assert rounded(1_001, 2, Rounding("CHIP_UNIT", 1)) == 501  # chips of a cent: up


def test_result_is_an_int() -> None:
    assert type(pay(1_001, THREE_TO_TWO)) is int


@pytest.mark.parametrize(
    ("amount", "ratio"), [(-1, ONE_TO_ONE), (100, Ratio(1, 0)), (100, Ratio(-1, 1))]
)
def test_rejects_nonsense(amount: int, ratio: Ratio) -> None:
    with pytest.raises(ValueError):
        pay(amount, ratio)


@given(
    st.integers(min_value=0, max_value=10**12),
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=1, max_value=1000),
)
def test_pay_is_the_exact_amount_rounded_as_posted(amount: int, num: int, den: int) -> None:
    up = pay(amount, Ratio(num, den))
    assert (up - 1) * den < amount * num <= up * den
    down = pay(amount, Ratio(num, den), Rounding("HOUSE"))
    assert down * den <= amount * num < (down + 1) * den
    chips = pay(amount, Ratio(num, den), Rounding("CHIP_UNIT", 25))
    assert chips % 25 == 0 and abs(chips * den - amount * num) * 2 <= 25 * den
