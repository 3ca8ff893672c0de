"""Basic strategy for simulated players and the Blackjack Switch heuristic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pitwatch.blackjack import RANKS, decide, hand_total, should_switch, switch_score

ACTIONS = {"HIT", "STAND", "DOUBLE", "SPLIT", "SURRENDER"}


def play(
    ranks: list[str],
    up: str,
    *,
    double: bool = True,
    split: bool = True,
    surrender: bool = False,
    h17: bool = False,
    das: bool = True,
    free_bet: bool = False,
) -> str:
    return decide(
        ranks,
        up,
        can_double=double,
        can_split=split,
        can_surrender=surrender,
        hits_soft_17=h17,
        double_after_split=das,
        free_bet=free_bet,
    )


@pytest.mark.parametrize(
    ("ranks", "up", "action"),
    [
        (["10", "6"], "10", "HIT"),
        (["10", "6"], "6", "STAND"),
        (["10", "2"], "3", "HIT"),
        (["10", "2"], "4", "STAND"),
        (["10", "7"], "A", "STAND"),
        (["5", "6"], "10", "DOUBLE"),
        (["5", "6"], "A", "HIT"),
        (["4", "5"], "3", "DOUBLE"),
        (["4", "5"], "7", "HIT"),
        (["6", "4"], "9", "DOUBLE"),
        (["6", "4"], "10", "HIT"),
        (["3", "2"], "6", "HIT"),
        (["A", "7"], "2", "STAND"),
        (["A", "7"], "6", "DOUBLE"),
        (["A", "7"], "9", "HIT"),
        (["A", "6"], "3", "DOUBLE"),
        (["A", "2"], "5", "DOUBLE"),
        (["A", "2"], "4", "HIT"),
        (["A", "8"], "6", "STAND"),
        (["A", "A"], "A", "SPLIT"),
        (["8", "8"], "10", "SPLIT"),
        (["9", "9"], "7", "STAND"),
        (["9", "9"], "8", "SPLIT"),
        (["K", "Q"], "6", "STAND"),
        (["5", "5"], "9", "DOUBLE"),
        (["4", "4"], "5", "SPLIT"),
        (["2", "2"], "7", "SPLIT"),
        (["7", "7"], "8", "HIT"),
        (["A", "K"], "A", "STAND"),
        (["10", "6", "5"], "10", "STAND"),
    ],
)
def test_basic_strategy_s17(ranks: list[str], up: str, action: str) -> None:
    assert play(ranks, up) == action


def test_soft_17_variations() -> None:
    assert play(["5", "6"], "A", h17=True) == "DOUBLE"
    assert play(["A", "7"], "2", h17=True) == "DOUBLE"
    assert play(["A", "8"], "6", h17=True) == "DOUBLE"
    assert play(["A", "8"], "6", h17=True, double=False) == "STAND"


def test_no_double_after_split_table() -> None:
    assert play(["2", "2"], "2", das=False) == "HIT"
    assert play(["4", "4"], "5", das=False) == "HIT"  # played as a hard 8
    assert play(["6", "6"], "2", das=False) == "HIT"


def test_double_falls_back_to_hit_or_stand() -> None:
    assert play(["5", "6"], "6", double=False) == "HIT"
    assert play(["A", "7"], "4", double=False) == "STAND"
    assert play(["2", "3", "6"], "6") == "HIT"  # three cards never double
    assert play(["A", "2", "4"], "4") == "HIT"  # soft 17 would double; three cards hit
    assert play(["A", "2", "5"], "4") == "STAND"  # soft 18 of three cards stands


def test_pair_not_split_when_not_allowed() -> None:
    assert play(["8", "8"], "10", split=False) == "HIT"
    assert play(["A", "A"], "6", split=False) == "HIT"


def test_surrender() -> None:
    assert play(["10", "6"], "10", surrender=True) == "SURRENDER"
    assert play(["10", "6"], "9", surrender=True) == "SURRENDER"
    assert play(["10", "5"], "10", surrender=True) == "SURRENDER"
    assert play(["10", "5"], "A", surrender=True) == "HIT"
    assert play(["10", "5"], "A", surrender=True, h17=True) == "SURRENDER"
    assert play(["10", "7"], "A", surrender=True, h17=True) == "SURRENDER"
    assert play(["10", "7"], "A", surrender=True) == "STAND"
    assert play(["8", "8"], "10", surrender=True) == "SPLIT"
    assert play(["8", "8"], "10", surrender=True, h17=True) == "SPLIT"
    assert play(["8", "8"], "A", surrender=True, h17=True) == "SURRENDER"
    assert play(["8", "8"], "10", surrender=True, split=False) == "SURRENDER"
    assert play(["10", "3", "3"], "10", surrender=True) == "HIT"  # only on two cards


def test_free_bet_takes_every_free_double_and_split() -> None:
    assert play(["10", "10"], "6", free_bet=True) == "STAND"
    assert play(["9", "9"], "7", free_bet=True) == "SPLIT"
    assert play(["2", "2"], "A", free_bet=True) == "SPLIT"
    assert play(["5", "5"], "A", free_bet=True) == "DOUBLE"
    assert play(["4", "5"], "A", free_bet=True) == "DOUBLE"
    assert play(["4", "5"], "A", free_bet=True, double=False) == "HIT"


def test_one_card_hand_hits_and_bad_up_card_raises() -> None:
    assert play(["8"], "6") == "HIT"
    with pytest.raises(ValueError):
        play(["10", "6"], "T")


@given(
    st.lists(st.sampled_from(RANKS), min_size=2, max_size=5),
    st.sampled_from(RANKS),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_decide_respects_what_is_allowed(
    ranks: list[str], up: str, dbl: bool, spl: bool, sur: bool, h17: bool, free: bool
) -> None:
    action = decide(
        ranks,
        up,
        can_double=dbl,
        can_split=spl,
        can_surrender=sur,
        hits_soft_17=h17,
        free_bet=free,
    )
    assert action in ACTIONS
    if action == "DOUBLE":
        assert dbl and len(ranks) == 2
    if action == "SPLIT":
        assert spl and len(ranks) == 2
    if action == "SURRENDER":
        assert sur and len(ranks) == 2
    if hand_total(ranks)[0] >= 21:
        assert action == "STAND"


def test_should_switch_heuristic() -> None:
    # 10,6 and 4,10 -> 10,10 and 4,6: a 20 and a 10 beat two stiffs
    assert should_switch(["10", "6"], ["4", "10"], "10")
    # never switch a dealt blackjack into an ordinary 21
    assert not should_switch(["A", "K"], ["10", "9"], "10")
    # 10,K and 9,Q: 20 and 19 already
    assert not should_switch(["10", "K"], ["9", "Q"], "7")
    # 5,6 and 10,5 -> 5,5 and 10,6: do not give up an 11 to make a 16
    assert not should_switch(["5", "6"], ["10", "5"], "6")
    with pytest.raises(ValueError):
        should_switch(["10"], ["9", "Q"], "7")


def test_switch_score_orders_hands_sensibly() -> None:
    def score(hand: list[str], switched: bool = False) -> int:
        return switch_score(hand, "10", switched=switched)

    assert score(["A", "K"]) > score(["A", "K"], switched=True) > score(["10", "K"])
    assert score(["10", "K"]) > score(["10", "9"]) > score(["10", "8"]) > score(["10", "7"])
    assert score(["5", "6"]) > score(["10", "6"])
    assert switch_score(["10", "6"], "5", switched=False) > score(["10", "6"])
