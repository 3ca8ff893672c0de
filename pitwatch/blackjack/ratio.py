"""Payout odds and integer-cent payouts."""

from __future__ import annotations

from math import gcd
from typing import Final, NamedTuple

__all__ = [
    "EVEN_MONEY",
    "ONE_TO_ONE",
    "SIX_TO_FIVE",
    "THREE_TO_TWO",
    "TWO_TO_ONE",
    "Ratio",
    "pay",
    "same_odds",
]


class Ratio(NamedTuple):
    """Odds of ``num`` to ``den``: a winning wager of ``den`` is paid ``num``."""

    num: int
    den: int

    def reduced(self) -> Ratio:
        """The same odds in lowest terms: 12 to 10 is 6 to 5, 6 to 4 is 3 to 2."""
        g = gcd(self.num, self.den) or 1
        return Ratio(self.num // g, self.den // g)


ONE_TO_ONE: Final = Ratio(1, 1)
EVEN_MONEY: Final = ONE_TO_ONE
THREE_TO_TWO: Final = Ratio(3, 2)
SIX_TO_FIVE: Final = Ratio(6, 5)
TWO_TO_ONE: Final = Ratio(2, 1)


def same_odds(a: Ratio, b: Ratio) -> bool:
    """Whether two odds are the same by value (12 to 10 is 6 to 5): how every check
    compares a posted ratio with one a text fixes or bars. Tuple equality compares the
    spelling, not the odds."""
    return a.num * b.den == b.num * a.den


def pay(amount_cents: int, ratio: Ratio) -> int:
    """Winnings in cents on a winning wager of ``amount_cents`` at ``ratio``.

    Integer arithmetic only: ``amount_cents * num // den``, i.e. the exact amount
    floored to the cent. 3 to 2 on 1,001 cents is 1,501 (1,501.5 floored); on chip
    multiples (the normal case) the division is exact. The stake is not included.
    """
    num, den = ratio
    if amount_cents < 0 or num < 0 or den <= 0:
        raise ValueError(f"cannot pay {amount_cents} at {num} to {den}")
    return amount_cents * num // den
