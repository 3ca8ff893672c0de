"""The ClickHouse sink: its own consumer group on the events topic and the topics whose
messages are rows the worker made (`ROW_TOPICS`: alerts, rounds, refused,
observations), batches of thousands of rows or about a second, offsets committed only
after a batch is in ClickHouse (the order is processors/checkpoint.py's). Rows carry
deterministic keys (event_id, round_id, violation_id; a quarantine row's table, device,
seq and event) in ReplacingMergeTree tables, so a batch written twice counts once.
An event's first copy wins: before each insert the sink reads the stored rows of the
batch's event ids, drops identical copies and dead-letters a different copy of a stored
event (`store.first_copy`), so a later copy never replaces what the store holds.

Bad input never stops it: a message on a row topic that is not a row of its table
(tombstones included) goes to the dead-letter topic with its reason, and so does
a row ClickHouse rejects while it answers (found by splitting the batch). Messages on
the events topic that are not events are the audit's to dead-letter; the sink
skips them. While ClickHouse is down the sink pauses its partitions and keeps polling
(so it is never evicted from its group), backs off, and retries the same batch; the
audit and its alerts go on without it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.events.jsonl import InvalidEvent
from pitwatch.events.violation_avro import decode_violation
from pitwatch.protect.stored import message_row
from pitwatch.store.base import Store, StoreError
from pitwatch.store.columns import event_row
from pitwatch.store.first_copy import first_copies, row_event
from pitwatch.store.order import Positions
from pitwatch.store.rows import quarantined_event, refused_row, violation_row

from .catch_up import ISOLATION
from .checkpoint import SinkCheckpoint
from .dead_letters import dead_letter
from .metrics import SinkMetrics, sink_heartbeat_file
from .settings import Settings

log = logging.getLogger("pitwatch.sink")
_ROUND_KEYS = frozenset({"round_id", "table_id", "wagered", "paid", "collected", "returned",
                         "violations", "complete", "started", "ended"})


@dataclass(frozen=True, slots=True)
class Source:
    """Where a row came from: what a dead letter names."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class Rejected(ValueError):
    """A message that is not a row of its topic's table."""


def _violation(value: bytes) -> dict[str, Any]:
    try:
        return violation_row(decode_violation(value))
    except Exception as e:  # fastavro raises many kinds on bad bytes
        raise Rejected(f"not a violation: {e}") from e


def _json(value: bytes, what: str) -> dict[str, Any]:
    """A JSON object, else Rejected naming `what` it is not."""
    try:
        row = orjson.loads(value)
    except orjson.JSONDecodeError as e:
        raise Rejected(f"not a {what} (JSON): {e}") from e
    if not isinstance(row, dict):
        raise Rejected(f"not a {what}: fields missing")
    return row


def _round(value: bytes) -> dict[str, Any]:
    row = _json(value, "round")
    if not row.keys() >= _ROUND_KEYS:
        raise Rejected("not a round: fields missing")
    return row


def _refused(value: bytes) -> dict[str, Any]:
    """A quarantine row: its event decoded again from its bytes as sent, refused by its
    decoder, and the row exactly the one those bytes and its reason make
    (`store.rows.refused_row`), so what the store keeps is what a rebuild reads back."""
    row = _json(value, "refused event")
    if not isinstance(row.get("reason"), str) or not isinstance(row.get("event_id"), str):
        raise Rejected("not a refused event: fields missing")
    try:
        ev = quarantined_event(row)
    except (InvalidEvent, KeyError, TypeError, ValueError) as e:
        raise Rejected(f"not a refused event: {e}") from e
    made = refused_row(ev, row["reason"])
    if made != row:
        differ = sorted(k for k in made.keys() | row.keys() if made.get(k) != row.get(k))
        raise Rejected("not a refused event: its fields are not its bytes' ("
                       + ", ".join(differ) + ")")
    return made


def _observation(value: bytes) -> dict[str, Any]:
    """A game-protection observation's row (`protect.stored.message_row`)."""
    try:
        return message_row(value)
    except ValueError as e:
        raise Rejected(f"not an observation: {e}") from e


@dataclass(frozen=True, slots=True)
class RowTopic:
    """A topic whose messages are rows of one store table, made by the worker: the
    setting that names it, the table, what a message is (a dead letter names it), and
    the row of a message's value (Rejected when it is none)."""

    setting: str
    table: str
    what: str
    row: Callable[[bytes], dict[str, Any]]


#: The topics the sink writes rows of, beside the events (one entry a topic)
ROW_TOPICS: tuple[RowTopic, ...] = (
    RowTopic("alerts_topic", "violations", "violation", _violation),
    RowTopic("rounds_topic", "rounds", "round", _round),
    RowTopic("refused_topic", "refused_events", "refused event", _refused),
    RowTopic("observations_topic", "observations", "observation", _observation),
)
#: The tables the sink writes, the events first (`Writer.write`)
SINK_TABLES = ("events", *(t.table for t in ROW_TOPICS))


def row_topics(settings: Settings) -> list[str]:
    """The names of the row topics under `settings`."""
    return [str(getattr(settings, t.setting)) for t in ROW_TOPICS]


class Batches:
    """Rows waiting for ClickHouse, by table, each with its source message."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[dict[str, Any], Source]]] = {t: [] for t in SINK_TABLES}
        self.first_at: float | None = None

    def add(self, table: str, row: dict[str, Any], src: Source, now: float) -> None:
        self.rows[table].append((row, src))
        if self.first_at is None:
            self.first_at = now

    def __len__(self) -> int:
        return sum(len(r) for r in self.rows.values())

    def due(self, now: float, max_rows: int, max_wait: float) -> bool:
        return len(self) >= max_rows or (self.first_at is not None
                                         and now - self.first_at >= max_wait)


def to_row(topic: str, settings: Settings, value: bytes | None, positions: Positions,
           key: bytes | None = None) -> tuple[str, dict[str, Any]] | None:
    """The table and row of a message; None for what the audit dead-letters (a
    bad message on the events topic, or an event under another table's `key`: the
    audit never folds it, so it is no record). Raises Rejected for a message of a row
    topic (`ROW_TOPICS`) that is no row of its table."""
    if topic == settings.events_topic:
        if value is None:
            return None
        try:
            ev = decode_single(value)
        except DecodeError:
            return None  # the audit sends it to the dead-letter topic
        if key is not None and key != ev.table_id.encode():
            return None  # so it does with an event under another table's key
        return "events", event_row(ev, positions.of(ev))  # the order of record, as audits
    for t in ROW_TOPICS:
        if topic == getattr(settings, t.setting):
            if value is None:
                raise Rejected(f"tombstone: a null value is not a {t.what}")
            return t.table, t.row(value)
    return None


class Writer:
    """Lands batches: retries through outages (pausing the consumer's partitions), and
    sends the rows ClickHouse rejects to the dead-letter topic."""

    def __init__(self, store: Store, consumer: Any, producer: Any, settings: Settings,
                 stopping: Callable[[], bool]) -> None:
        self.store = store
        self.consumer = consumer
        self.producer = producer
        self.settings = settings
        self.stopping = stopping
        self.loop = asyncio.get_running_loop()
        self.metrics = SinkMetrics(settings)

    async def _insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        started = time.monotonic()
        await self.loop.run_in_executor(None, self.store.insert, table, rows)
        self.metrics.insert_seconds.labels(table).observe(time.monotonic() - started)

    async def _answers(self) -> bool:
        try:
            await self.loop.run_in_executor(None, self.store.query, "SELECT 1 AS one")
            return True
        except StoreError:
            return False

    async def _wait(self, delay: float) -> None:
        """Back off without leaving the group: partitions paused, polling on."""
        parts = self.consumer.assignment()
        self.consumer.pause(*parts)
        try:
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and not self.stopping():
                await self.consumer.getmany(timeout_ms=int(min(deadline - time.monotonic(),
                                                               0.5) * 1000) + 1)
        finally:
            self.consumer.resume(*[p for p in parts if p in self.consumer.assignment()])

    async def dead(self, src: Source, reason: str) -> None:
        await self.producer.send_and_wait(
            self.settings.dead_letter_topic, key=src.key,
            value=dead_letter(reason, src.topic, src.partition, src.offset, src.key,
                              src.value))
        log.warning("dead letter at %s[%d]@%d: %s", src.topic, src.partition, src.offset,
                    reason)

    async def _land(self, table: str, rows: list[tuple[dict[str, Any], Source]]) -> None:
        """Insert `rows`; when ClickHouse answers but refuses them, split until each
        refused row is alone, and dead-letter it."""
        try:
            await self._insert(table, [r for r, _ in rows])
            return
        except StoreError as e:
            if e.outage or not await self._answers():
                raise  # an outage: the caller backs off and retries
            if len(rows) == 1:
                await self.dead(rows[0][1], f"ClickHouse rejected the {table} row: {e}")
                return
        half = len(rows) // 2
        await self._land(table, rows[:half])
        await self._land(table, rows[half:])

    async def _first_copies(self, rows: list[tuple[dict[str, Any], Source]]
                            ) -> list[tuple[dict[str, Any], Source]]:
        """The event rows to insert: the first copy of each event wins. The sink never
        sees the audit's verdict, so it reads the rows the store holds under the batch's
        event ids (`store.first_copy`): an identical copy (a redelivery, a batch read
        again) is dropped, and a copy that differs from the stored one, or from an
        earlier one in the batch, goes to the dead-letter topic with the fields that
        differ, never over the first."""
        batch = []
        for r, src in rows:
            try:
                batch.append((row_event(r), (r, src)))
            except InvalidEvent as e:  # its row would not read back: never stored
                await self.dead(src, f"the event's row does not read back: {e}")
        got = await self.loop.run_in_executor(None, first_copies, self.store, batch)
        for (_, src), why in got.different:
            await self.dead(src, why)
        if got.same:
            log.info("sink: %d event(s) already stored, identical: not written again",
                     len(got.same))
        return got.new

    async def write(self, batches: Batches) -> int:
        """Write every buffered row, retrying through outages (0.5 s doubling to 10 s)
        until it lands. Returns the number of rows written, dropped as identical copies
        of stored events, or dead-lettered."""
        delay = 0.5
        n = len(batches)
        while True:
            try:
                for table, rows in batches.rows.items():
                    if rows and table == "events":
                        # what was dead-lettered is not sent again after an outage
                        rows = batches.rows[table] = await self._first_copies(rows)
                    if rows:
                        await self._land(table, rows)
                        batches.rows[table] = []
                batches.first_at = None
                return n
            except StoreError as e:
                if self.stopping():
                    raise
                log.warning("ClickHouse unavailable (%s); retrying in %.1f s", e, delay)
                await self._wait(delay)
                delay = min(delay * 2, 10.0)


async def _setup_with_backoff(store: Store, stopping: Callable[[], bool]) -> None:
    loop = asyncio.get_running_loop()
    delay = 0.5
    while not stopping():
        try:
            await loop.run_in_executor(None, store.setup)
            return
        except StoreError as e:
            log.warning("ClickHouse unavailable for setup (%s); retrying in %.1f s", e, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)


async def _commit(consumer: Any) -> None:
    """Commit what was written. Kafka can refuse it (the group rebalanced while the
    broker was away, say): the rows are then read again by whoever holds the
    partitions and land once more on the same keys (ReplacingMergeTree), so the sink
    goes on instead of dying."""
    from aiokafka.errors import KafkaError

    try:
        await consumer.commit()
    except KafkaError as e:
        log.warning("sink: Kafka refused the commit (%s); the last batch will be read "
                    "again and replace the same rows", e)


async def run_sink(settings: Settings, store_factory: Callable[[], Store],
                   stopping: Callable[[], bool]) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from pitwatch.connect import KafkaAuth

    auth = KafkaAuth.sink_from_env().aiokafka()  # its own principal when configured
    consumer = AIOKafkaConsumer(
        settings.events_topic, *row_topics(settings),
        bootstrap_servers=settings.kafka, group_id=f"{settings.app_id}-sink",
        enable_auto_commit=False, auto_offset_reset="earliest",
        # a record of an aborted transaction is never stored (processors/catch_up.py)
        isolation_level=ISOLATION,
        max_partition_fetch_bytes=4 * 1024 * 1024,
        session_timeout_ms=int(settings.session_timeout_s * 1000),
        heartbeat_interval_ms=int(settings.heartbeat_s * 1000),
        max_poll_interval_ms=int(settings.sink_max_poll_interval_s * 1000),
        **auth,
    )
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka, acks="all",
                                enable_idempotence=True, **auth)
    store = store_factory()
    await _setup_with_backoff(store, stopping)
    await producer.start()
    await consumer.start()
    writer = Writer(store, consumer, producer, settings, stopping)
    batches = Batches()
    positions = Positions(store, wait_for_store=True)

    def landed(written: int) -> None:
        writer.metrics.publish()
        log.info("sink: %d rows in ClickHouse", written)

    # the order of write and commit is the checkpoint's (processors/checkpoint.py)
    checkpoint = SinkCheckpoint(
        batches, writer.write, lambda: _commit(consumer),
        lambda: bool(consumer.assignment()), sink_heartbeat_file(settings), landed,
        settings.sink_batch_rows, settings.sink_batch_seconds, time.monotonic())
    try:
        while not stopping():
            records = await consumer.getmany(timeout_ms=200, max_records=settings.sink_batch_rows)
            now = time.monotonic()
            for tp, msgs in records.items():
                for m in msgs:
                    src = Source(tp.topic, tp.partition, m.offset, m.key, m.value)
                    try:
                        row = to_row(tp.topic, settings, m.value, positions, m.key)
                    except Rejected as e:
                        await writer.dead(src, str(e))
                        continue
                    if row is not None:
                        batches.add(row[0], row[1], src, now)
            await checkpoint.after_fetch(now)
    finally:
        try:
            await checkpoint.close()
        except StoreError:
            log.error("sink stopped with %d rows unwritten; they will be re-read",
                      len(batches))
        await consumer.stop()
        await producer.stop()
        store.close()


def sink_process(settings: Settings, loglevel: str) -> None:
    """The sink's own process, started (and restarted) by `pitwatch worker`: it stops
    when told to (SIGTERM) or when the worker that started it is gone (even by SIGKILL)."""
    import os
    import signal

    from pitwatch.store.server import ServerStore
    from pitwatch.terminal import escape_logs

    from .log_rate import limit_repeats

    escape_logs()
    logging.basicConfig(level=loglevel.upper(),
                        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s")
    limit_repeats(logging.getLogger())  # one line an interval while a dependency is away
    for name in ("aiokafka", "kafka"):
        logging.getLogger(name).setLevel(logging.WARNING)
    parent = os.getppid()
    told = False

    def stop(*_: object) -> None:
        nonlocal told
        told = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def stopping() -> bool:
        return told or os.getppid() != parent

    def store() -> Store:
        return ServerStore(settings.clickhouse_host, settings.clickhouse_port,
                           settings.clickhouse_db, alt_hosts=settings.clickhouse_alt_hosts)

    asyncio.run(run_sink(settings, store, stopping))
