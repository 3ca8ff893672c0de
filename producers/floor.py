"""The casino floor the simulator deals: which tables, which games, which posted rules.

The four games of docs/procedure.md ("Tables the simulator deals"), each in a few
variants of limits and options, spread round-robin over the tables. New Jersey
blackjack tables come with surrender (most), with the dealer-bust bonus wager and its
posted maximum (some), or with neither, so that the `*_NOT_AVAILABLE` faults have a
table to happen at. No table posts both surrender and the bonus wager (see
`NJ_BLACKJACK`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from pitwatch.blackjack import Ratio
from pitwatch.events.model import PayEntry, PayTable, Rules
from pitwatch.packs.checks.posting import bonus_barred, bonus_decks

BLACKJACK: Final = "BLACKJACK"
SWITCH: Final = "BLACKJACK_SWITCH"
FREE_BET: Final = "FREE_BET_BLACKJACK"

#: Where each jurisdiction's tables stand, for the table ids (AC-BJ-01, PH-FB-03, ...).
LOCATION: Final = {"NJ": "AC", "PA": "PH", "NZ": "AK"}
GAME_CODE: Final = {BLACKJACK: "BJ", SWITCH: "SW", FREE_BET: "FB"}


@dataclass(frozen=True, slots=True)
class TableConfig:
    """One table of the floor: its id, place in the floor (1-based) and posted rules."""

    index: int
    table_id: str
    jurisdiction: str
    game: str
    variant: str
    rules: Rules
    #: A table of a floor dealt with the contract's later faults (`floor_tables`'s
    #: `contract`): it may also carry an event its decoder refuses (EVENT_REFUSED)
    contract: bool = False

    @property
    def side_wager(self) -> str | None:
        """The side wager a seat may add on hand 0 (procedure step 2), if any."""
        if self.game == SWITCH:
            return "MATCH"
        if self.game == FREE_BET:
            return "PUSH22"
        if self.bonus_offered:
            return "BONUS"
        return None

    @property
    def bonus_offered(self) -> bool:
        """The bonus wager is posted and the text lets it be taken: beside a wager
        13:69F-2.25(h) bars, or with fewer decks than 13:69F-2.2(a)4 asks, the posting
        is the fault, and no bonus wager is taken."""
        return self.rules.bonus_wager and self.posting_fault is None

    @property
    def posting_fault(self) -> str | None:
        """Why the posted rules contradict a text the floor's tables are dealt under
        (only a `contract` floor posts so), or None."""
        return bonus_barred(self.rules) or bonus_decks(self.rules)

    @property
    def dealer_22_pushes(self) -> bool:
        return self.game in (SWITCH, FREE_BET)


def _nj(variant: str, **kw: object) -> tuple[str, Rules]:
    return variant, Rules(hole_card="READER", insurance=True, **kw)  # type: ignore[arg-type]


#: NJ blackjack, N.J.A.C. 13:69F-2: 6 or 8 decks, S17 or H17, 3 to 2, card reader.
#: Surrender (2.8) on most, the bonus wager (2.25) with a posted maximum on some (one of
#: them posts the three-eights odds of 2.25(f), whose table the regulation text lacks,
#: as the pay table named BONUS; the odds are this simulator's own figures). The
#: two are never posted together: docs/procedure.md does not say whether a surrender
#: against an A/10 settles before or after the bonus wagers at the reveal.
NJ_BLACKJACK: Final = (
    _nj("8d-h17-surrender", decks=8, dealer_hits_soft_17=True, surrender=True,
        min_wager=2500, max_wager=500_000, chip_unit=500),
    _nj("6d-s17-bonus", decks=6, bonus_wager=True, bonus_wager_max=5000,
        min_wager=1000, max_wager=200_000, chip_unit=100),
    _nj("6d-s17-surrender", decks=6, surrender=True, min_wager=1500, max_wager=300_000,
        chip_unit=500),
    _nj("6d-h17-plain", decks=6, dealer_hits_soft_17=True, min_wager=1000,
        max_wager=100_000, chip_unit=100),
    _nj("6d-h17-surrender", decks=6, dealer_hits_soft_17=True, surrender=True,
        min_wager=1000, max_wager=200_000, chip_unit=100),
    _nj("8d-h17-bonus", decks=8, dealer_hits_soft_17=True, bonus_wager=True,
        bonus_wager_max=2500, min_wager=2500, max_wager=500_000, chip_unit=500,
        pay_tables=(PayTable("BONUS", (PayEntry("THREE_EIGHTS_SUITED", 100, 1),
                                       PayEntry("THREE_EIGHTS_COLOR", 50, 1))),)),
    _nj("8d-s17-surrender", decks=8, surrender=True, min_wager=2000, max_wager=300_000,
        chip_unit=500),
)

#: NJ Blackjack Switch (13:69F-2A, public summary): 6 decks, H17, blackjack 1 to 1,
#: dealer 22 pushes, card reader, match wager, insurance, no surrender.
NJ_SWITCH: Final = tuple(
    (v, Rules(decks=6, dealer_hits_soft_17=True, blackjack_pays=Ratio(1, 1),
              hole_card="READER", insurance=True, match_wager=True, surrender=False,
              min_wager=mn, max_wager=mx, chip_unit=cu))
    for v, mn, mx, cu in (("6d-h17-match", 1500, 200_000, 500),
                          ("6d-h17-match-low", 1000, 100_000, 100))
)

#: PA Free Bet Blackjack (58 Pa. Code 672a, public summary): 6 decks, S17, 3 to 2,
#: insurance 2 to 1, card reader, Push 22 wager, even money, no surrender.
PA_FREE_BET: Final = tuple(
    (v, Rules(decks=6, dealer_hits_soft_17=False, hole_card="READER", insurance=True,
              even_money=True, push22_wager=True, surrender=False,
              min_wager=mn, max_wager=mx, chip_unit=cu))
    for v, mn, mx, cu in (("6d-s17-push22", 1500, 250_000, 100),
                          ("6d-s17-push22-high", 2500, 500_000, 500))
)

#: NZ blackjack (Gazette 1996 §8-9): 6 decks, S17, 3 to 2, no hole card, insurance,
#: even money, no surrender.
NZ_BLACKJACK: Final = tuple(
    (v, Rules(decks=6, dealer_hits_soft_17=False, hole_card="NONE", insurance=True,
              even_money=True, surrender=False, min_wager=mn, max_wager=mx, chip_unit=cu))
    for v, mn, mx, cu in (("6d-s17-nhc", 1000, 100_000, 100),
                          ("6d-s17-nhc-high", 2500, 500_000, 500))
)

#: NJ blackjack on a floor dealt with the contract's later faults (`floor_tables`'s
#: `contract`): the first table peeks at the hole card (HoleCardChecked, schema v4: the
#: insurance faults of posted rules (d)3-4 happen there), the second posts the streak
#: wager beside the bonus wager (PostedTableOpened, schema v5), which 13:69F-2.25(h)
#: bars, the third the bonus wager at a four-deck shoe, under the six of 13:69F-2.2(a)4:
#: one finding on each posting, and their dealers take no bonus wager; then the rest.
NJ_BLACKJACK_CONTRACT: Final = (
    (NJ_BLACKJACK[0][0] + "-peek", replace(NJ_BLACKJACK[0][1], hole_card="PEEK")),
    (NJ_BLACKJACK[1][0] + "-streak", replace(NJ_BLACKJACK[1][1], streak_wager=True)),
    ("4d-h17-bonus", replace(NJ_BLACKJACK[5][1], decks=4)),
    *NJ_BLACKJACK[2:],
)

#: The floor's order of games: table 1 NJ blackjack, 2 Switch, 3 Free Bet, 4 NZ, 5 ...
KINDS: Final = (
    ("NJ", BLACKJACK, NJ_BLACKJACK),
    ("NJ", SWITCH, NJ_SWITCH),
    ("PA", FREE_BET, PA_FREE_BET),
    ("NZ", BLACKJACK, NZ_BLACKJACK),
)


def floor_tables(
    n: int, *, jurisdiction: str | None = None, game: str | None = None,
    contract: bool = False,
) -> list[TableConfig]:
    """`n` tables, the games taken in turn (filtered by `jurisdiction` and `game`), and
    each game's variants in turn. Raises ValueError when no game fits the filter.

    With `contract`, the floor is dealt with the faults the contract's later versions
    let a record show (NJ blackjack's variants are `NJ_BLACKJACK_CONTRACT`, and every
    table may carry a refused event); without, every table is as it always was, so a
    seeded floor keeps its bytes."""
    if n < 1:
        raise ValueError(f"a floor has at least one table, not {n}")
    kinds = [k for k in KINDS
             if (jurisdiction is None or k[0] == jurisdiction.upper())
             and (game is None or k[1] == game.upper())]
    if not kinds:
        raise ValueError(f"no table game for jurisdiction={jurisdiction} game={game}; "
                         f"known: {', '.join(f'{j}/{g}' for j, g, _ in KINDS)}")
    seen: dict[str, int] = {}
    out: list[TableConfig] = []
    for i in range(1, n + 1):
        jur, g, variants = kinds[(i - 1) % len(kinds)]
        key = f"{jur}/{g}"
        k = seen.get(key, 0)
        seen[key] = k + 1
        if contract and variants is NJ_BLACKJACK:
            variants = NJ_BLACKJACK_CONTRACT
        variant, rules = variants[k % len(variants)]
        table_id = f"{LOCATION[jur]}-{GAME_CODE[g]}-{i:02d}"
        out.append(TableConfig(i, table_id, jur, g, variant, rules, contract))
    return out
