"""Simulated players and dealers for game protection (docs/analytics.md).

Each profile is deterministic per seed: its randomness is a `random.Random` made from
the seed and the seat, so a session is dealt the same every time. The profiles:

- honest bettors: `flat`, `random` sizes, and progressions after a win (`paroli`) or
  after a loss (`martingale`); they play basic strategy with a few mistakes (a share
  of decisions replaced by another legal play, half of them "never bust": standing
  on a stiff), which never depend on the count or the hole card;
- Hi-Lo counters: a bet ramp of 1 to `top` units by true count (estimated as a player
  does: running count over the decks left, to the half deck), a camouflage share of
  rounds bet at random within the ramp, and index plays (a subset of the
  Illustrious 18, Schlesinger's *Blackjack Attack*);
- a hole-card player: plays best knowing the dealer's two cards whenever the dealer
  flashes the hole card (a share of the table's rounds), else basic strategy;
- a dealer with an error rate (the per-round chance of an error, for the dealer error
  rate's bench).

`SimTable` deals a table's rounds for such players with the simulator's own dealing
(producers/dealing.py), each seat a player, and returns the steps (for events) and
the truth: each seat's profile.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from pitwatch import blackjack as bj
from pitwatch.events.model import (
    CardDealt,
    Event,
    PayoutMade,
    PlayerLeft,
    PlayerSeated,
    RoundEnded,
    Rules,
    ShoeLoaded,
    TableOpened,
    WagerCollected,
)
from pitwatch.protect.expectations import against_known
from pitwatch.protect.hilo import CARDS_PER_DECK, HiLo

from .betting import SeatPlan, chips
from .dealing import ShoeCursor, ShoeEmptyError, play_round
from .devices import TableDevices
from .floor import NJ_BLACKJACK, TableConfig
from .script import CONSOLE, SHOE, Step
from .table import OPENING_MS, ROUND_BUDGET_MS, SLOT_MS, epoch_ms

HONEST: Final = ("flat", "random", "paroli", "martingale")
#: a counter's index plays: (hand total, soft, up card value (ace 1), play, from TC)
INDEX_PLAYS: Final = (
    (16, False, 10, bj.STAND, 0.0),
    (15, False, 10, bj.STAND, 4.0),
    (12, False, 3, bj.STAND, 2.0),
    (12, False, 2, bj.STAND, 3.0),
    (11, False, 1, bj.DOUBLE, 1.0),
    (10, False, 10, bj.DOUBLE, 4.0),
    (9, False, 2, bj.DOUBLE, 1.0),
    (9, False, 7, bj.DOUBLE, 3.0),
    (13, False, 2, bj.HIT, -1.0),  # below -1: hit 13 against a 2
)
MISTAKE_RATE: Final = 0.03
TABLE_MIN_UNITS: Final = 1


def _legal(can_double: bool, can_split: bool, can_surrender: bool) -> list[str]:
    out = [bj.HIT, bj.STAND]
    if can_double:
        out.append(bj.DOUBLE)
    if can_split:
        out.append(bj.SPLIT)
    if can_surrender:
        out.append(bj.SURRENDER)
    return out


@dataclass(slots=True)
class Player:
    """One seat's player: how they bet and how they play."""

    profile: str
    rng: random.Random
    #: counters: the top of the ramp in units, and the share of rounds bet at random
    top: int = 8
    camouflage: float = 0.0
    mistakes: float = MISTAKE_RATE
    #: the last round's result for the player (cents; + won), for the progressions
    last: int = 0
    units: int = 1
    #: set by the table each round: the hole card is flashed to this player
    sees_hole: bool = False
    #: the table's posted rules (set by the table)
    rules: Rules = field(default_factory=Rules)
    count: HiLo | None = field(default=None, repr=False)

    # --- betting ---------------------------------------------------------------------

    def estimated_true(self) -> float:
        """The true count as a player reckons it: decks left to the half deck."""
        c = self.count
        if c is None:
            return 0.0
        left = max(0.5, round(2 * (c.decks * CARDS_PER_DECK - c.seen) / CARDS_PER_DECK) / 2)
        return c.running / left

    def bet_units(self) -> int:
        p = self.profile
        if p == "random":
            return self.rng.choice((1, 1, 2, 2, 3, 4, 5))
        if p == "paroli":  # double after a win, three wins at most, then back to one
            self.units = self.units * 2 if self.last > 0 and self.units < 4 else 1
            return self.units
        if p == "martingale":  # double after a loss, up to 8 units
            self.units = min(8, self.units * 2) if self.last < 0 else 1
            return self.units
        if p == "counter":
            if self.rng.random() < self.camouflage:
                return self.rng.randint(1, self.top)
            tc = math.floor(self.estimated_true())
            return max(1, min(self.top, round(1 + (tc - 1) * (self.top - 1) / 4)))
        return 1  # flat, holecard

    # --- playing ---------------------------------------------------------------------

    def play(self, ranks: Sequence[str], dealer: Sequence[str], can_double: bool,
             can_split: bool, can_surrender: bool, basic: str) -> str:
        legal = _legal(can_double, can_split, can_surrender)
        if self.profile == "holecard" and self.sees_hole and len(dealer) >= 2:
            ex = against_known((dealer[0], dealer[1]), self.rules.dealer_hits_soft_17)
            return max(legal, key=lambda a: (ex.action(a, ranks, self.rules), a == basic))
        if self.profile == "counter":
            total, soft = bj.hand_total(ranks)
            up = bj.rank_value(dealer[0])
            tc = self.estimated_true()
            for t, s, u, play, index in INDEX_PLAYS:
                if (total, soft, up) == (t, s, u) and play in legal:
                    if play == bj.HIT:
                        return bj.HIT if tc < index else basic
                    return play if tc >= index else basic
            return basic
        if self.rng.random() < self.mistakes:
            total, _ = bj.hand_total(ranks)
            if 12 <= total <= 16 and self.rng.random() < 0.5:
                return bj.STAND  # never bust
            others = [a for a in legal if a != basic]
            return self.rng.choice(others) if others else basic
        return basic


def make_player(profile: str, seed: int, seat: int, table: int) -> Player:
    """A player of `profile`: flat, random, paroli, martingale, counter-8, counter-8-camo
    (30% of bets at random), counter-8-camoNN (NN% of bets at random), counter-4,
    holecard."""
    rng = random.Random(f"pitwatch-players/{seed}/{table}/{seat}/{profile}")
    if profile.startswith("counter"):
        parts = profile.split("-")
        camo = parts[-1].removeprefix("camo") if parts[-1].startswith("camo") else None
        if camo is not None and camo and not (camo.isdigit() and int(camo) <= 100):
            raise ValueError(f"no player profile {profile!r}: camoNN takes a percentage")
        return Player("counter", rng, top=int(parts[1]),
                      camouflage=0.0 if camo is None else 0.3 if not camo else int(camo) / 100,
                      mistakes=0.0)
    if profile == "holecard":
        return Player("holecard", rng, mistakes=0.0)
    if profile not in HONEST:
        raise ValueError(f"no player profile {profile!r}")
    return Player(profile, rng)


@dataclass(frozen=True, slots=True)
class DealerProfile:
    """A dealer: the chance a round they deal carries an error."""

    dealer_id: str
    error_rate: float

    def error_rounds(self, rounds: int, rng: random.Random) -> list[int]:
        """Which of `rounds` rounds (0-based) carry an error: each independently with
        the dealer's rate, drawn as geometric gaps (as many draws as errors)."""
        out: list[int] = []
        p = self.error_rate
        if p <= 0.0:
            return out
        log_q = math.log1p(-p) if p < 1.0 else -math.inf
        at = -1
        while True:
            at += 1 if p >= 1.0 else 1 + int(math.log(1.0 - rng.random()) / log_q)
            if at >= rounds:
                return out
            out.append(at)


class SimTable:
    """One table of profiled players (seat -> player), dealing `rounds` rounds.

    `flash` is the share of rounds the dealer exposes the hole card (to the hole-card
    players at the table). The table is an NJ blackjack table with card reader.

    With `seated`, the console records who sits where (schema version 6's seat
    events): each player seated after the opening (odd seats a rated player's loyalty
    id, even seats an anonymous session id) and leaving at the end (`closing`).
    Without it the table's events are those it always dealt."""

    def __init__(self, index: int, seed: int, players: dict[int, Player], *,
                 flash: float = 0.0, variant: int | None = None,
                 dealer_every: int = 40, seated: bool = False) -> None:
        name, rules = NJ_BLACKJACK[(index if variant is None else variant) % len(NJ_BLACKJACK)]
        self.cfg = TableConfig(index, f"SIM-BJ-{index:05d}", "NJ", "BLACKJACK", name, rules)
        self.players = dict(sorted(players.items()))
        for p in self.players.values():
            p.rules = rules
        self.flash = flash
        self.dealer_every = dealer_every
        self.seated = seated
        base = f"pitwatch-players/{seed}/{index}"
        self.shoe_rng = random.Random(base + "/shoes")
        self.flash_rng = random.Random(base + "/flash")
        self.shoes = 0
        self.shoe = self._shuffle()

    def _shuffle(self) -> ShoeCursor:
        self.shoes += 1
        shoe = ShoeCursor(bj.Shoe.shuffled(self.cfg.rules.decks, self.shoe_rng),
                          f"{self.cfg.table_id}-S{self.shoes:04d}")
        self.count = HiLo(shoe.decks)  # every player sees the same cards
        for p in self.players.values():
            p.count = self.count
        return shoe

    def truth(self) -> list[dict[str, object]]:
        """Who sat where: each seat's profile (the simulator's ground truth), and with
        `seated` the player id its seat events name."""
        return [{"table_id": self.cfg.table_id, "seat": s, "profile": p.profile,
                 "top": p.top, "camouflage": p.camouflage, "flash": self.flash,
                 **(dict(zip(("player_id", "player_kind"), self.player(s), strict=True))
                    if self.seated else {})}
                for s, p in self.players.items()]

    def player(self, seat: int) -> tuple[str, str]:
        """The (player id, kind) the seat events give the seat's player: a loyalty id
        at odd seats, an anonymous session id at even ones."""
        if seat % 2:
            return f"LOYAL-{self.cfg.index:05d}-{seat}", "RATED"
        return f"{self.cfg.table_id}/ANON/{seat}", "ANONYMOUS"

    def closing(self) -> list[Step]:
        """With `seated`: every player leaves (after the last round)."""
        if not self.seated:
            return []
        return [Step(CONSOLE, PlayerLeft(s), ("left",)) for s in self.players]

    def dealer_id(self, k: int) -> str:
        return f"SD{self.cfg.index:05d}-{(k - 1) // self.dealer_every + 1:03d}"

    def opening(self) -> list[Step]:
        cfg = self.cfg
        seats = [Step(CONSOLE, PlayerSeated(s, *self.player(s)), ("seated",))
                 for s in self.players] if self.seated else []
        return [Step(CONSOLE, TableOpened(cfg.jurisdiction, cfg.game, cfg.rules), ("open",)),
                Step(SHOE, ShoeLoaded(self.shoe.shoe_id, self.shoe.decks), ("shoe",)),
                *seats]

    def rounds(self, n: int) -> Iterator[tuple[str, list[Step]]]:
        """(round id, steps) of rounds 1..n, a ShoeLoaded step first where the shoe
        changes; the opening is `opening()`."""
        cfg, unit = self.cfg, self.cfg.rules.min_wager
        cap = chips(cfg.rules.max_wager, cfg.rules.chip_unit)
        for k in range(1, n + 1):
            pre: list[Step] = []
            if self.shoe.cut_card_reached:
                self.shoe = self._shuffle()
                pre.append(Step(SHOE, ShoeLoaded(self.shoe.shoe_id, self.shoe.decks)))
            flashed = self.flash > 0 and self.flash_rng.random() < self.flash
            plans = []
            for seat, p in self.players.items():
                p.sees_hole = flashed
                plans.append(SeatPlan(seat, min(cap, unit * p.bet_units()), 0, False, False,
                                      (0,), p.play))
            round_id = f"{cfg.table_id}-{k:06d}"
            pos = self.shoe.pos
            try:
                script = play_round(cfg, self.shoe, round_id, self.dealer_id(k), plans)
            except ShoeEmptyError:
                self.shoe.pos = pos
                self.shoe = self._shuffle()
                pre.append(Step(SHOE, ShoeLoaded(self.shoe.shoe_id, self.shoe.decks)))
                script = play_round(cfg, self.shoe, round_id, self.dealer_id(k), plans)
            self._after(script.steps)
            yield round_id, pre + script.steps

    def _after(self, steps: list[Step]) -> None:
        """The players see every card of the round and their own result."""
        won = dict.fromkeys(self.players, 0)
        count = self.count
        for s in steps:
            p = s.payload
            t = type(p)
            if t is CardDealt:
                assert isinstance(p, CardDealt)
                count.see(p.rank)
            elif t is PayoutMade:
                assert isinstance(p, PayoutMade)
                won[p.seat] += p.amount
            elif t is WagerCollected:
                assert isinstance(p, WagerCollected)
                won[p.seat] -= p.amount
            elif t is RoundEnded:
                break
        for seat, pl in self.players.items():
            pl.last = won[seat]


def events(table: SimTable, rounds: int, seed: int, *, keep_raw: bool = False) -> list[Event]:
    """The table's rounds as events from its devices (unsigned), one round a slot. With
    `keep_raw` each event carries its Avro bytes (`TableDevices`'s `keep_raw`), so an
    audit in the same process hashes them without encoding it again."""
    base = f"pitwatch-players/{seed}/{table.cfg.index}"
    start = epoch_ms(seed)
    devices = TableDevices(table.cfg.table_id, random.Random(base + "/ids"),
                           random.Random(base + "/clock"), start, keep_raw=keep_raw)
    out = devices.render(table.opening(), None)
    for k, (round_id, steps) in enumerate(table.rounds(rounds)):
        slot = start + OPENING_MS + k * SLOT_MS
        shoes = [s for s in steps if type(s.payload) is ShoeLoaded]
        if shoes:
            out.extend(devices.render(shoes, None, not_before=slot))
        body = [s for s in steps if type(s.payload) is not ShoeLoaded]
        out.extend(devices.render(body, round_id, not_before=slot, budget_ms=ROUND_BUDGET_MS))
    closing = table.closing()
    if closing:
        out.extend(devices.render(closing, None, not_before=start + OPENING_MS
                                  + rounds * SLOT_MS))
    return out
