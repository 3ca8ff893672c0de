"""The Faust app: an audit agent over the table-events topic, thin around the core.

Per event: decode (a message that does not decode goes to the dead-letter topic with
its reason), feed the table's auditor, send each violation to the alerts topic at once
(Avro) and each finished round to the rounds topic, and persist the table's state in a
changelog-backed Faust table. The ClickHouse sink runs beside it, in a process of its
own (`sink.py`), so the two use both cores.
"""

from __future__ import annotations

import base64
import logging
import time
from pathlib import Path
from typing import Any

import faust
import orjson

from pitwatch.engine.alerts import encode_violation
from pitwatch.engine.auditor import RoundSummary
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.packs.registry import select
from pitwatch.store.rows import round_row

from .catch_up import PartitionReader
from .settings import Settings
from .state import TableStates

log = logging.getLogger("pitwatch.worker")


def create_app(settings: Settings) -> faust.App:
    # the Kafka clients log every request at DEBUG: never build those records
    for name in ("aiokafka", "kafka"):
        logging.getLogger(name).setLevel(logging.WARNING)
    app = faust.App(
        settings.app_id,
        broker=f"kafka://{settings.kafka}",
        store=settings.store,
        datadir=str(Path(settings.data_dir) / "faust"),
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        web_port=settings.web_port,
        web_enabled=False,
        producer_acks=-1,
        # a few ms of linger batches the changelog and alert messages: without it each
        # goes in a request of its own and the agent waits on the broker round trip
        producer_linger_ms=10,
        stream_buffer_maxsize=8192,
        consumer_auto_offset_reset="earliest",
        key_serializer="raw",
        value_serializer="raw",
    )
    raw = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw",
           "value_serializer": "raw"}
    events = app.topic(settings.events_topic, partitions=settings.partitions, **raw)
    alerts = app.topic(settings.alerts_topic, **raw)
    rounds = app.topic(settings.rounds_topic, **raw)
    dead = app.topic(settings.dead_letter_topic, **raw)
    open_rounds = app.Table("open-rounds", default=None, partitions=settings.partitions,
                            key_type=bytes, value_type=bytes)

    out_v: list[Violation] = []
    out_r: list[RoundSummary] = []
    states = TableStates(open_rounds, select, out_v.append, out_r.append)
    catch_up = PartitionReader(settings.kafka)

    async def send_found() -> None:
        """Each violation to the alerts topic, each finished round to the rounds topic."""
        for v in out_v:
            await alerts.send(key=v.table_id.encode(), value=encode_violation(v))
        for r in out_r:
            await rounds.send(key=r.table_id.encode(), value=orjson.dumps(round_row(r)))
        out_v.clear()
        out_r.clear()

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        states.forget()

    @app.agent(events)
    async def audit(stream: Any) -> None:
        async for event in stream.events():
            msg = event.message
            try:
                ev = decode_single(msg.value)
            except DecodeError as e:
                await dead.send(key=msg.key, value=orjson.dumps({
                    "reason": str(e), "topic": msg.topic, "partition": msg.partition,
                    "offset": msg.offset, "key": (msg.key or b"").decode("utf-8", "replace"),
                    "value_b64": base64.b64encode(msg.value or b"").decode()}))
                log.warning("dead letter at %s[%d]@%d: %s", msg.topic, msg.partition,
                            msg.offset, e)
                continue
            await states.process(ev, msg.topic, msg.partition, msg.offset, catch_up.read)
            await send_found()

    @app.timer(interval=10.0)
    async def expire_rounds() -> None:
        """Rounds left open past the time-out are incomplete (the wall clock is read here,
        in the worker, and handed to the engine)."""
        now_ms = int(time.time() * 1000)
        for a in list(states.auditors.values()):
            a.expire(now_ms, int(settings.round_timeout_s * 1000))
        await send_found()

    return app
