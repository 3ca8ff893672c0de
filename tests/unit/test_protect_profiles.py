"""The simulated players deal valid rounds (a clean floor of every profile raises no
violation), and the detectors over a record are deterministic: the same events give the
same observations with the same ids."""

from __future__ import annotations

import pytest

from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.errors import EngineError
from pitwatch.engine.violation import Violation
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.floor import NJ_BLACKJACK
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect import protect

SEATS = {1: "counter-8", 2: "flat", 3: "random", 4: "holecard", 5: "paroli",
         6: "martingale", 7: "counter-4-camo"}


def _floor(rounds: int) -> list[Event]:
    out: list[Event] = []
    for v in range(len(NJ_BLACKJACK)):
        players = {s: make_player(p, 41, s, v) for s, p in SEATS.items()}
        out += events(SimTable(v, 41, players, flash=0.3, variant=v), rounds, 41)
    return out


def test_every_profile_at_every_nj_variant_deals_clean_rounds() -> None:
    violations: list[Violation] = []
    errors: list[EngineError] = []
    done: list[RoundSummary] = []
    auditor = Auditor(select, violations.append, done.append, errors.append,
                      released=released_writers())
    for ev in _floor(80):
        auditor.feed(ev)
    auditor.finish()
    assert [(v.code, v.round_id, v.message) for v in violations] == []
    assert errors == []
    assert len(done) == 80 * len(NJ_BLACKJACK) and all(r.complete for r in done)


def test_the_same_record_gives_the_same_observations() -> None:
    first = protect(_floor(120))
    again = protect(_floor(120))
    assert first == again and first
    assert [o.observation_id for o in first] == [o.observation_id for o in again]
    assert len({o.observation_id for o in first}) == len(first)
    assert {o.code for o in first} >= {"COUNT_CORRELATED_BETTING", "HOLE_CARD_PLAY"}


def test_a_counters_camouflage_is_the_share_its_profile_names() -> None:
    """"counter-8-camo (30% of bets at random), counter-8-camoNN (NN% of bets at random)"."""
    assert make_player("counter-8", 41, 1, 0).camouflage == 0.0
    assert make_player("counter-8-camo", 41, 1, 0).camouflage == 0.3
    assert make_player("counter-8-camo15", 41, 1, 0).camouflage == 0.15
    assert make_player("counter-4-camo0", 41, 1, 0).camouflage == 0.0
    for bad in ("counter-8-camoX", "counter-8-camo101"):
        with pytest.raises(ValueError, match="camoNN takes a percentage"):
            make_player(bad, 41, 1, 0)
