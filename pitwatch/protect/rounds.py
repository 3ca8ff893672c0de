"""A table's rounds as the detectors read them, from the engine's fold of its events.

The audit folds each round once (`pitwatch.engine`); `TableReader` watches that fold
(`TableAuditor.watch`, read-only) and keeps, for each completed round: the dealer, the
Hi-Lo true count before the round (the shoe's cards dealt before it, from the table's
card counts and decks), each seat's main wager and the house's result on its hand
wagers, and each player decision with what the player could see then (hand, up card,
the cards not yet seen) and the hole card the record holds. A round cut off (no
RoundEnded before the next round) is dropped, and the shoe's count is not trusted again
until the next ShoeLoaded; nor after a break in the record (the engine's
`counts_known`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from ..blackjack import RANK_VALUES, can_double, is_pair
from ..engine.auditor import Auditor
from ..engine.state import Round, TableState
from ..engine.violation import Violation
from ..events.model import (
    Event,
    PlayerDecision,
    PlayerLeft,
    PlayerSeated,
    RoundEnded,
    RoundStarted,
    Rules,
    ShoeLoaded,
)
from ..events.schema import released_writers
from ..packs.registry import select
from .hilo import TAGS, true_count
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
    #: the device time of its RoundStarted (UTC ms): the shift a hold by shift puts it in
    start_ms: int | None = None


class TableReader:
    """One table's rounds as the engine's fold has them (`TableAuditor.watch`): given
    each event the fold takes, with its round, before the fold applies it. It reads the
    round's state and never changes it: the cards, hands, wagers and settlements are
    the engine's, counted once."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.shoe_id: str | None = None
        #: the shoe's count can be trusted: a ShoeLoaded read, and no round cut off since
        self.counted = False
        self.index = 0
        self.round: RoundView | None = None
        #: who sits where, from the seat events
        self.seat_log = SeatLog()

    def watch(self, ev: Event, r: Round | None) -> RoundView | None:
        """One event the fold takes and its round (None: a table event); the round it
        completes, if any."""
        p = ev.payload
        t = type(p)
        if r is None:
            if t is ShoeLoaded:
                assert isinstance(p, ShoeLoaded)
                self.shoe_id, self.counted = p.shoe_id, True
            elif t is PlayerSeated or t is PlayerLeft:
                assert isinstance(p, PlayerSeated | PlayerLeft)
                self.seat_log.feed(p, self.index)
            return None
        if t is RoundStarted:
            assert isinstance(p, RoundStarted)
            if self.round is not None:  # cut off: its cards are not all known
                self.counted = False
            table = r.table
            known = self.counted and table.counts_known
            self.round = RoundView(
                self.table_id, r.round_id, self.index, p.dealer_id, table.game,
                table.rules, self.shoe_id, _true_count(table) if known else None,
                start_ms=ev.ts)
            self.index += 1
            return None
        view = self.round
        if view is None or view.round_id != r.round_id:
            return None
        if t is PlayerDecision:
            assert isinstance(p, PlayerDecision)
            spot = _spot(r, p)
            if spot is not None:
                view.spots.append(spot)
        elif t is RoundEnded:
            for (seat, _), h in sorted(r.hands.items()):
                sr = view.seats.setdefault(seat, SeatRound(seat))
                main = h.wagers.get("MAIN")
                sr.main += 0 if main is None else main.amount
                sr.house += sum(w.collected - w.paid for k, w in h.wagers.items()
                                if k in HAND_KINDS)
            self.round = None
            return view
        return None


#: each rank's place in a count of card values 1 (ace) .. 10
_VALUE_INDEX: Final = {rank: v - 1 for rank, v in RANK_VALUES.items()}


def _seen(table: TableState) -> list[int]:
    """Cards of each value 1 (ace) .. 10 dealt from the shoe so far."""
    seen = [0] * 10
    at = _VALUE_INDEX.get
    for (rank, _), n in table.counts.items():
        i = at(rank)
        if i is not None:
            seen[i] += n
    return seen


def _true_count(table: TableState) -> float:
    running = sum(TAGS.get(rank, 0) * n for (rank, _), n in table.counts.items())
    return true_count(running, table.decks, sum(table.counts.values()))


def _spot(r: Round, p: PlayerDecision) -> Spot | None:
    """The decision and what the player could see making it; None where the strategy
    detectors do not judge it."""
    h = r.hands.get((p.seat, p.hand))
    up = r.up_card
    if (h is None or p.decision not in PLAY or r.table.game != BLACKJACK or up is None
            or len(h.ranks) < 2):
        return None
    rules = r.rules
    ranks = tuple(h.ranks)
    two = len(ranks) == 2
    # the seat's hands (its splits) and its main wager, in one pass over the round's hands
    family = main = 0
    for (s, _), x in r.hands.items():
        if s == p.seat:
            family += 1
            w = x.wagers.get("MAIN")
            main += 0 if w is None else w.amount
    split_aces = h.split and ranks[0] == "A"
    decks = r.table.decks
    unseen = [decks * (16 if v == 10 else 4) - n
              for v, n in zip(range(1, 11), _seen(r.table), strict=True)]
    hole = (r.dealer_ranks[1] if len(r.dealer_ranks) >= 2 and rules.hole_card != "NONE"
            else None)
    if hole is not None and not r.revealed:
        unseen[RANK_VALUES[hole] - 1] += 1
    return Spot(
        p.seat, p.hand, ranks, up, hole, p.decision,
        can_double=(two and can_double(ranks, rules.double_on)
                    and (not h.split or rules.double_after_split)),
        can_split=(two and is_pair(ranks) and family < rules.max_split_hands
                   and not (split_aces and not rules.resplit_aces)),
        can_surrender=(rules.surrender and two and not h.split
                       and not any(d in PLAY for d in h.decisions)),
        unseen=tuple(max(0, u) for u in unseen),
        wager=main)


class FloorReader:
    """Every table's completed rounds and seat stays, read from an engine's fold:
    `watch` is the auditor's (`Auditor.watch`); `tables` holds each table's rounds."""

    def __init__(self) -> None:
        self.readers: dict[str, TableReader] = {}
        self.tables: dict[str, list[RoundView]] = {}

    def watch(self, ev: Event, r: Round | None) -> None:
        reader = self.readers.get(ev.table_id)
        if reader is None:
            reader = self.readers[ev.table_id] = TableReader(ev.table_id)
            self.tables[ev.table_id] = []
        done = reader.watch(ev, r)
        if done is not None:
            self.tables[ev.table_id].append(done)

    @property
    def seatings(self) -> dict[str, list[Seating]]:
        """Each table's stays at its seats, as its seat events record them."""
        return {t: r.seat_log.seatings for t, r in self.readers.items()}


class ReadFloor(NamedTuple):
    floor: FloorReader
    violations: list[Violation]


def read_floor(events: Iterable[Event]) -> ReadFloor:
    """Events in record order audited (nothing stored) and read from the audit's fold:
    every table's completed rounds and seat stays, and the audit's violations."""
    floor = FloorReader()
    found: list[Violation] = []
    auditor = Auditor(select, found.append, lambda _: None, released=released_writers())
    auditor.watch = floor.watch
    for ev in events:
        auditor.feed(ev)
    auditor.finish()
    return ReadFloor(floor, found)


def rounds_by_table(events: Iterable[Event]) -> dict[str, list[RoundView]]:
    """Every table's completed rounds from events in record order, tables sorted."""
    return dict(sorted(read_floor(events).floor.tables.items()))
