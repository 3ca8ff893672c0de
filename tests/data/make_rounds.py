"""Write tests/data/rounds.jsonl and tests/data/expected.jsonl from hand-built rounds.

Run once from the repository root (`.venv/bin/python tests/data/make_rounds.py`); the
output is committed as test data, and this script is kept so that it can be rebuilt.

Five tables deal in turn, each round on a fresh shoe. A round's id says what it should
raise: `<TABLE>-OK-<what>` raises nothing; `<TABLE>-<CODE>[+<CODE>...][~<variant>]`
raises exactly those codes. expected.jsonl lists every expected violation with the
event that shows it: {"table_id", "round_id", "code", "event_id", "seat", "hand"}.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pitwatch.blackjack import dealer_must_draw, hand_total
from pitwatch.events.jsonl import dumps
from pitwatch.events.model import CardDealt, Event, PayoutMade, WagerPlaced
from tests.data import review_rounds
from tests.data.review_rounds import Expected, Play, start
from tests.rounds import TableScript

HERE = Path(__file__).resolve().parent
HIGH_CARDS = ("A", "10", "J", "Q", "K")


class Deal:
    """Writes the rounds of one table, labelling each by its expected codes."""

    def __init__(self, sc: TableScript) -> None:
        self.sc = sc
        self.expected: list[dict[str, object]] = []
        self.labels: set[str] = set()

    def round(self, label: str, play: Play, *, shoe: int | None = None) -> None:
        sc = self.sc
        sc.shoe(shoe)
        sc.round_id = sc.round_name(label)  # play() starts it under this label
        found = play(sc)
        codes = sorted({code for code, *_ in found})
        base = label.split("~")[0]
        assert base.startswith("OK-") if not codes else base == "+".join(codes), (label, codes)
        assert label not in self.labels, label
        self.labels.add(label)
        for code, ev, seat, hand in found:
            self.expected.append({"table_id": sc.table_id, "round_id": sc.round_name(label),
                                  "code": code, "event_id": ev.event_id, "seat": seat,
                                  "hand": hand})


def dealer_out(sc: TableScript, cards: list[str], draws: str = "K") -> int:
    """The dealer draws from `draws` while the posted rule says so; the final total."""
    it = iter(draws.split())
    while dealer_must_draw(cards, hits_soft_17=sc.rules.dealer_hits_soft_17):
        card = next(it)
        sc.dealer(card, "C")
        cards.append(card)
    return hand_total(cards)[0]


def first_pay(sc: TableScript) -> Event:
    """The first payment of the round being dealt."""
    return next(e for e in sc.events if e.round_id == sc.round_id
                and isinstance(e.payload, PayoutMade))


def review(d: Deal, kind: str, rounds: dict[str, Play], *,
           posted_options: dict[str, Play] | None = None,
           options: dict[str, object] | None = None) -> None:
    """The rounds of issue 7 (review_rounds.py) at this table; then, at the same table
    re-opened with `options` posted, the `posted_options` rounds; then each posting that
    contradicts a text (a finding on its TableOpened, round id empty) with a round judged
    by the text; the table's own rules posted again after each."""
    sc = d.sc
    for label, play in rounds.items():
        d.round(label, play)
    original = sc.rules
    if posted_options:
        sc.open(replace(original, **(options or {})))  # type: ignore[arg-type]
        for label, play in posted_options.items():
            d.round(label, play)
        sc.open(original)
    for changes, label, play in review_rounds.POSTINGS[kind]:
        opened = sc.open(review_rounds.posted(original, changes))
        d.expected.append({"table_id": sc.table_id, "round_id": "",
                           "code": "POSTED_RULES_CONTRADICT_REGULATION",
                           "event_id": opened.event_id, "seat": None, "hand": None})
        d.round(label, play)
        sc.open(original)


# --- a plain round of any table, with hooks for one fault --------------------------------------


def plain(sc: TableScript, *, after_deal: Callable[[], object] | None = None,
          before_pay: Callable[[], object] | None = None, paid: int = 2000,
          draw_suit: str = "C", end: bool = True, stacks: tuple[int, ...] = (2000,),
          before_deal: Callable[[], object] | None = None) -> None:
    """Seat 1 (hands 0 and 1 at Switch) stands on 19 against 9 + 7, the dealer draws a
    10 and busts; every hand is paid `paid`. Each hand's main wager is placed in
    `stacks`."""
    switch = sc.game == "BLACKJACK_SWITCH"
    hands = [0, 1] if switch else [0]
    none = sc.rules.hole_card == "NONE"
    start(sc, [1])
    for hand in hands:
        for amount in stacks:
            sc.wager(1, "MAIN", amount, hand)
    if before_deal is not None:
        before_deal()
    sc.deal({(1, hand): ("10", "9") for hand in hands}, up="9", hole=None if none else "7")
    if after_deal is not None:
        after_deal()
    if switch:
        sc.offer_switch(1)
    for hand in hands:
        sc.decide(1, "STAND", hand)
    if none:
        sc.dealer("7", "C")
    else:
        sc.reveal()
    sc.dealer("10", draw_suit)
    if before_pay is not None:
        before_pay()
    for hand in hands:
        sc.pay(1, "MAIN", paid, hand)
        sc.clear(1, hand)
    if end:
        sc.finish_round()


def record_and_common_faults(d: Deal) -> None:
    """The faults every pack judges, each in a plain round of the table."""
    sc = d.sc

    def ok(s: TableScript) -> list[Expected]:
        plain(s)
        return []

    def gap(s: TableScript) -> list[Expected]:
        plain(s, before_pay=lambda: s.skip("rfid"))
        return [("EVENTS_LOST", first_pay(s), None, None)]

    def conflict(s: TableScript) -> list[Expected]:
        copy: list[Event] = []

        def again() -> None:
            last = [e for e in s.events if e.device_id == s.device("shoe")][-1]
            copy.append(s.emit(CardDealt("DEALER", None, None, "K", "H", True), seq=last.seq,
                               event_id=s.event_id(last.device_id, last.seq, "-copy"),
                               prev_digest=last.prev_digest, record=False))

        plain(s, before_pay=again)
        return [("SEQUENCE_CONFLICT", copy[0], None, None)]

    def restarted(s: TableScript) -> list[Expected]:
        s.restart("console")  # between rounds: its first event again is RoundStarted
        plain(s)
        started = next(e for e in s.events if e.round_id == s.round_id)
        return [("DEVICE_RESTARTED", started, None, None)]

    def digest(s: TableScript) -> list[Expected]:
        plain(s, before_pay=lambda: s.corrupt_next("rfid"))
        return [("DIGEST_MISMATCH", first_pay(s), None, None)]

    def incomplete(s: TableScript) -> list[Expected]:
        plain(s, end=False)
        s.clear()
        return []  # raised on the next round's first event: see below

    def procedure(s: TableScript) -> list[Expected]:
        bad: list[Event] = []
        plain(s, after_deal=lambda: bad.append(s.decide(3, "HIT")))
        return [("PROCEDURE_OUT_OF_ORDER", bad[0], 3, 0)]

    def card_count(s: TableScript) -> list[Expected]:
        plain(s, draw_suit="S")  # seat 1's first card is the 10 of spades too
        drawn = [e for e in s.events if isinstance(e.payload, CardDealt)
                 and e.payload.to == "DEALER"][-1]
        return [("CARD_COUNT_EXCEEDED", drawn, None, None)]

    def payout(s: TableScript) -> list[Expected]:
        plain(s, paid=1000)
        out: list[Expected] = [("PAYOUT_WRONG", first_pay(s), 1, 0)]
        if s.game == "BLACKJACK_SWITCH":  # each hand paid short: one violation each
            pays = [e for e in s.events if e.round_id == s.round_id
                    and isinstance(e.payload, PayoutMade)]
            out.append(("PAYOUT_WRONG", pays[1], 1, 1))
        return out

    d.round("OK-plain", ok)
    d.round("EVENTS_LOST", gap)
    d.round("SEQUENCE_CONFLICT", conflict)
    d.round("DEVICE_RESTARTED", restarted)
    d.round("DIGEST_MISMATCH", digest)
    d.round("PROCEDURE_OUT_OF_ORDER", procedure)
    d.round("CARD_COUNT_EXCEEDED", card_count, shoe=1)
    d.round("PAYOUT_WRONG", payout)
    limits_faults(d)
    # ROUND_INCOMPLETE: the round has no RoundEnded and the table moves on; the next
    # round's first event shows it, and the violation cites the round's last event
    # (docs/procedure.md: the same id whichever rule finds it).
    sc.shoe()
    sc.round_id = sc.round_name("ROUND_INCOMPLETE")
    incomplete(sc)
    d.labels.add("ROUND_INCOMPLETE")
    incomplete_id = sc.round_id
    last = next(e for e in reversed(sc.events) if e.round_id == incomplete_id)
    d.round("OK-after-incomplete", ok)
    d.expected.append({"table_id": sc.table_id, "round_id": incomplete_id,
                       "code": "ROUND_INCOMPLETE", "event_id": last.event_id, "seat": None,
                       "hand": None})


def limits_faults(d: Deal) -> None:
    """WAGER_OUTSIDE_LIMITS at every table (docs/regulations/posted-rules.txt (a)): the
    standing main wager, all its stacks summed, against the posted limits (1,000 to
    500,000 cents at these tables), and a wager of zero."""

    def hands(s: TableScript) -> list[int]:
        return [0, 1] if s.game == "BLACKJACK_SWITCH" else [0]

    def placed(s: TableScript, amount: int) -> list[Expected]:
        return [("WAGER_OUTSIDE_LIMITS", e, 1, e.payload.hand) for e in s.events
                if e.round_id == s.round_id and isinstance(e.payload, WagerPlaced)
                and e.payload.amount == amount]

    def two_stacks(s: TableScript) -> list[Expected]:
        plain(s, stacks=(600, 600), paid=1200)  # 1,200 stands: over the minimum
        return []

    def under(s: TableScript) -> list[Expected]:
        plain(s, stacks=(500,), paid=500)
        first: dict[int, Event] = {}  # found on the first card to each hand
        for e in s.events:
            p = e.payload
            if e.round_id == s.round_id and isinstance(p, CardDealt) and p.to == "PLAYER":
                first.setdefault(p.hand or 0, e)
        return [("WAGER_OUTSIDE_LIMITS", e, 1, h) for h, e in sorted(first.items())]

    def over(s: TableScript) -> list[Expected]:
        # the second stack takes 2,000 to 501,000: it is void and handed back
        plain(s, stacks=(2000, 499_000), before_deal=lambda: [
            s.give_back(1, "MAIN", 499_000, h) for h in hands(s)])
        return placed(s, 499_000)

    def zero(s: TableScript) -> list[Expected]:
        plain(s, stacks=(2000, 0))
        return placed(s, 0)

    d.round("OK-limits-two-stacks", two_stacks)
    d.round("WAGER_OUTSIDE_LIMITS~under-minimum", under)
    d.round("WAGER_OUTSIDE_LIMITS~over-maximum", over)
    d.round("WAGER_OUTSIDE_LIMITS~zero", zero)


# --- New Jersey blackjack -----------------------------------------------------------------------


def nj_blackjack(d: Deal) -> None:
    def ok_double_split(s: TableScript) -> list[Expected]:
        start(s, [1, 2, 3])
        s.wager(1, "MAIN", 2000)
        s.wager(1, "BONUS", 500)
        s.wager(2, "MAIN", 1000)
        s.wager(3, "MAIN", 1500)
        s.deal({1: ("8", "8"), 2: ("5", "6"), 3: ("10", "4")}, up="6", hole="10")
        s.decide(1, "SPLIT")
        s.wager(1, "SPLIT", 2000, 1)
        s.card(1, "3", "H", 0)
        s.decide(1, "DOUBLE", 0)
        s.wager(1, "DOUBLE", 2000, 0)
        s.card(1, "10", "C", 0)
        s.card(1, "9", "D", 1)
        s.decide(1, "STAND", 1)
        s.decide(2, "DOUBLE")
        s.wager(2, "DOUBLE", 1000)
        s.card(2, "9", "C")
        s.decide(3, "HIT")
        s.card(3, "K", "C")
        s.collect(3, "MAIN", 1500)
        s.clear(3)
        s.reveal()
        s.dealer("6", "C")  # 22; the bonus: third card 6, 15 to 1
        s.pay(1, "BONUS", 7500)
        s.pay(2, "MAIN", 1000)
        s.pay(2, "DOUBLE", 1000)
        s.clear(2)
        s.pay(1, "MAIN", 2000, 0)
        s.pay(1, "DOUBLE", 2000, 0)
        s.clear(1, 0)
        s.pay(1, "SPLIT", 2000, 1)
        s.clear(1, 1)
        s.finish_round()
        return []

    def ok_dealer_blackjack(s: TableScript) -> list[Expected]:
        start(s, [1, 2])
        s.wager(1, "MAIN", 2000)
        s.wager(1, "BONUS", 500)
        s.wager(2, "MAIN", 2000)
        s.deal({1: ("10", "8"), 2: ("A", "Q")}, up="A", hole="K")
        s.offer_insurance()
        s.insert_hole(True)
        s.reveal()
        s.collect(1, "BONUS", 500)
        s.give_back(2, "MAIN", 2000)
        s.clear(2)
        s.collect(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return []

    def surrender_round(s: TableScript, *, up: str, hole: str, fault: str = ""
                        ) -> list[Expected]:
        start(s, [1, 2])
        s.wager(1, "MAIN", 2000)
        s.wager(2, "MAIN", 2000)
        out: list[Expected] = []
        if fault == "early":
            s.card(1, "10", "S")
            out.append(("SURRENDER_TOO_EARLY", s.decide(1, "SURRENDER"), 1, 0))
            s.card(2, "10", "H")
            s.dealer(up, "D")
            s.card(1, "6", "C")
            s.card(2, "7", "S")
            s.dealer(hole, "H", face_up=False)
        else:
            s.deal({1: ("10", "6"), 2: ("10", "7")}, up=up, hole=hole)
        if up in HIGH_CARDS:
            s.insert_hole(False)
        if fault == "late":
            s.decide(1, "HIT")
            s.card(1, "2", "C")  # 18
            out.append(("SURRENDER_TOO_LATE", s.decide(1, "SURRENDER"), 1, 0))
            s.decide(1, "STAND")
        elif fault == "early":
            s.decide(1, "STAND")
        else:
            s.decide(1, "SURRENDER")
            if up not in HIGH_CARDS:
                if fault == "whole":
                    out.append(("SURRENDER_SETTLEMENT_WRONG", s.collect(1, "MAIN", 2000), 1, 0))
                else:
                    s.collect(1, "MAIN", 1000)
                    s.give_back(1, "MAIN", 1000)
                s.clear(1)
        s.decide(2, "STAND")
        s.reveal()
        if up in HIGH_CARDS and fault == "":
            s.collect(1, "MAIN", 1000)
            s.give_back(1, "MAIN", 1000)
            s.clear(1)
        total = dealer_out(s, [up, hole], "9")  # 5 10 9: 24, 9 7 9: 25, 10 7: 17
        if total == 17:
            s.give_back(2, "MAIN", 2000)
        else:
            s.pay(2, "MAIN", 2000)
        s.clear(2)
        if fault in ("early", "late"):  # seat 1 stood on 16 or 18: the dealer busts
            s.pay(1, "MAIN", 2000)
            s.clear(1)
        s.finish_round()
        return out

    def bonus_round(s: TableScript, *, fault: str = "") -> list[Expected]:
        """Seats 1 and 3 with bonus wagers (500, 200) stand on 20; dealer 10 + 6 draws."""
        start(s, [1, 3])
        out: list[Expected] = []
        s.wager(1, "MAIN", 2000)
        if fault == "without main":
            out.append(("BONUS_WAGER_WITHOUT_MAIN", s.wager(2, "BONUS", 500), 2, 0))
        s.wager(1, "BONUS", 500)
        s.wager(3, "MAIN", 2000)
        if fault == "amount":
            s.wager(3, "BONUS", 99)
        elif fault != "too late":
            s.wager(3, "BONUS", 200)
        s.card(1, "10", "S")
        if fault == "too late":
            out.append(("BONUS_WAGER_TOO_LATE", s.wager(3, "BONUS", 200), 3, 0))
        first = s.card(3, "K", "H")
        if fault == "amount":  # under $1.00 once the stacks are all in: at the first card
            out.append(("BONUS_WAGER_AMOUNT", first, 3, 0))
        s.dealer("10", "D")
        s.card(1, "Q", "C")
        s.card(3, "J", "S")
        s.dealer("6", "H", face_up=False)
        s.insert_hole(False)
        s.decide(1, "STAND")
        s.decide(3, "STAND")
        s.reveal()
        s.dealer("9", "C")  # 25: bonus wins 5 to 1
        seat3 = 200 if fault not in ("amount", "too late") else 0
        if fault == "order":
            s.pay(1, "BONUS", 2500)
            out.append(("BONUS_SETTLEMENT_ORDER", s.events[-1], 1, 0))
            s.pay(3, "BONUS", 1000)
        else:
            if seat3:
                s.pay(3, "BONUS", 1000)
            elif fault == "amount":
                s.give_back(3, "BONUS", 99)
            else:
                s.give_back(3, "BONUS", 200)
            if fault == "odds":
                out.append(("BONUS_SETTLEMENT_WRONG", s.pay(1, "BONUS", 1500), 1, 0))
            else:
                s.pay(1, "BONUS", 2500)
        if fault == "without main":
            s.give_back(2, "BONUS", 500)
        s.pay(3, "MAIN", 2000)
        s.clear(3)
        s.pay(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return out

    def third_card(s: TableScript, *, drawn: bool) -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        s.wager(1, "BONUS", 500)
        s.deal({1: ("A", "K")}, up="10", hole="6")
        s.insert_hole(False)
        s.reveal()
        out: list[Expected] = []
        if drawn:
            s.dealer("5", "C")  # 21: the bonus loses
            s.collect(1, "BONUS", 500)
        else:
            out.append(("BONUS_THIRD_CARD_NOT_DRAWN", s.collect(1, "BONUS", 500), None, None))
        s.pay(1, "MAIN", 3000)
        s.clear(1)
        s.finish_round()
        return out

    def dealer_drew(s: TableScript) -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        s.deal({1: ("10", "8")}, up="6", hole="A")  # soft 17: the table stands
        s.decide(1, "STAND")
        s.reveal()
        bad = s.dealer("2", "C")
        s.collect(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return [("DEALER_DREW_WRONG", bad, None, None)]

    d.round("OK-double-split-bonus", ok_double_split)
    d.round("OK-dealer-blackjack", ok_dealer_blackjack)
    d.round("OK-surrender-vs-5", lambda s: surrender_round(s, up="5", hole="10"))
    d.round("OK-surrender-vs-10", lambda s: surrender_round(s, up="10", hole="7"))
    d.round("OK-bonus-5-to-1", bonus_round)
    d.round("OK-bonus-third-card-all-blackjack", lambda s: third_card(s, drawn=True))
    d.round("SURRENDER_TOO_EARLY", lambda s: surrender_round(s, up="9", hole="7",
                                                             fault="early"))
    d.round("SURRENDER_TOO_LATE", lambda s: surrender_round(s, up="9", hole="7", fault="late"))
    d.round("SURRENDER_SETTLEMENT_WRONG", lambda s: surrender_round(s, up="5", hole="10",
                                                                    fault="whole"))
    d.round("BONUS_WAGER_TOO_LATE", lambda s: bonus_round(s, fault="too late"))
    d.round("BONUS_WAGER_WITHOUT_MAIN", lambda s: bonus_round(s, fault="without main"))
    d.round("BONUS_WAGER_AMOUNT", lambda s: bonus_round(s, fault="amount"))
    d.round("BONUS_THIRD_CARD_NOT_DRAWN", lambda s: third_card(s, drawn=False))
    d.round("BONUS_SETTLEMENT_ORDER", lambda s: bonus_round(s, fault="order"))
    d.round("BONUS_SETTLEMENT_WRONG", lambda s: bonus_round(s, fault="odds"))
    d.round("DEALER_DREW_WRONG", dealer_drew)
    review(d, "nj_blackjack", review_rounds.NJ_BLACKJACK)
    record_and_common_faults(d)


def nj_blackjack_plain_table(d: Deal) -> None:
    """A table with neither surrender nor the bonus wager posted."""

    def surrender(s: TableScript) -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        s.deal({1: ("10", "6")}, up="9", hole="7")
        bad = s.decide(1, "SURRENDER")
        s.decide(1, "STAND")
        s.reveal()
        s.dealer("K", "C")
        s.pay(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return [("SURRENDER_NOT_AVAILABLE", bad, 1, 0)]

    def bonus(s: TableScript) -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        bad = s.wager(1, "BONUS", 500)
        s.deal({1: ("10", "8")}, up="10", hole="7")
        s.insert_hole(False)
        s.decide(1, "STAND")
        s.reveal()
        s.give_back(1, "BONUS", 500)
        s.pay(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return [("BONUS_WAGER_NOT_AVAILABLE", bad, 1, 0)]

    def ok(s: TableScript) -> list[Expected]:
        plain(s)
        return []

    d.round("OK-plain", ok)
    d.round("SURRENDER_NOT_AVAILABLE", surrender)
    d.round("BONUS_WAGER_NOT_AVAILABLE", bonus)
    review(d, "nj_blackjack", {}, posted_options=EVEN_MONEY, options={"even_money": True})


# --- New Jersey Blackjack Switch -----------------------------------------------------------------


def nj_switch(d: Deal) -> None:
    def insurance(s: TableScript, *, fault: str = "", hole: str = "7", up: str = "A",
                  insure: tuple[tuple[int, int], ...] = ((0, 1000),)) -> list[Expected]:
        """Seat 1: hands 0 (10, 7) and 1 (9, 6) of 2,000 and a match wager (collected);
        insurance `insure` ((hand, amount), ...). Hand 1 hits a 5 to 20."""
        start(s, [1])
        s.wager(1, "MAIN", 2000, 0)
        s.wager(1, "MAIN", 2000, 1)
        s.wager(1, "MATCH", 500)
        out: list[Expected] = []
        void: list[tuple[int, int]] = []
        s.card(1, "10", "S", 0)
        s.card(1, "9", "H", 1)
        s.dealer(up, "D")
        if fault == "early":
            out.append(("INSURANCE_TOO_EARLY", s.wager(1, "INSURANCE", 1000, 0), 1, 0))
            void.append((0, 1000))
        s.card(1, "7", "C", 0)
        s.card(1, "6", "S", 1)
        s.dealer(hole, "H", face_up=False)
        s.collect(1, "MATCH", 500)
        if up == "A":
            s.offer_insurance()
        standing: list[tuple[int, int]] = []
        if fault == "not available":
            out.append(("INSURANCE_NOT_AVAILABLE", s.wager(1, "INSURANCE", 1000, 0), 1, 0))
            void.append((0, 1000))
        elif fault == "on match":
            out.append(("INSURANCE_ON_MATCH_WAGER", s.wager(1, "INSURANCE", 250, 2), 1, 2))
            void.append((2, 250))
        elif fault == "over":
            out.append(("INSURANCE_OVER_LIMIT", s.wager(1, "INSURANCE", 1500, 0), 1, 0))
            void.append((0, 1500))
        elif fault not in ("early", "late"):
            for hand, amount in insure:
                s.wager(1, "INSURANCE", amount, hand)
                standing.append((hand, amount))
        bj = up == "A" and hole in HIGH_CARDS
        s.insert_hole(bj)
        if fault == "late":
            out.append(("INSURANCE_TOO_LATE", s.wager(1, "INSURANCE", 1000, 0), 1, 0))
            void.append((0, 1000))
        if bj:
            s.reveal()
            for hand, amount in standing:
                odds = 1 if fault == "odds" else 2
                ev = s.pay(1, "INSURANCE", amount * odds, hand)
                if fault == "odds":
                    out.append(("INSURANCE_SETTLEMENT_WRONG", ev, 1, hand))
            for hand, amount in void:
                s.give_back(1, "INSURANCE", amount, hand)
            for hand in (0, 1):
                s.collect(1, "MAIN", 2000, hand)
                s.clear(1, hand)
            s.finish_round()
            return out
        if fault == "paid before collection":
            (h0, a0), (h1, a1) = standing
            ev = s.pay(1, "INSURANCE", a0 * 2, h0)
            out.append(("INSURANCE_SETTLEMENT_WRONG", ev, 1, h0))
            out.append(("INSURANCE_PAID_BEFORE_COLLECTION", ev, 1, h0))
            s.collect(1, "INSURANCE", a1, h1)
        elif fault != "collection late":
            for hand, amount in standing:
                s.collect(1, "INSURANCE", amount, hand)
        s.offer_switch(1)
        s.decide(1, "STAND", 0)
        s.decide(1, "HIT", 1)
        s.card(1, "5", "D", 1)  # 20
        s.decide(1, "STAND", 1)
        s.reveal()
        n = len(s.events)
        total = dealer_out(s, [up, hole], "8 2 K")  # A 5: 14, 16, 26
        if fault == "collection late":
            out.append(("INSURANCE_COLLECTION_LATE", s.events[n], 1, 0))
            for hand, amount in standing:
                s.collect(1, "INSURANCE", amount, hand)
        for hand, amount in void:
            s.give_back(1, "INSURANCE", amount, hand)
        for hand, mine in ((0, 17), (1, 20)):
            if total > 21 or mine > total:
                s.pay(1, "MAIN", 2000, hand)
            elif mine == total:
                s.give_back(1, "MAIN", 2000, hand)
            else:
                s.collect(1, "MAIN", 2000, hand)
            s.clear(1, hand)
        s.finish_round()
        return out

    def switch_and_22(s: TableScript, *, fault: str = "") -> list[Expected]:
        start(s, [1, 2])
        for seat in (1, 2):
            s.wager(seat, "MAIN", 2000, 0)
            s.wager(seat, "MAIN", 2000, 1)
        s.wager(2, "MATCH", 500)
        s.deal({(1, 0): ("10", "K"), (1, 1): ("A", "9"), (2, 0): ("8", "8"),
                (2, 1): ("7", "Q")}, up="6", hole="A")
        s.pay(2, "MATCH", 500)
        s.offer_switch(1)
        s.offer_switch(2)
        s.decide(1, "SWITCH", 0)
        for seat in (1, 2):
            s.decide(seat, "STAND", 0)
            s.decide(seat, "STAND", 1)
        s.reveal()  # soft 17: this table hits it
        out: list[Expected] = []
        if fault == "stood":  # the dealer stands on soft 17
            ev = s.collect(2, "MAIN", 2000, 0)  # 16 loses to 17
            out.append(("DEALER_DREW_WRONG", ev, None, None))
            s.clear(2, 0)
            s.give_back(2, "MAIN", 2000, 1)  # 17 pushes
            s.clear(2, 1)
            for hand in (0, 1):  # 10 9 and A K (21, not a blackjack) win
                s.pay(1, "MAIN", 2000, hand)
                s.clear(1, hand)
            s.finish_round()
            return out
        s.dealer("5", "C")
        s.dealer("K", "C")  # 22
        for seat in (2, 1):
            for hand in (0, 1):
                if fault == "22 paid" and (seat, hand) == (1, 1):
                    out.append(("PAYOUT_WRONG", s.pay(1, "MAIN", 2000, 1), 1, 1))
                else:
                    s.give_back(seat, "MAIN", 2000, hand)
                s.clear(seat, hand)
        s.finish_round()
        return out

    d.round("OK-insurance-both-hands", lambda s: insurance(s, insure=((0, 1000), (1, 1000))))
    d.round("OK-insurance-wins", lambda s: insurance(s, hole="K", insure=((0, 1000),)))
    d.round("OK-insurance-dealer-draws", lambda s: insurance(s, hole="5"))
    d.round("OK-switch-and-dealer-22", switch_and_22)
    d.round("INSURANCE_NOT_AVAILABLE", lambda s: insurance(s, up="10", fault="not available"))
    d.round("INSURANCE_ON_MATCH_WAGER", lambda s: insurance(s, fault="on match"))
    d.round("INSURANCE_TOO_EARLY", lambda s: insurance(s, fault="early"))
    d.round("INSURANCE_TOO_LATE", lambda s: insurance(s, fault="late"))
    d.round("INSURANCE_OVER_LIMIT", lambda s: insurance(s, fault="over"))
    d.round("INSURANCE_SETTLEMENT_WRONG", lambda s: insurance(s, hole="Q", fault="odds"))
    d.round("INSURANCE_PAID_BEFORE_COLLECTION+INSURANCE_SETTLEMENT_WRONG",
            lambda s: insurance(s, fault="paid before collection",
                                insure=((0, 1000), (1, 1000))))
    d.round("INSURANCE_COLLECTION_LATE", lambda s: insurance(s, hole="5",
                                                             fault="collection late"))
    d.round("PAYOUT_WRONG~dealer-22-paid", lambda s: switch_and_22(s, fault="22 paid"))
    d.round("DEALER_DREW_WRONG", lambda s: switch_and_22(s, fault="stood"))
    review(d, "nj_switch", review_rounds.NJ_SWITCH,
           posted_options={**review_rounds.POSTED_SURRENDER, **EVEN_MONEY},
           options={"surrender": True, "even_money": True})
    record_and_common_faults(d)


# --- Pennsylvania Free Bet Blackjack --------------------------------------------------------------


def pa_free_bet(d: Deal) -> None:
    def ok_even_money_push22(s: TableScript) -> list[Expected]:
        start(s, [1, 2])
        s.wager(1, "MAIN", 2000)
        s.wager(1, "PUSH22", 500)
        s.wager(2, "MAIN", 2000)
        s.wager(2, "PUSH22", 500)
        s.deal({1: ("A", "K"), 2: ("6", "4")}, up="A", hole="5")
        s.offer_insurance()
        s.decide(1, "EVEN_MONEY")
        s.pay(1, "MAIN", 2000)
        s.wager(2, "INSURANCE", 1000)
        s.insert_hole(False)
        s.collect(2, "INSURANCE", 1000)
        s.decide(2, "DOUBLE")
        s.wager(2, "FREE_DOUBLE", 2000)
        s.card(2, "10", "H")
        s.reveal()
        s.dealer("6", "C")
        s.dealer("10", "D")  # 22
        s.pay(2, "PUSH22", 5500)
        s.give_back(2, "MAIN", 2000)
        s.clear(2)
        s.pay(1, "PUSH22", 5500)
        s.clear(1)
        s.finish_round()
        return []

    def ok_free_split(s: TableScript) -> list[Expected]:
        start(s, [3])
        s.wager(3, "MAIN", 2000)
        s.deal({3: ("8", "8")}, up="9", hole="10")
        s.decide(3, "SPLIT")
        s.wager(3, "FREE_SPLIT", 2000, 1)
        s.card(3, "Q", "H", 0)
        s.decide(3, "STAND", 0)
        s.card(3, "3", "D", 1)
        s.decide(3, "HIT", 1)
        s.card(3, "9", "C", 1)
        s.decide(3, "STAND", 1)
        s.reveal()
        s.collect(3, "MAIN", 2000, 0)
        s.clear(3, 0)
        s.pay(3, "FREE_SPLIT", 2000, 1)
        s.clear(3, 1)
        s.finish_round()
        return []

    def insurance(s: TableScript, *, fault: str = "", up: str = "A", hole: str = "7"
                  ) -> list[Expected]:
        """Seat 2 plays 2,000 on 10 + 8 (push22 500) and insures 1,000."""
        start(s, [2])
        s.wager(2, "MAIN", 2000)
        s.wager(2, "PUSH22", 500)
        s.deal({2: ("10", "8")}, up=up, hole=hole)
        if up == "A":
            s.offer_insurance()
        out: list[Expected] = []
        amount = 1100 if fault == "over" else 1000
        void = fault in ("over", "not available", "late")
        if fault != "late":
            ev = s.wager(2, "INSURANCE", amount)
            if fault == "over":
                out.append(("INSURANCE_OVER_LIMIT", ev, 2, 0))
            elif fault == "not available":
                out.append(("INSURANCE_NOT_AVAILABLE", ev, 2, 0))
        bj = up == "A" and hole in HIGH_CARDS
        if up in HIGH_CARDS:
            s.insert_hole(bj)
        if fault == "late":
            out.append(("INSURANCE_TOO_LATE", s.wager(2, "INSURANCE", amount), 2, 0))
        if bj:
            s.reveal()
            ev = s.pay(2, "INSURANCE", 1000 if fault == "odds" else 2000)
            if fault == "odds":
                out.append(("INSURANCE_SETTLEMENT_WRONG", ev, 2, 0))
            s.collect(2, "PUSH22", 500)
            s.collect(2, "MAIN", 2000)
            s.clear(2)
            s.finish_round()
            return out
        if not void and fault != "collection late":
            s.collect(2, "INSURANCE", 1000)
        stand = s.decide(2, "STAND")
        if fault == "collection late":  # 672a.8(d) "immediately": late once seat 2 acts
            out.append(("INSURANCE_COLLECTION_LATE", stand, 2, 0))
        s.reveal()
        if hole == "5":  # A 5 soft 16: an 8 (14), a king (24)
            s.dealer("8", "C")
            if fault == "collection late":
                s.collect(2, "INSURANCE", 1000)
            s.dealer("K", "C")
            s.collect(2, "PUSH22", 500)
            if void:
                s.give_back(2, "INSURANCE", amount)
            s.pay(2, "MAIN", 2000)
        else:  # A 7 = 18 or 9 7 + K = 26
            if up == "9":
                s.dealer("K", "C")
            s.collect(2, "PUSH22", 500)
            if void:
                s.give_back(2, "INSURANCE", amount)
            if up == "9":
                s.pay(2, "MAIN", 2000)
            else:
                s.give_back(2, "MAIN", 2000)
        s.clear(2)
        s.finish_round()
        return out

    def even_money(s: TableScript, *, fault: str) -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        s.wager(1, "PUSH22", 500)
        ranks = ("10", "Q") if fault == "not available" else ("A", "K")
        s.deal({1: ranks}, up="A", hole="9")
        s.offer_insurance()
        out: list[Expected] = []
        decision = s.decide(1, "EVEN_MONEY")
        if fault == "not available":
            out.append(("EVEN_MONEY_NOT_AVAILABLE", decision, 1, 0))
        else:
            ev = s.pay(1, "MAIN", 3000 if fault == "odds" else 2000)
            if fault == "odds":
                out.append(("EVEN_MONEY_SETTLEMENT_WRONG", ev, 1, 0))
            if fault == "removed":
                out.append(("EVEN_MONEY_CARDS_REMOVED", s.clear(1), 1, 0))
        s.insert_hole(False)
        if fault == "not available":
            s.decide(1, "STAND")
        s.reveal()  # A 9: 20
        s.collect(1, "PUSH22", 500)
        if fault == "not available":
            s.give_back(1, "MAIN", 2000)
        if fault != "removed":
            s.clear(1)
        s.finish_round()
        return out

    def dealer_22(s: TableScript, *, fault: str = "") -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        s.deal({1: ("10", "Q")}, up="6", hole="6")
        s.decide(1, "STAND")
        s.reveal()
        out: list[Expected] = []
        if fault == "drew":
            s.dealer("5", "C")  # 17
            out.append(("DEALER_DREW_WRONG", s.dealer("5", "H"), None, None))  # 22
        else:
            s.dealer("10", "C")  # 22
        if fault == "paid":
            out.append(("PAYOUT_WRONG", s.pay(1, "MAIN", 2000), 1, 0))
        else:
            s.give_back(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return out

    d.round("OK-even-money-tucked-push22", ok_even_money_push22)
    d.round("OK-free-split", ok_free_split)
    d.round("OK-insurance-loses", insurance)
    d.round("OK-insurance-wins", lambda s: insurance(s, hole="K"))
    d.round("OK-dealer-22-pushes", dealer_22)
    d.round("INSURANCE_NOT_AVAILABLE", lambda s: insurance(s, up="9", fault="not available"))
    d.round("INSURANCE_TOO_LATE", lambda s: insurance(s, fault="late"))
    d.round("INSURANCE_OVER_LIMIT", lambda s: insurance(s, fault="over"))
    d.round("INSURANCE_SETTLEMENT_WRONG", lambda s: insurance(s, hole="J", fault="odds"))
    d.round("INSURANCE_COLLECTION_LATE", lambda s: insurance(s, hole="5",
                                                             fault="collection late"))
    d.round("EVEN_MONEY_NOT_AVAILABLE", lambda s: even_money(s, fault="not available"))
    d.round("EVEN_MONEY_SETTLEMENT_WRONG", lambda s: even_money(s, fault="odds"))
    d.round("EVEN_MONEY_CARDS_REMOVED", lambda s: even_money(s, fault="removed"))
    d.round("PAYOUT_WRONG~dealer-22-paid", lambda s: dealer_22(s, fault="paid"))
    d.round("DEALER_DREW_WRONG", lambda s: dealer_22(s, fault="drew"))
    review(d, "pa_free_bet", review_rounds.PA_FREE_BET,
           posted_options=review_rounds.POSTED_SURRENDER, options={"surrender": True})
    record_and_common_faults(d)


# --- New Zealand ---------------------------------------------------------------------------


def nz_blackjack(d: Deal) -> None:
    def low_card(s: TableScript, *, fault: str = "") -> list[Expected]:
        """Seat 1 blackjack against a 6; seat 2 (10 + 2) hits to 17."""
        start(s, [1, 2])
        s.wager(1, "MAIN", 2000)
        s.wager(2, "MAIN", 2000)
        s.deal({1: ("A", "K"), 2: ("10", "2")}, up="6")
        out: list[Expected] = []
        if fault != "late":
            s.pay(1, "MAIN", 3000)
            s.clear(1)
        s.decide(2, "HIT")
        ev = s.card(2, "5", "C")
        if fault == "late":
            out.append(("BLACKJACK_PAID_LATE", ev, 1, 0))
        s.decide(2, "STAND")
        s.dealer("10", "C")  # 16
        s.dealer("9", "C")  # 25
        if fault == "late":
            s.pay(1, "MAIN", 3000)
            s.clear(1)
        s.pay(2, "MAIN", 2000)
        s.clear(2)
        s.finish_round()
        return out

    def high_card(s: TableScript, *, fault: str = "", second: str = "7",
                  insure: int = 1000) -> list[Expected]:
        """Seat 1 blackjack and seat 2 (10 + 8, insured `insure`) against an ace."""
        start(s, [1, 2])
        s.wager(1, "MAIN", 2000)
        s.wager(2, "MAIN", 2000)
        out: list[Expected] = []
        s.card(1, "A", "S")
        s.card(2, "10", "H")
        s.dealer("A", "D")
        if fault == "too early":
            out.append(("INSURANCE_TOO_EARLY", s.wager(2, "INSURANCE", insure), 2, 0))
        s.card(1, "K", "C")
        s.card(2, "8", "S")
        s.offer_insurance()
        even_money = fault in ("even money odds", "even money kept")
        valid = fault in ("", "odds", "early", "even money odds", "even money kept")
        if valid:
            s.wager(2, "INSURANCE", insure)
        elif fault == "over":
            out.append(("INSURANCE_OVER_LIMIT", s.wager(2, "INSURANCE", insure), 2, 0))
        elif fault == "under":  # judged when insurance closes: the next card (9.3)
            s.wager(2, "INSURANCE", insure)
        if even_money:
            s.decide(1, "EVEN_MONEY")
            paid = s.pay(1, "MAIN", 3000 if fault == "even money odds" else 2000)
            if fault == "even money odds":
                out.append(("EVEN_MONEY_SETTLEMENT_WRONG", paid, 1, 0))
                s.clear(1)
        if fault == "early":
            out.append(("BLACKJACK_PAID_EARLY", s.pay(1, "MAIN", 3000), 1, 0))
        s.decide(2, "STAND")
        closing = s.dealer(second, "C")
        if fault == "under":
            out.append(("INSURANCE_UNDER_MINIMUM", closing, 2, 0))
        elif fault == "even money kept":  # NZ 8.3: cards still on the layout at a card
            out.append(("EVEN_MONEY_CARDS_REMOVED", closing, 1, 0))
            s.clear(1)
        if fault == "too late":
            out.append(("INSURANCE_TOO_LATE", s.wager(2, "INSURANCE", insure), 2, 0))
        bj = second in HIGH_CARDS
        if valid:
            if bj:
                ev = s.pay(2, "INSURANCE", insure * (1 if fault == "odds" else 2))
                if fault == "odds":
                    out.append(("INSURANCE_SETTLEMENT_WRONG", ev, 2, 0))
            else:
                s.collect(2, "INSURANCE", insure)
        else:
            s.give_back(2, "INSURANCE", insure)
        if fault not in ("early", "even money odds", "even money kept"):
            if bj:
                s.give_back(1, "MAIN", 2000)
            else:
                s.pay(1, "MAIN", 3000)
            s.clear(1)
        elif fault == "early":
            s.clear(1)
        if bj:
            s.collect(2, "MAIN", 2000)
        else:
            s.give_back(2, "MAIN", 2000)  # A 7 = 18
        s.clear(2)
        s.finish_round()
        return out

    def not_available(s: TableScript, *, what: str) -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        ranks = ("10", "Q") if what == "even money" else ("10", "8")
        s.deal({1: ranks}, up="A" if what == "even money" else "10")
        if what == "even money":
            s.offer_insurance()
            ev = s.decide(1, "EVEN_MONEY")
            out: list[Expected] = [("EVEN_MONEY_NOT_AVAILABLE", ev, 1, 0)]
        else:
            out = [("INSURANCE_NOT_AVAILABLE", s.wager(1, "INSURANCE", 1000), 1, 0)]
        s.decide(1, "STAND")
        s.dealer("7", "C")  # A 7 = 18 / 10 7 = 17
        if what != "even money":
            s.give_back(1, "INSURANCE", 1000)
            s.pay(1, "MAIN", 2000)
        else:
            s.pay(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return out

    d.round("OK-blackjack-paid-at-once", low_card)
    d.round("OK-blackjack-waits-insurance-loses", high_card)
    d.round("OK-dealer-blackjack-insurance-wins", lambda s: high_card(s, second="Q"))
    d.round("BLACKJACK_PAID_LATE", lambda s: low_card(s, fault="late"))
    d.round("BLACKJACK_PAID_EARLY", lambda s: high_card(s, fault="early"))
    d.round("EVEN_MONEY_SETTLEMENT_WRONG", lambda s: high_card(s, fault="even money odds"))
    d.round("EVEN_MONEY_CARDS_REMOVED", lambda s: high_card(s, fault="even money kept"))
    d.round("EVEN_MONEY_NOT_AVAILABLE", lambda s: not_available(s, what="even money"))
    d.round("INSURANCE_NOT_AVAILABLE", lambda s: not_available(s, what="insurance"))
    d.round("INSURANCE_TOO_EARLY", lambda s: high_card(s, fault="too early"))
    d.round("INSURANCE_TOO_LATE", lambda s: high_card(s, fault="too late"))
    d.round("INSURANCE_OVER_LIMIT", lambda s: high_card(s, fault="over", insure=1100))
    d.round("INSURANCE_UNDER_MINIMUM", lambda s: high_card(s, fault="under", insure=900))
    d.round("INSURANCE_SETTLEMENT_WRONG", lambda s: high_card(s, fault="odds", second="K"))

    def dealer_drew(s: TableScript) -> list[Expected]:
        start(s, [1])
        s.wager(1, "MAIN", 2000)
        s.deal({1: ("10", "8")}, up="10")
        s.decide(1, "STAND")
        s.dealer("7", "C")  # 17
        bad = s.dealer("4", "C")  # drawn on 17: 21
        s.collect(1, "MAIN", 2000)
        s.clear(1)
        s.finish_round()
        return [("DEALER_DREW_WRONG", bad, None, None)]

    d.round("DEALER_DREW_WRONG", dealer_drew)
    review(d, "nz_blackjack", review_rounds.NZ_BLACKJACK,
           posted_options=review_rounds.POSTED_SURRENDER, options={"surrender": True})
    record_and_common_faults(d)

    # the last round of the file: the input ends before its RoundEnded
    def cut_off(s: TableScript) -> list[Expected]:
        plain(s, end=False)
        return [("ROUND_INCOMPLETE", s.events[-1], None, None)]

    d.round("ROUND_INCOMPLETE~input-ends", cut_off)


#: Even money where a table posts it, paid right and paid 3 to 2.
EVEN_MONEY: dict[str, Play] = {
    "OK-even-money-posted": lambda s: review_rounds.even_money_paid(s, paid=2000),
    "EVEN_MONEY_SETTLEMENT_WRONG~posted": lambda s: review_rounds.even_money_paid(s, paid=3000),
}


TABLES: list[tuple[str, str, Callable[[Deal], None], dict[str, object]]] = [
    ("nj_blackjack", "NJ-BJ-01", nj_blackjack, {}),
    ("nj_blackjack", "NJ-BJ-02", nj_blackjack_plain_table,
     {"surrender": False, "bonus_wager": False}),
    ("nj_switch", "NJ-SW-01", nj_switch, {}),
    ("pa_free_bet", "PA-FB-01", pa_free_bet, {}),
    ("nz_blackjack", "NZ-BJ-01", nz_blackjack, {}),
]


def build() -> tuple[list[Event], list[dict[str, object]]]:
    events: list[Event] = []
    expected: list[dict[str, object]] = []
    for i, (kind, table_id, deal, rules) in enumerate(TABLES):
        sc = TableScript.of(kind, table_id, **rules)
        sc.ts += i * 3_600_000  # an hour apart
        sc.open()
        d = Deal(sc)
        deal(d)
        events.extend(sc.events)
        expected.extend(d.expected)
    return events, expected


def main() -> None:
    events, expected = build()
    with open(HERE / "rounds.jsonl", "wb") as f:
        for ev in events:
            f.write(dumps(ev) + b"\n")
    with open(HERE / "expected.jsonl", "w", encoding="utf-8") as f:
        for row in expected:
            f.write(json.dumps(row) + "\n")
    rounds = len({e.round_id for e in events if e.round_id})
    print(f"{len(events)} events, {rounds} rounds, {len(expected)} expected violations")


if __name__ == "__main__":
    main()
