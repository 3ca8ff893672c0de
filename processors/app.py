"""The Faust app: the audit of the table-events topic, thin around the core.

Faust assigns the partitions, keeps the `open-rounds` table, commits offsets and runs
the timers and the web server; the events reach the audit a fetch at a time, a list of
records per partition, without a Faust Event or stream each (processors/faust_batch.py).

Per event: decode (a message that does not decode, a tombstone, or an event under
another table's key goes to the dead-letter topic with its reason), feed the table's
auditor, send each violation to the alerts topic at once (Avro), each finished round
to the rounds topic, and the quarantine row of each event the record took in as refused
to the refused topic (the sink keeps it, as the embedded audit does, for a rebuild),
and what the game-protection detectors decide over the table's fold to the
observations topic (processors/observe.py).
A table's state is snapshotted into a changelog-backed Faust table only after Kafka
acknowledged the alerts, rounds and quarantine rows it covers, and offsets are committed
only after that: the order of these steps is processors/checkpoint.py's (`Checkpoint`).

Time (docs/procedure.md, "When a round is incomplete"): the auditor applies the
table's own device clock; a timer here adds the processing-time rule, for tables whose
partition is caught up and for which nothing has arrived for the time-out. The wall
clock is never compared with device ts.

Committed records only: the consumer, every read-back and every restore read
`read_committed` (processors/faust_batch.py, processors/catch_up.py), so a record of an
aborted transaction is never audited, alerted or dead-lettered. Offsets that hold no
record (transaction markers, aborted batches) are not holes: the group's commit moves
past them, and a partition whose audit has read everything committed is settled to
its last stable offset within SETTLE_S.

Events lost before the audit read them (the group's committed offset below the
partition's first offset, or a fetch that jumped past deleted offsets): one log line
saying what to do, counted in /metrics, listed in /health, and each table of the
partition with state here told (processors/state.py).

The events topic's partitions come from Kafka: the worker's watchdogs
(processors/watchdogs.py) check their count. When it changes, tables move between
partitions and their state would not follow them: the worker stops auditing (nothing
more is committed), says so in /health (503), in /metrics and in the log, with the
steps (docs/deployment.md).

The ClickHouse sink runs beside it, in a process of its own (`sink.py`, supervised by
`worker.py`), so the two use both cores.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pitwatch.connect import KafkaAuth
from pitwatch.events.keys import KeyRegistry
from pitwatch.packs.registry import select

from .catch_up import PartitionReader
from .checkpoint import Checkpoint, Outputs
from .faust_batch import BatchApp
from .metrics import Metrics
from .observe import ObservedStates
from .settings import Settings
from .watchdogs import Watchdogs
from .web import WebServer

#: The audit takes a fetch at a time, at most BATCH records (processors/faust_batch.py):
#: one wait for Kafka's acknowledgements and one snapshot per table per fetch, instead
#: of per message (a wait costs the producer's linger plus a broker round trip).
BATCH = 2000
#: how often each partition is settled past offsets that hold no record after its last
#: one read (two small requests a partition): the commit reaches the end within this of
#: the last record, inside Faust's own commit interval (2.8 s)
SETTLE_S = 1.0

log = logging.getLogger("pitwatch.worker")


def create_app(settings: Settings, keys: KeyRegistry | None = None,
               web: WebServer | None = None) -> BatchApp:
    """The worker's Faust app; `keys` the device key registry the audit checks
    signatures against (`worker.worker_registry`; None: signatures not required);
    `web` the web server its health and metrics are served on."""
    # the Kafka clients log every request at DEBUG: never build those records
    for name in ("aiokafka", "kafka"):
        logging.getLogger(name).setLevel(logging.WARNING)
    app = BatchApp(
        settings.app_id,
        # Faust's list of brokers is `;`-separated; PITWATCH_KAFKA's is `,` as Kafka's
        broker=";".join(f"kafka://{b.strip()}" for b in settings.kafka.split(",")),
        store=settings.store,
        datadir=str(Path(settings.data_dir) / "faust"),
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication_factor,
        # health and metrics are served by the worker's own thread (processors/web.py),
        # which answers while Faust waits for Kafka and through a restart's back-off
        web_enabled=False,
        producer_acks=-1,
        # a fetch's alerts, rounds and snapshots are all queued before its one wait for
        # acknowledgements, so a short linger batches them; a longer one only adds to
        # that wait (on a loaded machine bench/latency.py could not tell 2 ms from 10 ms
        # apart: its noise there is larger than the 8 ms)
        producer_linger_ms=2,
        broker_max_poll_records=BATCH,
        consumer_auto_offset_reset="earliest",
        # a crashed worker's partitions move on within seconds, not a minute
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=settings.heartbeat_s,
        broker_rebalance_timeout=max(settings.session_timeout_s * 3, 30.0),
        # a worker started before its topics exist picks them up
        topic_allow_declare=True,
        key_serializer="raw",
        value_serializer="raw",
        **KafkaAuth.from_env().faust(),
    )
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw",
                           "value_serializer": "raw"}
    events = app.topic(settings.events_topic, partitions=settings.partitions, **raw)
    alerts = app.topic(settings.alerts_topic, **raw)
    rounds = app.topic(settings.rounds_topic, **raw)
    refused = app.topic(settings.refused_topic, **raw)
    observations = app.topic(settings.observations_topic, **raw)
    dead = app.topic(settings.dead_letter_topic, **raw)
    open_rounds = app.Table(settings.topic_prefix + "open-rounds", default=None,
                            partitions=settings.partitions, key_type=bytes, value_type=bytes)

    timeout_ms = int(settings.round_timeout_s * 1000)
    if keys is None:
        log.warning("no key registry (--keys / PITWATCH_KEYS): device signatures are not "
                    "required")
    # each table's auditor carries the game-protection detectors (processors/observe.py)
    states = ObservedStates(open_rounds, select, timeout_ms, keys)
    metrics = Metrics(app, states, settings)
    states.on_engine_error = metrics.engine_error
    #: the events topic's partition count the worker audits (from Kafka at its start)
    partitions = settings.partitions
    probe = PartitionReader(settings.kafka)  # the settle's own reads, apart from the audit's
    checkpoint = Checkpoint(app, states, Outputs(alerts, rounds, refused, observations, dead),
                            PartitionReader(settings.kafka, group=settings.app_id), probe,
                            metrics, settings.events_topic)
    watchdogs = Watchdogs(checkpoint, PartitionReader(settings.kafka), metrics,
                          settings.events_topic, partitions, settings.session_timeout_s,
                          settings.stall_timeout_s)
    watchdogs.install(app)

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        async with checkpoint.lock:
            checkpoint.forget()
            watchdogs.forget()

    app.batch_consume(events, checkpoint.audit, checkpoint.commit)

    async def expire_idle() -> None:
        await checkpoint.expire_idle(settings.round_timeout_s)

    app.timer(interval=settings.idle_check_s)(expire_idle)
    app.timer(interval=SETTLE_S)(checkpoint.settle)

    metrics.install(checkpoint.next_to_read)
    if web is not None:
        web.attach(metrics)
    return app
