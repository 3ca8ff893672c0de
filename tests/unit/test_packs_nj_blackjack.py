"""The New Jersey blackjack pack (N.J.A.C. 13:69F-2: 2.8 surrender, 2.25 bonus wager),
judged on hand-built rounds.

Each regulation test quotes the sentence it enforces (lines starting with `> `, checked
verbatim against docs/regulations by the last test) and plays rounds on both
sides of it: a compliant round raises nothing at all, a faulty one exactly its code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from pitwatch.blackjack import Ratio, hand_total
from pitwatch.events.model import Event, PayEntry, PayTable
from pitwatch.money import dollars
from pitwatch.packs import nj_blackjack
from pitwatch.packs.base import DEALER_POSTED, PAYOUT_POSTED
from tests.rounds import TableScript, audit, check_quotes_and_coverage, expect, only

PACK = "nj-blackjack"
S = "N.J.A.C. 13:69F-2.8"
B = "N.J.A.C. 13:69F-2.25"
BONUS_ODDS_CITATION = (f"{B}(d)–(f) (three eights: the table's posted pay table, (f)'s is "
                       "not in the text)")
SOFT17_CITATION = DEALER_POSTED
PAYOUT_CITATION = PAYOUT_POSTED
POSTING = "POSTED_RULES_CONTRADICT_REGULATION"


def table(**rules: object) -> TableScript:
    """An NJ blackjack table: 6 decks, S17, 3 to 2, card reader, surrender, bonus
    wager posted up to 5,000, chips of 100."""
    return TableScript.opened("nj_blackjack", "NJ-BJ-07", **rules)


# --- compliant rounds ---------------------------------------------------------------------


def _plain(sc: TableScript) -> None:
    """Two seats: a stand that wins and a double that wins; the dealer stands on 17."""
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 1000)
    sc.deal({1: ("10", "8"), 2: ("5", "6")}, up="7", hole="Q")
    sc.decide(1, "STAND")
    sc.decide(2, "DOUBLE")
    sc.wager(2, "DOUBLE", 1000)
    sc.card(2, "9")
    sc.reveal()
    sc.pay(2, "MAIN", 1000)
    sc.pay(2, "DOUBLE", 1000)
    sc.clear(2)
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()


def _split_and_bust(sc: TableScript) -> None:
    """A split of eights (one hand doubled), a bust collected at once, a dealer bust."""
    sc.start(1, [1, 3])
    sc.wager(1, "MAIN", 2000)
    sc.wager(3, "MAIN", 1500)
    sc.deal({1: ("8", "8"), 3: ("10", "4")}, up="6", hole="10")
    sc.decide(1, "SPLIT")
    sc.wager(1, "SPLIT", 2000, hand=1)
    sc.card(1, "3", "H", hand=0)
    sc.decide(1, "DOUBLE", 0)
    sc.wager(1, "DOUBLE", 2000, 0)
    sc.card(1, "10", "C", 0)
    sc.card(1, "9", "D", hand=1)
    sc.decide(1, "STAND", 1)
    sc.decide(3, "HIT")
    sc.card(3, "K", "C")
    sc.collect(3, "MAIN", 1500)
    sc.clear(3)
    sc.reveal()
    sc.dealer("8", "C")  # 24: the dealer busts
    sc.pay(1, "MAIN", 2000, 0)
    sc.pay(1, "DOUBLE", 2000, 0)
    sc.clear(1, 0)
    sc.pay(1, "SPLIT", 2000, 1)
    sc.clear(1, 1)
    sc.finish_round()


def _blackjack_and_push(sc: TableScript) -> None:
    """A blackjack paid 3 to 2 after the reader finds no dealer blackjack; a push."""
    sc.start(1, [2, 4])
    sc.wager(2, "MAIN", 2000)
    sc.wager(4, "MAIN", 1000)
    sc.deal({2: ("A", "K"), 4: ("10", "9")}, up="10", hole="9")
    sc.insert_hole(False)
    sc.decide(4, "STAND")
    sc.reveal()
    sc.give_back(4, "MAIN", 1000)
    sc.clear(4)
    sc.pay(2, "MAIN", 3000)
    sc.clear(2)
    sc.finish_round()


def _dealer_blackjack(sc: TableScript) -> None:
    """Dealer blackjack found by the reader: the bonus loses first, every hand loses
    whole but a blackjack, which pushes."""
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("10", "8"), 2: ("A", "Q")}, up="A", hole="K")
    sc.offer_insurance()
    sc.insert_hole(True)
    sc.reveal()
    sc.collect(1, "BONUS", 500)
    sc.give_back(2, "MAIN", 2000)
    sc.clear(2)
    sc.collect(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()


def _bonus_wins(sc: TableScript) -> None:
    """Two bonus wagers; the dealer's 16 takes a third card and busts: both paid 3 to 1
    (a king), highest seat first, then the hands."""
    sc.start(1, [1, 3])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.wager(3, "MAIN", 2000)
    sc.wager(3, "BONUS", 100)
    sc.deal({1: ("10", "8"), 3: ("9", "9")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.decide(3, "STAND")
    sc.reveal()
    sc.dealer("K", "C")
    sc.pay(3, "BONUS", 300)
    sc.pay(1, "BONUS", 1500)
    sc.pay(3, "MAIN", 2000)
    sc.clear(3)
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()


def _surrenders(sc: TableScript) -> None:
    """A surrender against a 5, settled at once, and the next seat playing on."""
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("10", "6"), 2: ("10", "7")}, up="5", hole="10")
    sc.decide(1, "SURRENDER")
    sc.collect(1, "MAIN", 1000)
    sc.give_back(1, "MAIN", 1000)
    sc.clear(1)
    sc.decide(2, "STAND")
    sc.reveal()
    sc.dealer("9", "C")  # 24
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()


def _split_aces(sc: TableScript) -> None:
    """Split aces take one card each; an ace and a king after a split is 21, not a
    blackjack: paid 1 to 1."""
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "A")}, up="9", hole="8")
    sc.decide(1, "SPLIT")
    sc.wager(1, "SPLIT", 2000, 1)
    sc.card(1, "K", "C", 0)
    sc.card(1, "6", "D", 1)  # soft 17
    sc.reveal()
    sc.pay(1, "MAIN", 2000, 0)
    sc.clear(1, 0)
    sc.give_back(1, "SPLIT", 2000, 1)
    sc.clear(1, 1)
    sc.finish_round()


def _surrender_before_a_bonus_third_card(sc: TableScript) -> None:
    """A surrender waiting on a 10 settles right after the reveal; the dealer's 16 then
    takes its third card for seat 2's bonus (paid 7 to 1 on an eight), then the hands."""
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.wager(2, "BONUS", 500)
    sc.deal({1: ("10", "6"), 2: ("10", "9")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "SURRENDER")
    sc.decide(2, "STAND")
    sc.reveal()
    sc.collect(1, "MAIN", 1000)
    sc.give_back(1, "MAIN", 1000)
    sc.clear(1)
    sc.dealer("8", "C")  # 24
    sc.pay(2, "BONUS", 3500)
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()


@pytest.mark.parametrize("play", [_plain, _split_and_bust, _blackjack_and_push,
                                  _dealer_blackjack, _bonus_wins, _surrenders, _split_aces,
                                  _surrender_before_a_bonus_third_card])
def test_compliant_rounds_raise_nothing(play: Callable[[TableScript], None]) -> None:
    sc = table()
    play(sc)
    assert audit(sc.events) == []


# --- 2.8 surrender ---------------------------------------------------------------------------


@pytest.mark.parametrize("rules, why", [
    ({"surrender": False}, "does not offer surrender"),
    ({"blackjack_pays": Ratio(6, 5)}, "6 to 5"),
    ({"progressive_wager": True, "bonus_wager": False}, "progressive"),
    ({"multiple_action": True, "bonus_wager": False}, "multiple action"),
])
def test_2_8_c_surrender_not_available(rules: dict[str, object], why: str) -> None:
    """N.J.A.C. 13:69F-2.8(c)

    > Each casino licensee may, at its discretion, offer its patrons the surrender option
    > authorized in this section, except that when a casino licensee offers the rule
    > variation multiple action blackjack pursuant to 13:69F-2.18, or on any blackjack
    > table which offers the 6 to 5 blackjack variation or the progressive blackjack wager
    > pursuant to 13:69F-2.19, the surrender option shall not be available.

    The void surrender changes nothing: the player stands and wins. A table that posts
    surrender beside what (c) bars is itself a finding, on its TableOpened.
    """
    sc = table(**rules)
    opened = sc.events[0]
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "6")}, up="9", hole="7")
    bad = sc.decide(1, "SURRENDER")
    sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("K", "C")  # 26
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    found = audit(sc.events)
    posting = [v for v in found if v.code == POSTING]
    if why != "does not offer surrender":
        assert len(posting) == 1 and posting[0].event_id == opened.event_id, found
        assert posting[0].citation == f"{S}(c)" and posting[0].round_id == ""
    else:
        assert posting == []
    v = only([v for v in found if v.code != POSTING], "SURRENDER_NOT_AVAILABLE")
    expect(v, code="SURRENDER_NOT_AVAILABLE", severity="HIGH", citation=f"{S}(c)", event=bad,
           seat=1, hand=0, pack=PACK)
    assert why in v.message


def test_2_8_c_surrender_available_at_a_3_to_2_table_that_posts_it() -> None:
    """N.J.A.C. 13:69F-2.8(c)

    > Each casino licensee may, at its discretion, offer its patrons the surrender option
    > authorized in this section

    The other side: posted, 3 to 2, no progressive or multiple action.
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "6")}, up="9", hole="7")
    sc.decide(1, "SURRENDER")
    sc.collect(1, "MAIN", 1000)
    sc.give_back(1, "MAIN", 1000)
    sc.clear(1)
    sc.reveal()
    sc.finish_round()
    assert audit(sc.events) == []


def test_2_8_a_surrender_before_the_second_card_is_too_early() -> None:
    """N.J.A.C. 13:69F-2.8(a)

    > After the first two cards are dealt to the player and the player's point total is
    > announced, the player may elect to discontinue play on his or her hand for that
    > round by surrendering one-half his or her wager.

    A surrender with one card is void; the player then plays the hand out.
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.card(1, "10", "S")
    bad = sc.decide(1, "SURRENDER")
    sc.dealer("9", "H")
    sc.card(1, "6", "D")
    sc.dealer("7", "C", face_up=False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("K", "C")  # 26
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    v = only(audit(sc.events), "SURRENDER_TOO_EARLY")
    expect(v, code="SURRENDER_TOO_EARLY", severity="HIGH", citation=f"{S}(a)", event=bad,
           seat=1, hand=0, pack=PACK)
    assert "1 card" in v.message


@pytest.mark.parametrize("first", ["HIT", "STAND"])
def test_2_8_a_surrender_after_another_decision_is_too_late(first: str) -> None:
    """N.J.A.C. 13:69F-2.8(a)

    > All decisions to surrender shall be made prior to such player indicating as to
    > whether he or she wishes to double down, split pairs, stand, and/or draw as provided
    > for in this subchapter.

    After a hit (or a stand) the surrender is void and the hand plays on.
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "6")}, up="9", hole="7")
    sc.decide(1, first)
    if first == "HIT":
        sc.card(1, "2", "C")  # 18
    bad = sc.decide(1, "SURRENDER")
    if first == "HIT":
        sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("K", "C")  # 26
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    v = only(audit(sc.events), "SURRENDER_TOO_LATE")
    expect(v, code="SURRENDER_TOO_LATE", severity="HIGH", citation=f"{S}(a)", event=bad,
           seat=1, hand=0, pack=PACK)
    assert first in v.message


def _surrender_against_low_card(main: int, settle: str) -> tuple[TableScript, Event | None]:
    """Seat 1 surrenders `main` against a 5; seat 2 plays after it. `settle`: how the
    dealer settles the surrender ("at once", "whole collected", "whole returned", or
    "late": half and half only after seat 2's decision)."""
    sc = table()
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", main)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("10", "6"), 2: ("10", "7")}, up="5", hole="10")
    sc.decide(1, "SURRENDER")
    half = main // 2
    bad = None
    if settle == "at once":
        sc.collect(1, "MAIN", half)
        sc.give_back(1, "MAIN", main - half)
        sc.clear(1)
    elif settle == "whole collected":
        bad = sc.collect(1, "MAIN", main)
        sc.clear(1)
    elif settle == "whole returned":
        bad = sc.give_back(1, "MAIN", main)
        sc.clear(1)
    stand = sc.decide(2, "STAND")
    if settle == "late":
        bad = stand
        sc.collect(1, "MAIN", half)
        sc.give_back(1, "MAIN", main - half)
        sc.clear(1)
    sc.reveal()
    sc.dealer("9", "C")  # 24
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return sc, bad


@pytest.mark.parametrize("main", [2000, 2001])
def test_2_8_a1_surrender_against_2_to_9_settles_half_and_half_at_once(main: int) -> None:
    """N.J.A.C. 13:69F-2.8(a)1–2

    > Should the first card dealt to the dealer be other than an ace or 10-value card, the
    > dealer shall immediately collect one-half of the wager and return one-half to the
    > player.

    An odd cent goes to the player (pitwatch's decision; the text is silent): 2,001
    collects 1,000 and returns 1,001.
    """
    sc, _ = _surrender_against_low_card(main, "at once")
    assert audit(sc.events) == []


@pytest.mark.parametrize("settle, message", [
    ("whole collected", "expected collected $10.00 and returned $10.00"),
    ("whole returned", "expected collected $10.00 and returned $10.00"),
    ("late", "not settled at once"),
])
def test_2_8_a1_surrender_against_2_to_9_settled_otherwise(settle: str, message: str) -> None:
    """N.J.A.C. 13:69F-2.8(a)1–2

    > Should the first card dealt to the dealer be other than an ace or 10-value card, the
    > dealer shall immediately collect one-half of the wager and return one-half to the
    > player.

    The whole wager collected (or returned) is wrong money; half and half only after the
    next player's decision is not immediate (seen on that decision).
    """
    sc, bad = _surrender_against_low_card(2000, settle)
    v = only(audit(sc.events), "SURRENDER_SETTLEMENT_WRONG")
    expect(v, code="SURRENDER_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{S}(a)1–2",
           event=bad, seat=1, hand=0, pack=PACK)
    assert message in v.message


def _surrender_against_ten(*, hole: str, hole_card: str, settle: str
                           ) -> tuple[TableScript, Event | None]:
    """Seat 1 surrenders 2,000 against a 10 up card; seat 2 stands on 20. With
    `hole_card: NONE` the dealer's second card comes after the players act (2.8(a)2's
    "when the dealer's second card is revealed"); with READER it is dealt face down and
    revealed after the players act (no blackjack: `hole` is not an ace)."""
    sc = table(hole_card=hole_card)
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    reader = hole_card == "READER"
    sc.deal({1: ("10", "6"), 2: ("10", "Q")}, up="10", hole=hole if reader else None)
    if reader:
        sc.insert_hole(False)
    sc.decide(1, "SURRENDER")
    bad = None
    if settle == "before the reveal":
        bad = sc.collect(1, "MAIN", 1000)
        sc.give_back(1, "MAIN", 1000)
        sc.clear(1)
    sc.decide(2, "STAND")
    if reader:
        sc.reveal()
    else:
        sc.dealer(hole, "C")
    dealer_bj = hole == "A"
    if settle == "half and half":
        bad = sc.collect(1, "MAIN", 1000)
        sc.give_back(1, "MAIN", 1000)
        sc.clear(1)
    elif settle == "whole":
        bad = sc.collect(1, "MAIN", 2000)
        sc.clear(1)
    # seat 2 loses to a dealer blackjack; against 10 + 7 the dealer stands on 17
    first_after = sc.collect(2, "MAIN", 2000) if dealer_bj else sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    if settle == "never":  # "immediately": seen on the next other settlement
        bad = first_after
    return sc, bad


@pytest.mark.parametrize("hole, hole_card, settle", [
    ("7", "READER", "half and half"),
    ("7", "NONE", "half and half"),
    ("A", "NONE", "whole"),
])
def test_2_8_a2_surrender_against_ace_or_ten_settles_after_the_second_card(
        hole: str, hole_card: str, settle: str) -> None:
    """N.J.A.C. 13:69F-2.8(a)1–2

    > Should the first card dealt to the dealer be an ace or 10-value card, the dealer
    > will place the player's wager on top of the player's cards. When the dealer's second
    > card is revealed, the hand will be settled by immediately collecting the entire
    > wager should the dealer have blackjack or collecting one-half of the wager and
    > returning one-half of the wager to the player should the dealer not have blackjack.
    """
    sc, _ = _surrender_against_ten(hole=hole, hole_card=hole_card, settle=settle)
    assert audit(sc.events) == []


@pytest.mark.parametrize("hole, hole_card, settle, message", [
    ("7", "READER", "before the reveal", "before the dealer's second card was revealed"),
    ("7", "NONE", "before the reveal", "before the dealer's second card was revealed"),
    ("7", "READER", "whole", "expected collected $10.00 and returned $10.00"),
    ("A", "NONE", "half and half", "expected collected $20.00"),
    ("7", "READER", "never", "not settled at once"),
])
def test_2_8_a2_surrender_against_ace_or_ten_settled_otherwise(
        hole: str, hole_card: str, settle: str, message: str) -> None:
    """N.J.A.C. 13:69F-2.8(a)1–2

    > When the dealer's second card is revealed, the hand will be settled by immediately
    > collecting the entire wager should the dealer have blackjack or collecting one-half
    > of the wager and returning one-half of the wager to the player should the dealer not
    > have blackjack.

    Settled before the reveal, the wrong way for the dealer's hand, or not at once (seen
    on the next event after the reveal that is not the surrendered hand's own).
    """
    sc, bad = _surrender_against_ten(hole=hole, hole_card=hole_card, settle=settle)
    v = only(audit(sc.events), "SURRENDER_SETTLEMENT_WRONG")
    expect(v, code="SURRENDER_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{S}(a)1–2",
           event=bad, seat=1, hand=0, pack=PACK)
    assert message in v.message


# --- 2.25 the dealer-bust bonus wager ------------------------------------------------------


def _bonus_placement(rules: dict[str, object], main: int | None, bonus: int, *,
                     after_first_card: bool = False,
                     void: bool) -> tuple[TableScript, Event | None]:
    """Seat 1's bonus wager, with seat 2 playing 2,000 and no bonus, against a dealer
    10 + 7: a standing bonus loses on two cards of 17 (collected), a void one is handed
    back. `main=None`: seat 1 sits in with no blackjack wager. `after_first_card`: the
    bonus comes after seat 1's first card."""
    sc = table(**rules)
    sc.start(1, [1, 2])
    bad = None
    if main is not None:
        sc.wager(1, "MAIN", main)
    if not after_first_card:
        bad = sc.wager(1, "BONUS", bonus)
    sc.wager(2, "MAIN", 2000)
    if after_first_card:  # the initial deal by hand, the bonus after the first card
        sc.card(1, "10", "H")
        bad = sc.wager(1, "BONUS", bonus)
        sc.card(2, "10", "D")
        sc.dealer("10", "C")
        sc.card(1, "8", "S")
        sc.card(2, "9", "S")
        sc.dealer("7", "H", face_up=False)
    elif main is not None:
        sc.deal({1: ("10", "8"), 2: ("10", "9")}, up="10", hole="7")
    else:
        sc.deal({2: ("10", "9")}, up="10", hole="7")
    sc.insert_hole(False)
    if main is not None:
        sc.decide(1, "STAND")
    sc.decide(2, "STAND")
    sc.reveal()
    if void:
        sc.give_back(1, "BONUS", bonus)
    else:
        sc.collect(1, "BONUS", bonus)
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    if main is not None:
        sc.pay(1, "MAIN", main)
        sc.clear(1)
    sc.finish_round()
    return sc, bad


@pytest.mark.parametrize("rules, why", [
    ({"bonus_wager": False}, "does not offer it"),
    ({"multiple_action": True, "surrender": False}, "multiple action"),
    ({"progressive_wager": True, "surrender": False}, "progressive"),
    ({"blackjack_bonus_wager": True}, "blackjack bonus wager (2.20)"),
    ({"streak_wager": True}, "streak wager (2.22)"),
    ({"match_the_dealer_wager": True}, "match-the-dealer wager (2.23)"),
    ({"twenty_point_bonus_wager": True}, "20 point bonus wager (2.24)"),
    ({"in_between_wager": True}, "in-between wager (2.26)"),
])
def test_2_25_a_h_bonus_wager_not_available(rules: dict[str, object], why: str) -> None:
    """N.J.A.C. 13:69F-2.25(a), (h)

    > A casino licensee may, in its discretion, offer each player at a blackjack table the
    > option to make an additional wager that the dealer shall be required to draw a third
    > card and that the third card will result in the dealer's hand having a point total
    > greater than 21.

    > The optional bonus wager authorized by this section may not be offered at a
    > blackjack table that offers multiple action blackjack wagers pursuant to N.J.A.C.
    > 13:69E-2.18, a progressive blackjack wager pursuant to 13:69F-2.19, a blackjack
    > bonus wager pursuant to 13:69F-2.20, a streak wager pursuant to 13:69F-2.22, a
    > match-the-dealer wager pursuant to 13:69F-2.23, a 20 point bonus wager pursuant to
    > 13:69F-2.24, or the in-between wager authorized by 13:69F-2.26.

    The contract posts all seven (five of them from schema version 5 on). The void
    wager is handed back at settlement. A table that posts the bonus wager
    beside what (h) bars is itself a finding, on its TableOpened.
    """
    sc, bad = _bonus_placement(rules, 2000, 500, void=True)
    found = audit(sc.events)
    posting = [v for v in found if v.code == POSTING]
    assert len(posting) == (0 if why == "does not offer it" else 1), found
    assert all(p.citation == f"{B}(h)" and p.event_id == sc.events[0].event_id for p in posting)
    v = only([v for v in found if v.code != POSTING], "BONUS_WAGER_NOT_AVAILABLE")
    expect(v, code="BONUS_WAGER_NOT_AVAILABLE", severity="HIGH", citation=f"{B}(a), (h)",
           event=bad, seat=1, hand=0, pack=PACK)
    assert why in v.message and all(why in p.message for p in posting)


@pytest.mark.parametrize("decks, ok", [(6, True), (8, True), (4, False), (2, False)])
def test_2_2_a_4_six_or_eight_decks_beside_the_bonus_wager(decks: int, ok: bool) -> None:
    """N.J.A.C. 13:69F-2.2(a)4

    > The fewest decks a table may use are:

    > 4. six or eight, where the match-the-dealer wager (13:69F-2.23) or the optional bonus
    > wager (13:69F-2.25) is offered.

    A bonus table that posts fewer decks is a finding on its TableOpened; a bonus wager
    placed at a shoe of fewer decks is not available (void, handed back)."""
    sc, bad = _bonus_placement({"decks": decks}, 2000, 500, void=not ok)
    found = audit(sc.events)
    if ok:
        assert found == []
        return
    posting = only([v for v in found if v.code == POSTING], POSTING)
    assert posting.citation == "N.J.A.C. 13:69F-2.2(a)4" and f"{decks} deck(s)" in posting.message
    v = only([v for v in found if v.code != POSTING], "BONUS_WAGER_NOT_AVAILABLE")
    expect(v, code="BONUS_WAGER_NOT_AVAILABLE", severity="HIGH",
           citation="N.J.A.C. 13:69F-2.2(a)4", event=bad, seat=1, hand=0, pack=PACK)


def test_2_2_a_4_six_or_eight_decks_beside_the_match_the_dealer_wager() -> None:
    """N.J.A.C. 13:69F-2.2(a)4

    > 4. six or eight, where the match-the-dealer wager (13:69F-2.23) or the optional bonus
    > wager (13:69F-2.25) is offered.

    A match-the-dealer table (postable from schema version 5 on) of four decks is a
    finding on its TableOpened; of six, none."""
    def posting(decks: int) -> list[str]:
        sc = TableScript.opened("nj_blackjack", "T-MTD", decks=decks, bonus_wager=False,
                                match_the_dealer_wager=True)
        return [v.citation for v in audit(sc.events) if v.code == POSTING]

    assert posting(6) == []
    assert posting(4) == ["N.J.A.C. 13:69F-2.2(a)4"]


def test_2_25_a_bonus_wager_where_offered_stands() -> None:
    """N.J.A.C. 13:69F-2.25(a), (h)

    > A casino licensee may, in its discretion, offer each player at a blackjack table the
    > option to make an additional wager
    """
    sc, _ = _bonus_placement({}, 2000, 500, void=False)
    assert audit(sc.events) == []


def test_2_25_b_bonus_wager_after_the_first_card_is_too_late() -> None:
    """N.J.A.C. 13:69F-2.25(b)

    > Prior to the first card being dealt for each round of play, each player who has
    > placed a blackjack wager in compliance with 13:69F-2.3(a) may make the bonus wager
    > authorized by this section by placing his or her wager on the appropriate area of
    > the blackjack layout.

    Placed after the first card (to seat 1), the wager is void; before it (the other
    side), it stands: `test_2_25_a_bonus_wager_where_offered_stands`.
    """
    sc, bad = _bonus_placement({}, 2000, 500, after_first_card=True, void=True)
    v = only(audit(sc.events), "BONUS_WAGER_TOO_LATE")
    expect(v, code="BONUS_WAGER_TOO_LATE", severity="HIGH", citation=f"{B}(b)", event=bad,
           seat=1, hand=0, pack=PACK)


def test_2_25_b_bonus_wager_without_a_blackjack_wager() -> None:
    """N.J.A.C. 13:69F-2.25(b)

    > each player who has placed a blackjack wager in compliance with 13:69F-2.3(a) may
    > make the bonus wager

    Seat 1 sits in with a bonus wager and no blackjack wager: void, handed back.
    """
    sc, bad = _bonus_placement({}, None, 500, void=True)
    v = only(audit(sc.events), "BONUS_WAGER_WITHOUT_MAIN")
    expect(v, code="BONUS_WAGER_WITHOUT_MAIN", severity="HIGH", citation=f"{B}(b)", event=bad,
           seat=1, hand=0, pack=PACK)


@pytest.mark.parametrize("main, posted, bonus, code", [
    (2000, 5000, 100, None),  # $1.00: the minimum
    (2000, 5000, 99, "BONUS_WAGER_AMOUNT"),
    (2000, 5000, 2000, None),  # equal to the blackjack wager
    (2000, 5000, 2100, "BONUS_WAGER_AMOUNT"),  # the blackjack wager and a chip
    (10000, 5000, 5000, None),  # the posted maximum
    (10000, 5000, 5100, "BONUS_WAGER_AMOUNT"),  # the posted maximum and a chip
    (10000, None, 10000, None),  # nothing posted: the blackjack wager caps it
    (10000, None, 10100, "BONUS_WAGER_AMOUNT"),
])
def test_2_25_c_bonus_wager_amount(main: int, posted: int | None, bonus: int,
                                   code: str | None) -> None:
    """N.J.A.C. 13:69F-2.25(c)

    > The amount of an optional bonus wager shall be at least $ 1.00 but shall not exceed
    > the lesser of the player's wager pursuant to 13:69F-2.3(a) or any maximum amount
    > established by the casino licensee and posted in accordance with 13:69F-8.3.

    The posted maximum is judged on the stack that passes it; the minimum and the cap of
    the blackjack wager when bets close (both wagers may still grow until then).
    """
    sc, bad = _bonus_placement({"bonus_wager_max": posted}, main, bonus,
                               void=code is not None)
    vs = audit(sc.events)
    if code is None:
        assert vs == []
        return
    v = only(vs, code)
    if bonus < 100 or bonus > main:  # judged once bets close: seat 1's
        bad = next(e for e in sc.events if getattr(e.payload, "seat", None) == 1  # 1st card
                   and type(e.payload).__name__ == "CardDealt")
    expect(v, code=code, severity="HIGH", citation=f"{B}(c)", event=bad, seat=1, hand=0,
           pack=PACK)


@pytest.mark.parametrize("stacks, code", [((60, 60), None), ((40, 50), "BONUS_WAGER_AMOUNT")])
def test_2_25_c_bonus_wager_minimum_judges_the_standing_wager(
        stacks: tuple[int, int], code: str | None) -> None:
    """N.J.A.C. 13:69F-2.25(c)

    > The amount of an optional bonus wager shall be at least $ 1.00

    Two stacks are one wager: 60 + 60 is $1.20 and stands (the first stack alone is no
    finding); 40 + 50 is $0.90, void when the seat's first card closes the bets, and
    handed back.
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    for amount in stacks:
        sc.wager(1, "BONUS", amount)
    first = sc.card(1, "10", "S")
    sc.dealer("9", "D")
    sc.card(1, "9", "H")
    sc.dealer("8", "C", face_up=False)
    sc.decide(1, "STAND")
    sc.reveal()  # 17: the bonus loses
    if code is None:
        sc.collect(1, "BONUS", sum(stacks))
    else:
        sc.give_back(1, "BONUS", sum(stacks))
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if code is None:
        assert vs == []
        return
    expect(only(vs, code), code=code, severity="HIGH", citation=f"{B}(c)", event=first,
           seat=1, hand=0, pack=PACK)


def test_2_25_c_bonus_wager_amount_counts_chips_added_to_it() -> None:
    """N.J.A.C. 13:69F-2.25(c)

    > shall not exceed the lesser of the player's wager pursuant to 13:69F-2.3(a)

    Two placements of 1,500 on a blackjack wager of 2,000 make a bonus wager of 3,000
    (the state adds them up), over the cap when bets close at the seat's first card: the
    bonus wager is void whole (no one stack passed the cap) and handed back.
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 1500)
    sc.wager(1, "BONUS", 1500)
    bad = sc.card(1, "10", "S")
    sc.dealer("10", "H")
    sc.card(1, "8", "D")
    sc.dealer("7", "C", face_up=False)
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.give_back(1, "BONUS", 3000)
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    v = only(audit(sc.events), "BONUS_WAGER_AMOUNT")
    expect(v, code="BONUS_WAGER_AMOUNT", severity="HIGH", citation=f"{B}(c)", event=bad,
           seat=1, hand=0, pack=PACK)


def _all_blackjack_bonus(*, bonus: bool, third: str | None) -> tuple[TableScript, Event | None]:
    """The only player has blackjack; the dealer shows 10 and holds 6 (16)."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    if bonus:
        sc.wager(1, "BONUS", 500)
    sc.deal({1: ("A", "K")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.reveal()
    first_stop = None
    if third is not None:
        sc.dealer(third, "C")
    if bonus:
        busted = third is not None and third in ("6", "7", "8", "9", "10", "J", "Q", "K")
        odds = {"6": 15, "7": 9, "8": 7, "9": 5}.get(third or "", 3)
        first_stop = (sc.pay(1, "BONUS", 500 * odds) if busted
                      else sc.collect(1, "BONUS", 500))
    sc.pay(1, "MAIN", 3000)
    sc.clear(1)
    sc.finish_round()
    return sc, first_stop


@pytest.mark.parametrize("bonus, third", [(True, "6"), (True, "5"), (False, None)])
def test_2_25_d_dealer_draws_a_third_card_for_a_bonus_even_with_all_blackjacks(
        bonus: bool, third: str | None) -> None:
    """N.J.A.C. 13:69F-2.25(d)

    > If the dealer's first two cards have a point total of less than 17 and any player
    > has placed an optional bonus wager under this section, the dealer shall be required
    > to draw a third card regardless of whether all players have been dealt blackjack.

    With a bonus standing the dealer draws on 16 though the only hand is a blackjack
    (a 6 busts: 15 to 1; a 5 makes 21: the bonus loses); with no bonus wager and no hand
    in play the dealer does not draw.
    """
    sc, _ = _all_blackjack_bonus(bonus=bonus, third=third)
    assert audit(sc.events) == []


def test_2_25_d_bonus_third_card_not_drawn() -> None:
    """N.J.A.C. 13:69F-2.25(d)

    > If the dealer's first two cards have a point total of less than 17 and any player
    > has placed an optional bonus wager under this section, the dealer shall be required
    > to draw a third card regardless of whether all players have been dealt blackjack.

    The dealer stops on 16 and settles the bonus: that settlement shows it.
    """
    sc, stop = _all_blackjack_bonus(bonus=True, third=None)
    v = only(audit(sc.events), "BONUS_THIRD_CARD_NOT_DRAWN")
    expect(v, code="BONUS_THIRD_CARD_NOT_DRAWN", severity="MEDIUM", citation=f"{B}(d)",
           event=stop, seat=None, hand=None, pack=PACK)
    assert "16" in v.message


def test_2_25_d_bonus_third_card_not_drawn_with_a_hand_in_play_is_one_violation() -> None:
    """N.J.A.C. 13:69F-2.25(d)

    > the dealer shall be required to draw a third card

    The injection of docs/procedure.md: a bonus stands, the dealer's two cards make 16,
    the dealer stops. Seat 1 stood on 18; the bonus is collected, then the hand paid.
    One fault, one code (dealing.dealer_stood's docstring: "With a bonus wager open and
    two cards under 17, BONUS_THIRD_CARD_NOT_DRAWN speaks").
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.deal({1: ("10", "8")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    stop = sc.collect(1, "BONUS", 500)
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    v = only(audit(sc.events), "BONUS_THIRD_CARD_NOT_DRAWN")
    expect(v, code="BONUS_THIRD_CARD_NOT_DRAWN", severity="MEDIUM", citation=f"{B}(d)",
           event=stop, seat=None, hand=None, pack=PACK)


def _bonus_settlement(*, hole: str, third: str | None, bonus_moves: list[tuple[str, int, int]],
                      up: str = "10", pay_tables: tuple[PayTable, ...] | None = None,
                      suits: str = "CCC") -> tuple[TableScript, dict[int, Event]]:
    """Seats 1 and 3 stand on 20 with bonus wagers of 500 (seat 1) and 200 (seat 3)
    against the dealer's `up`, `hole` and `third` card; `bonus_moves` are the bonus
    settlements as (verb, seat, amount), then the hands settle against the dealer."""
    sc = table(pay_tables=pay_tables)
    sc.start(1, [1, 3])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.wager(3, "MAIN", 2000)
    sc.wager(3, "BONUS", 200)
    sc.card(1, "10", "H")
    sc.card(3, "K", "H")
    sc.dealer(up, suits[0])
    sc.card(1, "Q", "H")
    sc.card(3, "J", "H")
    sc.dealer(hole, suits[1], face_up=False)
    if up == "10":
        sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.decide(3, "STAND")
    sc.reveal()
    if third is not None:
        sc.dealer(third, suits[2])
    evs: dict[int, Event] = {}
    for verb, seat, amount in bonus_moves:
        move = {"pay": sc.pay, "collect": sc.collect, "return": sc.give_back}[verb]
        evs[seat] = move(seat, "BONUS", amount)
    dealer = hand_total([up, hole] + ([third] if third else []))[0]
    for seat in (3, 1):
        if dealer > 21 or dealer < 20:
            sc.pay(seat, "MAIN", 2000)
        elif dealer == 20:
            sc.give_back(seat, "MAIN", 2000)
        else:
            sc.collect(seat, "MAIN", 2000)
        sc.clear(seat)
    sc.finish_round()
    return sc, evs


@pytest.mark.parametrize("third, odds", [("K", 3), ("10", 3), ("9", 5), ("8", 7), ("7", 9),
                                         ("6", 15)])
def test_2_25_e_bonus_pay_table(third: str, odds: int) -> None:
    """N.J.A.C. 13:69F-2.25(e)

    > the dealer shall collect all losing optional bonus wagers and pay all winning
    > optional bonus wagers based upon the value of the third card drawn by the dealer as
    > set forth in the following pay table:

    Dealer 10 + 6 and the third card: 10 pays 3 to 1, nine 5 to 1, eight 7 to 1, seven
    9 to 1, six 15 to 1. Paid right: nothing; one chip short: BONUS_SETTLEMENT_WRONG.
    """
    sc, _ = _bonus_settlement(hole="6", third=third,
                              bonus_moves=[("pay", 3, 200 * odds), ("pay", 1, 500 * odds)])
    assert audit(sc.events) == []
    sc, evs = _bonus_settlement(hole="6", third=third,
                                bonus_moves=[("pay", 3, 200 * odds),
                                             ("pay", 1, 500 * odds - 100)])
    v = only(audit(sc.events), "BONUS_SETTLEMENT_WRONG")
    expect(v, code="BONUS_SETTLEMENT_WRONG", severity="CRITICAL", citation=BONUS_ODDS_CITATION,
           event=evs[1], seat=1, hand=0, pack=PACK)
    assert f"expected paid {dollars(500 * odds)}" in v.message


@pytest.mark.parametrize("hole, third, right, wrong", [
    ("7", None, "collect", "pay"),  # two cards of 17: loses
    ("6", "5", "collect", "pay"),  # three cards of 21: loses
    ("6", "Q", "pay", "collect"),  # 26: wins
])
def test_2_25_d_bonus_wins_or_loses(hole: str, third: str | None, right: str,
                                    wrong: str) -> None:
    """N.J.A.C. 13:69F-2.25(d)

    > The optional bonus wager of a player shall lose if the dealer's first two cards have
    > a point count of 17 or higher or, if the dealer is required to draw a third card, the
    > dealer's first three cards have a point count of 21 or less. The optional bonus
    > wager of a player shall win if the dealer is required to draw a third card and the
    > third card results in the dealer's hand having a point total of greater than 21.
    """
    amount = {"pay": (600, 1500), "collect": (200, 500)}
    sc, _ = _bonus_settlement(hole=hole, third=third, bonus_moves=[
        (right, 3, amount[right][0]), (right, 1, amount[right][1])])
    assert audit(sc.events) == []
    sc, evs = _bonus_settlement(hole=hole, third=third, bonus_moves=[
        (right, 3, amount[right][0]), (wrong, 1, amount[wrong][1])])
    v = only(audit(sc.events), "BONUS_SETTLEMENT_WRONG")
    expect(v, code="BONUS_SETTLEMENT_WRONG", severity="CRITICAL", citation=BONUS_ODDS_CITATION,
           event=evs[1], seat=1, hand=0, pack=PACK)


EIGHTS = (PayTable("BONUS", (PayEntry("THREE_EIGHTS_SUITED", 50, 1),
                             PayEntry("THREE_EIGHTS_COLOR", 25, 1))),)


@pytest.mark.parametrize("pay_tables, suits, odds", [
    (EIGHTS, "SSS", 50),  # suited: the posted suited odds
    (EIGHTS, "HDH", 25),  # same colour: the posted colour odds
    (EIGHTS, "SHS", 7),  # mixed colours: an eight of (e)'s table
    (None, "SSS", 7),  # nothing posted: (f)'s table is missing, (e)'s 7 to 1
])
def test_2_25_f_three_eights(pay_tables: tuple[PayTable, ...] | None, suits: str,
                             odds: int) -> None:
    """N.J.A.C. 13:69F-2.25(d)–(f)

    > Notwithstanding (e) above, if the dealer is required to draw three cards during a
    > round of play and all three cards have a value of eight and are of the same color or
    > suit, a casino licensee shall pay each player who has placed an optional bonus wager
    > as follows:

    The pay table after "as follows:" is missing from the text: it is the table's posted
    configuration (a `pay_tables` entry named BONUS), else (e)'s odds for an eight.
    """
    moves = [("pay", 3, 200 * odds), ("pay", 1, 500 * odds)]
    sc, _ = _bonus_settlement(up="8", hole="8", third="8", bonus_moves=moves,
                              pay_tables=pay_tables, suits=suits)
    assert audit(sc.events) == []
    wrong = 7 if odds != 7 else 50
    sc, evs = _bonus_settlement(up="8", hole="8", third="8", pay_tables=pay_tables, suits=suits,
                                bonus_moves=[("pay", 3, 200 * odds), ("pay", 1, 500 * wrong)])
    v = only(audit(sc.events), "BONUS_SETTLEMENT_WRONG")
    expect(v, code="BONUS_SETTLEMENT_WRONG", severity="CRITICAL", citation=BONUS_ODDS_CITATION,
           event=evs[1], seat=1, hand=0, pack=PACK)


def test_2_25_e_bonus_settled_before_the_dealer_decided_it() -> None:
    """N.J.A.C. 13:69F-2.25(e)

    > Immediately after the dealer either determines his or her first two cards have a
    > point count of 17 or higher or deals a third card to his or her hand, the dealer
    > shall, before any other wagers are settled, settle all optional bonus wagers.

    A bonus collected right after the deal, before the dealer's cards are known, is
    settled wrongly (its odds code, (d)–(f)).
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.deal({1: ("10", "Q")}, up="10", hole="7")
    sc.insert_hole(False)
    bad = sc.collect(1, "BONUS", 500)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    v = only(audit(sc.events), "BONUS_SETTLEMENT_WRONG")
    expect(v, code="BONUS_SETTLEMENT_WRONG", severity="CRITICAL", citation=BONUS_ODDS_CITATION,
           event=bad, seat=1, hand=0, pack=PACK)
    assert "before the dealer's cards decided it" in v.message


def test_2_25_e_bonus_settles_from_the_highest_seat_down() -> None:
    """N.J.A.C. 13:69F-2.25(e)

    > Starting with the player farthest to the dealer's right who has placed an optional
    > bonus wager and proceeding around the table in a counterclockwise direction, the
    > dealer shall collect all losing optional bonus wagers and pay all winning optional
    > bonus wagers

    The player farthest to the dealer's right is the highest seat (docs/procedure.md):
    seat 3, then seat 1, passes; seat 1 first is out of order.
    """
    sc, _ = _bonus_settlement(hole="7", third=None,
                              bonus_moves=[("collect", 3, 200), ("collect", 1, 500)])
    assert audit(sc.events) == []
    sc, evs = _bonus_settlement(hole="7", third=None,
                                bonus_moves=[("collect", 1, 500), ("collect", 3, 200)])
    v = only(audit(sc.events), "BONUS_SETTLEMENT_ORDER")
    expect(v, code="BONUS_SETTLEMENT_ORDER", severity="MEDIUM", citation=f"{B}(e)",
           event=evs[1], seat=1, hand=0, pack=PACK)
    assert "seat 3" in v.message


def test_2_25_e_bonus_settles_before_any_other_wager() -> None:
    """N.J.A.C. 13:69F-2.25(e)

    > the dealer shall, before any other wagers are settled, settle all optional bonus
    > wagers.

    Seat 3's blackjack wager paid while both bonus wagers are still open.
    """
    sc = table()
    sc.start(1, [1, 3])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.wager(3, "MAIN", 2000)
    sc.wager(3, "BONUS", 200)
    sc.deal({1: ("10", "Q"), 3: ("K", "J")}, up="10", hole="7")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.decide(3, "STAND")
    sc.reveal()
    bad = sc.pay(3, "MAIN", 2000)
    sc.collect(3, "BONUS", 200)
    sc.collect(1, "BONUS", 500)
    sc.clear(3)
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    v = only(audit(sc.events), "BONUS_SETTLEMENT_ORDER")
    expect(v, code="BONUS_SETTLEMENT_ORDER", severity="MEDIUM", citation=f"{B}(e)",
           event=bad, seat=3, hand=0, pack=PACK)


@pytest.mark.parametrize("bonus_first", [True, False])
def test_2_25_e_a_waiting_surrender_settles_after_the_due_bonus(bonus_first: bool) -> None:
    """N.J.A.C. 13:69F-2.25(e)

    > the dealer shall, before any other wagers are settled, settle all optional bonus
    > wagers.

    A surrender waiting on a 10 up card settles right after the reveal, but after the
    bonus wagers once those are due (docs/procedure.md step 10).
    """
    sc = table()
    sc.start(1, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("10", "6"), 2: ("10", "9")}, up="10", hole="7")
    sc.insert_hole(False)
    sc.decide(1, "SURRENDER")
    sc.decide(2, "STAND")
    sc.reveal()
    if bonus_first:
        sc.collect(1, "BONUS", 500)
    first = sc.collect(1, "MAIN", 1000)
    sc.give_back(1, "MAIN", 1000)
    sc.clear(1)
    if not bonus_first:
        sc.collect(1, "BONUS", 500)
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    vs = audit(sc.events)
    if bonus_first:
        assert vs == []
    else:
        expect(only(vs, "BONUS_SETTLEMENT_ORDER"), code="BONUS_SETTLEMENT_ORDER",
               severity="MEDIUM", citation=f"{B}(e)", event=first, seat=1, hand=0, pack=PACK)


def test_2_25_e_bonus_never_settled() -> None:
    """N.J.A.C. 13:69F-2.25(e)

    > the dealer shall collect all losing optional bonus wagers and pay all winning
    > optional bonus wagers

    A bonus left on the layout to the end, seen at RoundEnded (the only hand busted and
    was collected before the reveal, so no other settlement shows it earlier).
    """
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.deal({1: ("10", "6")}, up="10", hole="7")
    sc.insert_hole(False)
    sc.decide(1, "HIT")
    sc.card(1, "9", "C")  # 25: collected at once, before the reveal
    sc.collect(1, "MAIN", 2000)
    sc.clear(1)
    sc.reveal()
    sc.clear()
    end = sc.end()
    v = only(audit(sc.events), "BONUS_SETTLEMENT_WRONG")
    expect(v, code="BONUS_SETTLEMENT_WRONG", severity="CRITICAL", citation=f"{B}(e)",
           event=end, seat=1, hand=0, pack=PACK)
    assert "never settled" in v.message


# --- the dealer's play and the payouts (posted rules) ----------------------------------------


def _soft_17(*, h17: bool, draws: bool) -> tuple[TableScript, Event | None]:
    """Seat 1 stands on 18; the dealer shows 6 and holds an ace: soft 17."""
    sc = table(dealer_hits_soft_17=h17)
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="6", hole="A")
    sc.decide(1, "STAND")
    sc.reveal()
    if draws:
        first = sc.dealer("2", "C")  # soft 19
        sc.collect(1, "MAIN", 2000)
    else:
        first = sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return sc, first


@pytest.mark.parametrize("h17, draws, code", [
    (False, False, None),
    (False, True, "DEALER_DREW_WRONG"),
    (True, True, None),
    (True, False, "DEALER_DREW_WRONG"),
])
def test_dealer_soft_17_as_posted(h17: bool, draws: bool, code: str | None) -> None:
    """The posted soft-17 rule (not in the regulation files): a stand-on-all-17s table
    stands on A + 6 and a hits-soft-17 table draws. Drawing is seen on the card; standing
    on the first settlement of a hand still in play."""
    sc, first = _soft_17(h17=h17, draws=draws)
    vs = audit(sc.events)
    if code is None:
        assert vs == []
        return
    v = only(vs, code)
    expect(v, code=code, severity="MEDIUM", citation=SOFT17_CITATION, event=first,
           seat=None, hand=None, pack=PACK)
    assert "soft 17" in v.message


def test_dealer_stands_on_16_with_a_hand_in_play() -> None:
    """Posted rules: the dealer draws to 16 whenever a hand is still in play."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="10", hole="6")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    bad = sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    v = only(audit(sc.events), "DEALER_DREW_WRONG")
    expect(v, code="DEALER_DREW_WRONG", severity="MEDIUM", citation=SOFT17_CITATION,
           event=bad, seat=None, hand=None, pack=PACK)


@pytest.mark.parametrize("pays, paid, ok", [
    (Ratio(3, 2), 3000, True),
    (Ratio(3, 2), 2000, False),
    (Ratio(6, 5), 2400, True),
    (Ratio(6, 5), 3000, False),
])
def test_blackjack_paid_at_the_posted_ratio(pays: Ratio, paid: int, ok: bool) -> None:
    """Posted payout odds (not in the regulation files): a blackjack pays the ratio the
    table posts, 3 to 2 or 6 to 5."""
    sc = table(blackjack_pays=pays, surrender=pays == Ratio(3, 2))
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "K")}, up="9", hole="9")
    sc.reveal()
    pay = sc.pay(1, "MAIN", paid)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    v = only(vs, "PAYOUT_WRONG")
    expect(v, code="PAYOUT_WRONG", severity="CRITICAL", citation=PAYOUT_CITATION, event=pay,
           seat=1, hand=0, pack=PACK)


@pytest.mark.parametrize("move, ok", [("return", True), ("collect", False), ("pay", False)])
def test_a_push_is_returned(move: str, ok: bool) -> None:
    """Posted payout odds: equal totals push, and the stake is handed back."""
    sc = table()
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "9")}, up="9", hole="K")
    sc.decide(1, "STAND")
    sc.reveal()
    ev = {"return": sc.give_back, "collect": sc.collect, "pay": sc.pay}[move](1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    vs = audit(sc.events)
    if ok:
        assert vs == []
        return
    expect(only(vs, "PAYOUT_WRONG"), code="PAYOUT_WRONG", severity="CRITICAL",
           citation=PAYOUT_CITATION, event=ev, seat=1, hand=0, pack=PACK)


def test_quotes_are_verbatim_and_every_cited_paragraph_is_tested() -> None:
    check_quotes_and_coverage(sys.modules[__name__], nj_blackjack.PACK)
