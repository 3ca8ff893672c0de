"""The checkpoint's order (processors/checkpoint.py): "fold, send, acknowledge,
snapshot, mark done, commit", for the worker and the sink. Fakes record each step; the
worker's fetches go through Faust's consumer (processors/faust_batch.py, never
connected) as in production, so the marks and the commit are the real ones."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple, cast

import pytest
from faust.types import TP

from pitwatch.engine.violation import Violation
from pitwatch.events.avro import decode_single, encode_single
from pitwatch.events.model import Event
from pitwatch.processors.catch_up import Stretch
from pitwatch.processors.checkpoint import Checkpoint, Outputs, Reader, SinkCheckpoint
from pitwatch.processors.faust_batch import BatchApp, BatchConsumer
from pitwatch.processors.state import Found, TableStates
from pitwatch.producers.simulate import Floor
from pitwatch.store.base import StoreError

TOPIC = "ev"


class Rec(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class Broken(Exception):
    """A step that fails."""


class Kafka:
    """The producer's topics: each send is recorded and returns a future Kafka
    acknowledges (or refuses: `refuse`) on the loop's next turn, recorded then."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls
        self.refuse: set[str] = set()
        self.futures: list[asyncio.Future[Any]] = []

    def topic(self, name: str) -> Any:
        kafka = self

        class _Topic:
            async def send(self, *, key: bytes | None, value: bytes | None) -> Any:
                kafka.calls.append(f"send {name}")
                f: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                kafka.futures.append(f)

                def answer() -> None:
                    kafka.calls.append(f"ack {name}")
                    if name in kafka.refuse:
                        f.set_exception(Broken(f"{name} refused"))
                    else:
                        f.set_result(None)
                asyncio.get_running_loop().call_soon(answer)
                return f
        return _Topic()


class States:
    """The tables' auditors: every event of table T1 raises one violation and makes the
    table due for a snapshot; `fail_snapshot` / `fail_fold` make those steps fail."""

    def __init__(self, calls: list[str], kafka: Kafka) -> None:
        self.calls = calls
        self.kafka = kafka
        self.fail_snapshot = False
        self.fail_fold = False

    async def process(self, ev: Event, topic: str, partition: int, offset: int,
                      read: Any) -> Found:
        self.calls.append(f"fold {offset}")
        if self.fail_fold:
            raise Broken("state not restored")
        return Found(violations=[Violation("X", "HIGH", ev.table_id, "R1", None, None,
                                           f"e{offset}", (), "", "", "nj", "1", 0)])

    def due(self, table_id: str, ev: Event | None = None) -> bool:
        return True

    def verdicts(self, topic: str, partition: int) -> list[str]:
        return []

    def snapshot(self, table_id: str) -> None:
        # every acknowledgement the snapshot covers is in before it is written
        assert self.kafka.futures and all(f.done() for f in self.kafka.futures)
        self.calls.append(f"snapshot {table_id}")
        if self.fail_snapshot:
            raise Broken("changelog write failed")

    def forget(self) -> None:
        pass

    def lost(self, topic: str, partition: int, where: str) -> list[str]:
        self.calls.append(f"lost {where.split(' ')[0]}")
        return []


class Metrics(SimpleNamespace):
    def __init__(self) -> None:
        super().__init__(refusal=None, events=0, alerts=0, dead_letters=0)

    def alert_acknowledged(self, arrived: float) -> None:
        pass

    def lost(self, where: str, offsets: int) -> None:
        pass


def _events(n: int) -> list[bytes]:
    evs = list(Floor(1, 2, seed=7).events())[:n]
    return [encode_single(e) for e in evs]


class Worker:
    """A Checkpoint wired to a never-connected BatchApp (committing after every mark:
    `broker_commit_every=1`), the fakes above, and records of the consumer's marks and
    commits."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.app = BatchApp("t-ckpt", broker="kafka://127.0.0.1:1", store="memory://",
                            web_enabled=False, key_serializer="raw", value_serializer="raw",
                            broker_commit_every=1)
        events = self.app.topic(TOPIC, key_type=bytes, value_type=bytes)
        self.kafka = Kafka(self.calls)
        self.states = States(self.calls, self.kafka)
        k = self.kafka
        outputs = Outputs(k.topic("alerts"), k.topic("rounds"), k.topic("refused"),
                          k.topic("observations"), k.topic("dead"))
        unused: Any = SimpleNamespace(read=None)  # the fake fold reads nothing back
        self.checkpoint = Checkpoint(self.app, cast(TableStates, self.states), outputs,
                                     unused, unused, Metrics(), TOPIC,
                                     restart=lambda: self.calls.append("restart"))
        self.app.batch_consume(events, self.checkpoint.audit, self.checkpoint.commit)
        self.consumer = cast(BatchConsumer, self.app.consumer)
        marked = self.consumer.mark_done

        def mark_done(tp: TP, first: int, last: int) -> None:
            self.calls.append(f"mark_done {first}..{last}")
            marked(tp, first, last)

        async def record_commit(*a: Any, **kw: Any) -> bool:
            self.calls.append("commit")
            return True

        self.consumer.mark_done = mark_done  # type: ignore[method-assign]
        self.consumer.commit = record_commit  # type: ignore[method-assign]

    async def deliver(self, offsets: range, values: list[bytes]) -> None:
        await self.app.topics._update_indices()  # type: ignore[attr-defined]  # acks on
        self.checkpoint.position[(TOPIC, 0)] = offsets[0] - 1  # nothing skipped before
        recs = [Rec(TOPIC, 0, o, b"", v) for o, v in zip(offsets, values, strict=True)]
        key = _key(values[0])
        recs = [r._replace(key=key) for r in recs]
        await self.consumer.deliver(self.app, {TP(TOPIC, 0): recs}, None)

    def commit_offset(self) -> int | None:
        return self.consumer._new_offset(TP(TOPIC, 0))


def _key(value: bytes) -> bytes:
    return decode_single(value).table_id.encode()


def _run(test: Any) -> None:
    async def go() -> None:
        await test(Worker())
    asyncio.run(go())


def test_a_fetch_goes_fold_send_acknowledge_snapshot_mark_done_commit() -> None:
    """An alert is acknowledged before the snapshot that covers it, and the offsets
    are marked done and committed only after the snapshot."""
    async def go(w: Worker) -> None:
        values = _events(2)
        await w.deliver(range(5, 7), values)
        table = _key(values[0]).decode()
        assert w.calls == ["fold 5", "send alerts", "fold 6", "send alerts",
                           "ack alerts", "ack alerts", f"snapshot {table}",
                           "mark_done 5..6", "commit"]
        assert w.commit_offset() == 7
    _run(go)


def test_an_alert_kafka_refuses_stops_the_snapshot_the_mark_and_the_commit() -> None:
    """A failure of any step stops the later steps: nothing past it is committed."""
    async def go(w: Worker) -> None:
        w.kafka.refuse.add("alerts")
        with pytest.raises(Broken):
            await w.deliver(range(5, 7), _events(2))
        assert not any(c.startswith(("snapshot", "mark_done", "commit")) for c in w.calls)
        assert w.commit_offset() is None
    _run(go)


def test_a_snapshot_that_fails_is_never_committed_past() -> None:
    async def go(w: Worker) -> None:
        w.states.fail_snapshot = True
        with pytest.raises(Broken):
            await w.deliver(range(5, 7), _events(2))
        assert w.calls[-1].startswith("snapshot")
        assert w.commit_offset() is None
    _run(go)


def test_a_fold_that_fails_restarts_the_worker_and_sends_nothing() -> None:
    async def go(w: Worker) -> None:
        w.states.fail_fold = True
        with pytest.raises(Broken):
            await w.deliver(range(5, 7), _events(2))
        assert w.calls == ["fold 5", "restart"]
        assert w.commit_offset() is None
    _run(go)


def test_offsets_holding_no_record_are_settled_marked_then_committed() -> None:
    """After the last record read (4), the broker's end is 10 and nothing readable lies
    in 5..9: the position moves to 9, then 5..9 are marked done, then committed."""
    calls: list[str] = []
    tp = TP(TOPIC, 0)

    class Consumer:
        def assignment(self) -> set[TP]:
            return {tp}

        def mark_done(self, tp: TP, first: int, last: int) -> None:
            calls.append(f"mark_done {first}..{last}")

        async def commit(self) -> None:
            calls.append("commit")

    class Probe:
        async def end_offset(self, topic: str, partition: int) -> int:
            return 10

        async def read(self, topic: str, partition: int, start: int, stop: int,
                       limit: int | None = None) -> Stretch:
            calls.append(f"read {start}..{stop - 1}")
            return Stretch(start=start)

    unused: Any = SimpleNamespace()
    c = Checkpoint(SimpleNamespace(consumer=Consumer()), unused, unused, unused,
                   cast(Reader, Probe()), Metrics(), TOPIC)
    c.position[(TOPIC, 0)] = 4
    asyncio.run(c.settle())
    assert calls == ["read 5..9", "mark_done 5..9", "commit"]
    assert c.position[(TOPIC, 0)] == 9


class Sink:
    """A SinkCheckpoint over a batch of `rows` rows (due at 2), a write that fails
    while `down`, and records of its steps."""

    def __init__(self, tmp_path: Path, rows: int) -> None:
        self.calls: list[str] = []
        self.down = False
        self.rows = rows
        self.heartbeat = tmp_path / "heartbeat"
        sink = self

        class Batch:
            def __len__(self) -> int:
                return sink.rows

            def due(self, now: float, max_rows: int, max_wait: float) -> bool:
                return sink.rows >= max_rows

        async def write(batch: Any) -> int:
            sink.calls.append("write")
            if sink.down:
                raise StoreError("ClickHouse away")
            n, sink.rows = sink.rows, 0
            return n

        async def commit() -> None:
            sink.calls.append("commit")

        def landed(written: int) -> None:
            sink.calls.append(f"landed {written} heartbeat={self.heartbeat.exists()}")

        self.checkpoint = SinkCheckpoint(Batch(), write, commit, lambda: True,
                                         self.heartbeat, landed, 2, 1.0, 0.0)


def test_the_sink_commits_a_batch_only_after_clickhouse_took_it(tmp_path: Path) -> None:
    s = Sink(tmp_path, rows=3)
    asyncio.run(s.checkpoint.after_fetch(0.5))
    assert s.calls == ["write", "commit", "landed 3 heartbeat=True"]


def test_a_batch_clickhouse_did_not_take_is_not_committed(tmp_path: Path) -> None:
    s = Sink(tmp_path, rows=3)
    s.down = True
    with pytest.raises(StoreError):
        asyncio.run(s.checkpoint.after_fetch(0.5))
    with pytest.raises(StoreError):
        asyncio.run(s.checkpoint.close())
    assert s.calls == ["write", "write"] and not s.heartbeat.exists()


def test_with_nothing_waiting_the_sink_commits_once_a_batch_time(tmp_path: Path) -> None:
    """The position may have moved past offsets that hold no row (a transaction's
    marker): committed once a batch time, with no write."""
    s = Sink(tmp_path, rows=0)
    asyncio.run(s.checkpoint.after_fetch(0.5))
    assert s.calls == []
    asyncio.run(s.checkpoint.after_fetch(1.0))
    asyncio.run(s.checkpoint.after_fetch(1.5))
    assert s.calls == ["commit"]
