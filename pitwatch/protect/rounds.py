"""A table's rounds as the detectors read them, rebuilt from its events in order.

For each completed round: the dealer, the Hi-Lo true count before the round (every
card of the shoe dealt before it, from its ShoeLoaded and decks), each seat's main
wager and the house's result on its hand wagers, and each player decision with what
the player could see then (hand, up card, the cards not yet seen) and the hole card
the record holds (HoleCardInserted's reader saw it; its CardDealt carries the rank).
A round cut off (no RoundEnded before the next round) is dropped, and the shoe's count
is not trusted again until the next ShoeLoaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from ..blackjack import RANK_VALUES, can_double, is_pair
from ..events.model import (
    CardDealt,
    Event,
    HoleCardRevealed,
    Payload,
    PayoutMade,
    PlayerDecision,
    PlayerLeft,
    PlayerSeated,
    RoundEnded,
    RoundStarted,
    Rules,
    ShoeLoaded,
    TableOpened,
    WagerCollected,
    WagerPlaced,
)
from .hilo import HiLo
from .seating import Seating, SeatLog

#: the wagers a hand's result is made of (insurance and side wagers are left out)
HAND_KINDS: Final = frozenset({"MAIN", "DOUBLE", "SPLIT"})
PLAY: Final = frozenset({"HIT", "STAND", "DOUBLE", "SPLIT", "SURRENDER"})
#: the game whose decisions the strategy detectors judge
BLACKJACK: Final = "BLACKJACK"


@dataclass(frozen=True, slots=True)
class Spot:
    """One player decision and what the player could see when making it."""

    seat: int
    hand: int
    ranks: tuple[str, ...]
    up: str
    #: the dealer's hole card, from the record (None: no hole card yet)
    hole: str | None
    decision: str
    can_double: bool
    can_split: bool
    can_surrender: bool
    #: cards of each value 1 (ace) .. 10 not seen by the player at the decision (the
    #: hole card, not yet turned, among them)
    unseen: tuple[int, ...]
    #: the hand's initial wager (cents)
    wager: int


@dataclass(slots=True)
class SeatRound:
    seat: int
    main: int = 0  # the seat's main wagers (cents)
    house: int = 0  # collected minus paid on its hand wagers (cents)


@dataclass(slots=True)
class RoundView:
    table_id: str
    round_id: str
    #: the round's place in the table's record, 0-based (rounds dropped count too)
    index: int
    dealer_id: str
    game: str
    rules: Rules
    shoe_id: str | None
    #: the Hi-Lo true count before the round's first card; None: the shoe is not known
    true_count: float | None
    seats: dict[int, SeatRound] = field(default_factory=dict)
    spots: list[Spot] = field(default_factory=list)
    #: the shoe's cards before the round are all known (False from a break in the record
    #: to the next ShoeLoaded: the hole-card test does not judge the round's decisions)
    composition_known: bool = True


@dataclass(slots=True)
class _Hand:
    ranks: list[str]
    split: bool = False
    split_aces: bool = False
    decisions: int = 0


class TableReader:
    """Reads one table's payloads in order and yields its completed rounds."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.game = BLACKJACK
        self.rules = Rules()
        self.opened = False
        self.shoe_id: str | None = None
        self.count: HiLo | None = None
        self.full: list[int] = [0] * 10
        self.seen: list[int] = [0] * 10
        self.index = 0
        self.round: RoundView | None = None
        self.hands: dict[tuple[int, int], _Hand] = {}
        self.up: str | None = None
        self.hole: str | None = None
        self.hole_shown = False
        self.pending_split: dict[int, tuple[int, str]] = {}
        #: who sits where, from the seat events
        self.seat_log = SeatLog()

    def feed(self, round_id: str | None, p: Payload) -> RoundView | None:
        """One payload; the round it completes, if any."""
        t = type(p)
        if t is TableOpened:
            assert isinstance(p, TableOpened)
            self.game, self.rules, self.opened = p.game, p.rules, True
        elif t is ShoeLoaded:
            assert isinstance(p, ShoeLoaded)
            self.shoe_id, self.count = p.shoe_id, HiLo(p.decks)
            self.full = [p.decks * (16 if v == 10 else 4) for v in range(1, 11)]
            self.seen = [0] * 10
        elif t is RoundStarted:
            assert isinstance(p, RoundStarted)
            if self.round is not None:  # cut off: its cards are not all known
                self.count = None
            self.round = RoundView(
                self.table_id, round_id or "", self.index, p.dealer_id, self.game,
                self.rules, self.shoe_id, None if self.count is None else self.count.true)
            self.index += 1
            self.hands, self.up, self.hole, self.hole_shown = {}, None, None, False
            self.pending_split = {}
        elif t is PlayerSeated or t is PlayerLeft:
            assert isinstance(p, PlayerSeated | PlayerLeft)
            self.seat_log.feed(p, self.index)
        elif self.round is None:
            return None
        elif t is CardDealt:
            assert isinstance(p, CardDealt)
            self._card(p)
        elif t is WagerPlaced:
            assert isinstance(p, WagerPlaced)
            self._wager(p)
        elif t is PlayerDecision:
            assert isinstance(p, PlayerDecision)
            self._decision(p)
        elif t is PayoutMade or t is WagerCollected:
            assert isinstance(p, PayoutMade | WagerCollected)
            if p.kind in HAND_KINDS:
                sr = self.round.seats.setdefault(p.seat, SeatRound(p.seat))
                sr.house += -p.amount if t is PayoutMade else p.amount
        elif t is HoleCardRevealed:
            self.hole_shown = True
        elif t is RoundEnded:
            done, self.round = self.round, None
            return done
        return None

    def _card(self, p: CardDealt) -> None:
        if self.count is not None:
            self.count.see(p.rank)
        v = RANK_VALUES.get(p.rank)
        if v is not None:
            self.seen[v - 1] += 1
        if p.to == "DEALER":
            if self.up is None:
                self.up = p.rank
            elif self.hole is None and not p.face_up:
                self.hole = p.rank
        elif p.seat is not None and p.hand is not None:
            self.hands.setdefault((p.seat, p.hand), _Hand([])).ranks.append(p.rank)

    def _wager(self, p: WagerPlaced) -> None:
        assert self.round is not None
        if p.kind == "MAIN":
            self.round.seats.setdefault(p.seat, SeatRound(p.seat)).main += p.amount
        elif p.kind == "SPLIT" and p.seat in self.pending_split:
            _, card = self.pending_split.pop(p.seat)
            self.hands[(p.seat, p.hand)] = _Hand([card], split=True, split_aces=card == "A")

    def _decision(self, p: PlayerDecision) -> None:
        assert self.round is not None
        h = self.hands.get((p.seat, p.hand))
        if h is None or p.decision not in PLAY:
            return
        if self.game == BLACKJACK and self.up is not None and len(h.ranks) >= 2:
            self.round.spots.append(self._spot(p, h))
        h.decisions += 1
        if p.decision == "SPLIT" and len(h.ranks) == 2:
            card = h.ranks.pop()
            h.split = True
            h.split_aces = h.split_aces or card == "A"
            self.pending_split[p.seat] = (p.hand, card)

    def _spot(self, p: PlayerDecision, h: _Hand) -> Spot:
        assert self.round is not None and self.up is not None
        r = self.rules
        ranks = tuple(h.ranks)
        two = len(ranks) == 2
        family = sum(1 for (s, _) in self.hands if s == p.seat)
        unseen = [f - s for f, s in zip(self.full, self.seen, strict=True)]
        if self.hole is not None and not self.hole_shown:
            unseen[RANK_VALUES[self.hole] - 1] += 1
        sr = self.round.seats.get(p.seat)
        return Spot(
            p.seat, p.hand, ranks, self.up, self.hole, p.decision,
            can_double=(two and can_double(ranks, r.double_on)
                        and (not h.split or r.double_after_split)),
            can_split=(two and is_pair(ranks) and family < r.max_split_hands
                       and not (h.split_aces and not r.resplit_aces)),
            can_surrender=(r.surrender and two and h.decisions == 0 and not h.split),
            unseen=tuple(max(0, u) for u in unseen),
            wager=0 if sr is None else sr.main)


def read_table(table_id: str, payloads: Iterable[tuple[str | None, Payload]]
               ) -> Iterator[RoundView]:
    """The completed rounds of one table's (round id, payload) stream, in order."""
    reader = TableReader(table_id)
    for round_id, p in payloads:
        done = reader.feed(round_id, p)
        if done is not None:
            yield done


class FloorReader:
    """Reads events of any tables in record order; `tables` holds each table's
    completed rounds."""

    def __init__(self) -> None:
        self.readers: dict[str, TableReader] = {}
        self.tables: dict[str, list[RoundView]] = {}

    def feed(self, ev: Event) -> None:
        reader = self.readers.get(ev.table_id)
        if reader is None:
            reader = self.readers[ev.table_id] = TableReader(ev.table_id)
            self.tables[ev.table_id] = []
        done = reader.feed(ev.round_id, ev.payload)
        if done is not None:
            self.tables[ev.table_id].append(done)

    @property
    def seatings(self) -> dict[str, list[Seating]]:
        """Each table's stays at its seats, as its seat events record them."""
        return {t: r.seat_log.seatings for t, r in self.readers.items()}


def read_floor(events: Iterable[Event]) -> FloorReader:
    """Every table's completed rounds and seat stays from events in record order."""
    floor = FloorReader()
    for ev in events:
        floor.feed(ev)
    return floor


def rounds_by_table(events: Iterable[Event]) -> dict[str, list[RoundView]]:
    """Every table's completed rounds from events in record order, tables sorted."""
    return dict(sorted(read_floor(events).tables.items()))
