"""Engine errors are reported once: a snapshot's open round, folded again on restore,
does not count, log or send its engine errors a second time (they went out when first
found), and the worker hands every engine error to its metrics
(`pitwatch_engine_errors_total` at /metrics). A bug planted in the payout check, as in
test_engine_errors.py, makes an engine error on each money event."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from pitwatch.engine.auditor import TableAuditor
from pitwatch.engine.errors import EngineError
from pitwatch.engine.rulepack import RulePack
from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.checks import hands
from pitwatch.packs.registry import select
from pitwatch.processors.metrics import Metrics
from pitwatch.processors.settings import Settings
from pitwatch.processors.state import TableStates
from tests.unit.test_engine_errors import Run, _two_rounds, _typo, _with

TOPIC, PARTITION = "table-events", 0
PACK = _with(_typo, hands.payout_wrong)
MONEY = ("PayoutMade", "WagerCollected", "WagerReturned")


def _pick(jurisdiction: str, game: str) -> RulePack:
    chosen = select(jurisdiction, game)
    return PACK if chosen.name == PACK.name else chosen


def _mid_round(events: list[Event]) -> int:
    """The index just after round 1's second money event: its round is open, with two
    engine errors in it."""
    money = [i for i, e in enumerate(events) if e.type in MONEY]
    return money[1] + 1


def test_restore_does_not_report_the_open_rounds_engine_errors_again(
        engine_errors: list[logging.LogRecord]) -> None:
    _, events, _ = _two_rounds()
    whole = Run(PACK).feed(events).errors
    cut = _mid_round(events)
    first: list[EngineError] = []
    a = TableAuditor(events[0].table_id, _pick, lambda v: None, lambda r: None, first.append,
                     released=released_writers())
    for ev in events[:cut]:
        a.feed(ev)
    assert a.round_open and len(first) == a.engine_errors == 2
    logged = len(engine_errors)
    state = a.export_state()

    again: list[EngineError] = []
    b = TableAuditor(events[0].table_id, _pick, lambda v: None, lambda r: None, again.append,
                     released=released_writers())
    b.import_state(state)
    assert b.round_open  # the open round came back, folded again...
    assert again == [] and b.engine_errors == 0  # ...without a word about its errors
    assert len(engine_errors) == logged  # nor a log line
    for ev in events[cut:]:
        b.feed(ev)
    # together, once each: what one uninterrupted auditor reports
    assert [e.event_id for e in first + again] == [e.event_id for e in whole]
    assert len(whole) == 4 and b.engine_errors == 2


def test_the_worker_counts_engine_errors_in_its_metrics_once(
        tmp_path: Path, engine_errors: list[logging.LogRecord]) -> None:
    _, events, _ = _two_rounds()
    log = [(i, ev.table_id.encode(), encode_single(ev)) for i, ev in enumerate(events)]

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list[Any]:
        return [m for m in log if a <= m[0] < b]

    def worker(table: dict[bytes, bytes]) -> tuple[TableStates, Metrics]:
        states = TableStates(table, _pick, 15 * 60 * 1000)
        metrics = Metrics(None, states, Settings(data_dir=str(tmp_path)))
        states.on_engine_error = metrics.engine_error  # as processors/app.py does
        return states, metrics

    async def feed(states: TableStates, start: int, stop: int) -> None:
        for i in range(start, stop):
            await states.process(events[i], TOPIC, PARTITION, i, catch_up)

    table: dict[bytes, bytes] = {}
    states, metrics = worker(table)
    cut = _mid_round(events)
    asyncio.run(feed(states, 0, cut))
    states.snapshot(events[0].table_id)  # the open round, with its two errors, in it
    assert metrics.engine_errors == 2
    assert "pitwatch_engine_errors_total 2.0\n" in metrics.render(lambda tp: -1, None)[0].decode()

    # the worker dies; the next one takes the table over from the snapshot
    states, metrics = worker(table)
    asyncio.run(feed(states, cut, len(events)))
    assert metrics.engine_errors == 2  # the other two money events; none again
    assert "pitwatch_engine_errors_total 2.0\n" in metrics.render(lambda tp: -1, None)[0].decode()
    assert len(engine_errors) == 4  # each logged once, by the worker that found it
