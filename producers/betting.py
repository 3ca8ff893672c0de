"""The players: who sits down, what they bet, and whether they insure.

Everything random about a round's players is drawn here, at the start of the round,
from the table's `random.Random`, so a round can be dealt again (with a fault) and
the players make the same choices. Amounts are integer cents in the table's chips.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from pitwatch.blackjack import allowed_insurance
from pitwatch.events.model import Rules

from .floor import SWITCH, TableConfig

#: How many players sit down (1 to 7) and the weights of each count.
PLAYERS: Final = (1, 2, 3, 4, 5, 6, 7)
PLAYER_WEIGHTS: Final = (3, 4, 4, 3, 2, 1, 1)
#: Main wagers as multiples of the table minimum.
MAIN_MULTIPLES: Final = (1, 1, 1, 2, 2, 3, 4, 5, 10)
#: players who add the table's side wager, by wager (Push 22 is the popular one)
SIDE_SHARE: Final = {"BONUS": 0.5, "MATCH": 0.5, "PUSH22": 0.6}
SIDE_CAP: Final = 5000  # cents: the most a simulated player puts on a side wager
INSURE_SHARE: Final = 0.3  # players who insure when the dealer shows an ace
EVEN_MONEY_SHARE: Final = 0.8  # players with blackjack who take even money where offered


#: A player's own play, asked at each decision: (the hand's ranks, the dealer's cards so
#: far (up card, then the hole card), can double, can split, can surrender, basic
#: strategy's play) -> the play, one the table allows. Without one a seat plays basic
#: strategy (producers/players.py has players who do not).
Chooser = Callable[[Sequence[str], Sequence[str], bool, bool, bool, str], str]


@dataclass(frozen=True, slots=True)
class SeatPlan:
    seat: int
    main: int
    side: int  # cents on the table's side wager, 0 for none
    insure: bool
    even_money: bool
    #: Blackjack Switch: which hands an insuring player insures (0, 1 or both)
    insure_hands: tuple[int, ...]
    play: Chooser | None = None


def chips(amount: int, unit: int) -> int:
    """`amount` rounded down to the chip unit."""
    return amount // unit * unit


def draw_plans(rng: random.Random, cfg: TableConfig) -> list[SeatPlan]:
    """The round's players, seats ascending. Always the same number of draws per seat."""
    rules = cfg.rules
    unit = rules.chip_unit
    count = rng.choices(PLAYERS, PLAYER_WEIGHTS)[0]
    seats = sorted(rng.sample(range(1, 8), count))
    plans = []
    for seat in seats:
        main = min(rules.min_wager * rng.choice(MAIN_MULTIPLES), chips(rules.max_wager, unit))
        side_roll = rng.random()
        side_units = rng.randint(1, 10)
        insure = rng.random() < INSURE_SHARE
        even_money = rng.random() < EVEN_MONEY_SHARE
        hands = rng.choice(((0,), (1,), (0, 1)))
        side = 0
        if cfg.side_wager is not None and side_roll < SIDE_SHARE[cfg.side_wager]:
            cap = min(main, SIDE_CAP)
            if cfg.side_wager == "BONUS" and rules.bonus_wager_max is not None:
                cap = min(cap, rules.bonus_wager_max)
            side = max(unit, chips(min(cap, unit * side_units), unit))
        plans.append(SeatPlan(seat, main, side, insure, even_money,
                              hands if cfg.game == SWITCH else (0,)))
    return plans


def insurance_amount(main: int, rules: Rules, jurisdiction: str) -> int | None:
    """What a compliant player insures for: the most allowed; in New Zealand (9.3, 9.4)
    at most half in chips and at least the table minimum, or nothing when that cannot
    be done."""
    unit = rules.chip_unit
    if jurisdiction == "NZ":
        amount = chips(main // 2, unit)
        return amount if amount >= rules.min_wager else None
    return allowed_insurance(main, unit)


def side_amount(main: int, rules: Rules) -> int:
    """A side wager a compliant player could make at this table (for faults that need
    a plausible bonus wager)."""
    cap = min(main, SIDE_CAP)
    if rules.bonus_wager_max is not None:
        cap = min(cap, rules.bonus_wager_max)
    return max(rules.chip_unit, chips(cap, rules.chip_unit))
