"""The game knowledge the simulator and the checks share: the insurance allowed on an
initial wager, and whether a hand still needs the dealer's final hand."""

from __future__ import annotations

import itertools

import pytest

from pitwatch.blackjack import allowed_insurance, awaits_dealer


@pytest.mark.parametrize(("initial", "unit", "most"), [
    (2000, 500, 1000),  # half is in chips: half
    (2500, 500, 1500),  # "half is 1,250, so up to 1,500"
    (2500, 100, 1300),
    (1001, 1, 501),  # half a cent rounds up to the next chip
    (1000, 0, 500),  # no chip unit: cents
])
def test_insurance_is_up_to_half_the_initial_wager_or_the_next_amount_in_chips(
        initial: int, unit: int, most: int) -> None:
    """13:69F-2A.8(b): insurance up to half the initial wager, the next amount in chips
    when half cannot be bet in chips."""
    assert allowed_insurance(initial, unit) == most
    assert most % max(unit, 1) == 0 and 2 * most >= initial
    assert 2 * (most - max(unit, 1)) < initial  # a chip less would be under half


def test_a_hand_awaits_the_dealer_unless_it_is_already_decided() -> None:
    """Only a hand with none of bust, blackjack, surrendered, even money or settled still
    needs the dealer's final hand."""
    names = ("bust", "blackjack", "surrendered", "even_money", "settled")
    for flags in itertools.product((False, True), repeat=len(names)):
        assert awaits_dealer(**dict(zip(names, flags, strict=True))) == (not any(flags))
