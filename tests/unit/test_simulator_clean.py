"""Clean rounds raise nothing: a floor of the four games with no fault injected, audited
by the rules engine, gives no violation and no engine error (bench/clean_rounds.py runs
the same on 100,000 rounds)."""

from __future__ import annotations

from collections import Counter

from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.errors import EngineError
from pitwatch.engine.violation import Violation
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.simulate import Floor


def test_two_thousand_clean_rounds_of_the_four_games_raise_nothing() -> None:
    violations: list[Violation] = []
    errors: list[EngineError] = []
    games: Counter[str] = Counter()
    sums: Counter[str] = Counter()

    def on_round(r: RoundSummary) -> None:
        games[r.game if r.jurisdiction != "NZ" else "NZ"] += 1
        sums["wagered"] += r.wagered
        sums["complete"] += r.complete

    auditor = Auditor(select, violations.append, on_round, errors.append,
                      released=released_writers())
    for ev in Floor(8, 250, seed=23).events():
        auditor.feed(ev)
    auditor.finish()
    assert [(v.code, v.round_id, v.message) for v in violations] == []
    assert errors == []
    assert games == {"BLACKJACK": 500, "BLACKJACK_SWITCH": 500, "FREE_BET_BLACKJACK": 500,
                     "NZ": 500}
    assert sums["complete"] == 2000 and sums["wagered"] > 0
