"""Hand-built rounds for the classes of issue 7 (rules an auditor can defend), on both
sides of each rule. tests/data/make_rounds.py deals them into rounds.jsonl, and
tests/unit/test_packs_review.py plays each alone, so the two cannot drift apart.

A round is a function of a `TableScript` whose `round_id` is already set (its label
names the codes it must raise, as in make_rounds.py); it starts the round, plays it and
returns what it must raise: (code, evidence event, seat, hand).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pitwatch.blackjack import Ratio
from pitwatch.events.model import Event, Rules
from tests.rounds import TableScript

#: (code, evidence event, seat, hand) of one expected violation
Expected = tuple[str, Event, int | None, int | None]
Play = Callable[[TableScript], list[Expected]]


def start(sc: TableScript, seats: list[int]) -> Event:
    """RoundStarted under the label the caller set in `sc.round_id`."""
    assert sc.round_id is not None
    return sc.start(sc.round_id[len(sc.table_id) + 1:], seats)


def _hands(sc: TableScript) -> list[int]:
    return [0, 1] if sc.game == "BLACKJACK_SWITCH" else [0]


def _reader(sc: TableScript) -> bool:
    return sc.rules.hole_card == "READER"


# --- class 1: false alarms on legal play (New Jersey blackjack) -----------------------------


def blackjack_in_turn(sc: TableScript, *, paid: int = 3000, bonus: bool = False,
                      paid_after_reveal: bool = False, right: int = 3000) -> list[Expected]:
    """Seat 1 has A K, seat 2 stands on 10 9; the dealer shows 10 and holds 6. The reader
    rules a dealer blackjack out, so the blackjack is decided and paid 3 to 2 in turn
    (before the reveal, or right after it; `right`: what is right where a table posts
    other odds). With a bonus wager the dealer draws the third card (a 9: 25, the bonus
    wins 5 to 1) right after."""
    start(sc, [1, 2])
    sc.wager(1, "MAIN", 2000)
    if bonus:
        sc.wager(1, "BONUS", 500)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("A", "K"), 2: ("10", "9")}, up="10", hole="6")
    sc.insert_hole(False)
    out: list[Expected] = []

    def pay_blackjack() -> None:
        ev = sc.pay(1, "MAIN", paid)
        sc.clear(1)
        if paid != right:
            out.append(("PAYOUT_WRONG", ev, 1, 0))

    if not paid_after_reveal:
        pay_blackjack()
    sc.decide(2, "STAND")
    sc.reveal()
    if paid_after_reveal:
        pay_blackjack()
    sc.dealer("9", "C")  # 25
    if bonus:
        sc.pay(1, "BONUS", 2500)
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return out


def stacks(sc: TableScript) -> list[Expected]:
    """A main wager of 1,000 and a bonus wager of 120, each placed in two stacks (500 +
    500, 60 + 60): one wager each, their sums judged and settled (the bonus wins 3 to 1
    on a third card 10)."""
    start(sc, [1])
    sc.wager(1, "MAIN", 500)
    sc.wager(1, "MAIN", 500)
    sc.wager(1, "BONUS", 60)
    sc.wager(1, "BONUS", 60)
    sc.deal({1: ("10", "9")}, up="9", hole="7")
    sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("10", "C")  # 26
    sc.pay(1, "BONUS", 360)
    sc.pay(1, "MAIN", 1000)
    sc.clear(1)
    sc.finish_round()
    return []


# --- class 2 and 3 at a New Jersey blackjack table: insurance as posted ----------------------


def nj_insurance(sc: TableScript, *, fault: str = "", hole: str = "7") -> list[Expected]:
    """Seat 1 (10 8) insures 1,000 of 2,000 against an ace; seat 2 (9 9) does not. The
    dealer holds `hole` (a 10-value card: blackjack)."""
    start(sc, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    out: list[Expected] = []
    bj = hole in ("10", "J", "Q", "K")
    sc.card(1, "10", "S")
    sc.card(2, "9", "H")
    sc.dealer("A", "D")
    amount = 2000 if fault == "over" else 1000
    void = fault in ("over", "early", "late")
    if fault == "early":
        out.append(("INSURANCE_TOO_EARLY", sc.wager(1, "INSURANCE", amount), 1, 0))
    sc.card(1, "8", "C")
    sc.card(2, "9", "S")
    sc.dealer(hole, "H", face_up=False)
    sc.offer_insurance()
    if fault == "over":
        out.append(("INSURANCE_OVER_LIMIT", sc.wager(1, "INSURANCE", amount), 1, 0))
    elif fault not in ("early", "late"):
        sc.wager(1, "INSURANCE", amount)
    if fault == "paid before collection":
        sc.wager(2, "INSURANCE", 1000)
    sc.insert_hole(bj)
    if fault == "late":
        out.append(("INSURANCE_TOO_LATE", sc.wager(1, "INSURANCE", amount), 1, 0))
    if bj:
        sc.reveal()
        if fault == "over":  # 2,000 of void insurance paid 3 to 1
            out.append(("VOID_WAGER_SETTLED", sc.pay(1, "INSURANCE", 6000), 1, 0))
        elif fault == "odds":
            out.append(("INSURANCE_SETTLEMENT_WRONG", sc.pay(1, "INSURANCE", 3000), 1, 0))
        else:
            sc.pay(1, "INSURANCE", 2000)
        sc.collect(2, "MAIN", 2000)
        sc.clear(2)
        sc.collect(1, "MAIN", 2000)
        sc.clear(1)
        sc.finish_round()
        return out
    if fault == "paid before collection":
        ev = sc.pay(2, "INSURANCE", 2000)
        out.append(("INSURANCE_PAID_BEFORE_COLLECTION", ev, 2, 0))
        out.append(("INSURANCE_SETTLEMENT_WRONG", ev, 2, 0))
    if fault != "collection late" and not void:
        sc.collect(1, "INSURANCE", amount)
    if void:
        sc.give_back(1, "INSURANCE", amount)
    stand = sc.decide(1, "STAND")
    if fault == "collection late":  # left up while the players act
        out.append(("INSURANCE_COLLECTION_LATE", stand, 1, 0))
        sc.collect(1, "INSURANCE", amount)
    sc.decide(2, "STAND")
    sc.reveal()  # A 7: soft 18, the dealer stands
    sc.give_back(2, "MAIN", 2000)
    sc.clear(2)
    sc.give_back(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return out


def insurance_against_a_ten(sc: TableScript) -> list[Expected]:
    """Insurance against a 10 up card: void, and handed back."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="10", hole="7")
    bad = sc.wager(1, "INSURANCE", 1000)
    sc.insert_hole(False)
    sc.give_back(1, "INSURANCE", 1000)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return [("INSURANCE_NOT_AVAILABLE", bad, 1, 0)]


def even_money_not_offered(sc: TableScript) -> list[Expected]:
    """A 16 "takes even money" against an ace at a table that does not offer it, and the
    dealer pays it at once: the decision is void, the money is judged as the hand's
    (before its outcome is known)."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "6")}, up="A", hole="9")
    sc.offer_insurance()
    bad = sc.decide(1, "EVEN_MONEY")
    pay = sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.insert_hole(False)
    sc.reveal()  # A 9: 20
    sc.finish_round()
    return [("EVEN_MONEY_NOT_AVAILABLE", bad, 1, 0), ("PAYOUT_WRONG", pay, 1, 0)]


def even_money_paid(sc: TableScript, *, paid: int) -> list[Expected]:
    """Even money (where posted) on a blackjack against an ace, paid `paid`."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "K")}, up="A", hole="9")
    sc.offer_insurance()
    sc.decide(1, "EVEN_MONEY")
    pay = sc.pay(1, "MAIN", paid)
    sc.clear(1)
    sc.insert_hole(False)
    sc.reveal()
    sc.finish_round()
    return [] if paid == 2000 else [("EVEN_MONEY_SETTLEMENT_WRONG", pay, 1, 0)]


# --- class 3: the timing words, New Jersey blackjack ----------------------------------------


def split_hand_surrendered(sc: TableScript) -> list[Expected]:
    """Eights split against a 9; the second hand (8 6) "surrenders": void (its two cards
    are not the player's first two); it stands and wins."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("8", "8")}, up="9", hole="7")
    sc.decide(1, "SPLIT")
    sc.wager(1, "SPLIT", 2000, 1)
    sc.card(1, "10", "H", 0)  # 18
    sc.decide(1, "STAND", 0)
    sc.card(1, "6", "D", 1)  # 14
    bad = sc.decide(1, "SURRENDER", 1)
    sc.decide(1, "STAND", 1)
    sc.reveal()
    sc.dealer("10", "C")  # 26
    sc.pay(1, "MAIN", 2000, 0)
    sc.clear(1, 0)
    sc.pay(1, "SPLIT", 2000, 1)
    sc.clear(1, 1)
    sc.finish_round()
    return [("SURRENDER_TOO_LATE", bad, 1, 1)]


def surrender_after_reveal(sc: TableScript) -> list[Expected]:
    """Seat 1 (10 6) "surrenders" once the dealer's 10 7 is turned over: void; the half
    and half that follows is a 16 losing to 17 paid wrong."""
    start(sc, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("10", "6"), 2: ("10", "8")}, up="10", hole="7")
    sc.insert_hole(False)
    sc.decide(2, "STAND")
    sc.reveal()
    bad = sc.decide(1, "SURRENDER")
    wrong = sc.collect(1, "MAIN", 1000)
    sc.give_back(1, "MAIN", 1000)
    sc.clear(1)
    sc.pay(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return [("SURRENDER_TOO_LATE", bad, 1, 0), ("PAYOUT_WRONG", wrong, 1, 0)]


def surrender_against_ten(sc: TableScript, *, at_once: bool) -> list[Expected]:
    """Seat 1 (10 6) surrenders against a 10; the dealer's 10 5 draws a 5. 2.8(a)2: the
    surrender settles immediately when the second card is revealed, before the draw."""
    start(sc, [1, 2])
    sc.wager(1, "MAIN", 2000)
    sc.wager(2, "MAIN", 2000)
    sc.deal({1: ("10", "6"), 2: ("10", "8")}, up="10", hole="5")
    sc.insert_hole(False)
    sc.decide(1, "SURRENDER")
    sc.decide(2, "STAND")
    sc.reveal()

    def settle() -> None:
        sc.collect(1, "MAIN", 1000)
        sc.give_back(1, "MAIN", 1000)
        sc.clear(1)

    if at_once:
        settle()
    draw = sc.dealer("5", "C")  # 20
    if not at_once:
        settle()
    sc.collect(2, "MAIN", 2000)
    sc.clear(2)
    sc.finish_round()
    return [] if at_once else [("SURRENDER_SETTLEMENT_WRONG", draw, 1, 0)]


def bonus_after_third_card(sc: TableScript, *, at_once: bool) -> list[Expected]:
    """The dealer's 10 2 takes a third card (3: 15, the bonus loses) and then a fourth
    (K: 25). 2.25(e): the bonus wager settles immediately after the third card."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "BONUS", 500)
    sc.deal({1: ("10", "8")}, up="10", hole="2")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("3", "C")
    if at_once:
        sc.collect(1, "BONUS", 500)
    fourth = sc.dealer("K", "D")
    if not at_once:
        sc.collect(1, "BONUS", 500)
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return [] if at_once else [("BONUS_SETTLEMENT_ORDER", fourth, 1, 0)]


def void_bonus_kept(sc: TableScript) -> list[Expected]:
    """A bonus wager after the first card: void; the dealer never hands it back."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.card(1, "10", "S")
    bad = sc.wager(1, "BONUS", 500)
    sc.dealer("9", "D")
    sc.card(1, "9", "H")
    sc.dealer("8", "C", face_up=False)
    sc.decide(1, "STAND")
    sc.reveal()  # 17
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.clear()
    end = sc.end()
    return [("BONUS_WAGER_TOO_LATE", bad, 1, 0), ("VOID_WAGER_SETTLED", end, 1, 0)]


# --- any table: a seat playing one hand (two at Switch) ---------------------------------------


def one_seat(sc: TableScript, *, after_deal: Callable[[], object] | None = None,
             before_pay: Callable[[], object] | None = None, up: str = "9",
             hole: str = "7", draw: str = "10") -> None:
    """Seat 1 stands on 10 9 (each hand at Switch) against `up` + `hole` (16 by
    default); the dealer draws `draw` and busts; every hand is paid 2,000."""
    hands = _hands(sc)
    start(sc, [1])
    for hand in hands:
        sc.wager(1, "MAIN", 2000, hand)
    sc.deal({(1, hand): ("10", "9") for hand in hands}, up=up,
            hole=hole if sc.rules.hole_card != "NONE" else None)
    if _reader(sc) and up in ("A", "10", "J", "Q", "K"):
        sc.insert_hole(False)
    if after_deal is not None:
        after_deal()
    if sc.game == "BLACKJACK_SWITCH":
        sc.offer_switch(1)
    for hand in hands:
        sc.decide(1, "STAND", hand)
    if sc.rules.hole_card == "NONE":
        sc.dealer(hole, "C")
    else:
        sc.reveal()
    sc.dealer(draw, "C")
    if before_pay is not None:
        before_pay()
    for hand in hands:
        sc.pay(1, "MAIN", 2000, hand)
        sc.clear(1, hand)
    sc.finish_round()


def void_insurance_collected(sc: TableScript) -> list[Expected]:
    """Insurance against a 9: void (INSURANCE_NOT_AVAILABLE); the dealer then collects
    it instead of handing it back: VOID_WAGER_SETTLED, naming the voiding violation."""
    out: list[Expected] = []
    one_seat(sc, after_deal=lambda: out.append(
        ("INSURANCE_NOT_AVAILABLE", sc.wager(1, "INSURANCE", 1000), 1, 0)),
        before_pay=lambda: out.append(
            ("VOID_WAGER_SETTLED", sc.collect(1, "INSURANCE", 1000), 1, 0)))
    return out


def surrender_not_offered(sc: TableScript) -> list[Expected]:
    """Seat 1 (10 6) surrenders against a 9 at a table that does not offer surrender and
    the dealer honours it (half collected, half returned): the decision is void, and the
    money is judged as the hand's, which was not decided yet."""
    hands = _hands(sc)
    start(sc, [1])
    for hand in hands:
        sc.wager(1, "MAIN", 2000, hand)
    sc.deal({(1, hand): ("10", "6") for hand in hands}, up="9",
            hole="K" if sc.rules.hole_card != "NONE" else None)
    if sc.game == "BLACKJACK_SWITCH":
        sc.offer_switch(1)
    bad = sc.decide(1, "SURRENDER")
    wrong = sc.collect(1, "MAIN", 1000)
    sc.give_back(1, "MAIN", 1000)
    sc.clear(1)
    for hand in hands[1:]:
        sc.decide(1, "STAND", hand)
    if sc.rules.hole_card == "NONE":
        sc.dealer("K", "C")
    else:
        sc.reveal()  # 19
    for hand in hands[1:]:
        sc.collect(1, "MAIN", 2000, hand)
        sc.clear(1, hand)
    sc.finish_round()
    return [("SURRENDER_NOT_AVAILABLE", bad, 1, 0), ("PAYOUT_WRONG", wrong, 1, 0)]


def posted_surrender(sc: TableScript, *, fault: str) -> list[Expected]:
    """At a table that posts surrender, seat 1 (10 6) against a 9 (the dealer's 9 K):
    "early" surrenders on one card, "late" after a hit, "whole" is surrendered and
    settled by collecting the whole wager."""
    hands = _hands(sc)
    start(sc, [1])
    for hand in hands:
        sc.wager(1, "MAIN", 2000, hand)
    out: list[Expected] = []
    none = sc.rules.hole_card == "NONE"
    for hand in hands:
        sc.card(1, "10", "S", hand)
    if fault == "early":
        out.append(("SURRENDER_TOO_EARLY", sc.decide(1, "SURRENDER"), 1, 0))
    sc.dealer("9", "D")
    for hand in hands:
        sc.card(1, "6", "H", hand)
    if not none:
        sc.dealer("K", "C", face_up=False)
    if sc.game == "BLACKJACK_SWITCH":
        sc.offer_switch(1)
    if fault == "late":
        sc.decide(1, "HIT")
        sc.card(1, "2", "D")  # 18
        out.append(("SURRENDER_TOO_LATE", sc.decide(1, "SURRENDER"), 1, 0))
    if fault == "whole":
        sc.decide(1, "SURRENDER")
        out.append(("SURRENDER_SETTLEMENT_WRONG", sc.collect(1, "MAIN", 2000), 1, 0))
        sc.clear(1)
    for hand in hands[(1 if fault == "whole" else 0):]:
        sc.decide(1, "STAND", hand)
    if none:
        sc.dealer("K", "C")
    else:
        sc.reveal()  # 19
    for hand in hands[(1 if fault == "whole" else 0):]:
        sc.collect(1, "MAIN", 2000, hand)  # 16 (or 18) loses to 19
        sc.clear(1, hand)
    sc.finish_round()
    return out


# --- class 2 and 3 at the other tables ------------------------------------------------------


def match_paid(sc: TableScript, *, paid: int) -> list[Expected]:
    """Blackjack Switch: a match wager of 500 on 10 9 / 10 9 (one pair of tens and one
    of nines: two pair, 8 to 1 by the public summary) paid `paid`."""
    out: list[Expected] = []

    def settle_match() -> None:
        ev = sc.pay(1, "MATCH", paid)
        if paid != 4000:
            out.append(("SIDE_WAGER_SETTLEMENT_WRONG", ev, 1, 0))

    hands = _hands(sc)
    start(sc, [1])
    for hand in hands:
        sc.wager(1, "MAIN", 2000, hand)
    sc.wager(1, "MATCH", 500)
    sc.deal({(1, hand): ("10", "9") for hand in hands}, up="9", hole="7")
    settle_match()
    sc.offer_switch(1)
    for hand in hands:
        sc.decide(1, "STAND", hand)
    sc.reveal()
    sc.dealer("10", "C")
    for hand in hands:
        sc.pay(1, "MAIN", 2000, hand)
        sc.clear(1, hand)
    sc.finish_round()
    return out


def push22_settled(sc: TableScript, *, paid: int) -> list[Expected]:
    """Free Bet: a Push 22 wager of 500; the dealer makes 20 (10 K): it loses, and is
    collected; paid instead, the money is judged (SIDE_WAGER_SETTLEMENT_WRONG)."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.wager(1, "PUSH22", 500)
    sc.deal({1: ("10", "9")}, up="10", hole="K")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    out: list[Expected] = []
    if paid:
        out.append(("SIDE_WAGER_SETTLEMENT_WRONG", sc.pay(1, "PUSH22", paid), 1, 0))
    else:
        sc.collect(1, "PUSH22", 500)
    sc.collect(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return out


def insurance_settled_before_reader(sc: TableScript) -> list[Expected]:
    """Insurance collected as soon as it is placed, before the hole card went into the
    reader: it is not yet decided (INSURANCE_SETTLEMENT_WRONG)."""
    hands = _hands(sc)
    start(sc, [1])
    for hand in hands:
        sc.wager(1, "MAIN", 2000, hand)
    sc.deal({(1, hand): ("10", "9") for hand in hands}, up="A", hole="8")
    sc.offer_insurance()
    sc.wager(1, "INSURANCE", 1000)
    bad = sc.collect(1, "INSURANCE", 1000)
    sc.insert_hole(False)
    if sc.game == "BLACKJACK_SWITCH":
        sc.offer_switch(1)
    for hand in hands:
        sc.decide(1, "STAND", hand)
    sc.reveal()  # A 8: 19 (soft 19: H17 stands too)
    for hand in hands:
        sc.give_back(1, "MAIN", 2000, hand)
        sc.clear(1, hand)
    sc.finish_round()
    return [("INSURANCE_SETTLEMENT_WRONG", bad, 1, 0)]


def pa_insurance_left_up(sc: TableScript, *, at_once: bool) -> list[Expected]:
    """Free Bet, 672a.8(d): losing insurance collected immediately after the reader
    answers, or left up while seat 1 acts (collected before the reveal, the dealer's
    A 7 standing: no draw)."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "9")}, up="A", hole="7")
    sc.offer_insurance()
    sc.wager(1, "INSURANCE", 1000)
    sc.insert_hole(False)
    if at_once:
        sc.collect(1, "INSURANCE", 1000)
    stand = sc.decide(1, "STAND")
    if not at_once:
        sc.collect(1, "INSURANCE", 1000)
    sc.reveal()  # 18
    sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return [] if at_once else [("INSURANCE_COLLECTION_LATE", stand, 1, 0)]


def pa_even_money_too_late(sc: TableScript, *, when: str) -> list[Expected]:
    """Free Bet, 672a.8(e): even money "instead of making an Insurance Wager": asked for
    after the reader answered, or on a hand already insured, it is void and the money
    paid for it is judged as the blackjack's."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "K")}, up="A", hole="9")
    sc.offer_insurance()
    if when == "insured":
        sc.wager(1, "INSURANCE", 1000)
    else:
        sc.insert_hole(False)
    bad = sc.decide(1, "EVEN_MONEY")
    pay = sc.pay(1, "MAIN", 2000)
    sc.clear(1)
    if when == "insured":
        sc.insert_hole(False)
        sc.collect(1, "INSURANCE", 1000)
    sc.reveal()
    sc.finish_round()
    return [("EVEN_MONEY_NOT_AVAILABLE", bad, 1, 0), ("PAYOUT_WRONG", pay, 1, 0)]


def free_split_bust(sc: TableScript, *, marker_moved: bool) -> list[Expected]:
    """Free Bet: eights split free against a 9 (9 7, draws a 2: 18); the free hand busts.
    Its marker moves no money; a WagerCollected of it is money that is not money."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("8", "8")}, up="9", hole="7")
    sc.decide(1, "SPLIT")
    sc.wager(1, "FREE_SPLIT", 2000, 1)
    sc.card(1, "10", "H", 0)  # 18
    sc.decide(1, "STAND", 0)
    sc.card(1, "6", "D", 1)
    sc.decide(1, "HIT", 1)
    sc.card(1, "K", "C", 1)  # 24
    out: list[Expected] = []
    if marker_moved:
        out.append(("PAYOUT_WRONG", sc.collect(1, "FREE_SPLIT", 2000, 1), 1, 1))
    sc.clear(1, 1)
    sc.reveal()
    sc.dealer("2", "C")  # 18
    sc.give_back(1, "MAIN", 2000, 0)
    sc.clear(1, 0)
    sc.finish_round()
    return out


def nz_insurance_before_announcement(sc: TableScript, *, announced: bool) -> list[Expected]:
    """New Zealand, 9.2–9.3: the dealer completes the initial deal, "and then"
    announces insurance; players "may then" insure."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "8")}, up="A")
    if announced:
        sc.offer_insurance()
    ins = sc.wager(1, "INSURANCE", 1000)
    if not announced:
        sc.offer_insurance()
    sc.decide(1, "STAND")
    sc.dealer("7", "C")  # A 7: 18
    if announced:
        sc.collect(1, "INSURANCE", 1000)
    else:
        sc.give_back(1, "INSURANCE", 1000)
    sc.give_back(1, "MAIN", 2000)
    sc.clear(1)
    sc.finish_round()
    return [] if announced else [("INSURANCE_TOO_EARLY", ins, 1, 0)]


def nz_blackjack_at_once(sc: TableScript, *, paid: int = 3000) -> list[Expected]:
    """New Zealand, 8.1: a blackjack against a 6 paid at once (3 to 2 by the text,
    whatever the table posts)."""
    start(sc, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("A", "K")}, up="6")
    pay = sc.pay(1, "MAIN", paid)
    sc.clear(1)
    sc.dealer("10", "C")
    sc.dealer("5", "C")
    sc.finish_round()
    return [] if paid == 3000 else [("PAYOUT_WRONG", pay, 1, 0)]


def nz_insurance_posted_off(sc: TableScript) -> list[Expected]:
    """New Zealand, 9.1: each player may insure; at a table posting insurance off the
    player's insurance stands and is judged (collected: the dealer's A 7)."""
    return nz_insurance_before_announcement(sc, announced=True)


# --- the tables and their rounds ----------------------------------------------------------------

#: label -> round, for each table of make_rounds.py (label as make_rounds reads it)
NJ_BLACKJACK: dict[str, Play] = {
    "OK-blackjack-paid-in-turn": blackjack_in_turn,
    "OK-bonus-third-card-after-blackjack-paid-in-turn":
        lambda s: blackjack_in_turn(s, bonus=True),
    "OK-bonus-third-card-after-blackjack-paid-at-reveal":
        lambda s: blackjack_in_turn(s, bonus=True, paid_after_reveal=True),
    "PAYOUT_WRONG~blackjack-in-turn-paid-1-to-1": lambda s: blackjack_in_turn(s, paid=2000),
    "OK-wagers-in-two-stacks": stacks,
    "OK-insurance-loses": nj_insurance,
    "OK-insurance-wins": lambda s: nj_insurance(s, hole="K"),
    "INSURANCE_OVER_LIMIT+VOID_WAGER_SETTLED": lambda s: nj_insurance(s, fault="over",
                                                                       hole="K"),
    "INSURANCE_SETTLEMENT_WRONG": lambda s: nj_insurance(s, fault="odds", hole="Q"),
    "INSURANCE_TOO_EARLY": lambda s: nj_insurance(s, fault="early"),
    "INSURANCE_TOO_LATE": lambda s: nj_insurance(s, fault="late"),
    "INSURANCE_COLLECTION_LATE": lambda s: nj_insurance(s, fault="collection late"),
    "INSURANCE_PAID_BEFORE_COLLECTION+INSURANCE_SETTLEMENT_WRONG":
        lambda s: nj_insurance(s, fault="paid before collection"),
    "INSURANCE_NOT_AVAILABLE": insurance_against_a_ten,
    "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~not-offered": even_money_not_offered,
    "SURRENDER_TOO_LATE~split-hand": split_hand_surrendered,
    "PAYOUT_WRONG+SURRENDER_TOO_LATE~after-reveal": surrender_after_reveal,
    "OK-surrender-settled-before-the-draw": lambda s: surrender_against_ten(s, at_once=True),
    "SURRENDER_SETTLEMENT_WRONG~after-the-draw":
        lambda s: surrender_against_ten(s, at_once=False),
    "OK-bonus-settled-before-the-fourth-card":
        lambda s: bonus_after_third_card(s, at_once=True),
    "BONUS_SETTLEMENT_ORDER~left-up-on-the-fourth-card":
        lambda s: bonus_after_third_card(s, at_once=False),
    "BONUS_WAGER_TOO_LATE+VOID_WAGER_SETTLED~kept": void_bonus_kept,
}

NJ_SWITCH: dict[str, Play] = {
    "OK-match-two-pair": lambda s: match_paid(s, paid=4000),
    "SIDE_WAGER_SETTLEMENT_WRONG~match": lambda s: match_paid(s, paid=500),
    "PAYOUT_WRONG+SURRENDER_NOT_AVAILABLE~honoured": surrender_not_offered,
    "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~not-offered": even_money_not_offered,
    "INSURANCE_SETTLEMENT_WRONG~before-the-reader": insurance_settled_before_reader,
    "INSURANCE_NOT_AVAILABLE+VOID_WAGER_SETTLED": void_insurance_collected,
}

PA_FREE_BET: dict[str, Play] = {
    "OK-push22-loses": lambda s: push22_settled(s, paid=0),
    "SIDE_WAGER_SETTLEMENT_WRONG~push22": lambda s: push22_settled(s, paid=5500),
    "OK-insurance-collected-at-once": lambda s: pa_insurance_left_up(s, at_once=True),
    "INSURANCE_COLLECTION_LATE~while-the-player-acts":
        lambda s: pa_insurance_left_up(s, at_once=False),
    "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~after-the-reader":
        lambda s: pa_even_money_too_late(s, when="inserted"),
    "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~insured-hand":
        lambda s: pa_even_money_too_late(s, when="insured"),
    "INSURANCE_SETTLEMENT_WRONG~before-the-reader": insurance_settled_before_reader,
    "OK-free-split-busts-marker-moves-no-money":
        lambda s: free_split_bust(s, marker_moved=False),
    "PAYOUT_WRONG~free-marker-collected": lambda s: free_split_bust(s, marker_moved=True),
    "PAYOUT_WRONG+SURRENDER_NOT_AVAILABLE~honoured": surrender_not_offered,
    "INSURANCE_NOT_AVAILABLE+VOID_WAGER_SETTLED": void_insurance_collected,
}

NZ_BLACKJACK: dict[str, Play] = {
    "OK-insurance-after-the-announcement":
        lambda s: nz_insurance_before_announcement(s, announced=True),
    "INSURANCE_TOO_EARLY~before-the-announcement":
        lambda s: nz_insurance_before_announcement(s, announced=False),
    "PAYOUT_WRONG+SURRENDER_NOT_AVAILABLE~honoured": surrender_not_offered,
    "INSURANCE_NOT_AVAILABLE+VOID_WAGER_SETTLED": void_insurance_collected,
}

#: Rounds dealt at a table that posts surrender (Switch, Free Bet, New Zealand: an option
#: no text here grants, judged as posted).
POSTED_SURRENDER: dict[str, Play] = {
    "SURRENDER_TOO_EARLY~posted": lambda s: posted_surrender(s, fault="early"),
    "SURRENDER_TOO_LATE~posted": lambda s: posted_surrender(s, fault="late"),
    "SURRENDER_SETTLEMENT_WRONG~posted": lambda s: posted_surrender(s, fault="whole"),
}


#: Postings that contradict a text, per table kind: (rule changes, round label, round,
#: citation of the finding). The round is judged by the text.
POSTINGS: dict[str, list[tuple[dict[str, object], str, Play]]] = {
    "nj_blackjack": [({"blackjack_pays": Ratio(6, 5), "surrender": True},
                      "OK-6-to-5-posted-with-surrender",
                      lambda s: blackjack_in_turn(s, paid=2400, right=2400))],
    "nj_switch": [({"insurance_pays": Ratio(3, 1)}, "OK-insurance-judged-at-2-to-1",
                   lambda s: nj_insurance_switch_wins(s))],
    "pa_free_bet": [({"insurance": False}, "OK-insurance-stands-though-posted-off",
                     lambda s: pa_insurance_left_up(s, at_once=True))],
    "nz_blackjack": [({"blackjack_pays": Ratio(6, 5)}, "OK-blackjack-judged-at-3-to-2",
                      nz_blackjack_at_once),
                     ({"insurance": False, "even_money": False},
                      "OK-insurance-stands-though-posted-off", nz_insurance_posted_off)],
}


def nj_insurance_switch_wins(sc: TableScript) -> list[Expected]:
    """Blackjack Switch: 1,000 insured against an ace; the dealer has blackjack; the
    insurance is paid 2 to 1 (2A.8(d)), whatever the table posts."""
    hands = _hands(sc)
    start(sc, [1])
    for hand in hands:
        sc.wager(1, "MAIN", 2000, hand)
    sc.deal({(1, hand): ("10", "9") for hand in hands}, up="A", hole="K")
    sc.offer_insurance()
    sc.wager(1, "INSURANCE", 1000)
    sc.insert_hole(True)
    sc.reveal()
    sc.pay(1, "INSURANCE", 2000)
    for hand in hands:
        sc.collect(1, "MAIN", 2000, hand)
        sc.clear(1, hand)
    sc.finish_round()
    return []


def posted(rules: Rules, changes: dict[str, object]) -> Rules:
    return replace(rules, **changes)  # type: ignore[arg-type]
