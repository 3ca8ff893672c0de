"""A round's state: a deterministic fold over its events.

`Round.apply(event)` moves the state on by one event; the checks read the state as it
was before the event. Nothing here reads a clock, draws a random number or does I/O,
so the same events always give the same state. The state is mutated in place for
speed; it is owned by one table's auditor and rebuilt from the events on replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..blackjack import (
    FREE_MARKERS,
    awaits_dealer,
    dealer_must_draw,
    dealer_plays_on,
    hand_total,
    is_blackjack,
    is_ten_value,
)
from ..events.model import (
    CardDealt,
    CardsCleared,
    Event,
    HoleCardChecked,
    HoleCardInserted,
    HoleCardRevealed,
    InsuranceOffered,
    PayoutMade,
    PlayerDecision,
    RoundStarted,
    Rules,
    SwitchOffered,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)

#: Wagers that belong to a hand and share its outcome.
HAND_KINDS = frozenset({"MAIN", "SPLIT", "DOUBLE", "FREE_DOUBLE", "FREE_SPLIT"})
#: Free Bet Blackjack's free doubles and splits: the house's markers, never the player's
#: money (one contract, `pitwatch.blackjack.settle_free_wager`).
FREE_KINDS = FREE_MARKERS
#: Wagers that open a hand.
BASE_KINDS = frozenset({"MAIN", "SPLIT", "FREE_SPLIT"})


@dataclass(slots=True)
class TableState:
    """What outlives a round: the posted rules, the game and the shoe's card counts."""

    table_id: str
    jurisdiction: str = "OTHER"
    game: str = "OTHER"
    rules: Rules = field(default_factory=Rules)
    opened: bool = False
    decks: int = 0
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    #: False from a break in the record (docs/events.md, "The record") to the next
    #: ShoeLoaded: cards of this shoe may be missing, so its counts decide nothing
    counts_known: bool = True


@dataclass(slots=True)
class Wager:
    kind: str
    amount: int
    event_id: str
    paid: int = 0
    collected: int = 0
    returned: int = 0
    settlements: int = 0

    @property
    def settled(self) -> bool:
        return self.settlements > 0


@dataclass(slots=True)
class Hand:
    seat: int
    hand: int
    ranks: list[str] = field(default_factory=list)
    suits: list[str] = field(default_factory=list)
    wagers: dict[str, Wager] = field(default_factory=dict)
    decisions: list[str] = field(default_factory=list)
    split: bool = False  # a hand made by or from a split: no blackjack
    switched: bool = False  # Blackjack Switch: a switched A+10 is 21, not blackjack
    surrendered: bool = False
    even_money: bool = False
    cleared: bool = False

    @property
    def total(self) -> int:
        return hand_total(self.ranks)[0]

    @property
    def bust(self) -> bool:
        return hand_total(self.ranks)[0] > 21

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.ranks, split_hand=self.split, switched=self.switched)

    @property
    def base(self) -> Wager | None:
        w = self.wagers
        return w.get("MAIN") or w.get("SPLIT") or w.get("FREE_SPLIT")

    @property
    def live(self) -> bool:
        """Still needs the dealer's final hand to be settled."""
        return awaits_dealer(bust=self.bust, blackjack=self.blackjack,
                             surrendered=self.surrendered, even_money=self.even_money,
                             settled=self.base is not None and self.base.settled)


@dataclass(slots=True)
class EarlySettlement:
    """A hand's wager settled before the record decided its outcome: its money is judged
    once the outcome is known (docs/procedure.md, "Readings where the texts are
    silent"). `seen` is what the table knew then: the dealer's cards, whether they were
    revealed, whether the reader had answered."""

    hand: Hand
    wager: Wager
    event: tuple[str, int]  # its id and ts
    seen: tuple[int, bool, bool]


class Round:
    """One round of one table, folded from its events."""

    __slots__ = (
        "collected",
        "cut",
        "dealer_done",
        "dealer_id",
        "dealer_ranks",
        "dealer_suits",
        "early",
        "ended",
        "events",
        "first_card",
        "further_card",
        "hands",
        "hole_inserted",
        "initial_complete",
        "insurance_offered",
        "last_event_id",
        "last_ts",
        "paid",
        "peeked",
        "pending_split",
        "raised",
        "returned",
        "revealed",
        "round_id",
        "seats",
        "side",
        "started",
        "started_ts",
        "surrendered",
        "switch_offered",
        "table",
        "violations",
        "void_cause",
        "voided",
        "wagered",
    )

    def __init__(self, table: TableState, round_id: str) -> None:
        self.table = table
        self.round_id = round_id
        self.dealer_id = ""
        self.seats: tuple[int, ...] = ()
        self.started = False
        self.started_ts = 0
        self.last_ts = 0
        self.last_event_id = ""
        self.events = 0
        self.hands: dict[tuple[int, int], Hand] = {}
        self.side: dict[tuple[int, int, str], Wager] = {}
        self.dealer_ranks: list[str] = []
        self.dealer_suits: list[str] = []
        self.first_card = False
        self.initial_complete = False
        self.further_card = False
        #: the hole card is known to the table: the reader answered (HoleCardInserted), or
        #: at a PEEK table the dealer peeked (HoleCardChecked, and then `peeked`)
        self.hole_inserted = False
        self.peeked = False
        self.revealed = False  # the dealer's second card is known to all
        self.insurance_offered = False
        self.switch_offered = False
        self.dealer_done = False
        self.ended = False
        #: a break in the record cut through the round: nothing after it is judged
        self.cut = False
        self.pending_split: dict[int, int] = {}
        #: violations raised in the round, (code, seat, hand) -> violation id
        self.raised: dict[tuple[str, int | None, int | None], str] = {}
        self.wagered = self.paid = self.collected = self.returned = 0
        self.violations = 0
        #: wagers that should not stand, by (seat, hand, kind): the amount not yet handed back
        self.voided: dict[tuple[int, int, str], int] = {}
        #: what voided them: (code, violation id) of the finding on the wager
        self.void_cause: dict[tuple[int, int, str], tuple[str, str]] = {}
        self.surrendered: list[Hand] = []
        #: hand wagers settled before their outcome was known, until it is
        self.early: list[EarlySettlement] = []

    # --- questions the checks ask ------------------------------------------------------

    @property
    def rules(self) -> Rules:
        return self.table.rules

    @property
    def up_card(self) -> str | None:
        return self.dealer_ranks[0] if self.dealer_ranks else None

    @property
    def up_ace(self) -> bool:
        return bool(self.dealer_ranks) and self.dealer_ranks[0] == "A"

    @property
    def up_ace_or_ten(self) -> bool:
        return bool(self.dealer_ranks) and (self.dealer_ranks[0] == "A"
                                            or is_ten_value(self.dealer_ranks[0]))

    @property
    def dealer_blackjack(self) -> bool:
        return len(self.dealer_ranks) >= 2 and is_blackjack(self.dealer_ranks[:2])

    @property
    def dealer_total(self) -> int:
        return hand_total(self.dealer_ranks)[0]

    @property
    def dealer_final(self) -> bool:
        """The dealer's hand is complete: cleared or the round ended, or open on a
        blackjack or a total the posted soft-17 rule stands on."""
        d = self.dealer_ranks
        if self.dealer_done:
            return True
        if not self.revealed or len(d) < 2:
            return False
        return self.dealer_blackjack or not dealer_must_draw(
            d, hits_soft_17=self.table.rules.dealer_hits_soft_17)

    @property
    def seen(self) -> tuple[int, bool, bool]:
        """What the table knows of the dealer's hand: cards, revealed, reader answered."""
        return len(self.dealer_ranks), self.revealed, self.hole_inserted

    def outcome_known(self, h: Hand) -> bool:
        """Whether the record decides the hand's outcome now: a bust; the dealer's hand
        final; once the hole card is known (revealed, read by the reader, or peeked at a
        PEEK table), a dealer blackjack decides every hand and no dealer blackjack
        decides a player blackjack; against a 2-9 up card a player blackjack at once."""
        if h.bust or self.dealer_final:
            return True
        d = self.dealer_ranks
        if len(d) >= 2 and (self.revealed or self.hole_inserted
                            or self.table.rules.hole_card == "PEEK"):
            return self.dealer_blackjack or h.blackjack
        return h.blackjack and bool(d) and not self.up_ace_or_ten

    @property
    def bonus_due(self) -> bool:
        """13:69F-2.25(e): bonus wagers are due once the dealer's two cards are seen to
        total 17 or more, or the third card is dealt."""
        d = self.dealer_ranks
        return self.revealed and (len(d) >= 3 or (len(d) == 2 and hand_total(d)[0] >= 17))

    def main_of(self, seat: int, hand: int) -> Wager | None:
        h = self.hands.get((seat, hand))
        return None if h is None else h.wagers.get("MAIN")

    def seat_has(self, seat: int, kind: str) -> bool:
        return any(k[0] == seat and k[2] == kind for k in self.side) or any(
            s == seat and kind in h.wagers for (s, _), h in self.hands.items())

    def wager_for(self, seat: int, hand: int, kind: str) -> Wager | None:
        if kind in HAND_KINDS:
            h = self.hands.get((seat, hand))
            return None if h is None else h.wagers.get(kind)
        return self.side.get((seat, hand, kind))

    def standing_with(self, p: WagerPlaced) -> int:
        """A wager's amount once `p` is added to what already stands on its spot: a
        wager placed in two stacks is one wager of their sum."""
        prior = self.wager_for(p.seat, p.hand, p.kind)
        return p.amount + (prior.amount if prior is not None and not prior.settled else 0)

    def open_side(self, kind: str) -> list[tuple[tuple[int, int, str], Wager]]:
        return [(k, w) for k, w in self.side.items() if k[2] == kind and not w.settled]

    def void_left(self, seat: int, hand: int, kind: str) -> int:
        """What of a void wager on this spot has not been handed back."""
        return self.voided.get((seat, hand, kind), 0)

    def is_void_settlement(self, p: object) -> bool:
        """Money on a spot that holds only a void wager (nothing standing there): the
        void wager paid, collected or returned."""
        if type(p) not in (PayoutMade, WagerCollected, WagerReturned):
            return False
        q: PayoutMade | WagerCollected | WagerReturned = p  # type: ignore[assignment]
        if self.void_left(q.seat, q.hand, q.kind) <= 0:
            return False
        w = self.wager_for(q.seat, q.hand, q.kind)
        return w is None or w.settled

    def is_void_handback(self, p: object) -> bool:
        """A WagerReturned that hands back (part of) a void wager: money the checks have
        nothing to say about, since the wager was judged when it was placed."""
        if type(p) is not WagerReturned:
            return False
        left = self.voided.get((p.seat, p.hand, p.kind), 0)
        return 0 < p.amount <= left

    def needs_dealer_cards(self) -> bool:
        """Whether the dealer must complete the hand (`dealer_plays_on`): a hand still in
        play, or a Push 22 wager still open."""
        return dealer_plays_on(hand_in_play=any(h.live for h in self.hands.values()),
                               push22_open=bool(self.open_side("PUSH22")))

    def void_standing(self, seat: int, hand: int, kind: str, cause: tuple[str, str]) -> None:
        """A standing wager found void once its stacks were all in (a minimum judged at
        the first card): it leaves the round's wagers and is to be handed back."""
        key = (seat, hand, kind)
        w = self.wager_for(seat, hand, kind)
        if w is None or w.settled:
            return
        if kind in HAND_KINDS:
            h = self.hands[(seat, hand)]
            del h.wagers[kind]
            if not h.wagers:
                del self.hands[(seat, hand)]
        else:
            del self.side[key]
        self.voided[key] = self.voided.get(key, 0) + w.amount
        self.void_cause.setdefault(key, cause)

    # --- the fold ------------------------------------------------------------------------

    def apply(self, ev: Event, void: bool = False,
              cause: tuple[str, str] | None = None) -> None:
        """Move the state on by one event. A void event (a wager or decision that should
        not stand, or one the state cannot admit) is counted but changes nothing; a void
        wager is remembered with `cause`, the (code, violation id) that voided it."""
        self.events += 1
        self.last_ts = ev.ts
        self.last_event_id = ev.event_id
        if self.early:  # the checks of this event judged those now decided
            self.early = [e for e in self.early if not self.outcome_known(e.hand)]
        p = ev.payload
        if void:
            if type(p) is WagerPlaced:
                if p.kind not in FREE_KINDS:
                    self.wagered += p.amount
                key = (p.seat, p.hand, p.kind)
                self.voided[key] = self.voided.get(key, 0) + p.amount
                if cause is not None:
                    self.void_cause.setdefault(key, cause)
            return
        t = type(p)
        if t is CardDealt:
            self._card(p)  # type: ignore[arg-type]
        elif t is WagerPlaced:
            self._wager(ev, p)  # type: ignore[arg-type]
        elif t is PayoutMade or t is WagerCollected or t is WagerReturned:
            self._settle(p)  # type: ignore[arg-type]
        elif t is PlayerDecision:
            self._decision(p)  # type: ignore[arg-type]
        elif t is RoundStarted:
            self.started = True
            self.dealer_id = p.dealer_id  # type: ignore[union-attr]
            self.seats = p.seats  # type: ignore[union-attr]
            self.started_ts = ev.ts
        elif t is HoleCardInserted:
            self.hole_inserted = True
        elif t is HoleCardChecked:
            self.hole_inserted = self.peeked = True
        elif t is HoleCardRevealed:
            self.revealed = True
        elif t is InsuranceOffered:
            self.insurance_offered = True
        elif t is SwitchOffered:
            self.switch_offered = True
        elif t is CardsCleared:
            p2: CardsCleared = p  # type: ignore[assignment]
            if p2.seat is None:
                self.dealer_done = True
            else:
                h = self.hands.get((p2.seat, p2.hand or 0))
                if h is not None:
                    h.cleared = True
        else:  # RoundEnded
            self.ended = True
            self.dealer_done = True

    def _card(self, p: CardDealt) -> None:
        counts = self.table.counts
        key = (p.rank, p.suit)
        counts[key] = counts.get(key, 0) + 1
        if not self.first_card:
            self.first_card = True
        if p.to == "DEALER":
            self.dealer_ranks.append(p.rank)
            self.dealer_suits.append(p.suit)
            n = len(self.dealer_ranks)
            if (n == 2 and self.table.rules.hole_card == "NONE") or n > 2:
                self.revealed = True  # a third card shows the hole card turned over
        else:
            h = self.hands.get((p.seat or 0, p.hand or 0))
            if h is None:
                return
            if self.initial_complete:
                self.further_card = True
            h.ranks.append(p.rank)
            h.suits.append(p.suit)
        if not self.initial_complete:
            self.initial_complete = bool(self.dealer_ranks) and all(
                len(h.ranks) >= 2 for h in self.hands.values())

    def _wager(self, ev: Event, p: WagerPlaced) -> None:
        if p.kind not in FREE_KINDS:  # a marker is not money
            self.wagered += p.amount
        w = Wager(p.kind, p.amount, ev.event_id)
        if p.kind in HAND_KINDS:
            key = (p.seat, p.hand)
            h = self.hands.get(key)
            if h is None:
                h = self.hands[key] = Hand(p.seat, p.hand)
                if p.kind in BASE_KINDS and p.kind != "MAIN":  # a split: take the pair's card
                    parent = self.hands.get((p.seat, self.pending_split.pop(p.seat, 0)))
                    h.split = True
                    if parent is not None:
                        parent.split = True
                        if len(parent.ranks) >= 2:
                            h.ranks.append(parent.ranks.pop())
                            h.suits.append(parent.suits.pop())
            prior = h.wagers.get(p.kind)
            if prior is not None and not prior.settled:  # a second stack: one wager
                prior.amount += p.amount
            else:
                h.wagers[p.kind] = w
        else:
            key3 = (p.seat, p.hand, p.kind)
            prior = self.side.get(key3)
            if prior is not None and not prior.settled:
                prior.amount += p.amount
            else:
                self.side[key3] = w

    def _settle(self, p: PayoutMade | WagerCollected | WagerReturned) -> None:
        key = (p.seat, p.hand, p.kind)
        if self.is_void_handback(p):
            self.returned += p.amount
            self.voided[key] -= p.amount
            return
        if self.is_void_settlement(p):  # judged by VOID_WAGER_SETTLED: dealt with now
            self.voided[key] = 0
        w = self.wager_for(p.seat, p.hand, p.kind)
        marker = p.kind in FREE_KINDS and type(p) is not PayoutMade
        if type(p) is PayoutMade:
            self.paid += p.amount  # a marker's win is paid in real money
        elif marker:
            pass  # a marker taken back is not money (PAYOUT_WRONG says it moved at all)
        elif type(p) is WagerCollected:
            self.collected += p.amount
        else:
            self.returned += p.amount
        if w is None:
            return
        if p.kind in HAND_KINDS and not w.settled:
            h = self.hands[(p.seat, p.hand)]
            if not (h.surrendered or h.even_money or self.outcome_known(h)):
                self.early.append(EarlySettlement(
                    h, w, (self.last_event_id, self.last_ts), self.seen))
        w.settlements += 1
        if type(p) is PayoutMade:
            w.paid += p.amount
        elif type(p) is WagerCollected:
            w.collected += p.amount
        else:
            w.returned += p.amount

    def _decision(self, p: PlayerDecision) -> None:
        h = self.hands.get((p.seat, p.hand))
        if h is None:
            return
        h.decisions.append(p.decision)
        d = p.decision
        if d == "SPLIT":
            self.pending_split[p.seat] = p.hand
        elif d == "SURRENDER":
            h.surrendered = True
            self.surrendered.append(h)
        elif d == "EVEN_MONEY":
            h.even_money = True
        elif d == "SWITCH":
            self.switch_offered = True  # a switch shows it was offered (say so: a check)
            other = self.hands.get((p.seat, 1 - p.hand))
            if other is not None and len(h.ranks) >= 2 and len(other.ranks) >= 2:
                h.ranks[1], other.ranks[1] = other.ranks[1], h.ranks[1]
                h.suits[1], other.suits[1] = other.suits[1], h.suits[1]
                h.switched = other.switched = True
