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
    pay,
)


def test_common_ratios() -> None:
    assert pay(2_000, THREE_TO_TWO) == 3_000
    assert pay(2_500, SIX_TO_FIVE) == 3_000
    assert pay(1_500, TWO_TO_ONE) == 3_000
    assert pay(1_500, ONE_TO_ONE) == 1_500
    assert EVEN_MONEY == ONE_TO_ONE == Ratio(1, 1)
    assert pay(0, THREE_TO_TWO) == 0


def test_odd_cents_are_floored() -> None:
    assert pay(1_001, THREE_TO_TWO) == 1_501  # 1,501.5
    assert pay(501, SIX_TO_FIVE) == 601  # 601.2
    assert pay(999, Ratio(15, 1)) == 14_985


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
def test_pay_is_the_exact_amount_floored(amount: int, num: int, den: int) -> None:
    paid = pay(amount, Ratio(num, den))
    assert paid * den <= amount * num < (paid + 1) * den
