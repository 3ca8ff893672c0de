"""Rebuild a round from the store, event by event, with what the engine found at each
step, and check it against what was stored when the round was first audited.

The events are the only truth: the round is re-derived from its table's stream (from
the last TableOpened and ShoeLoaded before it, so the posted rules and the shoe's card
counts are as they were), through the same engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pitwatch.engine.auditor import RoundSummary, TableAuditor
from pitwatch.engine.violation import Violation
from pitwatch.events.jsonl import loads
from pitwatch.events.model import Event
from pitwatch.packs.registry import select
from pitwatch.store.base import Store


@dataclass
class Step:
    pos: int
    event: Event
    violations: list[Violation] = field(default_factory=list)


@dataclass
class Rebuilt:
    round_id: str
    table_id: str
    steps: list[Step]
    summary: RoundSummary | None
    stored_violation_ids: set[str]

    @property
    def violations(self) -> list[Violation]:
        return [v for s in self.steps for v in s.violations]

    @property
    def matches_store(self) -> bool:
        return {v.violation_id for v in self.violations} == self.stored_violation_ids


def _quote(s: str) -> str:
    """A string literal for SQL; ids come from the store itself, this guards the quote."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _table_stream(store: Store, table_id: str, round_id: str) -> Iterator[tuple[int, Event]]:
    first = store.query(f"SELECT min(pos) AS p FROM events FINAL WHERE round_id = "
                        f"{_quote(round_id)}")
    if not first or first[0]["p"] is None:
        raise LookupError(f"no events of round {round_id} in the store")
    start = store.query(
        "SELECT max(pos) AS p FROM events FINAL WHERE table_id = "
        f"{_quote(table_id)} AND type IN ('TableOpened') AND pos < {int(first[0]['p'])}")
    begin = int(start[0]["p"] or 0) if start else 0
    rows = store.query(
        f"SELECT pos, body FROM events FINAL WHERE table_id = {_quote(table_id)} "
        f"AND pos >= {begin} AND (round_id = {_quote(round_id)} OR round_id = '' "
        f"OR pos < {int(first[0]['p'])}) ORDER BY pos")
    for r in rows:
        yield int(r["pos"]), loads(r["body"])


def rebuild(store: Store, round_id: str) -> Rebuilt:
    found = store.query(f"SELECT table_id FROM rounds FINAL WHERE round_id = {_quote(round_id)}"
                        " UNION ALL SELECT table_id FROM events FINAL WHERE round_id = "
                        f"{_quote(round_id)} LIMIT 1")
    if not found:
        raise LookupError(f"no round {round_id} in the store")
    table_id = found[0]["table_id"]
    steps: list[Step] = []
    summaries: list[RoundSummary] = []
    current: list[Violation] = []
    auditor = TableAuditor(table_id, select, current.append, summaries.append)
    last = -1
    for pos, ev in _table_stream(store, table_id, round_id):
        current.clear()
        auditor.feed(ev)
        last = pos
        if ev.round_id == round_id:
            steps.append(Step(pos, ev, [v for v in current if v.round_id == round_id]))
    if not any(s.round_id == round_id for s in summaries):
        # no RoundEnded: what showed it was the table's next event, or the end of input
        nxt = store.query(f"SELECT pos, body FROM events FINAL WHERE table_id = "
                          f"{_quote(table_id)} AND pos > {last} ORDER BY pos LIMIT 1")
        current.clear()
        if nxt:
            auditor.feed(loads(nxt[0]["body"]))
        else:
            auditor.finish()
        if steps:
            steps[-1].violations += [v for v in current if v.round_id == round_id]
    summary = next((s for s in summaries if s.round_id == round_id), None)
    stored = {r["violation_id"] for r in store.query(
        f"SELECT violation_id FROM violations FINAL WHERE round_id = {_quote(round_id)}")}
    return Rebuilt(round_id, table_id, steps, summary, stored)
