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
acknowledged the alerts, rounds and quarantine rows it covers (at-least-once alerts
with stable violation ids; records exactly once in the store).

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

The events topic's partitions come from Kafka: the worker checks their count every
PARTITIONS_CHECK_S. When it changes, tables move between partitions and their state
would not follow them: the worker stops auditing (nothing more is committed), says so
in /health (503), in /metrics and in the log, with the steps (docs/deployment.md).

The ClickHouse sink runs beside it, in a process of its own (`sink.py`, supervised by
`worker.py`), so the two use both cores.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import orjson
from faust.types import TP

from pitwatch.connect import KafkaAuth
from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.violation_avro import encode_violation
from pitwatch.packs.registry import select
from pitwatch.protect.stored import observation_message
from pitwatch.store.rows import round_row

from .catch_up import PartitionReader, Stretch
from .dead_letters import dead_letter
from .faust_batch import BatchApp, BatchConsumer, in_hand
from .gaps import unread_before
from .metrics import Metrics
from .observe import Observed, ObservedStates
from .settings import Settings
from .state import Found, Moved, lost_where, utc_now
from .supervise import Frozen, Stalled, log_tasks, restart_self
from .web import WebServer

#: The audit takes a fetch at a time, at most BATCH records (processors/faust_batch.py):
#: one wait for Kafka's acknowledgements and one snapshot per table per fetch, instead
#: of per message (a wait costs the producer's linger plus a broker round trip).
BATCH = 2000
#: the watchdog's wait for a partition's end offset (a broker down answers nothing)
END_OFFSET_WAIT_S = 3.0
#: how often the events topic's partition count is asked of Kafka
PARTITIONS_CHECK_S = 10.0
#: how often each partition is settled past offsets that hold no record after its last
#: one read (two small requests a partition): the commit reaches the end within this of
#: the last record, inside Faust's own commit interval (2.8 s)
SETTLE_S = 1.0
#: what the log and /health say to do when events were lost
LOST_TODO = ("re-send that stretch from the gateway's log, in its order: it is audited "
             "as a back-fill and the loss finding says when the record is whole again "
             "(a copy of an event already audited changes nothing); or audit the "
             "gateway's files for it with `pitwatch audit`")
#: what the log and /health say to do when the partitions changed
MOVED_TODO = ("the worker has stopped auditing; nothing past this point is committed. "
              "Follow docs/deployment.md, 'Growing the events topic': stop the workers, "
              "then start them again under the procedure there")


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
    catch_up = PartitionReader(settings.kafka, group=settings.app_id)
    metrics = Metrics(app, states, settings)
    #: the events topic's partition count the worker audits (from Kafka at its start)
    partitions = settings.partitions
    states.on_engine_error = metrics.engine_error
    lock = asyncio.Lock()  # the audit and the timer take turns on the auditors
    position: dict[tuple[str, int], int] = {}  # (topic, partition) -> last offset read

    async def send(found: Found, arrived: float | None = None) -> list[Any]:
        """Each violation to the alerts topic, each finished round to the rounds topic,
        each quarantine row to the refused topic, each observation to the observations
        topic, handed to the producer (which batches them) without waiting for Kafka;
        returns the futures of their acknowledgements. `arrived`: when the event that
        raised them arrived (time.monotonic), for the alerts' histogram."""
        acks = [await alerts.send(key=v.table_id.encode(), value=encode_violation(v))
                for v in found.violations]
        if arrived is not None:
            for ack in acks:  # Faust's FutureMessage: an asyncio future, as it is
                asyncio.ensure_future(ack).add_done_callback(
                    lambda f: None if f.cancelled() or f.exception()
                    else metrics.alert_acknowledged(arrived))
        acks += [await rounds.send(key=r.table_id.encode(), value=orjson.dumps(round_row(r)))
                 for r in found.rounds]
        acks += [await refused.send(key=q["table_id"].encode(), value=orjson.dumps(q))
                 for q in found.refused]
        if isinstance(found, Observed):  # the observations the detectors decided
            acks += [await observations.send(key=o.table_id.encode(),
                                             value=observation_message(o))
                     for o in found.observations]
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

    def refuse(reason: str) -> None:
        """Stop auditing the topic, visibly (once): log, /health, /metrics."""
        if metrics.refusal is None:
            metrics.refusal = f"{reason}; {MOVED_TODO}"
            log.error("REFUSING TO AUDIT: %s", metrics.refusal)

    def note_lost(topic: str, partition: int, lost: tuple[int, int]) -> None:
        """Offsets deleted before the audit read them: one line with what to do,
        counted, listed in /health, and each table of the partition held here told."""
        where = lost_where(topic, partition, lost, utc_now())
        told = states.lost(topic, partition, where)
        metrics.lost(where, lost[1] - lost[0] + 1)
        log.error("EVENTS LOST: %s; %d table(s) held here told. To heal: %s", where,
                  len(told), LOST_TODO)

    async def handle(topic: str, partition: int, offset: int, key: bytes | None,
                     value: bytes | None, due: Due, arrived: float) -> None:
        """One message of the events topic, in its partition's order: the decode (or a
        dead letter) and the fold; what it found goes to the producer without waiting,
        and a table that wants a snapshot goes into `due`."""
        if metrics.refusal is not None:  # stopped auditing: nothing more is handled
            return
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
            if e.event is None or key != e.event.table_id.encode():
                return
            ev = e.event  # refused, yet its record's: `TableAuditor.refused` says so
        if key != ev.table_id.encode():
            acks.append(await reject(topic, partition, offset, key, value,
                                     f"key {key!r} is not the event's table_id "
                                     f"{ev.table_id!r}: its table's order is not kept"))
            return
        try:
            found = await states.process(ev, topic, partition, offset, catch_up.read)
        except Moved as e:
            refuse(str(e))
            return
        except Exception:  # the partition could not be read back, say
            log.exception("could not audit %s[%d]@%d; restarting the worker clean (it "
                          "resumes from the committed offset)", topic, partition, offset)
            restart_self()
        if found:
            acks.extend(await send(found, arrived))
        if ev.table_id in due or states.due(ev.table_id, ev):
            due[ev.table_id] = (topic, partition, offset)

    async def read_back(topic: str, partition: int, offset: int, due: Due,
                        arrived: float) -> int:
        """Before the message at `offset`: what the consumer skipped (processors/gaps.py),
        read back from the partition and handled in order. Returns the first offset
        the audit had not handled: the commit may move past it, as past the offsets
        that hold no record and those Kafka deleted (noted as lost)."""
        try:
            unread: Stretch = await unread_before(position, topic, partition, offset,
                                                  catch_up.start_offset, catch_up.read)
        except Exception:  # Kafka could not give the stretch back
            log.exception("could not read back the offsets before %s[%d]@%d; restarting "
                          "the worker clean (it resumes from the committed offset)", topic,
                          partition, offset)
            restart_self()
        if unread.lost is not None:
            note_lost(topic, partition, unread.lost)
        if unread:
            log.warning("%s[%d]: offsets %d..%d were skipped by the consumer; handling "
                        "them from the partition first", topic, partition, unread[0][0],
                        offset - 1)
        for o, key, value in unread:
            await handle(topic, partition, o, key or None, value, due, arrived)
        return unread.start

    async def audit(batches: Mapping[TP, Sequence[Any]]) -> dict[TP, tuple[int, int]]:
        """One fetch of the events topic, a list of records per partition
        (processors/faust_batch.py): each record, after whatever the consumer skipped
        before it, handled in its partition's order, what was found sent without
        waiting; then, if any table wants a snapshot, one wait for Kafka's
        acknowledgements and one changelog write per table. Returns the offsets handled
        per partition: the group's commit may move past them."""
        handled: dict[TP, tuple[int, int]] = {}
        arrived = time.monotonic()  # the fetch reached the worker
        async with lock:
            if metrics.refusal is not None:
                return handled  # not audited, not committed: see refuse()
            due: Due = {}
            for tp, records in batches.items():
                topic, partition = tp.topic, tp.partition
                # one fetch of a partition holds every committed record from its first
                # on: a gap inside it is offsets with no record (a transaction's marker,
                # an aborted batch), never a skipped message; before its first, the
                # consumer may have skipped some (a rebalance), or Kafka deleted them
                first = records[0].offset
                last = position.get((topic, partition))
                if last is None or first != last + 1:
                    first = await read_back(topic, partition, first, due, arrived)
                for r in records:
                    await handle(topic, partition, r.offset, r.key, r.value, due, arrived)
                if metrics.refusal is not None:
                    return {}
                handled[tp] = (first, records[-1].offset)
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

    probe = PartitionReader(settings.kafka)  # the settle's own reads, apart from the audit's

    async def settle_start(tp: Any) -> None:
        """A partition assigned and not read yet whose committed offset lies below its
        first offset: what lies between was deleted before the audit read it. Noted
        now, not when a next record comes; the position and the commit move past it."""
        key = (tp.topic, tp.partition)
        try:
            done = await catch_up.committed(tp.topic, tp.partition)
            first = await catch_up.first_offset(tp.topic, tp.partition)
        except Exception as e:  # Kafka busy or away: the next tick asks again
            log.info("could not ask where %s starts (%s)", tp, e)
            return
        if done is None or done >= first:
            return
        async with lock:
            if position.get(key) is not None:
                return
            note_lost(tp.topic, tp.partition, (done, first - 1))
            position[key] = first - 1
            cast(BatchConsumer, app.consumer).mark_done(tp, done, first - 1)
        await app.consumer.commit()

    async def settle() -> None:
        """A partition whose audit has read up to offset L while its last stable offset
        E is past L + 1 has no readable record left before E when the broker gives
        none from L + 1 on (a transaction's marker, an aborted batch, deleted offsets):
        the read position and the group's commit move to E, within a tick of the last
        record. The broker is asked outside the audit's lock (one fetch, the first
        record at most); the position moves only if the audit has not moved meanwhile.
        A partition not read yet is checked for offsets deleted since its commit."""
        try:
            assigned = [tp for tp in app.consumer.assignment()
                        if tp.topic == settings.events_topic]
        except Exception:  # not started yet
            return
        for tp in assigned:
            key = (tp.topic, tp.partition)
            last = position.get(key)
            if last is None and metrics.refusal is None:
                await settle_start(tp)
                continue
            if last is None or metrics.refusal:
                continue
            try:  # the broker's last stable offset now, not the consumer's last fetch's
                end = await probe.end_offset(tp.topic, tp.partition)
                if end <= last + 1:
                    continue
                stretch = await probe.read(tp.topic, tp.partition, last + 1, end, limit=1)
            except Exception as e:  # Kafka busy or away: the next tick asks again
                log.info("could not settle %s past offset %d (%s)", tp, last, e)
                continue
            if stretch:  # records the consumer will deliver: not ours to take
                continue
            async with lock:
                if position.get(key) != last:  # the audit moved on meanwhile
                    continue
                if stretch.lost is not None:
                    note_lost(tp.topic, tp.partition, stretch.lost)
                position[key] = end - 1
                cast(BatchConsumer, app.consumer).mark_done(tp, last + 1, end - 1)
            await app.consumer.commit()

    app.timer(interval=SETTLE_S)(settle)

    async def partitions_watch() -> None:
        """The events topic's partition count, from Kafka: a change stops the audit."""
        try:
            n = await probe.partition_count(settings.events_topic)
        except Exception as e:  # Kafka away: nothing to judge now
            log.info("could not ask Kafka for %s's partitions (%s)", settings.events_topic, e)
            return
        metrics.partitions = n
        if n is not None and n != partitions:
            refuse(f"{settings.events_topic} has {n} partitions, not the {partitions} "
                   "this worker's state is kept for: tables now keyed to other partitions "
                   "would be audited without their state")

    app.timer(interval=PARTITIONS_CHECK_S)(partitions_watch)

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
                nxt = next_to_read(tp)
                if nxt < 0:  # nothing read, nothing committed: reading starts at its first
                    nxt = await asyncio.wait_for(ends.first_offset(tp.topic, tp.partition),
                                                 END_OFFSET_WAIT_S)
            except Exception as e:  # Kafka unreachable: nothing to judge now
                log.info("watchdog: no end offset for %s (%s)", tp, e)
                return
            still = stalled.check((tp.topic, tp.partition), nxt - 1, end)
            if still is not None:
                log.error("%s[%d] has messages up to offset %d but nothing was read for "
                          "%.0f s; restarting this worker clean", tp.topic, tp.partition,
                          end - 1, still)
                log_tasks()
                restart_self()

    app.timer(interval=1.0)(freeze_watch)
    app.timer(interval=5.0)(stall_watch)
    metrics.install(next_to_read)
    if web is not None:
        web.attach(metrics)
    return app
