"""Sending events to Kafka with kafka-python: keyed by table_id, acks=all, the
idempotent producer, compression and batching; topics created with the partition
counts and settings the workers need."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event

#: topic -> (partitions, configs). table-events: one table = one partition = one order.
TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    "table-events": {"retention.ms": str(90 * 24 * 3600 * 1000), "min.insync.replicas": "1"},
    "alerts": {"retention.ms": str(30 * 24 * 3600 * 1000)},
    "rounds": {"retention.ms": str(30 * 24 * 3600 * 1000)},
    "dead-letters": {"retention.ms": str(365 * 24 * 3600 * 1000)},
}


def ensure_topics(bootstrap: str, partitions: int = 4, prefix: str = "") -> list[str]:
    """Create the pipeline's topics that do not exist yet; returns those created."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="pitwatch-admin")
    try:
        existing = set(admin.list_topics())
        new = [NewTopic(prefix + name, partitions, 1, topic_configs=cfg)
               for name, cfg in TOPIC_CONFIGS.items() if prefix + name not in existing]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):  # another creator won
                admin.create_topics(new)
        return [t.name for t in new]
    finally:
        admin.close()


def make_producer(bootstrap: str) -> object:
    from kafka import KafkaProducer

    return KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        compression_type="gzip",
        linger_ms=5,
        batch_size=256 * 1024,
        max_in_flight_requests_per_connection=5,
        retries=2**31 - 1,
    )


@dataclass
class Pacing:
    """How fast to send: as fast as possible (rate None), a fixed rate in events/s, or
    live (keeping the gaps between the events' own ts, scaled by `speed`)."""

    rate: float | None = None
    live: bool = False
    speed: float = 1.0


def send_events(producer: object, topic: str, events: Iterable[Event],
                pacing: Pacing | None = None,
                on_sent: Callable[[int], None] | None = None) -> int:
    """Send events in order, paced as asked; returns how many."""
    pacing = pacing or Pacing()
    n = 0
    start = time.monotonic()
    first_ts: int | None = None
    for ev in events:
        if pacing.live:
            first_ts = ev.ts if first_ts is None else first_ts
            due = start + (ev.ts - first_ts) / 1000 / pacing.speed
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        elif pacing.rate:
            delay = start + n / pacing.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        producer.send(topic, key=ev.table_id.encode(), value=encode_single(ev))  # type: ignore[attr-defined]
        n += 1
        if on_sent is not None and n % 1000 == 0:
            on_sent(1000)
    producer.flush()  # type: ignore[attr-defined]
    if on_sent is not None:
        on_sent(n % 1000)
    return n
