"""Sending events to Kafka with kafka-python: keyed by table_id, acks=all, the
idempotent producer, compression and batching; topics created with the partition
counts and settings the workers need."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pitwatch.connect import KafkaAuth
from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event
from processors.topics import TOPIC_CONFIGS, ensure_topics

__all__ = ["TOPIC_CONFIGS", "Pacing", "ensure_topics", "make_producer", "send_events"]


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
        **KafkaAuth.from_env().kafka_python(),
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
