"""The ClickHouse sink: its own consumer group on the events, alerts and rounds topics,
batches of thousands of rows or about a second, offsets committed only after a batch
is in ClickHouse. Rows carry deterministic keys (event_id, round_id, violation_id) in
ReplacingMergeTree tables, so a batch written twice counts once. While ClickHouse is
down the sink backs off and retries; the audit and its alerts go on without it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson

from pitwatch.engine.alerts import decode_violation
from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.store.base import TABLES, Store, StoreError
from pitwatch.store.order import Positions
from pitwatch.store.rows import event_row, violation_row

from .settings import Settings

log = logging.getLogger("pitwatch.sink")


class Batches:
    """Rows waiting for ClickHouse, by table."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        self.first_at: float | None = None

    def add(self, table: str, row: dict[str, Any], now: float) -> None:
        self.rows[table].append(row)
        if self.first_at is None:
            self.first_at = now

    def __len__(self) -> int:
        return sum(len(r) for r in self.rows.values())

    def due(self, now: float, max_rows: int, max_wait: float) -> bool:
        return len(self) >= max_rows or (self.first_at is not None
                                         and now - self.first_at >= max_wait)


def to_row(topic: str, settings: Settings, value: bytes, positions: Positions
           ) -> tuple[str, Any] | None:
    if topic == settings.events_topic:
        try:
            ev = decode_single(value)
        except DecodeError:
            return None  # the audit agent sends it to the dead-letter topic
        return "events", event_row(ev, positions.of(ev))  # the order of record, as audits
    if topic == settings.alerts_topic:
        return "violations", violation_row(decode_violation(value))
    if topic == settings.rounds_topic:
        return "rounds", orjson.loads(value)
    return None


async def write_with_backoff(store: Store, batches: Batches,
                             stopping: Callable[[], bool]) -> int:
    """Write every buffered row; on failure back off (0.5 s doubling to 10 s) and retry
    the whole batch until it lands. Returns the number of rows written."""
    loop = asyncio.get_running_loop()
    delay = 0.5
    n = len(batches)
    while True:
        try:
            for table, rows in batches.rows.items():
                if rows:
                    await loop.run_in_executor(None, store.insert, table, rows)
                    batches.rows[table] = []
            batches.first_at = None
            return n
        except StoreError as e:
            if stopping():
                raise
            log.warning("ClickHouse unavailable (%s); retrying in %.1f s", e, delay)
            await asyncio.sleep(delay)
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


async def run_sink(settings: Settings, store_factory: Callable[[], Store],
                   stopping: Callable[[], bool]) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        settings.events_topic, settings.alerts_topic, settings.rounds_topic,
        bootstrap_servers=settings.kafka, group_id=f"{settings.app_id}-sink",
        enable_auto_commit=False, auto_offset_reset="earliest",
        max_partition_fetch_bytes=4 * 1024 * 1024,
    )
    store = store_factory()
    await _setup_with_backoff(store, stopping)
    await consumer.start()
    batches = Batches()
    positions = Positions(store, wait_for_store=True)
    written = 0
    try:
        while not stopping():
            records = await consumer.getmany(timeout_ms=200, max_records=settings.sink_batch_rows)
            now = time.monotonic()
            for tp, msgs in records.items():
                for m in msgs:
                    row = to_row(tp.topic, settings, m.value, positions)
                    if row is not None:
                        batches.add(row[0], row[1], now)
            if batches.due(now, settings.sink_batch_rows, settings.sink_batch_seconds):
                written += await write_with_backoff(store, batches, stopping)
                await consumer.commit()
                log.info("sink: %d rows in ClickHouse", written)
    finally:
        if len(batches):
            try:
                await write_with_backoff(store, batches, lambda: True)
                await consumer.commit()
            except StoreError:
                log.error("sink stopped with %d rows unwritten; they will be re-read",
                          len(batches))
        await consumer.stop()
        store.close()


def sink_process(settings: Settings, loglevel: str) -> None:
    """The sink's own process, started by `pitwatch worker`: it stops when told to
    (SIGTERM) or when the worker that started it is gone (even by SIGKILL)."""
    import os
    import signal

    from pitwatch.store.server import ServerStore

    logging.basicConfig(level=loglevel.upper(),
                        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s")
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
                           settings.clickhouse_db)

    asyncio.run(run_sink(settings, store, stopping))
