"""Payout odds and integer-cent payouts."""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = [
    "CENT_TO_PLAYER",
    "EVEN_MONEY",
    "ONE_TO_ONE",
    "SIX_TO_FIVE",
    "THREE_TO_TWO",
    "TWO_TO_ONE",
    "Ratio",
    "Rounding",
    "pay",
    "rounded",
    "same_odds",
]


class Ratio(NamedTuple):
    """Odds of ``num`` to ``den``: a winning wager of ``den`` is paid ``num``."""

    num: int
    den: int


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


class Rounding(NamedTuple):
    """A rounding rule (no regulation text fixes one; a table posts it in
    `rules.rounding`, schema version 5 on, else has the default, `CENT_TO_PLAYER`) for
    an amount the player receives that is not a whole number of cents, or of chips:

    * ``PLAYER`` (the default when none is posted): up to the next cent, the odd cent to
      the player;
    * ``HOUSE``: down to the cent;
    * ``CHIP_UNIT``: to the nearest multiple of ``chip_unit``, a half chip to the player.

    Both directions are judged alike: an amount other than the rule's, a cent more or a
    cent less, is wrong (docs/procedure.md, "Rounding")."""

    fraction: str = "PLAYER"
    chip_unit: int = 1


CENT_TO_PLAYER: Final = Rounding()


def rounded(num: int, den: int, rounding: Rounding = CENT_TO_PLAYER) -> int:
    """``num / den`` cents, received by the player, rounded by the posted rule."""
    if num < 0 or den <= 0:
        raise ValueError(f"cannot round {num} / {den}")
    fraction, unit = rounding
    if fraction == "HOUSE":
        return num // den
    if fraction == "CHIP_UNIT" and unit > 1:
        step = unit * den  # chips of `unit` cents: the nearest, a half up
        return (2 * num + step) // (2 * step) * unit
    return -(-num // den)  # PLAYER (and chips of one cent): up


def pay(amount_cents: int, ratio: Ratio, rounding: Rounding = CENT_TO_PLAYER) -> int:
    """Winnings in cents on a winning wager of ``amount_cents`` at ``ratio``.

    Integer arithmetic only: the exact amount ``amount_cents * num / den`` rounded by
    the table's posted rule (`Rounding`; up to the cent by default): 3 to 2 on 1,001
    cents is 1,502 (1,501.5), 1,501 where the house rounding is posted. On chip
    multiples (the normal case) the division is exact. The stake is not included.
    """
    num, den = ratio
    if amount_cents < 0 or num < 0 or den <= 0:
        raise ValueError(f"cannot pay {amount_cents} at {num} to {den}")
    return rounded(amount_cents * num, den, rounding)
