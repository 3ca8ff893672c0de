"""How much insurance a player may take."""

from __future__ import annotations

__all__ = ["allowed_insurance"]


def allowed_insurance(initial: int, chip_unit: int) -> int:
    """The most insurance on an initial wager: half of it, or the next amount in chips
    when half cannot be bet in chips (13:69F-2A.8(b), 672a.8(b); 2,500 in 500 chips:
    half is 1,250, so up to 1,500). A chip unit below 1 counts as 1 cent."""
    unit = max(chip_unit, 1)
    return -(-initial // (2 * unit)) * unit
