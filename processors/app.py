"""The Faust app: the audit of the table-events topic, thin around the core.

Faust assigns the partitions, keeps the `open-rounds` table, commits offsets and runs
the timers and the web server; the events reach the audit a fetch at a time, a list of
records per partition, without a Faust Event or stream each (processors/faust_batch.py).

Per event: decode (a message that does not decode, a tombstone, or an event under
another table's key goes to the dead-letter topic with its reason), feed the table's
auditor, send each violation to the alerts topic at once (Avro) and each finished round
to the rounds topic. A table's state is snapshotted into a changelog-backed Faust table
only after Kafka acknowledged the alerts and rounds it covers (at-least-once alerts with
stable violation ids; records exactly once in the store).

Time (docs/procedure.md, "When a round is incomplete"): the auditor applies the
table's own device clock; a timer here adds the processing-time rule, for tables whose
partition is caught up and for which nothing has arrived for the time-out. The wall
clock is never compared with device ts.

The ClickHouse sink runs beside it, in a process of its own (`sink.py`, supervised by
`worker.py`), so the two use both cores.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from faust.types import TP

from pitwatch.connect import KafkaAuth
from pitwatch.engine.alerts import encode_violation
from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.events.keys import KeyRegistry
from pitwatch.packs.registry import select
from pitwatch.store.rows import round_row

from .catch_up import PartitionReader
from .dead_letters import dead_letter
from .faust_batch import BatchApp, in_hand
from .gaps import unread_before
from .metrics import Metrics
from .settings import Settings
from .state import Found, TableStates
from .supervise import Frozen, Stalled, log_tasks, restart_self

#: The audit takes a fetch at a time, at most BATCH records (processors/faust_batch.py):
#: one wait for Kafka's acknowledgements and one snapshot per table per fetch, instead
#: of per message (a wait costs the producer's linger plus a broker round trip).
BATCH = 2000
#: the watchdog's wait for a partition's end offset (a broker down answers nothing)
END_OFFSET_WAIT_S = 3.0


log = logging.getLogger("pitwatch.worker")


def create_app(settings: Settings) -> BatchApp:
    # the Kafka clients log every request at DEBUG: never build those records
    for name in ("aiokafka", "kafka"):
        logging.getLogger(name).setLevel(logging.WARNING)
    app = BatchApp(
        settings.app_id,
        broker=f"kafka://{settings.kafka}",
        store=settings.store,
        datadir=str(Path(settings.data_dir) / "faust"),
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication_factor,
        web_port=settings.web_port,
        web_enabled=settings.web_port > 0,
        web_bind=settings.web_bind,
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
    dead = app.topic(settings.dead_letter_topic, **raw)
    open_rounds = app.Table(settings.topic_prefix + "open-rounds", default=None,
                            partitions=settings.partitions, key_type=bytes, value_type=bytes)

    timeout_ms = int(settings.round_timeout_s * 1000)
    keys = KeyRegistry.load(settings.keys) if settings.keys else None
    if keys is None:
        log.warning("no key registry (--keys / PITWATCH_KEYS): device signatures are not "
                    "required")
    states = TableStates(open_rounds, select, timeout_ms, keys)
    catch_up = PartitionReader(settings.kafka, group=settings.app_id)
    metrics = Metrics(app, states, settings)
    states.on_engine_error = metrics.engine_error
    lock = asyncio.Lock()  # the audit and the timer take turns on the auditors
    position: dict[tuple[str, int], int] = {}  # (topic, partition) -> last offset read

    async def send(found: Found) -> list[Any]:
        """Each violation to the alerts topic, each finished round to the rounds topic,
        handed to the producer (which batches them) without waiting for Kafka; returns
        the futures of their acknowledgements."""
        acks = [await alerts.send(key=v.table_id.encode(), value=encode_violation(v))
                for v in found.violations]
        acks += [await rounds.send(key=r.table_id.encode(), value=orjson.dumps(round_row(r)))
                 for r in found.rounds]
        metrics.alerts += len(found.violations)
        return acks

    async def snapshot(due: dict[str, tuple[str, int, int]], acks: list[Any]) -> None:
        """Once Kafka acknowledged everything found, the tables' snapshots: one
        changelog write per table, on the partition of the message `due` names for it."""
        if not due:
            return
        if acks:
            await asyncio.gather(*acks)
        for t, (topic, partition, offset) in due.items():
            with in_hand(topic, partition, offset):
                states.snapshot(t)

    async def reject(topic: str, partition: int, offset: int, key: bytes | None,
                     value: bytes | None, reason: str) -> Any:
        metrics.dead_letters += 1
        log.warning("dead letter at %s[%d]@%d: %s", topic, partition, offset, reason)
        return await dead.send(key=key, value=dead_letter(reason, topic, partition, offset,
                                                          key, value))

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        async with lock:
            states.forget()
            position.clear()
            stalled.forget()

    acks: list[Any] = []
    #: a table that wants a snapshot -> (topic, partition, offset) of its last event
    #: handled, whose partition the changelog write takes
    Due = dict[str, tuple[str, int, int]]

    async def handle(topic: str, partition: int, offset: int, key: bytes | None,
                     value: bytes | None, due: Due) -> None:
        """One message of the events topic, in its partition's order: the decode (or a
        dead letter) and the fold; what it found goes to the producer without waiting,
        and a table that wants a snapshot goes into `due`."""
        position[(topic, partition)] = offset
        metrics.events += 1
        if value is None:
            acks.append(await reject(topic, partition, offset, key, value,
                                     "tombstone: a null value is not an event"))
            return
        try:
            ev = decode_single(value)
        except DecodeError as e:
            acks.append(await reject(topic, partition, offset, key, value, str(e)))
            return
        if key != ev.table_id.encode():
            acks.append(await reject(topic, partition, offset, key, value,
                                     f"key {key!r} is not the event's table_id "
                                     f"{ev.table_id!r}: its table's order is not kept"))
            return
        try:
            found = await states.process(ev, topic, partition, offset, catch_up.read)
        except Exception:  # the partition could not be read back, say
            log.exception("could not audit %s[%d]@%d; restarting the worker clean (it "
                          "resumes from the committed offset)", topic, partition, offset)
            restart_self()
        if found:
            acks.extend(await send(found))
        if ev.table_id in due or states.due(ev.table_id, ev):
            due[ev.table_id] = (topic, partition, offset)

    async def read_back(topic: str, partition: int, offset: int, due: Due) -> int:
        """Before the message at `offset`: what the consumer skipped (processors/gaps.py),
        read back from the partition and handled in order. Returns the first offset
        handled (`offset` when nothing was skipped)."""
        try:
            unread = await unread_before(position, topic, partition, offset,
                                         catch_up.start_offset, catch_up.read)
        except Exception:  # Kafka could not give the stretch back
            log.exception("could not read back the offsets before %s[%d]@%d; restarting "
                          "the worker clean (it resumes from the committed offset)", topic,
                          partition, offset)
            restart_self()
        if not unread:
            return offset
        log.warning("%s[%d]: offsets %d..%d were skipped by the consumer; handling them "
                    "from the partition first", topic, partition, unread[0][0], offset - 1)
        for o, key, value in unread:
            await handle(topic, partition, o, key or None, value, due)
        return unread[0][0]

    async def audit(batches: Mapping[TP, Sequence[Any]]) -> dict[TP, tuple[int, int]]:
        """One fetch of the events topic, a list of records per partition
        (processors/faust_batch.py): each record, after whatever the consumer skipped
        before it, handled in its partition's order, what was found sent without
        waiting; then, if any table wants a snapshot, one wait for Kafka's
        acknowledgements and one changelog write per table. Returns the offsets handled
        per partition: the group's commit may move past them."""
        handled: dict[TP, tuple[int, int]] = {}
        async with lock:
            due: Due = {}
            for tp, records in batches.items():
                topic, partition = tp.topic, tp.partition
                first = None
                for r in records:
                    last = position.get((topic, partition))
                    if last is None or r.offset != last + 1:
                        start = await read_back(topic, partition, r.offset, due)
                        first = start if first is None else first
                    await handle(topic, partition, r.offset, r.key, r.value, due)
                handled[tp] = (records[0].offset if first is None else first,
                               records[-1].offset)
                for t in states.verdicts(topic, partition):
                    due.setdefault(t, (topic, partition, records[-1].offset))
            if due:
                await snapshot(due, acks)
                acks.clear()
            elif len(acks) > 10_000:  # keep the list short; acknowledged ones go
                acks[:] = [a for a in acks if not a.done()]
        return handled

    app.batch_consume(events, audit)

    def caught_up(topic: str, partition: int) -> bool:
        read = position.get((topic, partition))
        if read is None:
            return False
        try:
            highwater = app.consumer.highwater(TP(topic, partition))
        except Exception:  # not assigned any more, or not fetched yet
            return False
        return highwater is not None and read + 1 >= highwater

    async def expire_idle() -> None:
        """The processing-time rule (the time-out measured on this worker's clock,
        only for tables whose partition is caught up). A verdict goes into the table's
        snapshot with the next event of its partition (Faust writes a table only while
        an event is in hand); should the worker die before that, the next one reaches
        the same verdict, with the same violation id, once the time-out passes again."""
        async with lock:
            found = states.expire_idle(caught_up, settings.round_timeout_s)
            if found:
                acks.extend(await send(found))
            states.evict_idle()  # live state stays bounded (processors/state.py)

    app.timer(interval=settings.idle_check_s)(expire_idle)

    frozen = Frozen(settings.session_timeout_s)
    stalled = Stalled(settings.stall_timeout_s)
    ends = PartitionReader(settings.kafka)

    def next_to_read(tp: Any) -> int:
        """The offset the audit reads next on `tp`: after its last read, else the
        group's committed offset (-1 when unknown)."""
        read = position.get((tp.topic, tp.partition))
        if read is not None:
            return read + 1
        committed = getattr(app.consumer, "_committed_offset", {}).get(tp)
        return -1 if committed is None else int(committed)

    async def freeze_watch() -> None:
        """A worker that was frozen (SIGSTOP, a paused VM) for longer than its session
        has lost its partitions, and Faust does not always recover its consumer from
        that: it starts again, clean, from its snapshots and committed offsets. This
        timer awaits nothing, so a gap between its ticks is a freeze, never a wait."""
        gap = frozen.tick()
        if gap is not None:
            log.error("this worker was frozen for %.0f s, longer than its %.0f s session: "
                      "its partitions have moved on; restarting it clean", gap,
                      settings.session_timeout_s)
            restart_self()

    async def stall_watch() -> None:
        """A partition with messages waiting must not stand still: past the stall
        time-out the worker starts again, clean (never under the lock: it must work
        when the audit is stuck). A broker that does not answer is nothing to judge."""
        try:
            assigned = [tp for tp in app.consumer.assignment()
                        if tp.topic == settings.events_topic]
        except Exception:  # not started yet
            return
        for tp in assigned:
            try:
                end = await asyncio.wait_for(ends.end_offset(tp.topic, tp.partition),
                                             END_OFFSET_WAIT_S)
            except Exception as e:  # Kafka unreachable: nothing to judge now
                log.info("watchdog: no end offset for %s (%s)", tp, e)
                return
            still = stalled.check((tp.topic, tp.partition), next_to_read(tp) - 1, end)
            if still is not None:
                log.error("%s[%d] has messages up to offset %d but nothing was read for "
                          "%.0f s; restarting this worker clean", tp.topic, tp.partition,
                          end - 1, still)
                log_tasks()
                restart_self()

    app.timer(interval=1.0)(freeze_watch)
    app.timer(interval=5.0)(stall_watch)
    metrics.install(position)
    return app
