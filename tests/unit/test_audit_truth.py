"""The audit against the simulator's ground truth: no violation on clean floors of all
four games, and exactly the injected faults on injected ones (precision and recall 1.0
on (code, table, round))."""

from __future__ import annotations

from collections import Counter

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.schema import released_writers
from pitwatch.producers.simulate import Floor

GAMES = [("NJ", "BLACKJACK"), ("NJ", "BLACKJACK_SWITCH"), ("PA", "FREE_BET_BLACKJACK"),
         ("NZ", "BLACKJACK")]


@pytest.mark.parametrize(("jurisdiction", "game"), GAMES)
def test_clean_floor_has_no_violation(jurisdiction: str, game: str) -> None:
    floor = Floor(4, 60, seed=101, jurisdiction=jurisdiction, game=game)
    rep = audit_events(floor.events(), keys=floor.registry())
    assert rep.rounds == 4 * 60
    assert [v.message for v in rep.violations] == []


@pytest.mark.parametrize(("jurisdiction", "game"), GAMES)
def test_injected_faults_are_found_exactly(jurisdiction: str, game: str) -> None:
    floor = Floor(4, 80, seed=202, inject=0.3, jurisdiction=jurisdiction, game=game)
    rep = audit_events(floor.events(), keys=floor.registry())
    found = Counter((v.code, v.table_id, v.round_id) for v in rep.violations)
    injected = Counter((t["code"], t["table_id"], t["round_id"]) for t in floor.truth)
    assert len(injected) > 40
    assert found - injected == Counter(), "false alarms"
    assert injected - found == Counter(), "missed faults"
    by_event = {(t["code"], t["event_id"]) for t in floor.truth}
    assert {(v.code, v.event_id) for v in rep.violations} == by_event


def test_round_summaries_count_their_violations() -> None:
    from pitwatch.engine.auditor import Auditor, RoundSummary
    from pitwatch.engine.violation import Violation
    from pitwatch.packs.registry import select

    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    auditor = Auditor(select, found.append, rounds.append, released=released_writers())
    for ev in Floor(4, 60, seed=303, inject=0.4).events():
        auditor.feed(ev)
    auditor.finish()
    per_round = Counter(v.round_id for v in found)
    assert per_round  # faults of every kind, record ones on a round's first event too
    assert {s.round_id: s.violations for s in rounds if s.violations} == dict(per_round)
