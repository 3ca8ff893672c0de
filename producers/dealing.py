"""Dealing one round by the procedure of docs/procedure.md ("A round, in order").

`play_round` deals from the shoe in order, lets the players play basic strategy for
the posted rules, plays the dealer and settles every wager with the expected
settlement of `pitwatch.blackjack`, writing each event as a `Step` of a `RoundScript`
(see script.py) in the order the procedure gives. The step numbers in the comments
are the procedure's.

Two faults change the play itself and are asked for here (`PlayOptions`): a dealer
who draws on a total the rules stand on, and a dealer who stops without the third
card a bonus wager calls for. Every other fault is an edit of the clean script
(inject.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pitwatch import blackjack as bj
from pitwatch.blackjack import Card, Settlement, ShoeEmptyError
from pitwatch.events.model import (
    CardDealt,
    CardsCleared,
    HoleCardChecked,
    HoleCardInserted,
    HoleCardRevealed,
    InsuranceOffered,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    RoundStarted,
    SwitchOffered,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)

from .betting import SeatPlan, insurance_amount
from .floor import BLACKJACK, FREE_BET, SWITCH, TableConfig
from .script import CONSOLE, READER, RFID, SHOE, RoundFacts, RoundScript, SeatFacts, Step, marker

__all__ = ["PlayOptions", "ShoeCursor", "ShoeEmptyError", "play_round"]


class ShoeCursor:
    """A shuffled shoe and how far it has been dealt; the position can be set back so
    a round can be dealt again from the same card."""

    __slots__ = ("cards", "cut", "decks", "pos", "shoe_id")

    def __init__(self, shoe: bj.Shoe, shoe_id: str) -> None:
        self.cards: tuple[Card, ...] = shoe.cards
        self.cut = shoe.cut_card
        self.decks = shoe.decks
        self.pos = 0
        self.shoe_id = shoe_id

    def draw(self) -> Card:
        pos = self.pos
        if pos >= len(self.cards):
            raise ShoeEmptyError(f"shoe {self.shoe_id} is empty")
        self.pos = pos + 1
        return self.cards[pos]

    @property
    def cut_card_reached(self) -> bool:
        return self.pos >= self.cut


@dataclass(frozen=True, slots=True)
class PlayOptions:
    """Faults that change the play (DEALER_DREW_WRONG, BONUS_THIRD_CARD_NOT_DRAWN)."""

    extra_dealer_card: bool = False
    skip_bonus_third: bool = False


CLEAN: Final = PlayOptions()


@dataclass(slots=True, eq=False)
class _Hand:
    seat: int
    num: int
    root: int  # the hand it was split from at the start (0, or 1 in Switch)
    cards: list[Card]
    wagers: list[tuple[str, int]]  # open hand wagers, in the order placed
    split: bool = False
    split_aces: bool = False
    switched: bool = False
    decisions: int = 0
    bust: bool = False
    surrendered: bool = False
    even_money: bool = False
    settled: bool = False
    cleared: bool = False

    @property
    def ranks(self) -> list[str]:
        return [c.rank for c in self.cards]

    @property
    def base(self) -> int:
        return self.wagers[0][1]

    @property
    def blackjack(self) -> bool:
        return bj.is_blackjack(self.ranks, split_hand=self.split, switched=self.switched)

    @property
    def live(self) -> bool:
        """Still needs the dealer's final hand (as the audit's state.Hand.live)."""
        return bj.awaits_dealer(bust=self.bust, blackjack=self.blackjack,
                                surrendered=self.surrendered, even_money=self.even_money,
                                settled=self.settled)


@dataclass(slots=True, eq=False)
class _Seat:
    plan: SeatPlan
    hands: list[_Hand] = field(default_factory=list)
    side: tuple[str, int] | None = None
    side_open: bool = False
    insurance: dict[int, int] = field(default_factory=dict)  # hand -> amount
    next_hand: int = 1

    def has_open(self, kind: str) -> bool:
        return self.side_open and self.side is not None and self.side[0] == kind


class _Round:
    def __init__(self, cfg: TableConfig, shoe: ShoeCursor, opts: PlayOptions) -> None:
        self.cfg = cfg
        self.rules = cfg.rules
        self.shoe = shoe
        self.opts = opts
        self.steps: list[Step] = []
        self.facts = RoundFacts()
        self.seats: dict[int, _Seat] = {}
        self.dealer: list[Card] = []
        self.deferred: list[_Hand] = []  # surrenders against an A or 10 up card
        r = self.rules
        self.bj_ratio = bj.Ratio(r.blackjack_pays.num, r.blackjack_pays.den)
        self.ins_ratio = bj.Ratio(r.insurance_pays.num, r.insurance_pays.den)
        #: the posted rounding rule, the one the audit judges by (`checks._common.rounding`)
        self.rounding = bj.Rounding(r.rounding, r.chip_unit)
        posted = r.pay_table("BONUS")  # the three-eights odds of 2.25(f), where posted
        self.bonus_odds = None if posted is None else {
            e.key: bj.Ratio(e.num, e.den) for e in posted.entries}

    # --- writing steps ---------------------------------------------------------------

    def add(self, device: str, payload: object, *tag: object) -> Step:
        step = Step(device, payload, tag)  # type: ignore[arg-type]
        self.steps.append(step)
        return step

    def mark(self, name: str, *args: object) -> None:
        self.steps.append(marker(name, *args))

    def deal(self, h: _Hand, *tag: object) -> Card:
        card = self.shoe.draw()
        h.cards.append(card)
        self.add(SHOE, CardDealt("PLAYER", h.seat, h.num, card.rank, card.suit, True), *tag)
        return card

    def deal_dealer(self, face_up: bool, *tag: object) -> Card:
        card = self.shoe.draw()
        self.dealer.append(card)
        self.add(SHOE, CardDealt("DEALER", None, None, card.rank, card.suit, face_up), *tag)
        return card

    def money(self, seat: int, hand: int, kind: str, s: Settlement, *tag: object) -> None:
        if s.payout:
            self.add(RFID, PayoutMade(seat, hand, kind, s.payout), *tag)
        if s.collected:
            self.add(RFID, WagerCollected(seat, hand, kind, s.collected), *tag)
        if s.returned:
            self.add(RFID, WagerReturned(seat, hand, kind, s.returned), *tag)

    def clear(self, h: _Hand, *tag: object) -> None:
        h.cleared = True
        self.add(CONSOLE, CardsCleared(h.seat, h.num), *tag)

    # --- questions -------------------------------------------------------------------

    @property
    def up(self) -> str:
        return self.dealer[0].rank

    @property
    def dealer_ranks(self) -> list[str]:
        return [c.rank for c in self.dealer]

    @property
    def up_ace_or_ten(self) -> bool:
        return self.up == "A" or bj.is_ten_value(self.up)

    def hands_in_order(self) -> list[_Hand]:
        return [h for s in sorted(self.seats) for h in self.seats[s].hands]

    def dealer_plays_on(self) -> bool:
        """Whether the dealer completes the hand (as the audit's Round.needs_dealer_cards)."""
        return bj.dealer_plays_on(
            hand_in_play=any(h.live for h in self.hands_in_order()),
            push22_open=any(st.has_open("PUSH22") for st in self.seats.values()))

    def bonus_seats(self) -> list[_Seat]:
        """Seats with an open bonus wager, highest first (13:69F-2.25(e))."""
        return [self.seats[s] for s in sorted(self.seats, reverse=True)
                if self.seats[s].has_open("BONUS")]

    # --- the round -------------------------------------------------------------------

    def play(self, round_id: str, dealer_id: str, plans: list[SeatPlan]) -> RoundScript:
        cfg, rules = self.cfg, self.rules
        switch = cfg.game == SWITCH
        # 1. RoundStarted
        self.add(CONSOLE, RoundStarted(dealer_id, tuple(p.seat for p in plans)), "start")
        # 2. wagers, seats ascending: MAIN (Switch: hands 0 and 1), then the side wager
        for p in plans:
            st = self.seats[p.seat] = _Seat(p)
            for num in ((0, 1) if switch else (0,)):
                st.hands.append(_Hand(p.seat, num, num, [], [("MAIN", p.main)]))
                self.add(RFID, WagerPlaced(p.seat, num, "MAIN", p.main), "main_wp", p.seat, num)
            st.next_hand = len(st.hands)
            if p.side and cfg.side_wager is not None:
                st.side, st.side_open = (cfg.side_wager, p.side), True
                self.add(RFID, WagerPlaced(p.seat, 0, cfg.side_wager, p.side), "side_wp", p.seat)
            self.facts.seats[p.seat] = SeatFacts(p.seat, p.main, st.side)
        self.mark("wagers_end")
        # 3. the initial deal
        hands = self.hands_in_order()
        for i, h in enumerate(hands):
            self.deal(h, "deal", h.seat, h.num)
            if i == 0:
                self.mark("after_first_card")
        self.deal_dealer(True, "up")
        self.mark("after_upcard")
        for h in hands:
            self.deal(h, "deal", h.seat, h.num)
        if rules.hole_card != "NONE":
            self.deal_dealer(False, "hole")
        self.facts.up = self.up
        for s, st in self.seats.items():
            self.facts.seats[s].hand0_blackjack = st.hands[0].blackjack
        # 4. Switch: the match wagers settle on the first four cards
        if switch:
            for s in sorted(self.seats):
                st = self.seats[s]
                if st.side_open and st.side is not None:
                    four = [(c.rank, c.suit) for h in st.hands[:2] for c in h.cards[:2]]
                    self.money(s, 0, "MATCH", bj.settle_match(st.side[1], four, pay_table=None,
                                                              rounding=self.rounding),
                               "match_settle", s)
                    st.side_open = False
        # 5. New Zealand, up card 2-9: blackjacks paid at once and cleared
        if rules.hole_card == "NONE" and not self.up_ace_or_ten:
            for s in sorted(self.seats):
                h = self.seats[s].hands[0]
                if h.blackjack:
                    self.add(RFID, PayoutMade(s, 0, "MAIN", bj.pay(h.base, self.bj_ratio,
                                                                    self.rounding)),
                             "nz_bj", s)
                    h.settled = True
                    self.clear(h, "nz_bj", s)
        self.mark("after_deal")
        # 6. insurance and even money
        if self.up == "A" and rules.insurance:
            self.offer_insurance()
        # 7. the card reader, or at a PEEK table the dealer's peek (on the console)
        dealer_bj = len(self.dealer) == 2 and bj.is_blackjack(self.dealer_ranks)
        if rules.hole_card in ("READER", "PEEK") and self.up_ace_or_ten:
            if rules.hole_card == "READER":
                self.add(READER, HoleCardInserted(dealer_bj), "reader")
            else:
                self.add(CONSOLE, HoleCardChecked(dealer_bj), "peek")
            if dealer_bj:
                self.facts.dealer_blackjack = True
                self.dealer_blackjack_round()
                return RoundScript(round_id, self.steps, self.facts)
            self.settle_insurance(dealer_bj)
        # 8. Blackjack Switch: the switch
        if switch:
            for s in sorted(self.seats):
                h0, h1 = self.seats[s].hands[:2]
                self.add(CONSOLE, SwitchOffered(s), "switch_offer", s)
                if bj.should_switch(h0.ranks, h1.ranks, self.up):
                    self.add(CONSOLE, PlayerDecision(s, 0, "SWITCH"), "switch", s)
                    h0.cards[1], h1.cards[1] = h1.cards[1], h0.cards[1]
                    h0.switched = h1.switched = True
        # 9. the players
        self.facts.play_phase = True
        self.mark("play_start")
        for s in sorted(self.seats):
            for h in list(self.seats[s].hands):
                if h.num == h.root:
                    self.play_hand(h)
        self.mark("play_end")
        # 10. the dealer
        self.dealer_turn()
        # 11. settlement; 12. the dealer's cards, RoundEnded
        self.final_pass()
        self.add(CONSOLE, CardsCleared(None, None), "dealer_clear")
        self.add(CONSOLE, RoundEnded(), "end")
        return RoundScript(round_id, self.steps, self.facts)

    # --- 6, 7: insurance -------------------------------------------------------------

    def offer_insurance(self) -> None:
        cfg, rules = self.cfg, self.rules
        self.add(CONSOLE, InsuranceOffered(), "ins_offer")
        for s in sorted(self.seats):
            st = self.seats[s]
            p = st.plan
            self.mark("ins_slot", s)
            h0 = st.hands[0]
            if rules.even_money and h0.blackjack and p.even_money:
                self.add(CONSOLE, PlayerDecision(s, 0, "EVEN_MONEY"), "em", s)
                self.add(RFID, PayoutMade(s, 0, "MAIN", h0.base), "em_pay", s)
                h0.even_money = h0.settled = True
                self.facts.seats[s].even_money = True
                if not st.has_open("PUSH22"):
                    self.clear(h0, "em_clear", s)  # else tucked under the Push 22 wager
            elif p.insure:
                amount = insurance_amount(p.main, rules, cfg.jurisdiction)
                if amount is None:
                    continue
                for num in p.insure_hands:
                    st.insurance[num] = amount
                    self.add(RFID, WagerPlaced(s, num, "INSURANCE", amount), "ins", s, num)

    def settle_insurance(self, dealer_bj: bool) -> None:
        """Insurance, seats ascending: all of it wins or all of it loses."""
        for s in sorted(self.seats):
            for num, amount in sorted(self.seats[s].insurance.items()):
                stl = bj.settle_insurance(amount, dealer_bj, pays=self.ins_ratio,
                                          rounding=self.rounding)
                self.money(s, num, "INSURANCE", stl, "ins_settle", s, num)

    def dealer_blackjack_round(self) -> None:
        """Step 7, a dealer blackjack at a reader table: the round ends at once."""
        self.add(CONSOLE, HoleCardRevealed(), "reveal")
        self.settle_bonuses()
        self.settle_insurance(True)
        self.final_pass()
        self.add(CONSOLE, CardsCleared(None, None), "dealer_clear")
        self.add(CONSOLE, RoundEnded(), "end")

    # --- 9: the players --------------------------------------------------------------

    def play_hand(self, h: _Hand) -> None:
        if h.blackjack or h.split_aces or h.settled or h.cleared:
            return
        cfg, rules = self.cfg, self.rules
        st = self.seats[h.seat]
        free_bet = cfg.game == FREE_BET
        made: list[_Hand] = []
        while True:
            ranks = h.ranks
            two = len(ranks) == 2
            family = sum(1 for x in st.hands if x.root == h.root)
            can_split = (two and bj.is_pair(ranks) and family < rules.max_split_hands
                         and not (h.split_aces and not rules.resplit_aces))
            can_double = (two and bj.can_double(ranks, rules.double_on)
                          and (not h.split or rules.double_after_split))
            can_surrender = (rules.surrender and cfg.game == BLACKJACK and two
                             and h.decisions == 0 and not h.split)
            d = bj.decide(ranks, self.up, can_double=can_double, can_split=can_split,
                          can_surrender=can_surrender,
                          hits_soft_17=rules.dealer_hits_soft_17,
                          dealer_22_pushes=cfg.dealer_22_pushes, free_bet=free_bet,
                          double_after_split=rules.double_after_split)
            if st.plan.play is not None:
                d = st.plan.play(ranks, self.dealer_ranks, can_double, can_split,
                                 can_surrender, d)
            self.add(CONSOLE, PlayerDecision(h.seat, h.num, d), "dec", h.seat, h.num,
                     h.decisions, d)
            h.decisions += 1
            if d == bj.STAND:
                break
            if d == bj.HIT:
                self.deal(h, "hit", h.seat, h.num)
                if bj.is_bust(h.ranks):
                    self.bust(h)
                    break
                continue
            if d == bj.DOUBLE:
                kind = "FREE_DOUBLE" if free_bet and bj.free_double_allowed(ranks) else "DOUBLE"
                h.wagers.append((kind, h.base))
                self.add(RFID, WagerPlaced(h.seat, h.num, kind, h.base), "double_wp",
                         h.seat, h.num)
                self.deal(h, "double", h.seat, h.num)
                if bj.is_bust(h.ranks):
                    self.bust(h)
                break
            if d == bj.SPLIT:
                kind = "FREE_SPLIT" if free_bet and bj.free_split_allowed(ranks) else "SPLIT"
                aces = ranks[0] == "A"
                new = _Hand(h.seat, st.next_hand, h.root, [h.cards.pop()], [(kind, h.base)],
                            split=True, split_aces=aces)
                st.next_hand += 1
                st.hands.append(new)
                h.split = True
                h.split_aces = h.split_aces or aces
                self.facts.seats[h.seat].split = True
                self.add(RFID, WagerPlaced(h.seat, new.num, kind, new.base), "split_wp",
                         h.seat, new.num)
                self.deal(h, "split_card", h.seat, h.num)
                made.append(new)
                if aces:
                    break
                continue
            # SURRENDER (13:69F-2.8)
            h.surrendered = True
            if self.up_ace_or_ten:
                self.deferred.append(h)  # settles when the hole card is revealed
            else:
                self.settle_surrender(h)
            break
        # split hands, the last made first, each right after the hand it came from
        for new in reversed(made):
            self.deal(new, "split_card", new.seat, new.num)
            self.play_hand(new)

    def bust(self, h: _Hand) -> None:
        h.bust = h.settled = True
        for kind, amount in h.wagers:  # a free marker moves no money (settle_free_wager)
            self.money(h.seat, h.num, kind, self.settle_wager(h, kind, amount), "bust",
                       h.seat, h.num)
        self.clear(h, "bust", h.seat, h.num)

    def settle_surrender(self, h: _Hand) -> None:
        stl = bj.settle_surrender(h.base, False, self.rounding)
        self.money(h.seat, h.num, "MAIN", stl, "surr_settle", h.seat, h.num)
        h.settled = True
        self.clear(h, "surr_settle", h.seat, h.num)

    # --- 10: the dealer --------------------------------------------------------------

    def draw_while_needed(self) -> None:
        hs17 = self.rules.dealer_hits_soft_17
        while (bj.dealer_must_draw(self.dealer_ranks, hits_soft_17=hs17)
               and self.dealer_plays_on()):
            self.deal_dealer(True, "dealer_draw")

    def dealer_turn(self) -> None:
        rules = self.rules
        if rules.hole_card == "NONE":
            self.deal_dealer(True, "dealer_second")
            dealer_bj = bj.is_blackjack(self.dealer_ranks)
            self.facts.dealer_blackjack = dealer_bj
            self.settle_insurance(dealer_bj)
        else:
            self.add(CONSOLE, HoleCardRevealed(), "reveal")
            for h in self.deferred:
                self.settle_surrender(h)
        self.mark("dealer_start")
        facts = self.facts
        facts.dealer_two_total = bj.hand_total(self.dealer_ranks[:2])[0]
        bonus = self.bonus_seats()
        facts.bonus_open = bool(bonus)
        if bonus:
            if facts.dealer_two_total >= 17:
                self.settle_bonuses()
            elif self.opts.skip_bonus_third:
                return  # the dealer stops: the hands settle, the bonus wagers go back last
            else:
                self.deal_dealer(True, "dealer_draw")  # 2.25(d): the third card
                self.settle_bonuses()
        self.draw_while_needed()
        total = bj.hand_total(self.dealer_ranks)[0]
        facts.stopped_on_total = (17 <= total <= 21 and not facts.dealer_blackjack
                                  and self.dealer_plays_on())
        if self.opts.extra_dealer_card:
            self.deal_dealer(True, "dealer_extra")
            self.draw_while_needed()

    def settle_bonuses(self) -> None:
        suits = [c.suit for c in self.dealer]
        for st in self.bonus_seats():
            assert st.side is not None
            stl = bj.settle_bonus(st.side[1], self.dealer_ranks[:3], suits[:3],
                                  pay_table=self.bonus_odds, rounding=self.rounding)
            self.money(st.plan.seat, 0, "BONUS", stl, "bonus_settle", st.plan.seat)
            st.side_open = False

    # --- 11: settlement --------------------------------------------------------------

    def settle_wager(self, h: _Hand, kind: str, amount: int) -> Settlement:
        dealer = self.dealer_ranks
        pushes = self.cfg.dealer_22_pushes
        if kind in bj.FREE_MARKERS:  # the house's marker: paid on a win, else no money
            return bj.settle_free_wager(h.ranks, dealer, amount, dealer_22_pushes=pushes)
        return bj.settle_hand(h.ranks, dealer, amount, blackjack_pays=self.bj_ratio,
                              dealer_22_pushes=pushes,
                              player_blackjack_allowed=not (h.split or h.switched),
                              rounding=self.rounding)

    def final_pass(self) -> None:
        """Seats descending, hands ascending: each wager of each live hand once, the
        Push 22 wager with hand 0, then the hand's cards."""
        self.mark("settle_start")
        for s in sorted(self.seats, reverse=True):
            st = self.seats[s]
            self.mark("seat_turn", s)
            for h in sorted(st.hands, key=lambda x: x.num):
                if not h.settled:
                    for kind, amount in h.wagers:
                        self.money(s, h.num, kind, self.settle_wager(h, kind, amount),
                                   "hand_settle", s, h.num, kind)
                    h.settled = True
                    self.facts.final_blocks.append((s, h.num))
                if h.num == 0 and st.side is not None and st.has_open("PUSH22"):
                    stl = bj.settle_push22(st.side[1], self.dealer_ranks)
                    self.money(s, 0, "PUSH22", stl, "p22_settle", s)
                    st.side_open = False
                if not h.cleared:
                    self.clear(h, "clear", s, h.num)
        for st in self.bonus_seats():  # still open: the dealer stopped short of the third card
            assert st.side is not None
            self.add(RFID, WagerReturned(st.plan.seat, 0, "BONUS", st.side[1]),
                     "bonus_settle", st.plan.seat)
            st.side_open = False
        self.mark("settle_end")


def play_round(cfg: TableConfig, shoe: ShoeCursor, round_id: str, dealer_id: str,
               plans: list[SeatPlan], opts: PlayOptions = CLEAN) -> RoundScript:
    """Deal one round from `shoe` (which moves on) for the players of `plans`.
    Raises ShoeEmptyError when the shoe runs out mid-round."""
    return _Round(cfg, shoe, opts).play(round_id, dealer_id, plans)
