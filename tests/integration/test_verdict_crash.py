"""A worker SIGKILLed right after a processing-time verdict is on the alerts topic,
before any snapshot could hold it (a snapshot is written with the next event of the
partition, and none comes): its successor, when the tables move on, finds each round
incomplete again with the same violation id (docs/procedure.md, "When a round is
incomplete"). The alerts topic holds one ROUND_INCOMPLETE id per round, copies only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pitwatch.events.model import Event, RoundEnded
from pitwatch.events.violation_avro import decode_violation
from tests.rounds import never_sent

from .conftest import Expected, Pipeline, read_topic, wait_until
from .test_streaming import _assert_alerts, _assert_same

Floor = Callable[..., tuple[list[Event], Expected]]


def test_worker_killed_after_a_verdict_gives_the_same_id_again(pipeline: Pipeline,
                                                               floor: Floor) -> None:
    events, _ = floor(tables=4, rounds=6, seed=26, inject=0.0)
    # each table's third round has no RoundEnded (its console never sent it); the first
    # part stops before the fourth
    events = never_sent(events, lambda e: type(e.payload) is RoundEnded and bool(
        e.round_id and e.round_id.endswith("000003")))
    later = {e.table_id: i for i, e in reversed(list(enumerate(events)))
             if e.round_id and e.round_id.endswith("000004")}
    first = [e for i, e in enumerate(events) if i < later[e.table_id]]
    rest = [e for i, e in enumerate(events) if i >= later[e.table_id]]
    open_rounds = {e.round_id for e in first if e.round_id and e.round_id.endswith("000003")}
    assert len(open_rounds) == 4
    exp = Expected(events)  # the default time-out: the next round shows each (rule 1)

    def verdicts() -> list[str]:
        alerts = (decode_violation(m.value) for m in read_topic(pipeline.prefix + "alerts"))
        return [v.violation_id for v in alerts
                if v.code == "ROUND_INCOMPLETE" and v.round_id in open_rounds]

    worker = pipeline.start_worker("a", "--round-timeout", "3", "--idle-check", "0.5")
    pipeline.produce(first)
    wait_until("a processing-time verdict for each open round on the alerts topic",
               lambda: len(set(verdicts())) == 4, 240)
    pipeline.kill(worker)  # SIGKILL: no event came after, so no snapshot holds them
    found_first = set(verdicts())

    pipeline.produce(rest)  # the tables move on
    pipeline.start_worker("b")  # its time-out the default: the next round shows each
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)
    # the successor, which never saw the verdicts, found each round incomplete again
    # (a copy on the topic) and gave it the same id
    sent = Counter(verdicts())
    assert set(sent) == found_first and all(n >= 2 for n in sent.values()), sent
