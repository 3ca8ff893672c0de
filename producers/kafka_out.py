"""Sending events to Kafka with kafka-python: keyed by table_id, acks=all, the
idempotent producer, compression and batching (the topics themselves, their partitions
and configs, are `pitwatch.topics`).

Through a broker outage (a restart, a crash) the producer keeps its records and
retries them, in order, for up to `OUTAGE_S`. A record Kafka never acknowledged is
never passed over in silence: `send_events` raises `DeliveryError` saying how many."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pitwatch.connect import KafkaAuth
from pitwatch.events.avro import encode_single
from pitwatch.events.model import Event

__all__ = ["OUTAGE_S", "DeliveryError", "Pacing", "make_producer", "send_events"]

#: How long a record is retried through a broker outage before it fails (kafka-python's
#: default, two minutes, is shorter than a loaded broker's restart can take), and how
#: long `send` may block on a full buffer or a topic's metadata meanwhile.
OUTAGE_S = 600


class DeliveryError(RuntimeError):
    """Kafka did not acknowledge some events: the run's output is incomplete."""


def make_producer(bootstrap: str, outage_s: float = OUTAGE_S) -> object:
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
        delivery_timeout_ms=int(outage_s * 1000),
        max_block_ms=int(outage_s * 1000),
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
    """Send events in order, paced as asked; returns how many, once Kafka acknowledged
    every one. Raises DeliveryError, as soon as it is known, if Kafka refused or timed
    out on any (kafka-python's flush() returns either way: each record's future says)."""
    from kafka.errors import KafkaTimeoutError

    pacing = pacing or Pacing()
    #: (position in the stream, event_id, why) of each event Kafka did not acknowledge;
    #: the producer's I/O thread adds to it
    failures: list[tuple[int, str, BaseException]] = []

    def failed(i: int, event_id: str) -> Callable[[BaseException], None]:
        return lambda e: failures.append((i, event_id, e))

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
        n += 1
        try:
            future = producer.send(topic, key=ev.table_id.encode(), value=encode_single(ev))  # type: ignore[attr-defined]
        except KafkaTimeoutError as e:  # blocked for max_block_ms: no broker, or full
            failures.append((n, ev.event_id, e))
            break
        future.add_errback(failed(n, ev.event_id))
        if failures:  # no use sending more: the caller must re-send from the first
            break
        if on_sent is not None and n % 1000 == 0:
            on_sent(1000)
    producer.flush()  # type: ignore[attr-defined]
    if failures:
        i, first_id, why = min(failures, key=lambda f: f[0])
        raise DeliveryError(
            f"Kafka did not acknowledge {len(failures)} of the {n} events sent to {topic}; "
            f"the first is event {i:,} ({first_id}): {why!r}. Later events of its table "
            "may have landed before it. Re-send from that event once Kafka is up (a copy "
            "of an event already on the topic is a no-op to the audit)")
    if on_sent is not None:
        on_sent(n % 1000)
    return n
