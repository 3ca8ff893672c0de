"""The engine's read-only watcher of its fold (`TableAuditor.watch`), which game
protection reads instead of folding the rounds again: each event the fold takes, with
its round as the checks read it (before the event is applied), table events with no
round, and nothing again when a snapshot's open round is folded anew."""

from __future__ import annotations

from pitwatch.engine.auditor import Auditor, TableAuditor
from pitwatch.engine.state import Round
from pitwatch.events.model import Event, PlayerSeated
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from tests.rounds import TableScript


def _script() -> TableScript:
    sc = TableScript.opened("nj_blackjack")
    sc.emit(PlayerSeated(1, "LOYAL-1", "RATED"), device=sc.device("console"), round_id=None)
    sc.start(1, [1])
    sc.wager(1, "MAIN", 1000)
    sc.deal({1: ("10", "9")}, up="7", hole="10")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.pay(1, "MAIN", 1000)
    sc.clear(1)
    sc.finish_round()
    return sc


def test_the_watcher_sees_each_event_before_the_fold_applies_it() -> None:
    sc = _script()
    seen: list[tuple[str, int | None]] = []

    def watch(ev: Event, r: Round | None) -> None:
        seen.append((ev.type, None if r is None else r.events))

    a = Auditor(select, lambda v: None, lambda s: None, released=released_writers())
    a.watch = watch
    for ev in sc.events:
        a.feed(ev)
    a.finish()
    assert [t for t, _ in seen] == [e.type for e in sc.events]
    assert seen[:3] == [("TableOpened", None), ("ShoeLoaded", None), ("PlayerSeated", None)]
    # the round's state as the checks read it: the events folded before this one
    assert [n for _, n in seen[3:]] == list(range(len(sc.events) - 3))


def test_a_snapshot_s_open_round_folded_again_is_not_shown_again() -> None:
    sc = _script()
    cut = len(sc.events) - 4  # inside the round
    first = TableAuditor("T-01", select, lambda v: None, lambda s: None,
                         released=released_writers())
    for ev in sc.events[:cut]:
        first.feed(ev)
    state = first.export_state()
    seen: list[str] = []
    again = TableAuditor("T-01", select, lambda v: None, lambda s: None,
                         released=released_writers())
    again.watch = lambda ev, r: seen.append(ev.event_id)
    again.import_state(state)
    assert seen == []
    for ev in sc.events[cut:]:
        again.feed(ev)
    assert seen == [e.event_id for e in sc.events[cut:]]
