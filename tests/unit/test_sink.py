"""The sink's judgement of messages and rows, without servers: a bad message on the
alerts or rounds topic is Rejected (it goes to dead letters), a dead letter always fits
the broker's limit, and a row ClickHouse refuses while it answers is found by splitting
the batch and dead-lettered, while an outage is retried."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from typing import Any

import orjson
import pytest

from pitwatch.processors.dead_letters import MAX_VALUE_BYTES, dead_letter
from pitwatch.processors.settings import Settings
from pitwatch.processors.sink import Batches, Rejected, Source, Writer, _commit, to_row
from pitwatch.store.base import StoreError

S = Settings()
NOPOS: Any = None  # positions: only events need them


@pytest.mark.parametrize(("topic", "value", "why"), [
    ("alerts", None, "tombstone"), ("alerts", b"\xc3\x01garbage", "not a violation"),
    ("rounds", None, "tombstone"), ("rounds", b"{not json", "not a round"),
    ("rounds", b'{"round_id": "x"}', "fields missing"), ("rounds", b"[1]", "fields missing"),
])
def test_bad_alerts_and_rounds_are_rejected_with_a_reason(topic: str, value: bytes | None,
                                                          why: str) -> None:
    with pytest.raises(Rejected, match=why):
        to_row(topic, S, value, NOPOS)


def test_bad_events_are_left_to_the_audit_agent() -> None:
    assert to_row("table-events", S, None, NOPOS) is None
    assert to_row("table-events", S, b"junk", NOPOS) is None


def test_an_event_under_another_tables_key_is_no_record() -> None:
    """The audit dead-letters an event whose key is not its table_id (it never folds
    it), so the sink does not land it either; under its own key it lands."""
    from pitwatch.events.avro import encode_single
    from pitwatch.producers.simulate import Floor
    from pitwatch.store.order import Positions

    ev = next(iter(Floor(1, 1, 3, 0.0).events()))
    value = encode_single(ev)
    assert to_row("table-events", S, value, Positions(), b"another-table") is None
    row = to_row("table-events", S, value, Positions(), ev.table_id.encode())
    assert row is not None and row[0] == "events" and row[1]["event_id"] == ev.event_id


def test_a_dead_letter_fits_the_broker_limit_and_names_the_original() -> None:
    value = bytes(range(256)) * 20_000  # 5 MB
    d = orjson.loads(dead_letter("why", "t", 1, 7, b"k" * 5000, value))
    assert len(dead_letter("why", "t", 1, 7, b"k" * 5000, value)) < 1_000_000
    assert d["value_len"] == len(value) and d["truncated"]
    assert d["value_sha256"] == hashlib.sha256(value).hexdigest()
    assert base64.b64decode(d["value_b64"]) == value[:MAX_VALUE_BYTES]
    assert (d["topic"], d["partition"], d["offset"], d["tombstone"]) == ("t", 1, 7, False)
    assert orjson.loads(dead_letter("why", "t", 0, 0, None, None))["tombstone"] is True


class _Store:
    """Refuses rows whose seat is over 255; down for the next `down` pings."""

    def __init__(self, down: int = 0) -> None:
        self.down = down
        self.rows: list[dict[str, Any]] = []

    def insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        if self.down:
            raise StoreError("connection refused")
        if any(r["seat"] > 255 for r in rows):
            raise StoreError("Code: 53, seat out of range")
        self.rows += rows

    def query(self, sql: str) -> list[dict[str, Any]]:
        if self.down:
            self.down -= 1
            raise StoreError("connection refused")
        return [{"one": 1}]


class _Consumer:
    def __init__(self) -> None:
        self.paused = 0

    def assignment(self) -> set[str]:
        return {"tp"}

    def pause(self, *tps: str) -> None:
        self.paused += 1

    def resume(self, *tps: str) -> None:
        pass

    async def getmany(self, timeout_ms: int) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {}


class _Producer:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send_and_wait(self, topic: str, key: bytes | None, value: bytes) -> None:
        self.sent.append(orjson.loads(value))


def _write(store: _Store, seats: list[int]) -> tuple[_Producer, _Consumer]:
    producer, consumer = _Producer(), _Consumer()

    async def go() -> None:
        b = Batches()
        for i, seat in enumerate(seats):
            b.add("rounds", {"seat": seat, "i": i}, Source("rounds", 0, i, b"k", b"v"), 0.0)
        w = Writer(store, consumer, producer, S, lambda: False)  # type: ignore[arg-type]
        assert await w.write(b) == len(seats)
        assert len(b) == 0

    asyncio.run(go())
    return producer, consumer


def test_a_refused_row_is_a_dead_letter_and_the_rest_lands() -> None:
    store = _Store()
    producer, consumer = _write(store, [1, 2, 300, 4, 5, 6, 999])
    assert sorted(r["seat"] for r in store.rows) == [1, 2, 4, 5, 6]
    assert [d["offset"] for d in producer.sent] == [2, 6]
    assert all("ClickHouse rejected the rounds row" in d["reason"] for d in producer.sent)
    assert consumer.paused == 0  # not an outage


def test_an_outage_pauses_retries_and_loses_nothing() -> None:
    store = _Store(down=2)
    producer, consumer = _write(store, [1, 2, 3])
    assert [r["seat"] for r in store.rows] == [1, 2, 3]
    assert producer.sent == [] and consumer.paused == 2


def test_a_commit_kafka_refuses_is_logged_and_the_sink_goes_on(caplog: Any) -> None:
    """After the broker came back, the group had rebalanced and Kafka refused the sink's
    commit (UnknownMemberId): the sink logs it and goes on (the batch is read again and
    replaces the same rows); it died of it before."""
    from aiokafka.errors import CommitFailedError

    class Refusing:
        calls = 0

        async def commit(self) -> None:
            self.calls += 1
            raise CommitFailedError("UnknownMemberIdError: the group rebalanced")

    c = Refusing()
    with caplog.at_level("WARNING", logger="pitwatch.sink"):
        asyncio.run(_commit(c))
    assert c.calls == 1
    assert "refused the commit" in caplog.text
