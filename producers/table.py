"""One table of the floor, round after round: its shoe, its players, its faults.

A table is independent of the others: its random sources are derived from the seed
and its place on the floor, so it deals the same rounds whatever else the floor holds.
Each round is dealt clean first; when the round is to carry a fault, one is chosen
among those whose preconditions the round meets (the least injected so far at this
table first, and of those the one least often possible), the script is edited (or
the round dealt again, for the faults that change the play), and the round is
rendered into events.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from pitwatch import blackjack as bj
from pitwatch.events.model import CardDealt, Event, ShoeLoaded, TableOpened

from .betting import draw_plans
from .dealing import CLEAN, PlayOptions, ShoeCursor, ShoeEmptyError, play_round
from .devices import TableDevices
from .floor import TableConfig
from .inject import (
    CATALOGUE,
    CONTRACT_FAULTS,
    FORGERY,
    REFUSED,
    Fault,
    InjectContext,
    candidates,
    refused_as_decoded,
)
from .script import CONSOLE, SHOE, RoundScript, Step

#: The floor opens at 18:00 UTC on 30 November 2026, plus the seed's minute of the hour.
EPOCH: Final = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)
TABLE_STAGGER_MS: Final = 1_500  # tables open this far apart
OPENING_MS: Final = 30_000  # from TableOpened to the first round
SLOT_MS: Final = 90_000  # one round per table per slot
ROUND_BUDGET_MS: Final = 75_000  # a round's events fit in this much of its slot
DEALER_SHIFT: Final = 40  # rounds before the next dealer comes in


def secret(seed: int) -> str:
    """What the devices' signing keys of a floor are made from (producers.devices)."""
    return f"pitwatch-simulate/{seed}"


def epoch_ms(seed: int) -> int:
    return int(EPOCH.timestamp() * 1000) + (seed % 60) * 60_000


class TableRun:
    def __init__(self, cfg: TableConfig, seed: int, rounds: int, inject: float,
                 truth: list[dict[str, Any]], sign: bool = True) -> None:
        base = f"pitwatch-simulate/{seed}/{cfg.index}"
        self.cfg = cfg
        self.rounds = rounds
        self.inject = inject
        self.truth = truth
        self.play_rng = random.Random(base + "/players")
        self.shoe_rng = random.Random(base + "/shoes")
        self.inject_rng = random.Random(base + "/faults")
        self.start_ms = epoch_ms(seed) + (cfg.index - 1) * TABLE_STAGGER_MS
        self.devices = TableDevices(cfg.table_id, random.Random(base + "/ids"),
                                    random.Random(base + "/clock"), self.start_ms,
                                    secret=secret(seed) if sign else None)
        self.shoes = 0
        self.shoe = self._shuffle()
        self.counts: dict[tuple[str, str], int] = {}
        #: False from an EVENTS_LOST fault to the next ShoeLoaded: the audit cannot count
        #: this shoe's cards, so no CARD_COUNT_EXCEEDED is injected in it
        self.counts_known = True
        self.injected: Counter[str] = Counter()
        self.eligible: Counter[str] = Counter()  # rounds in which each fault was possible
        self.pending: dict[str, Any] | None = None  # a ROUND_INCOMPLETE awaiting its event
        #: On a contract floor (`TableConfig.contract`), the faults only such a floor
        #: shows that this table has not carried yet: with faults injected at all, each
        #: goes into the first round that can carry it, drawn for a fault or not, so a
        #: short shift shows every one (a refused event; at a table that peeks, the two
        #: insurance faults the peek times)
        self.due: set[str] = set()
        if cfg.contract:
            self.due = {f.code for f in CONTRACT_FAULTS}
            if cfg.rules.hole_card == "PEEK":
                self.due |= {f.code for f in CATALOGUE if f.peek}

    # --- shoes -----------------------------------------------------------------------

    def _shuffle(self) -> ShoeCursor:
        self.shoes += 1
        shoe_id = f"{self.cfg.table_id}-S{self.shoes:04d}"
        return ShoeCursor(bj.Shoe.shuffled(self.cfg.rules.decks, self.shoe_rng), shoe_id)

    def _shoe_loaded(self) -> Step:
        self.counts, self.counts_known = {}, True
        return Step(SHOE, ShoeLoaded(self.shoe.shoe_id, self.shoe.decks), ("shoe",))

    def _new_shoe(self) -> Step:
        self.shoe = self._shuffle()
        return self._shoe_loaded()

    # --- the table -------------------------------------------------------------------

    def opening(self) -> list[Event]:
        """TableOpened (the posted rules) and the first shoe."""
        cfg = self.cfg
        opened = Step(CONSOLE, TableOpened(cfg.jurisdiction, cfg.game, cfg.rules), ("open",))
        events = self.devices.render([opened, self._shoe_loaded()], None)
        if cfg.posting_fault is not None:  # the finding is the posting's, with no round
            self.truth.append({"code": "POSTED_RULES_CONTRADICT_REGULATION",
                               "table_id": cfg.table_id, "round_id": "",
                               "event_id": opened.event_id})
        return events

    def close(self) -> list[Event]:
        """The end of the shift: the console signs where the table's record ends."""
        return self.devices.close()

    def dealer_id(self, k: int) -> str:
        return f"D{(self.cfg.index * 37 + (k - 1) // DEALER_SHIFT) % 900 + 100:03d}"

    def play(self, k: int) -> list[Event]:
        """Round `k` (1-based): a new shoe first if the cut card came out, then the round."""
        cfg = self.cfg
        pre: list[Step] = []
        if self.shoe.cut_card_reached:
            pre.append(self._new_shoe())
        plans = draw_plans(self.play_rng, cfg)
        round_id = f"{cfg.table_id}-{k:06d}"
        dealer = self.dealer_id(k)

        def deal(opts: PlayOptions = CLEAN) -> RoundScript:
            return play_round(cfg, self.shoe, round_id, dealer, plans, opts)

        pos = self.shoe.pos
        try:
            script = deal()
        except ShoeEmptyError:  # a long round at the end of the shoe: deal it from a new one
            pre.append(self._new_shoe())
            pos = 0
            script = deal()

        fault: Fault | None = None
        truth_step: Step | None = None
        drawn = bool(self.inject) and self.inject_rng.random() < self.inject
        if drawn or (self.inject and self.due):
            ctx = InjectContext(cfg, script, dict(self.counts) if self.counts_known else {},
                                self.shoe.decks,
                                k == self.rounds)
            found = candidates(ctx)
            if drawn:
                for f, _ in found:
                    self.eligible[f.code] += 1
            else:  # a round not drawn carries only a contract fault still due here
                found = [c for c in found if c[0].code in self.due]
            if found:  # the least injected first, then the most seldom possible
                rank = {f.code: (self.injected[f.code], self.eligible[f.code]) for f, _ in found}
                low = min(rank.values())
                fault, targets = self.inject_rng.choice(
                    [c for c in found if rank[c[0].code] == low])
                target = self.inject_rng.choice(targets)
                if fault.replay is not None:
                    self.shoe.pos = pos
                    try:
                        ctx = replace(ctx, script=deal(fault.replay))
                    except ShoeEmptyError:  # the extra card was not there: deal it clean
                        self.shoe.pos = pos
                        script, fault = deal(), None
                if fault is not None:
                    script = ctx.script
                    truth_step = fault.apply(ctx, target)

        slot = self.start_ms + OPENING_MS + (k - 1) * SLOT_MS + self.devices.clock.randint(0, 3000)
        events = self.devices.pause(slot)  # heartbeats through the pause, if asked
        if pre:
            events += self.devices.render(pre, None, not_before=slot)
        body = self.devices.render(script.steps, round_id, not_before=slot,
                                   budget_ms=ROUND_BUDGET_MS)
        if fault is not None and fault.code == REFUSED:
            assert truth_step is not None
            at = next(i for i, ev in enumerate(body) if ev.event_id == truth_step.event_id)
            body[at] = refused_as_decoded(body[at])
        if self.pending is not None and body:
            self.pending["event_id"] = body[0].event_id  # the table moved on
            self.pending = None
        conflicts = {s.conflict_id for s in script.steps if s.conflict_id is not None}
        counts = self.counts
        for ev in body:
            p = ev.payload
            if type(p) is CardDealt and ev.event_id not in conflicts:
                key = (p.rank, p.suit)
                counts[key] = counts.get(key, 0) + 1
        if fault is not None and fault.code == FORGERY:
            self._forgery(round_id)
        elif fault is not None:
            self._record(fault, truth_step, round_id)
        events.extend(body)
        return events

    def _forgery(self, round_id: str) -> None:
        """A forged amount is seen on each checkpoint whose signature no longer matches."""
        self.injected[FORGERY] += 1
        self.due.discard(FORGERY)
        bad = self.devices.bad_checkpoints
        for event_id, rid in bad:
            self.truth.append({"code": FORGERY, "table_id": self.cfg.table_id,
                               "round_id": rid or round_id, "event_id": event_id})
        bad.clear()

    def _record(self, fault: Fault, step: Step | None, round_id: str) -> None:
        self.injected[fault.code] += 1
        self.due.discard(fault.code)
        if fault.code == "EVENTS_LOST":
            self.counts_known = False
        event_id = None
        if step is not None:
            event_id = step.conflict_id if fault.code == "SEQUENCE_CONFLICT" else step.event_id
        rec: dict[str, Any] = {"code": fault.code, "table_id": self.cfg.table_id,
                               "round_id": round_id, "event_id": event_id}
        self.truth.append(rec)
        if event_id is None:
            self.pending = rec
