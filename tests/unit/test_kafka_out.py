"""send_events never drops an event in silence: kafka-python's flush() returns whether
or not each record was acknowledged (each record's future says), so a record that
failed (a broker gone for longer than the producer retries) must be an error naming
it. Checked with a stand-in producer whose futures are kafka-python's own."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.errors import KafkaTimeoutError, NotLeaderForPartitionError
from kafka.future import Future

from pitwatch.producers.kafka_out import DeliveryError, send_events
from pitwatch.producers.simulate import Floor

EVENTS = list(Floor(2, 2, 7, 0.0).events())


class FakeProducer:
    """Acknowledges each record at flush(), except those whose position (1-based) is
    in `fail` (their futures fail) or `block` (send raises, as after max_block_ms)."""

    def __init__(self, fail: frozenset[int] = frozenset(), block: int | None = None) -> None:
        self.fail, self.block = fail, block
        self.pending: list[tuple[int, Future]] = []
        self.sent: list[tuple[str, bytes, bytes]] = []
        self.flushed = 0

    def send(self, topic: str, key: bytes, value: bytes) -> Future:
        i = len(self.sent) + 1
        if i == self.block:
            raise KafkaTimeoutError("Failed to update metadata after 600.0 secs.")
        self.sent.append((topic, key, value))
        f = Future()
        self.pending.append((i, f))
        return f

    def flush(self) -> None:
        self.flushed += 1
        for i, f in self.pending:
            if i in self.fail:
                f.failure(NotLeaderForPartitionError("delivery timed out"))
            else:
                f.success(None)
        self.pending.clear()


def test_every_event_acknowledged_returns_how_many() -> None:
    counted: list[int] = []
    p = FakeProducer()
    assert send_events(p, "t", EVENTS, on_sent=counted.append) == len(EVENTS)
    assert len(p.sent) == len(EVENTS) and p.flushed == 1
    assert sum(counted) == len(EVENTS)
    assert [k for _, k, _ in p.sent] == [e.table_id.encode() for e in EVENTS]


def test_a_record_kafka_never_acknowledged_is_an_error_naming_the_first() -> None:
    p = FakeProducer(fail=frozenset({5, 9}))
    with pytest.raises(DeliveryError) as err:
        send_events(p, "t", EVENTS)
    msg = str(err.value)
    assert "did not acknowledge 2 of the" in msg
    assert f"event 5 ({EVENTS[4].event_id})" in msg and "Re-send from that event" in msg
    assert p.flushed == 1  # nothing left in flight when it says so


def test_a_send_that_blocked_past_its_limit_is_an_error_and_stops_the_run() -> None:
    p = FakeProducer(block=3)
    with pytest.raises(DeliveryError) as err:
        send_events(p, "t", EVENTS)
    assert f"event 3 ({EVENTS[2].event_id})" in str(err.value)
    assert "KafkaTimeoutError" in str(err.value)
    assert len(p.sent) == 2 and p.flushed == 1  # the two before it still went out


def test_a_failure_seen_mid_run_stops_sending_more() -> None:
    """Once a record failed, the later ones would land ahead of it: stop, flush, say."""
    p = FakeProducer()
    sent = 0

    def send(topic: str, key: bytes, value: bytes) -> Any:
        nonlocal sent
        sent += 1
        f = Future()
        if sent == 4:
            f.failure(NotLeaderForPartitionError("gone"))  # known before the next send
        else:
            f.success(None)
        return f

    p.send = send  # type: ignore[method-assign]
    with pytest.raises(DeliveryError, match="did not acknowledge 1 of the 4 events"):
        send_events(p, "t", EVENTS)
    assert sent == 4 < len(EVENTS)
