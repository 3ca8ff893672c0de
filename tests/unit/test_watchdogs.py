"""The worker's watchdogs (processors/watchdogs.py): a changed partition count stops the
audit; a freeze longer than the session, or a partition with messages waiting and no
reads, restarts the worker clean; a Kafka that does not answer is judged nothing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from pitwatch.processors import watchdogs


def test_a_gap_longer_than_the_session_is_a_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(watchdogs.time, "monotonic", lambda: now[0])
    f = watchdogs.Frozen(10.0)
    now[0] = 500.0
    assert f.tick() is None  # the first tick: a slow start-up is no freeze
    now[0] += 1.0
    assert f.tick() is None
    now[0] += 10.0
    assert f.tick() is None  # exactly the session: not yet
    now[0] += 10.5
    assert f.tick() == 10.5


def test_a_partition_with_messages_waiting_and_no_reads_is_stalled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(watchdogs.time, "monotonic", lambda: now[0])
    s = watchdogs.Stalled(20.0)
    assert s.check("p0", 99, 100) is None  # caught up: nothing to read
    assert s.check("p0", 99, 150) is None  # messages waiting: the clock starts
    now[0] = 15.0
    assert s.check("p0", 120, 150) is None  # it moved: the clock starts again
    now[0] = 35.0
    assert s.check("p0", 120, 150) is None  # 20 s: not over
    now[0] = 36.0
    assert s.check("p0", 120, 150) == 21.0
    assert s.check("p0", 149, 150) is None  # caught up again


@dataclass(frozen=True)
class TP:
    topic: str
    partition: int


class FakeKafka:
    def __init__(self, count: int | None = 4, end: int = 100, first: int = 0) -> None:
        self.count, self.end, self.first, self.down = count, end, first, False

    async def partition_count(self, topic: str) -> int | None:
        if self.down:
            raise ConnectionError("no broker")
        return self.count

    async def end_offset(self, topic: str, partition: int) -> int:
        if self.down:
            raise ConnectionError("no broker")
        return self.end

    async def first_offset(self, topic: str, partition: int) -> int:
        return self.first


@dataclass
class FakeAudit:
    next: int = 100
    refused: list[str] = field(default_factory=list)

    def assigned(self) -> list[Any]:
        return [TP("events", 0)]

    def next_to_read(self, tp: Any) -> int:
        return self.next

    def refuse(self, reason: str) -> None:
        self.refused.append(reason)


@dataclass
class Shown:
    partitions: int | None = None


def _dogs(audit: FakeAudit, kafka: FakeKafka, shown: Shown | None = None,
          ) -> tuple[watchdogs.Watchdogs, list[str]]:
    restarts: list[str] = []
    dogs = watchdogs.Watchdogs(audit, kafka, shown or Shown(), "events", 4,
                               session_timeout_s=10.0, stall_timeout_s=20.0,
                               restart=lambda: restarts.append("restart"))
    return dogs, restarts


def test_a_changed_partition_count_stops_the_audit_and_shows_the_count() -> None:
    audit, kafka, shown = FakeAudit(), FakeKafka(count=4), Shown()
    dogs, restarts = _dogs(audit, kafka, shown)
    asyncio.run(dogs.check_partitions())
    assert (audit.refused, shown.partitions) == ([], 4)
    kafka.count = 6
    asyncio.run(dogs.check_partitions())
    assert shown.partitions == 6 and len(audit.refused) == 1
    assert "events has 6 partitions, not the 4" in audit.refused[0]
    kafka.down = True  # Kafka away: nothing judged, the last count still shown
    asyncio.run(dogs.check_partitions())
    assert len(audit.refused) == 1 and shown.partitions == 6 and restarts == []


def test_a_stalled_partition_restarts_the_worker_and_a_moving_one_does_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(watchdogs.time, "monotonic", lambda: now[0])
    audit, kafka = FakeAudit(next=50), FakeKafka(end=100)
    dogs, restarts = _dogs(audit, kafka)
    asyncio.run(dogs.check_stalled())  # messages waiting: the clock starts
    now[0] = 15.0
    audit.next = 60  # it read on: the clock starts again
    asyncio.run(dogs.check_stalled())
    now[0] = 35.0  # 20 s since it last moved: not over
    asyncio.run(dogs.check_stalled())
    assert restarts == []
    kafka.down = True  # a broker that does not answer is nothing to judge
    now[0] = 100.0
    asyncio.run(dogs.check_stalled())
    assert restarts == []
    kafka.down = False
    asyncio.run(dogs.check_stalled())
    assert restarts == ["restart"]
    dogs.forget()  # partitions revoked: what was read of them says nothing now
    asyncio.run(dogs.check_stalled())
    assert restarts == ["restart"]


def test_nothing_read_yet_counts_from_the_partitions_first_offset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(watchdogs.time, "monotonic", lambda: now[0])
    dogs, restarts = _dogs(FakeAudit(next=-1), FakeKafka(end=100, first=100))
    for now[0] in (0.0, 30.0, 60.0):  # the first offset is the end: nothing to read
        asyncio.run(dogs.check_stalled())
    assert restarts == []


def test_a_freeze_longer_than_the_session_restarts_the_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(watchdogs.time, "monotonic", lambda: now[0])
    dogs, restarts = _dogs(FakeAudit(), FakeKafka())
    for now[0] in (0.0, 1.0, 11.0):
        asyncio.run(dogs.check_frozen())
    assert restarts == []
    now[0] = 25.0
    asyncio.run(dogs.check_frozen())
    assert restarts == ["restart"]
