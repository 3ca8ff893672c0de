"""Expected outcome and settlement, in cents, of each wager a blackjack round can hold.

Covers the four games of the regulation files: New Jersey blackjack (N.J.A.C. 13:69F-2,
with surrender 2.8 and the dealer-bust bonus wager 2.25), New Jersey Blackjack Switch
(13:69F-2A), Pennsylvania Free Bet Blackjack (58 Pa. Code 672a) and the New Zealand
casino rules (Gazette 1996 No 7). Parameters are primitives (ranks, suits, cents,
ratios) so that this module does not depend on the event model.

A :class:`Settlement` follows the event contract (docs/events.md):

* a win is a ``PayoutMade`` of the winnings; the stake stays with the player, so
  ``collected == returned == 0``;
* a loss is a ``WagerCollected`` of the whole stake;
* a push is a ``WagerReturned`` of the whole stake;
* a surrender collects half and returns half.

Rounding: no regulation text fixes it, so it is a rule of its own
(:class:`pitwatch.blackjack.ratio.Rounding`), passed as ``rounding``: by default an
amount the player receives is rounded up to the cent (a payout of 1,501.5 cents is
1,502; on surrender the half returned takes the odd cent, so the house never takes
more than half). Amounts are normally chip multiples, where
nothing is rounded.

Where a rule is taken from outside the regulation files, the docstring says so
("public summary").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Final, NamedTuple

from .cards import RANK_VALUES, TEN_VALUE_RANKS, is_valid_suit, rank_value
from .hands import hand_total
from .ratio import CENT_TO_PLAYER, ONE_TO_ONE, TWO_TO_ONE, Ratio, Rounding, pay, rounded

__all__ = [
    "BONUS_PAY_TABLE",
    "DEALER_22",
    "DOUBLE_ANY",
    "DOUBLE_NINE_TEN_ELEVEN",
    "DOUBLE_TEN_ELEVEN",
    "FOUR_OF_A_KIND",
    "FREE_MARKERS",
    "MATCH_PAY_TABLE",
    "ONE_PAIR",
    "PUSH22_PAY_TABLE",
    "THREE_EIGHTS_COLOR",
    "THREE_EIGHTS_SUITED",
    "THREE_OF_A_KIND",
    "TWO_PAIR",
    "Outcome",
    "Settlement",
    "can_double",
    "dealer_must_draw_third_for_bonus",
    "free_double_allowed",
    "free_split_allowed",
    "match_category",
    "settle_bonus",
    "settle_even_money",
    "settle_free_wager",
    "settle_hand",
    "settle_insurance",
    "settle_match",
    "settle_push22",
    "settle_surrender",
]


class Outcome(StrEnum):
    WIN = "WIN"
    LOSE = "LOSE"
    PUSH = "PUSH"
    SURRENDER = "SURRENDER"


class Settlement(NamedTuple):
    """What should happen to one wager: winnings paid, stake collected, stake returned."""

    outcome: Outcome
    payout: int
    collected: int
    returned: int


# Settlements are built with tuple.__new__ directly: the NamedTuple constructor adds a
# Python-level call that doubles the cost on the hot path.
_new: Final = tuple.__new__
_WIN: Final = Outcome.WIN
_LOSE: Final = Outcome.LOSE
_PUSH: Final = Outcome.PUSH
_SURRENDER: Final = Outcome.SURRENDER

# Pay-table keys (the names a table posts in `rules.pay_tables`).
THREE_EIGHTS_SUITED: Final = "THREE_EIGHTS_SUITED"
THREE_EIGHTS_COLOR: Final = "THREE_EIGHTS_COLOR"
ONE_PAIR: Final = "ONE_PAIR"
TWO_PAIR: Final = "TWO_PAIR"
THREE_OF_A_KIND: Final = "THREE_OF_A_KIND"
FOUR_OF_A_KIND: Final = "FOUR_OF_A_KIND"
DEALER_22: Final = "DEALER_22"

# N.J.A.C. 13:69F-2.25(e): odds by the point value of the dealer's third card.
BONUS_PAY_TABLE: Final[Mapping[int, Ratio]] = {
    10: Ratio(3, 1),
    9: Ratio(5, 1),
    8: Ratio(7, 1),
    7: Ratio(9, 1),
    6: Ratio(15, 1),
}
_BONUS_KEYS: Final = frozenset((THREE_EIGHTS_SUITED, THREE_EIGHTS_COLOR))

# Blackjack Switch "Super Match" (public summary, not in the regulation files).
MATCH_PAY_TABLE: Final[Mapping[str, Ratio]] = {
    ONE_PAIR: Ratio(1, 1),
    THREE_OF_A_KIND: Ratio(5, 1),
    TWO_PAIR: Ratio(8, 1),
    FOUR_OF_A_KIND: Ratio(40, 1),
}
_MATCH_KEYS: Final = frozenset(MATCH_PAY_TABLE)

# Free Bet Blackjack Push 22 (public summary, not in the regulation files).
PUSH22_PAY_TABLE: Final[Mapping[str, Ratio]] = {DEALER_22: Ratio(11, 1)}

_RED: Final = frozenset(("D", "H"))

# Free Bet Blackjack: the free double and free split are the house's markers (lammers).
FREE_MARKERS: Final = frozenset(("FREE_DOUBLE", "FREE_SPLIT"))

DOUBLE_ANY: Final = "ANY"
DOUBLE_NINE_TEN_ELEVEN: Final = "NINE_TEN_ELEVEN"
DOUBLE_TEN_ELEVEN: Final = "TEN_ELEVEN"
_DOUBLE_TOTALS: Final[Mapping[str, frozenset[int]]] = {
    DOUBLE_NINE_TEN_ELEVEN: frozenset((9, 10, 11)),
    DOUBLE_TEN_ELEVEN: frozenset((10, 11)),
}


def _check_stake(stake: int) -> None:
    if stake < 0:
        raise ValueError(f"a stake cannot be negative: {stake}")


def _check_keys(table: Mapping[str, Ratio], allowed: frozenset[str], what: str) -> None:
    unknown = table.keys() - allowed
    if unknown:
        raise ValueError(
            f"unknown {what} pay-table keys {sorted(unknown)}; known: {sorted(allowed)}"
        )


# --- main, double and split wagers -------------------------------------------------


def settle_hand(
    player_ranks: Sequence[str],
    dealer_ranks: Sequence[str],
    stake: int,
    *,
    blackjack_pays: Ratio,
    dealer_22_pushes: bool,
    player_blackjack_allowed: bool,
    dealer_blackjack_possible: bool = True,
    rounding: Rounding = CENT_TO_PLAYER,
) -> Settlement:
    """Settle one main, double or split wager of a finished hand.

    Call it once per wager on the hand (``MAIN``, ``DOUBLE``, ``SPLIT``); the outcome is
    the hand's. ``dealer_ranks`` is the dealer's final hand. ``player_blackjack_allowed``
    is false for a split hand and for a Blackjack Switch hand the player switched into
    (an A+10 there is an ordinary 21). ``dealer_blackjack_possible=False`` treats a
    dealer A+10 as an ordinary 21.

    In order:

    1. A busted player hand loses, even if the dealer busts too.
    2. A player blackjack pushes against a dealer blackjack ("the wager of any player
       having a blackjack shall constitute a stand off", NZ 8.2) and otherwise wins at
       ``blackjack_pays`` (3 to 2 in NZ 8.1-8.2; 1 to 1 in Blackjack Switch, public
       summary). It wins also against a dealer 22 in the dealer-22 games: public
       summary, not in the regulation files (Free Bet pays naturals; Switch's push on 22
       applies to hands still in play, not to a player blackjack).
    3. A dealer blackjack beats every other hand, a multi-card 21 included.
    4. A dealer total of exactly 22 pushes every remaining hand where
       ``dealer_22_pushes`` (Blackjack Switch and Free Bet Blackjack, public summary).
    5. Any other dealer bust loses to the hand; else the higher total wins, and equal
       totals push. Wins other than a blackjack pay 1 to 1.

    The dealer's hand may be a single card only when a player blackjack is settled
    against an up card that cannot make a blackjack (NZ 8.1); any other undecided case
    raises ValueError, as does a player hand of fewer than two cards.
    """
    if stake < 0:
        raise ValueError(f"a stake cannot be negative: {stake}")
    n_player = len(player_ranks)
    if n_player < 2:
        raise ValueError(f"a player hand of {n_player} card(s) cannot be settled")
    p_total = hand_total(player_ranks)[0]
    if p_total > 21:
        return _new(Settlement, (_LOSE, 0, stake, 0))
    # Two cards totalling 21 are exactly an ace and a 10-value card.
    player_bj = p_total == 21 and n_player == 2 and player_blackjack_allowed
    n_dealer = len(dealer_ranks)
    if n_dealer < 2:
        if player_bj and (
            not dealer_blackjack_possible
            or (n_dealer == 1 and dealer_ranks[0] != "A" and dealer_ranks[0] not in TEN_VALUE_RANKS)
        ):
            return _new(Settlement, (_WIN, pay(stake, blackjack_pays, rounding), 0, 0))
        raise ValueError(f"the dealer's hand {list(dealer_ranks)!r} does not decide the wager")
    d_total = hand_total(dealer_ranks)[0]
    dealer_bj = d_total == 21 and n_dealer == 2 and dealer_blackjack_possible
    if player_bj:
        if dealer_bj:
            return _new(Settlement, (_PUSH, 0, 0, stake))
        return _new(Settlement, (_WIN, pay(stake, blackjack_pays, rounding), 0, 0))
    if dealer_bj:
        return _new(Settlement, (_LOSE, 0, stake, 0))
    if d_total > 21:
        if d_total == 22 and dealer_22_pushes:
            return _new(Settlement, (_PUSH, 0, 0, stake))
        return _new(Settlement, (_WIN, stake, 0, 0))
    if p_total > d_total:
        return _new(Settlement, (_WIN, stake, 0, 0))
    if p_total < d_total:
        return _new(Settlement, (_LOSE, 0, stake, 0))
    return _new(Settlement, (_PUSH, 0, 0, stake))


def settle_free_wager(
    player_ranks: Sequence[str],
    dealer_ranks: Sequence[str],
    amount: int,
    *,
    dealer_22_pushes: bool = True,
) -> Settlement:
    """Free Bet Blackjack ``FREE_DOUBLE`` / ``FREE_SPLIT`` wager (public summary).

    The one marker contract, used by the simulator and by the checks alike: the free
    wager is the house's marker, not the player's money. If the hand wins it is paid 1 to
    1 like a real wager (``PayoutMade``); if the hand loses, busts or pushes no money
    moves and no money event is written (the marker is simply taken back), so
    ``collected == returned == 0``. Markers never count in money totals. A freely split
    or doubled hand is never a blackjack.
    """
    outcome = settle_hand(
        player_ranks,
        dealer_ranks,
        amount,
        blackjack_pays=ONE_TO_ONE,
        dealer_22_pushes=dealer_22_pushes,
        player_blackjack_allowed=False,
    ).outcome
    if outcome is _WIN:
        return _new(Settlement, (_WIN, amount, 0, 0))
    return Settlement(outcome, 0, 0, 0)


# --- insurance, even money, surrender ----------------------------------------------


def settle_insurance(
    stake: int, dealer_has_blackjack: bool, *, pays: Ratio = TWO_TO_ONE,
    rounding: Rounding = CENT_TO_PLAYER,
) -> Settlement:
    """An insurance wager wins at ``pays`` (2 to 1: N.J.A.C. 13:69F-2A.8(d); PA 672a.8(c)
    refers to the posted odds) when the dealer's hole card makes a blackjack, and is
    collected whole otherwise (13:69F-2A.8(a), (c); PA 672a.8(a), (d); NZ 9.1)."""
    _check_stake(stake)
    if dealer_has_blackjack:
        return _new(Settlement, (_WIN, pay(stake, pays, rounding), 0, 0))
    return _new(Settlement, (_LOSE, 0, stake, 0))


def settle_even_money(stake: int) -> Settlement:
    """Even money on a player blackjack: paid at 1 to 1 in full settlement of the wager,
    whatever the dealer's hole card (PA 672a.8(e); NZ 8.3)."""
    _check_stake(stake)
    return _new(Settlement, (_WIN, stake, 0, 0))


def settle_surrender(stake: int, dealer_has_blackjack: bool,
                     rounding: Rounding = CENT_TO_PLAYER) -> Settlement:
    """Late surrender, N.J.A.C. 13:69F-2.8(a)1-2.

    Against a dealer blackjack the entire wager is collected (outcome ``LOSE``);
    otherwise one-half is collected and one-half returned (outcome ``SURRENDER``). The
    half returned is rounded by the posted rule (the regulation is silent; see the
    module docstring): by default an odd cent is returned, collected ``stake // 2``.
    Whether the dealer can have a blackjack is the caller's question: against a 2-9 first
    card it cannot (2.8(a)1).
    """
    _check_stake(stake)
    if dealer_has_blackjack:
        return _new(Settlement, (_LOSE, 0, stake, 0))
    back = rounded(stake, 2, rounding)
    return _new(Settlement, (_SURRENDER, 0, stake - back, back))


# --- the dealer-bust bonus wager, N.J.A.C. 13:69F-2.25 -----------------------------


def dealer_must_draw_third_for_bonus(first_two_ranks: Sequence[str]) -> bool:
    """13:69F-2.25(d): with a bonus wager on the table, the dealer must draw a third card
    when the first two total under 17, "regardless of whether all players have been
    dealt blackjack". Only the first two of the given ranks are read."""
    if len(first_two_ranks) < 2:
        raise ValueError("the dealer's first two cards are needed")
    return hand_total((first_two_ranks[0], first_two_ranks[1]))[0] < 17


def settle_bonus(
    stake: int,
    dealer_ranks: Sequence[str],
    suits: Sequence[str] | None = None,
    *,
    pay_table: Mapping[str, Ratio] | None,
    rounding: Rounding = CENT_TO_PLAYER,
) -> Settlement:
    """The optional bonus wager that the dealer busts on the third card, 13:69F-2.25.

    ``dealer_ranks`` (and ``suits``, same order) are the dealer's cards in the order
    dealt; only the first three are read.

    * (d) It loses when the first two cards total 17 or more. The point count is the
      ordinary best total: an ace counts 11 where that does not bust (A+6 is 17).
    * (d) Otherwise the third card must be drawn (ValueError if it is missing); the
      wager loses if the first three total 21 or less, and wins if they bust.
    * (e) A win is paid by the third card's value: 10-value 3 to 1, nine 5 to 1,
      eight 7 to 1, seven 9 to 1, six 15 to 1. Only 6 to 10 can bust two cards that
      total under 17 (16 + 5 = 21), so no other value can win.
    * (f) Three eights of the same colour or suit are paid "as follows:", but the pay
      table is missing from the regulation text. Its odds therefore come only from the
      table's posted configuration: ``pay_table`` keys ``THREE_EIGHTS_SUITED`` (same
      suit) and ``THREE_EIGHTS_COLOR`` (same colour; suited eights are also same
      colour and take it when no suited odds are posted). With no such odds posted, or
      no ``suits`` given, the (e) table applies (7 to 1 for an eight). Other keys
      raise ValueError.
    """
    _check_stake(stake)
    if pay_table:
        _check_keys(pay_table, _BONUS_KEYS, "bonus")
    if len(dealer_ranks) < 2:
        raise ValueError("the dealer's first two cards are needed")
    first, second = dealer_ranks[0], dealer_ranks[1]
    try:
        v1, v2 = RANK_VALUES[first], RANK_VALUES[second]
    except KeyError:
        raise ValueError(f"not card ranks: {list(dealer_ranks[:2])!r}") from None
    two = v1 + v2
    if (two >= 17) or (two >= 7 and (first == "A" or second == "A")):  # A counts 11: 17+
        return _new(Settlement, (_LOSE, 0, stake, 0))
    if len(dealer_ranks) < 3:
        raise ValueError(
            "13:69F-2.25(d): the dealer's first two cards total under 17, "
            "so a third card must be drawn"
        )
    third = dealer_ranks[2]
    value = rank_value(third)
    # An ace counted as 11 never busts, so the hand busts exactly when the hard sum does.
    if two + value <= 21:
        return _new(Settlement, (_LOSE, 0, stake, 0))
    assert 6 <= value <= 10, "a third card under 6 cannot bust two cards under 17"
    ratio = BONUS_PAY_TABLE[value]
    if pay_table and suits is not None and first == second == third == "8":
        if len(suits) < 3:
            raise ValueError("the suits of the dealer's first three cards are needed")
        s0, s1, s2 = suits[0], suits[1], suits[2]
        if not (is_valid_suit(s0) and is_valid_suit(s1) and is_valid_suit(s2)):
            raise ValueError(f"not card suits: {list(suits[:3])!r}")
        suited = s0 == s1 == s2
        if suited and THREE_EIGHTS_SUITED in pay_table:
            ratio = pay_table[THREE_EIGHTS_SUITED]
        elif (suited or (s0 in _RED) == (s1 in _RED) == (s2 in _RED)) and (
            THREE_EIGHTS_COLOR in pay_table
        ):
            ratio = pay_table[THREE_EIGHTS_COLOR]
    return _new(Settlement, (_WIN, pay(stake, ratio, rounding), 0, 0))


# --- side wagers of Blackjack Switch and Free Bet Blackjack ------------------------


def match_category(player_first_four: Sequence[tuple[str, str]]) -> str | None:
    """The best Super Match category among four cards, by rank (suits are ignored;
    ``10`` and ``K`` are different ranks): ``FOUR_OF_A_KIND``, ``TWO_PAIR``,
    ``THREE_OF_A_KIND``, ``ONE_PAIR`` or None."""
    if len(player_first_four) != 4:
        raise ValueError(f"the match wager reads four cards, not {len(player_first_four)}")
    a, b, c, d = (card[0] for card in player_first_four)
    for rank in (a, b, c, d):
        if rank not in RANK_VALUES:
            raise ValueError(f"not a card rank: {rank!r}")
    # Equal pairs among the six pairings: 6 four of a kind, 3 three of a kind,
    # 2 two pair, 1 one pair, 0 nothing.
    equal = (a == b) + (a == c) + (a == d) + (b == c) + (b == d) + (c == d)
    if equal == 0:
        return None
    if equal == 1:
        return ONE_PAIR
    if equal == 2:
        return TWO_PAIR
    if equal == 3:
        return THREE_OF_A_KIND
    return FOUR_OF_A_KIND


def settle_match(
    stake: int,
    player_first_four: Sequence[tuple[str, str]],
    *,
    pay_table: Mapping[str, Ratio] | None,
    rounding: Rounding = CENT_TO_PLAYER,
) -> Settlement:
    """Blackjack Switch match wager on the player's first four cards (the first two of
    each hand, before any switch), as ``(rank, suit)`` pairs.

    Public summary of the Super Match wager, not in the regulation files: one pair 1 to
    1, three of a kind 5 to 1, two pair 8 to 1, four of a kind 40 to 1; only the best
    category pays. A posted ``pay_table`` replaces that table whole: a category it does
    not list does not pay; a key other than ``ONE_PAIR``, ``TWO_PAIR``,
    ``THREE_OF_A_KIND``, ``FOUR_OF_A_KIND`` raises ValueError. Insurance never applies
    to it (13:69F-2A.8(e)).
    """
    _check_stake(stake)
    table = MATCH_PAY_TABLE
    if pay_table is not None:
        _check_keys(pay_table, _MATCH_KEYS, "match")
        table = pay_table
    category = match_category(player_first_four)
    if category is not None:
        ratio = table.get(category)
        if ratio is not None:
            return _new(Settlement, (_WIN, pay(stake, ratio, rounding), 0, 0))
    return _new(Settlement, (_LOSE, 0, stake, 0))


def settle_push22(
    stake: int,
    dealer_ranks: Sequence[str],
    *,
    pay_table: Mapping[str, Ratio] | None = None,
    rounding: Rounding = CENT_TO_PLAYER,
) -> Settlement:
    """Free Bet Blackjack Push 22 wager: wins when the dealer's final hand totals exactly
    22, else loses (a dealer blackjack included).

    Public summary, not in the regulation files (PA 672a.8(e) only names the wager):
    default 11 to 1; a posted ``pay_table`` must give the odds under ``DEALER_22``.
    """
    _check_stake(stake)
    ratio = PUSH22_PAY_TABLE[DEALER_22]
    if pay_table is not None:
        _check_keys(pay_table, frozenset((DEALER_22,)), "Push 22")
        if DEALER_22 not in pay_table:
            raise ValueError("a posted Push 22 pay table must give DEALER_22 odds")
        ratio = pay_table[DEALER_22]
    if len(dealer_ranks) < 2:
        raise ValueError(f"the dealer's hand {list(dealer_ranks)!r} is not complete")
    if hand_total(dealer_ranks)[0] == 22:
        return _new(Settlement, (_WIN, pay(stake, ratio, rounding), 0, 0))
    return _new(Settlement, (_LOSE, 0, stake, 0))


# --- which doubles and splits a hand may take --------------------------------------


def free_double_allowed(ranks: Sequence[str]) -> bool:
    """Free Bet Blackjack: a free double on a hard two-card 9, 10 or 11 (public summary).
    Soft hands (A+8 is 9 or 19) do not qualify."""
    if len(ranks) != 2:
        return False
    total, soft = hand_total(ranks)
    return not soft and 9 <= total <= 11


def free_split_allowed(ranks: Sequence[str]) -> bool:
    """Free Bet Blackjack: a free split on any pair except 10-value cards (public
    summary). Aces are a pair of equal rank and qualify."""
    if len(ranks) != 2:
        return False
    a, b = ranks
    return a == b and a in RANK_VALUES and a not in TEN_VALUE_RANKS


def can_double(ranks: Sequence[str], double_on: str) -> bool:
    """Whether the posted ``double_on`` rule allows doubling these cards.

    Only two-card hands double. ``ANY``: any two cards; ``NINE_TEN_ELEVEN`` and
    ``TEN_ELEVEN``: the hard totals named (a soft hand such as A+9 does not qualify;
    the regulation files are silent, this is the usual reading). Doubling after a
    split is the caller's rule (``double_after_split``). Raises ValueError for another
    ``double_on``.
    """
    if double_on == DOUBLE_ANY:
        if len(ranks) != 2:
            return False
        hand_total(ranks)  # validates the ranks
        return True
    totals = _DOUBLE_TOTALS.get(double_on)
    if totals is None:
        raise ValueError(f"unknown double_on rule {double_on!r}")
    if len(ranks) != 2:
        return False
    total, soft = hand_total(ranks)
    return not soft and total in totals
