"""Expected settlement of every wager, in exact cents.

Regulation-derived tests quote the sentence they check. Rules from outside the
regulation files are marked "public summary".
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pitwatch.blackjack import (
    BONUS_PAY_TABLE,
    DEALER_22,
    FOUR_OF_A_KIND,
    ONE_PAIR,
    ONE_TO_ONE,
    RANKS,
    SIX_TO_FIVE,
    THREE_EIGHTS_COLOR,
    THREE_EIGHTS_SUITED,
    THREE_OF_A_KIND,
    THREE_TO_TWO,
    TWO_PAIR,
    Outcome,
    Ratio,
    Rounding,
    Settlement,
    can_double,
    dealer_must_draw_third_for_bonus,
    free_double_allowed,
    free_split_allowed,
    hand_total,
    is_blackjack,
    match_category,
    rank_value,
    settle_bonus,
    settle_even_money,
    settle_free_wager,
    settle_hand,
    settle_insurance,
    settle_match,
    settle_push22,
    settle_surrender,
)

WIN, LOSE, PUSH, SURRENDER = Outcome.WIN, Outcome.LOSE, Outcome.PUSH, Outcome.SURRENDER


def nj(player: list[str], dealer: list[str], stake: int, *, bj: bool = True) -> Settlement:
    """Ordinary blackjack: 3 to 2, no dealer-22 push."""
    return settle_hand(
        player,
        dealer,
        stake,
        blackjack_pays=THREE_TO_TWO,
        dealer_22_pushes=False,
        player_blackjack_allowed=bj,
    )


def switch(player: list[str], dealer: list[str], stake: int, *, bj: bool = True) -> Settlement:
    """Blackjack Switch (public summary): blackjack pays 1 to 1, dealer 22 pushes."""
    return settle_hand(
        player,
        dealer,
        stake,
        blackjack_pays=ONE_TO_ONE,
        dealer_22_pushes=True,
        player_blackjack_allowed=bj,
    )


def free_bet(player: list[str], dealer: list[str], stake: int) -> Settlement:
    """Free Bet Blackjack (public summary): blackjack 3 to 2, dealer 22 pushes."""
    return settle_hand(
        player,
        dealer,
        stake,
        blackjack_pays=THREE_TO_TWO,
        dealer_22_pushes=True,
        player_blackjack_allowed=True,
    )


# --- main wagers --------------------------------------------------------------------


def test_outcome_values_are_plain_strings() -> None:
    assert Outcome.WIN == "WIN"
    assert {str(o) for o in Outcome} == {"WIN", "LOSE", "PUSH", "SURRENDER"}


def test_higher_total_wins_one_to_one_stake_stays() -> None:
    assert nj(["10", "9"], ["10", "8"], 2_500) == Settlement(WIN, 2_500, 0, 0)


def test_lower_total_loses_the_whole_stake() -> None:
    assert nj(["10", "7"], ["10", "8"], 2_500) == Settlement(LOSE, 0, 2_500, 0)


def test_equal_totals_push_the_whole_stake_back() -> None:
    assert nj(["10", "8"], ["9", "9"], 2_500) == Settlement(PUSH, 0, 0, 2_500)
    assert nj(["7", "7", "7"], ["10", "5", "6"], 2_500) == Settlement(PUSH, 0, 0, 2_500)


def test_dealer_bust_pays() -> None:
    assert nj(["10", "2"], ["10", "6", "9"], 1_000) == Settlement(WIN, 1_000, 0, 0)


def test_player_bust_loses_even_when_the_dealer_busts() -> None:
    assert nj(["10", "6", "K"], ["10", "6", "9"], 1_000) == Settlement(LOSE, 0, 1_000, 0)
    assert switch(["10", "6", "K"], ["10", "6", "6"], 1_000) == Settlement(LOSE, 0, 1_000, 0)


def test_blackjack_pays_three_to_two() -> None:
    """NZ 8.1: "the dealer shall announce and pay the blackjack at odds of three to two"."""
    assert nj(["A", "K"], ["9", "8"], 2_000) == Settlement(WIN, 3_000, 0, 0)
    assert nj(["A", "K"], ["9", "2", "10"], 2_000) == Settlement(WIN, 3_000, 0, 0)


def test_blackjack_paid_at_once_against_a_two_to_nine_up_card() -> None:
    """NZ 8.1: "If the first face up card dealt to the dealer is two, three, four, five,
    six, seven, eight or nine and a player has blackjack, the dealer shall announce and
    pay the blackjack at odds of three to two"."""
    assert nj(["K", "A"], ["9"], 2_000) == Settlement(WIN, 3_000, 0, 0)


@pytest.mark.parametrize("up", ["A", "10", "K"])
def test_blackjack_not_decided_before_the_dealers_second_card(up: str) -> None:
    """NZ 8.2: "If the first face up card dealt to the dealer is an ace, king, queen, jack
    or ten and a player has a blackjack, the dealer shall ... make no payment ... until
    ... the dealer has received his/her second card"."""
    with pytest.raises(ValueError, match="does not decide"):
        nj(["A", "K"], [up], 2_000)


def test_non_blackjack_against_one_dealer_card_is_undecided() -> None:
    with pytest.raises(ValueError):
        nj(["10", "9"], ["6"], 2_000)
    with pytest.raises(ValueError):
        nj(["A"], ["6", "10", "5"], 2_000)


def test_bust_is_decided_without_the_dealers_second_card() -> None:
    assert nj(["10", "6", "Q"], ["A"], 2_000) == Settlement(LOSE, 0, 2_000, 0)


def test_both_blackjack_stand_off() -> None:
    """NZ 8.2: "If the dealer's second card gives a blackjack, the wager of any player
    having a blackjack shall constitute a stand off"."""
    assert nj(["A", "K"], ["Q", "A"], 2_000) == Settlement(PUSH, 0, 0, 2_000)


def test_six_to_five_and_odd_cents() -> None:
    bj = settle_hand(
        ["A", "J"],
        ["10", "7"],
        1_001,
        blackjack_pays=SIX_TO_FIVE,
        dealer_22_pushes=False,
        player_blackjack_allowed=True,
    )
    assert bj == Settlement(WIN, 1_202, 0, 0)  # 1,201.2: the cent to the player
    assert nj(["A", "J"], ["10", "7"], 1_001) == Settlement(WIN, 1_502, 0, 0)  # 1,501.5


def test_dealer_blackjack_beats_a_multi_card_21() -> None:
    assert nj(["7", "7", "7"], ["A", "K"], 1_000) == Settlement(LOSE, 0, 1_000, 0)


def test_split_ace_ten_is_21_not_blackjack() -> None:
    assert nj(["A", "K"], ["10", "9"], 1_000, bj=False) == Settlement(WIN, 1_000, 0, 0)
    assert nj(["A", "K"], ["10", "A"], 1_000, bj=False) == Settlement(LOSE, 0, 1_000, 0)
    assert nj(["A", "K"], ["10", "5", "6"], 1_000, bj=False) == Settlement(PUSH, 0, 0, 1_000)


def test_dealer_blackjack_possible_false_treats_ace_ten_as_21() -> None:
    s = settle_hand(
        ["10", "5", "6"],
        ["A", "K"],
        1_000,
        blackjack_pays=THREE_TO_TWO,
        dealer_22_pushes=False,
        player_blackjack_allowed=True,
        dealer_blackjack_possible=False,
    )
    assert s == Settlement(PUSH, 0, 0, 1_000)


def test_dealer_22_does_not_push_in_ordinary_blackjack() -> None:
    assert nj(["10", "8"], ["10", "6", "6"], 1_000) == Settlement(WIN, 1_000, 0, 0)


def test_free_bet_dealer_22_pushes() -> None:
    """Free Bet Blackjack (public summary): player wagers push when the dealer makes 22."""
    assert free_bet(["10", "8"], ["10", "6", "6"], 1_000) == Settlement(PUSH, 0, 0, 1_000)
    assert free_bet(["10", "8", "3"], ["A", "A", "K", "K"], 1_000) == Settlement(PUSH, 0, 0, 1_000)
    # 23 and more is an ordinary bust
    assert free_bet(["10", "8"], ["10", "6", "7"], 1_000) == Settlement(WIN, 1_000, 0, 0)


def test_free_bet_blackjack_still_wins_three_to_two_against_dealer_22() -> None:
    """Public summary: natural blackjacks are paid 3 to 2 in Free Bet Blackjack."""
    assert free_bet(["A", "Q"], ["10", "6", "6"], 1_000) == Settlement(WIN, 1_500, 0, 0)


def test_switch_blackjack_pays_one_to_one() -> None:
    """Blackjack Switch (public summary): blackjack pays 1 to 1."""
    assert switch(["A", "K"], ["10", "7"], 2_000) == Settlement(WIN, 2_000, 0, 0)


def test_switch_blackjack_beats_dealer_22() -> None:
    """Public summary: the push on 22 applies to hands still in play, not a blackjack."""
    assert switch(["A", "K"], ["10", "6", "6"], 2_000) == Settlement(WIN, 2_000, 0, 0)


def test_switch_dealer_22_pushes_other_hands() -> None:
    assert switch(["10", "9"], ["10", "2", "K"], 2_000) == Settlement(PUSH, 0, 0, 2_000)


def test_switch_switched_ace_ten_is_21() -> None:
    assert switch(["A", "K"], ["10", "9"], 2_000, bj=False) == Settlement(WIN, 2_000, 0, 0)
    assert switch(["A", "K"], ["A", "Q"], 2_000, bj=False) == Settlement(LOSE, 0, 2_000, 0)


def test_short_player_hand_raises() -> None:
    with pytest.raises(ValueError):
        nj(["A"], ["10", "7"], 1_000)


def test_negative_stake_raises() -> None:
    with pytest.raises(ValueError):
        nj(["10", "9"], ["10", "7"], -1)


hands = st.lists(st.sampled_from(RANKS), min_size=2, max_size=6)


@given(hands, hands, st.integers(min_value=0, max_value=10**9), st.booleans(), st.booleans())
def test_settlement_moves_the_stake_exactly_once(
    player: list[str], dealer: list[str], stake: int, d22: bool, bj_allowed: bool
) -> None:
    s = settle_hand(
        player,
        dealer,
        stake,
        blackjack_pays=THREE_TO_TWO,
        dealer_22_pushes=d22,
        player_blackjack_allowed=bj_allowed,
    )
    if s.outcome is WIN:
        assert (s.collected, s.returned) == (0, 0)
        assert s.payout in (stake, -(-stake * 3 // 2))  # the odd cent to the player
    elif s.outcome is LOSE:
        assert (s.payout, s.collected, s.returned) == (0, stake, 0)
    else:
        assert (s.outcome, s.payout, s.collected, s.returned) == (PUSH, 0, 0, stake)


@given(hands, hands, st.booleans(), st.booleans(), st.booleans())
def test_settle_hand_matches_the_documented_order(
    player: list[str], dealer: list[str], d22: bool, bj_allowed: bool, dealer_bj_possible: bool
) -> None:
    stake = 1_000
    s = settle_hand(
        player,
        dealer,
        stake,
        blackjack_pays=SIX_TO_FIVE,
        dealer_22_pushes=d22,
        player_blackjack_allowed=bj_allowed,
        dealer_blackjack_possible=dealer_bj_possible,
    )
    p_total, d_total = hand_total(player)[0], hand_total(dealer)[0]
    player_bj = bj_allowed and is_blackjack(player)
    dealer_bj = dealer_bj_possible and is_blackjack(dealer)
    if p_total > 21:
        expected = Settlement(LOSE, 0, stake, 0)
    elif player_bj:
        expected = Settlement(PUSH, 0, 0, stake) if dealer_bj else Settlement(WIN, 1_200, 0, 0)
    elif dealer_bj:
        expected = Settlement(LOSE, 0, stake, 0)
    elif d22 and d_total == 22:
        expected = Settlement(PUSH, 0, 0, stake)
    elif d_total > 21 or p_total > d_total:
        expected = Settlement(WIN, stake, 0, 0)
    elif p_total < d_total:
        expected = Settlement(LOSE, 0, stake, 0)
    else:
        expected = Settlement(PUSH, 0, 0, stake)
    assert s == expected


def test_free_wager_wins_one_to_one_and_never_collects() -> None:
    """Free Bet Blackjack (public summary): a free double or split wager is the house's
    marker; paid when the hand wins, simply removed otherwise."""
    assert settle_free_wager(["5", "6", "10"], ["10", "8"], 1_000) == Settlement(WIN, 1_000, 0, 0)
    assert settle_free_wager(["5", "6", "2"], ["10", "8"], 1_000) == Settlement(LOSE, 0, 0, 0)
    assert settle_free_wager(["8", "10"], ["10", "8"], 1_000) == Settlement(PUSH, 0, 0, 0)
    assert settle_free_wager(["8", "10"], ["10", "6", "6"], 1_000) == Settlement(PUSH, 0, 0, 0)
    # a split A+10 is 21, not a blackjack
    assert settle_free_wager(["A", "K"], ["10", "9"], 1_000) == Settlement(WIN, 1_000, 0, 0)


# --- insurance and even money ----------------------------------------------------------


def test_insurance_wins_two_to_one_on_a_dealer_blackjack() -> None:
    """N.J.A.C. 13:69F-2A.8(d): "all winning insurance bets shall be paid at odds of 2 to
    1"; (a): the bet "shall win if the hole card of the dealer is a king, queen, jack, or
    10"."""
    assert settle_insurance(1_000, True) == Settlement(WIN, 2_000, 0, 0)
    assert settle_insurance(1_250, True) == Settlement(WIN, 2_500, 0, 0)


def test_insurance_loses_whole_without_a_dealer_blackjack() -> None:
    """N.J.A.C. 13:69F-2A.8(c): "All losing insurance bets shall be collected by the
    dealer"; (a): it "shall lose if the hole card of the dealer is an ace, two, ..., or
    nine"."""
    assert settle_insurance(1_000, False) == Settlement(LOSE, 0, 1_000, 0)


def test_insurance_posted_odds() -> None:
    """PA 672a.8(c): "Winning Insurance Wagers shall be paid in accordance with the payout
    odds in § 672a.11(b)"."""
    assert settle_insurance(1_000, True, pays=Ratio(3, 2)) == Settlement(WIN, 1_500, 0, 0)


def test_even_money_pays_one_to_one_whatever_the_hole_card() -> None:
    """PA 672a.8(e): "If the player elects to be paid even money, the dealer shall pay
    out the Blackjack Wager at odds of 1 to 1"; NZ 8.3: "at odds of one to one in full
    settlement of the player's wager"."""
    assert settle_even_money(2_500) == Settlement(WIN, 2_500, 0, 0)
    assert settle_even_money(1_001) == Settlement(WIN, 1_001, 0, 0)


# --- surrender -------------------------------------------------------------------------


def test_surrender_without_dealer_blackjack_halves() -> None:
    """N.J.A.C. 13:69F-2.8(a)1: "the dealer shall immediately collect one-half of the
    wager and return one-half to the player"."""
    assert settle_surrender(2_500, False) == Settlement(SURRENDER, 0, 1_250, 1_250)


def test_surrender_against_dealer_blackjack_loses_all() -> None:
    """N.J.A.C. 13:69F-2.8(a)2: "the hand will be settled by immediately collecting the
    entire wager should the dealer have blackjack or collecting one-half of the wager and
    returning one-half of the wager to the player should the dealer not have blackjack"."""
    assert settle_surrender(2_500, True) == Settlement(LOSE, 0, 2_500, 0)
    assert settle_surrender(2_500, False) == Settlement(SURRENDER, 0, 1_250, 1_250)


def test_surrender_odd_cent_is_returned() -> None:
    """The regulation is silent on an odd cent: by default (the posted rounding rule,
    docs/procedure.md "Rounding") it is returned to the player; the house rule keeps it."""
    assert settle_surrender(1_001, False) == Settlement(SURRENDER, 0, 500, 501)
    assert settle_surrender(1_001, False, Rounding("HOUSE")) == Settlement(SURRENDER, 0, 501,
                                                                             500)


@given(st.integers(min_value=0, max_value=10**12))
def test_surrender_halves_add_up(stake: int) -> None:
    s = settle_surrender(stake, False)
    assert s.collected + s.returned == stake
    assert 0 <= s.returned - s.collected <= 1


# --- the dealer-bust bonus wager, N.J.A.C. 13:69F-2.25 -------------------------------


@pytest.mark.parametrize(
    ("third", "payout"),
    [("10", 3_000), ("J", 3_000), ("Q", 3_000), ("K", 3_000), ("9", 5_000), ("8", 7_000),
     ("7", 9_000), ("6", 15_000)],
)  # fmt: skip
def test_bonus_pays_by_third_card_value(third: str, payout: int) -> None:
    """13:69F-2.25(e): "pay all winning optional bonus wagers based upon the value of the
    third card drawn by the dealer as set forth in the following pay table:" 10: 3 to 1,
    Nine: 5 to 1, Eight: 7 to 1, Seven: 9 to 1, Six: 15 to 1."""
    assert settle_bonus(1_000, ["10", "6", third], pay_table=None) == Settlement(WIN, payout, 0, 0)


def test_bonus_table_matches_the_regulation() -> None:
    assert dict(BONUS_PAY_TABLE) == {
        10: Ratio(3, 1),
        9: Ratio(5, 1),
        8: Ratio(7, 1),
        7: Ratio(9, 1),
        6: Ratio(15, 1),
    }


@pytest.mark.parametrize("first_two", [["10", "7"], ["K", "Q"], ["A", "6"], ["A", "K"], ["9", "8"]])
def test_bonus_loses_when_the_first_two_total_17_or_more(first_two: list[str]) -> None:
    """13:69F-2.25(d): "The optional bonus wager of a player shall lose if the dealer's
    first two cards have a point count of 17 or higher"."""
    assert settle_bonus(1_000, first_two, pay_table=None) == Settlement(LOSE, 0, 1_000, 0)
    # also when the dealer goes on to bust (soft 17 hit)
    assert settle_bonus(1_000, [*first_two, "K", "K"], pay_table=None) == Settlement(
        LOSE, 0, 1_000, 0
    )


@pytest.mark.parametrize(
    "dealer",
    [["10", "6", "5"], ["10", "2", "9"], ["A", "5", "K"], ["A", "A", "9"], ["10", "6", "A"]],
)
def test_bonus_loses_when_the_first_three_total_21_or_less(dealer: list[str]) -> None:
    """13:69F-2.25(d): the wager loses "if the dealer is required to draw a third card, the
    dealer's first three cards have a point count of 21 or less"."""
    assert settle_bonus(1_000, dealer, pay_table=None) == Settlement(LOSE, 0, 1_000, 0)


def test_bonus_third_card_decides_not_later_cards() -> None:
    """13:69F-2.25(d): the wager wins "if ... the third card results in the dealer's hand
    having a point total of greater than 21"; a bust on the fourth card does not count."""
    assert settle_bonus(1_000, ["10", "2", "3", "K"], pay_table=None) == Settlement(
        LOSE, 0, 1_000, 0
    )


def test_bonus_soft_first_two_cannot_bust() -> None:
    assert settle_bonus(1_000, ["A", "5", "K"], pay_table=None).outcome is LOSE


def test_bonus_ace_counts_eleven_for_the_first_two() -> None:
    """A+6 is a point count of 17 (the ace counts 11 where it does not bust)."""
    assert not dealer_must_draw_third_for_bonus(["A", "6"])
    assert dealer_must_draw_third_for_bonus(["A", "5"])


def test_bonus_forced_third_card() -> None:
    """13:69F-2.25(d): "If the dealer's first two cards have a point total of less than 17
    and any player has placed an optional bonus wager under this section, the dealer shall
    be required to draw a third card regardless of whether all players have been dealt
    blackjack"."""
    assert dealer_must_draw_third_for_bonus(["10", "6"])
    assert dealer_must_draw_third_for_bonus(["2", "2"])
    assert not dealer_must_draw_third_for_bonus(["10", "7"])
    assert not dealer_must_draw_third_for_bonus(["10", "7", "5"])  # only the first two
    with pytest.raises(ValueError, match="third card must be drawn"):
        settle_bonus(1_000, ["10", "6"], pay_table=None)
    with pytest.raises(ValueError):
        dealer_must_draw_third_for_bonus(["10"])


@given(st.lists(st.sampled_from(RANKS), min_size=3, max_size=3))
def test_bonus_only_six_to_ten_can_win(cards: list[str]) -> None:
    s = settle_bonus(100, cards, pay_table=None)
    if s.outcome is WIN:
        assert cards[2] in ("6", "7", "8", "9", "10", "J", "Q", "K")
    else:
        assert s == Settlement(LOSE, 0, 100, 0)


@given(st.lists(st.sampled_from(RANKS), min_size=3, max_size=5))
def test_bonus_matches_the_regulation_reading(dealer: list[str]) -> None:
    """13:69F-2.25(d)-(e) restated with hand_total: lose on a first-two point count of 17
    or more, lose when the first three total 21 or less, else win by the third card."""
    s = settle_bonus(1_000, dealer, pay_table=None)
    if hand_total(dealer[:2])[0] >= 17 or hand_total(dealer[:3])[0] <= 21:
        assert s == Settlement(LOSE, 0, 1_000, 0)
    else:
        ratio = BONUS_PAY_TABLE[rank_value(dealer[2])]
        assert s == Settlement(WIN, 1_000 * ratio.num // ratio.den, 0, 0)


THREE_EIGHTS = {THREE_EIGHTS_SUITED: Ratio(100, 1), THREE_EIGHTS_COLOR: Ratio(25, 1)}


def test_three_eights_suited_take_the_posted_suited_odds() -> None:
    """13:69F-2.25(f): "if ... all three cards have a value of eight and are of the same
    color or suit, a casino licensee shall pay each player who has placed an optional
    bonus wager as follows:" (the table itself is missing: it comes from the posting)."""
    s = settle_bonus(1_000, ["8", "8", "8"], ["H", "H", "H"], pay_table=THREE_EIGHTS)
    assert s == Settlement(WIN, 100_000, 0, 0)


def test_three_eights_same_colour_take_the_posted_colour_odds() -> None:
    """13:69F-2.25(f): "all three cards have a value of eight and are of the same color"."""
    s = settle_bonus(1_000, ["8", "8", "8"], ["H", "D", "H"], pay_table=THREE_EIGHTS)
    assert s == Settlement(WIN, 25_000, 0, 0)
    s = settle_bonus(1_000, ["8", "8", "8"], ["C", "S", "S"], pay_table=THREE_EIGHTS)
    assert s == Settlement(WIN, 25_000, 0, 0)
    # suited eights take the colour odds when only those are posted
    only_colour = {THREE_EIGHTS_COLOR: Ratio(25, 1)}
    s = settle_bonus(1_000, ["8", "8", "8"], ["S", "S", "S"], pay_table=only_colour)
    assert s == Settlement(WIN, 25_000, 0, 0)


def test_three_eights_fall_back_to_the_e_table() -> None:
    """Mixed colours, no posted three-eights odds, or no suits: 2.25(e), eight 7 to 1."""
    mixed = settle_bonus(1_000, ["8", "8", "8"], ["H", "C", "H"], pay_table=THREE_EIGHTS)
    assert mixed == Settlement(WIN, 7_000, 0, 0)
    unposted = settle_bonus(1_000, ["8", "8", "8"], ["H", "H", "H"], pay_table=None)
    assert unposted == Settlement(WIN, 7_000, 0, 0)
    no_suits = settle_bonus(1_000, ["8", "8", "8"], pay_table=THREE_EIGHTS)
    assert no_suits == Settlement(WIN, 7_000, 0, 0)
    only_suited = {THREE_EIGHTS_SUITED: Ratio(100, 1)}
    colour = settle_bonus(1_000, ["8", "8", "8"], ["H", "D", "H"], pay_table=only_suited)
    assert colour == Settlement(WIN, 7_000, 0, 0)


def test_bonus_rejects_unknown_pay_table_keys_and_bad_suits() -> None:
    with pytest.raises(ValueError, match="unknown bonus"):
        settle_bonus(1_000, ["10", "6", "K"], pay_table={"THREE_EIGHTS_COLOUR": Ratio(1, 1)})
    with pytest.raises(ValueError):
        settle_bonus(1_000, ["8", "8", "8"], ["H", "H", "X"], pay_table=THREE_EIGHTS)


# --- Blackjack Switch match wager (public summary) -------------------------------------


def cards(*spec: str) -> list[tuple[str, str]]:
    return [(s[:-1], s[-1]) for s in spec]


@pytest.mark.parametrize(
    ("four", "category", "payout"),
    [
        (cards("2C", "7D", "9H", "KS"), None, None),
        (cards("10C", "KD", "QH", "JS"), None, None),  # ten-values of different rank
        (cards("7C", "7D", "9H", "KS"), ONE_PAIR, 1_000),
        (cards("7C", "9D", "9H", "7S"), TWO_PAIR, 8_000),
        (cards("QC", "QD", "4H", "QS"), THREE_OF_A_KIND, 5_000),
        (cards("AC", "AD", "AH", "AS"), FOUR_OF_A_KIND, 40_000),
    ],
)
def test_match_default_table(
    four: list[tuple[str, str]], category: str | None, payout: int | None
) -> None:
    """Super Match (public summary): pair 1 to 1, three of a kind 5 to 1, two pair 8 to 1,
    four of a kind 40 to 1."""
    assert match_category(four) == category
    s = settle_match(1_000, four, pay_table=None)
    if payout is None:
        assert s == Settlement(LOSE, 0, 1_000, 0)
    else:
        assert s == Settlement(WIN, payout, 0, 0)


def test_match_posted_table_replaces_the_default() -> None:
    posted = {ONE_PAIR: Ratio(1, 1), TWO_PAIR: Ratio(10, 1), FOUR_OF_A_KIND: Ratio(50, 1)}
    assert settle_match(1_000, cards("7C", "9D", "9H", "7S"), pay_table=posted) == Settlement(
        WIN, 10_000, 0, 0
    )
    # three of a kind is not on the posted table: it does not pay
    assert settle_match(1_000, cards("QC", "QD", "4H", "QS"), pay_table=posted) == Settlement(
        LOSE, 0, 1_000, 0
    )
    with pytest.raises(ValueError, match="unknown match"):
        settle_match(1_000, cards("QC", "QD", "4H", "QS"), pay_table={"PAIR": Ratio(1, 1)})


def test_match_needs_four_cards() -> None:
    with pytest.raises(ValueError):
        settle_match(1_000, cards("QC", "QD", "4H"), pay_table=None)
    with pytest.raises(ValueError):
        match_category(cards("1C", "1D", "4H", "5S"))


# --- Free Bet Blackjack Push 22 (public summary) ---------------------------------------


def test_push22_wins_eleven_to_one_on_dealer_22() -> None:
    assert settle_push22(500, ["10", "6", "6"]) == Settlement(WIN, 5_500, 0, 0)
    assert settle_push22(500, ["A", "A", "K", "K"]) == Settlement(WIN, 5_500, 0, 0)


@pytest.mark.parametrize("dealer", [["10", "7"], ["10", "6", "7"], ["A", "K"], ["10", "6", "5"]])
def test_push22_loses_otherwise(dealer: list[str]) -> None:
    assert settle_push22(500, dealer) == Settlement(LOSE, 0, 500, 0)


def test_push22_posted_table() -> None:
    assert settle_push22(500, ["10", "6", "6"], pay_table={DEALER_22: Ratio(10, 1)}) == (
        Settlement(WIN, 5_000, 0, 0)
    )
    with pytest.raises(ValueError):
        settle_push22(500, ["10", "6", "6"], pay_table={})
    with pytest.raises(ValueError):
        settle_push22(500, ["10"])


# --- doubles and splits ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ranks", "allowed"),
    [
        (["4", "5"], True),
        (["5", "5"], True),
        (["6", "5"], True),
        (["2", "7"], True),
        (["4", "4"], False),  # 8
        (["6", "6"], False),  # 12
        (["A", "8"], False),  # soft
        (["A", "9"], False),
        (["2", "3", "5"], False),  # three cards
    ],
)
def test_free_double_on_hard_nine_to_eleven(ranks: list[str], allowed: bool) -> None:
    """Free Bet Blackjack (public summary): free double on a hard two-card 9, 10 or 11."""
    assert free_double_allowed(ranks) is allowed


@pytest.mark.parametrize(
    ("ranks", "allowed"),
    [
        (["A", "A"], True),
        (["2", "2"], True),
        (["8", "8"], True),
        (["9", "9"], True),
        (["10", "10"], False),
        (["K", "K"], False),
        (["J", "Q"], False),
        (["8", "9"], False),
    ],
)
def test_free_split_on_any_pair_but_tens(ranks: list[str], allowed: bool) -> None:
    """Free Bet Blackjack (public summary): free split on any pair except 10-values."""
    assert free_split_allowed(ranks) is allowed


def test_can_double() -> None:
    assert can_double(["2", "3"], "ANY")
    assert can_double(["A", "7"], "ANY")
    assert not can_double(["2", "3", "4"], "ANY")
    assert can_double(["4", "5"], "NINE_TEN_ELEVEN")
    assert can_double(["5", "6"], "NINE_TEN_ELEVEN")
    assert not can_double(["4", "4"], "NINE_TEN_ELEVEN")
    assert not can_double(["A", "8"], "NINE_TEN_ELEVEN")  # soft 19
    assert not can_double(["4", "5"], "TEN_ELEVEN")
    assert can_double(["4", "6"], "TEN_ELEVEN")
    assert can_double(["5", "6"], "TEN_ELEVEN")
    assert not can_double(["A", "9"], "TEN_ELEVEN")  # soft 20
    assert not can_double(["2", "3", "5"], "TEN_ELEVEN")
    with pytest.raises(ValueError):
        can_double(["5", "6"], "ELEVEN")
