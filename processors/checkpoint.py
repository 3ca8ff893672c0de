"""The checkpoint: what is done, in which order, before a consumer's offset is committed.

This is the one description of the order; the worker (processors/app.py) and the sink
(processors/sink.py) both go through the objects here.

The worker, for each fetch of the events topic (`Checkpoint.audit`), under one lock:

1. **fold**: each record of each partition, in offset order, after the offsets the
   consumer skipped before it (read back from the partition: `Checkpoint.read_back`,
   processors/gaps.py), is decoded and folded into its table's auditor
   (`Checkpoint.handle`); a message that is no event of its key's table is a dead
   letter instead.
2. **send**: what the fold found (violations, finished rounds, quarantine rows,
   observations) and the dead letters go to the producer at once, without waiting
   (`Checkpoint.send`); their acknowledgements' futures are kept.
3. **acknowledge**: when any table wants a snapshot, one wait for Kafka to acknowledge
   everything sent so far (`Checkpoint.acknowledge`).
4. **snapshot**: only then each such table's state is written to its changelog
   partition (`Checkpoint.snapshot`), so a snapshot never covers an alert, round or
   quarantine row Kafka does not hold. Alerts are at-least-once (a fold again after a
   take-over sends the same violation ids); records are stored exactly once.
5. **mark done**: the offsets handled (read-backs included) are returned to the
   consumer, which marks them done (`BatchConsumer.mark_done`, processors/faust_batch.py)
   unless a rebalance overtook the fetch. A hole the audit did not handle is never
   marked, so the commit stops before it.
6. **commit**: the consumer then asks the checkpoint (`Checkpoint.commit`), which
   commits once enough offsets are marked (Faust's `broker_commit_every`); Faust's own
   commit timer commits what is marked in between.

A failure of a step stops every later one: an exception leaves `audit` before the
acknowledgements, snapshots and marks that follow it, and a step that cannot go on
(a partition not read back, a state not restored) restarts the worker clean, from its
snapshots and the committed offset. Offsets that hold no record (transaction markers,
aborted batches, offsets Kafka deleted, noted as lost) are marked done and committed
by `Checkpoint.settle` (under the same lock, only while the audit has not moved on).
The processing-time rule (`Checkpoint.expire_idle`) sends its verdicts at once; they go
into the table's snapshot with the next fetch of its partition (Faust writes a table
only while a message of its partition is in hand).

The sink, for each batch (`SinkCheckpoint`): **fold** each message into a row of its
table (`sink.to_row`); **send** the batch to ClickHouse, which **acknowledges** it by
answering the inserts (`sink.Writer.write`, retried through outages); there is no
snapshot (the store is the state); **mark done** is the consumer's position, already
past the fetched messages; **commit** only then. A batch is never committed before it
is in ClickHouse, and rows written twice count once (deterministic keys).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import orjson
from faust.types import TP

from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.events.violation_avro import encode_violation
from pitwatch.protect.stored import observation_message
from pitwatch.store.rows import round_row

from .catch_up import Stretch
from .dead_letters import dead_letter
from .faust_batch import BatchConsumer, in_hand
from .gaps import Read, StartOffset, unread_before
from .observe import Observed
from .state import Found, Moved, TableStates, lost_where, utc_now
from .supervise import restart_self

log = logging.getLogger("pitwatch.worker")

#: what the log and /health say to do when events were lost
LOST_TODO = ("re-send that stretch from the gateway's log, in its order: it is audited "
             "as a back-fill and the loss finding says when the record is whole again "
             "(a copy of an event already audited changes nothing); or audit the "
             "gateway's files for it with `pitwatch audit`")
#: what the log and /health say to do when the partitions changed
MOVED_TODO = ("the worker has stopped auditing; nothing past this point is committed. "
              "Follow docs/deployment.md, 'Growing the events topic': stop the workers, "
              "then start them again under the procedure there")

#: a table that wants a snapshot -> (topic, partition, offset) of its last event
#: handled, whose partition the changelog write takes
Due = dict[str, tuple[str, int, int]]


class Topic(Protocol):
    """Where the worker sends (a Faust topic): `send` hands a message to the producer
    and returns the future of Kafka's acknowledgement."""

    async def send(self, *, key: bytes | None, value: bytes | None) -> Any: ...


@dataclass(frozen=True)
class Outputs:
    """The topics the worker writes."""

    alerts: Topic
    rounds: Topic
    refused: Topic
    observations: Topic
    dead: Topic


class Reader(Protocol):
    """The audit's reads of a partition (processors/catch_up.py's PartitionReader)."""

    async def read(self, topic: str, partition: int, start: int, stop: int,
                   limit: int | None = None) -> Stretch: ...

    async def start_offset(self, topic: str, partition: int) -> int: ...

    async def committed(self, topic: str, partition: int) -> int | None: ...

    async def first_offset(self, topic: str, partition: int) -> int: ...

    async def end_offset(self, topic: str, partition: int) -> int: ...


class Checkpoint:
    """The worker's audit of the events topic, in the order of the module's docstring:
    the read position, the acknowledgements not yet waited for, and the lock the
    audit, the timers and a revocation take turns on. `app` is the Faust app (its
    `consumer` a `BatchConsumer`); `metrics` the worker's `Metrics`; `catch_up` the
    audit's reads and `probe` the settle's own; `restart` restarts the worker clean."""

    def __init__(self, app: Any, states: TableStates, outputs: Outputs, catch_up: Reader,
                 probe: Reader, metrics: Any, events_topic: str,
                 restart: Callable[[], None] = restart_self) -> None:
        self.app = app
        self.states = states
        self.outputs = outputs
        self.catch_up = catch_up
        self.probe = probe
        self.metrics = metrics
        self.events_topic = events_topic
        self.restart = restart
        self.lock = asyncio.Lock()  # the audit and the timers take turns on the auditors
        #: (topic, partition) -> the last offset read
        self.position: dict[tuple[str, int], int] = {}
        #: Kafka's acknowledgements of what was sent, not waited for yet
        self.acks: list[Any] = []

    @property
    def consumer(self) -> BatchConsumer:
        return cast(BatchConsumer, self.app.consumer)

    # -- 2. send ---------------------------------------------------------------------

    async def send(self, found: Found, arrived: float | None = None) -> None:
        """Each violation to the alerts topic, each finished round to the rounds topic,
        each quarantine row to the refused topic, each observation to the observations
        topic, handed to the producer (which batches them) without waiting for Kafka;
        their acknowledgements' futures are kept. `arrived`: when the event that
        raised them arrived (time.monotonic), for the alerts' histogram."""
        out, metrics = self.outputs, self.metrics
        acks = [await out.alerts.send(key=v.table_id.encode(), value=encode_violation(v))
                for v in found.violations]
        if arrived is not None:
            for ack in acks:  # Faust's FutureMessage: an asyncio future, as it is
                asyncio.ensure_future(ack).add_done_callback(
                    lambda f: None if f.cancelled() or f.exception()
                    else metrics.alert_acknowledged(arrived))
        acks += [await out.rounds.send(key=r.table_id.encode(),
                                       value=orjson.dumps(round_row(r)))
                 for r in found.rounds]
        acks += [await out.refused.send(key=q["table_id"].encode(), value=orjson.dumps(q))
                 for q in found.refused]
        if isinstance(found, Observed):  # the observations the detectors decided
            acks += [await out.observations.send(key=o.table_id.encode(),
                                                 value=observation_message(o))
                     for o in found.observations]
        metrics.alerts += len(found.violations)
        self.acks.extend(acks)

    async def reject(self, topic: str, partition: int, offset: int, key: bytes | None,
                     value: bytes | None, reason: str) -> None:
        """A message that is no event of its key's table: a dead letter, sent as the
        fold's findings are."""
        self.metrics.dead_letters += 1
        log.warning("dead letter at %s[%d]@%d: %s", topic, partition, offset, reason)
        self.acks.append(await self.outputs.dead.send(
            key=key, value=dead_letter(reason, topic, partition, offset, key, value)))

    # -- 3. acknowledge, 4. snapshot -------------------------------------------------

    async def acknowledge(self) -> None:
        """Wait for Kafka to acknowledge everything sent (a failed send raises here,
        before any snapshot)."""
        if self.acks:
            await asyncio.gather(*self.acks)
        self.acks.clear()

    def snapshot(self, due: Due) -> None:
        """The tables' snapshots, once everything found is acknowledged: one changelog
        write per table, on the partition of the message `due` names for it."""
        for t, (topic, partition, offset) in due.items():
            with in_hand(topic, partition, offset):
                self.states.snapshot(t)

    # -- 1. fold ---------------------------------------------------------------------

    def refuse(self, reason: str) -> None:
        """Stop auditing the topic, visibly (once): log, /health, /metrics."""
        if self.metrics.refusal is None:
            self.metrics.refusal = f"{reason}; {MOVED_TODO}"
            log.error("REFUSING TO AUDIT: %s", self.metrics.refusal)

    def note_lost(self, topic: str, partition: int, lost: tuple[int, int]) -> None:
        """Offsets deleted before the audit read them: one line with what to do,
        counted, listed in /health, and each table of the partition held here told."""
        where = lost_where(topic, partition, lost, utc_now())
        told = self.states.lost(topic, partition, where)
        self.metrics.lost(where, lost[1] - lost[0] + 1)
        log.error("EVENTS LOST: %s; %d table(s) held here told. To heal: %s", where,
                  len(told), LOST_TODO)

    async def handle(self, topic: str, partition: int, offset: int, key: bytes | None,
                     value: bytes | None, due: Due, arrived: float) -> None:
        """One message of the events topic, in its partition's order: the decode (or a
        dead letter) and the fold; what it found goes to the producer without waiting,
        and a table that wants a snapshot goes into `due`."""
        if self.metrics.refusal is not None:  # stopped auditing: nothing more is handled
            return
        self.position[(topic, partition)] = offset
        self.metrics.events += 1
        if value is None:
            await self.reject(topic, partition, offset, key, value,
                              "tombstone: a null value is not an event")
            return
        try:
            ev = decode_single(value)
        except DecodeError as e:
            await self.reject(topic, partition, offset, key, value, str(e))
            if e.event is None or key != e.event.table_id.encode():
                return
            ev = e.event  # refused, yet its record's: `TableAuditor.refused` says so
        if key != ev.table_id.encode():
            await self.reject(topic, partition, offset, key, value,
                              f"key {key!r} is not the event's table_id "
                              f"{ev.table_id!r}: its table's order is not kept")
            return
        try:
            found = await self.states.process(ev, topic, partition, offset,
                                              self.catch_up.read)
        except Moved as e:
            self.refuse(str(e))
            return
        except Exception:  # the partition could not be read back, say
            log.exception("could not audit %s[%d]@%d; restarting the worker clean (it "
                          "resumes from the committed offset)", topic, partition, offset)
            self.restart()
            raise
        if found:
            await self.send(found, arrived)
        if ev.table_id in due or self.states.due(ev.table_id, ev):
            due[ev.table_id] = (topic, partition, offset)

    async def read_back(self, topic: str, partition: int, offset: int, due: Due,
                        arrived: float) -> int:
        """Before the message at `offset`: what the consumer skipped (processors/gaps.py),
        read back from the partition and handled in order. Returns the first offset
        the audit had not handled: the commit may move past it, as past the offsets
        that hold no record and those Kafka deleted (noted as lost)."""
        try:
            unread: Stretch = await unread_before(
                self.position, topic, partition, offset,
                cast(StartOffset, self.catch_up.start_offset), cast(Read, self.catch_up.read))
        except Exception:  # Kafka could not give the stretch back
            log.exception("could not read back the offsets before %s[%d]@%d; restarting "
                          "the worker clean (it resumes from the committed offset)", topic,
                          partition, offset)
            self.restart()
            raise
        if unread.lost is not None:
            self.note_lost(topic, partition, unread.lost)
        if unread:
            log.warning("%s[%d]: offsets %d..%d were skipped by the consumer; handling "
                        "them from the partition first", topic, partition, unread[0][0],
                        offset - 1)
        for o, key, value in unread:
            await self.handle(topic, partition, o, key or None, value, due, arrived)
        return unread.start

    # -- one fetch: steps 1 to 4, and what step 5 marks ------------------------------

    async def audit(self, batches: Mapping[TP, Sequence[Any]]) -> dict[TP, tuple[int, int]]:
        """One fetch of the events topic, a list of records per partition
        (processors/faust_batch.py): each record, after whatever the consumer skipped
        before it, folded in its partition's order and what it found sent; then, if
        any table wants a snapshot, one wait for Kafka's acknowledgements and one
        changelog write per table. Returns the offsets handled per partition, which
        the consumer marks done (step 5)."""
        handled: dict[TP, tuple[int, int]] = {}
        arrived = time.monotonic()  # the fetch reached the worker
        async with self.lock:
            if self.metrics.refusal is not None:
                return handled  # not audited, not committed: see refuse()
            due: Due = {}
            for tp, records in batches.items():
                topic, partition = tp.topic, tp.partition
                # one fetch of a partition holds every committed record from its first
                # on: a gap inside it is offsets with no record (a transaction's marker,
                # an aborted batch), never a skipped message; before its first, the
                # consumer may have skipped some (a rebalance), or Kafka deleted them
                first = records[0].offset
                last = self.position.get((topic, partition))
                if last is None or first != last + 1:
                    first = await self.read_back(topic, partition, first, due, arrived)
                for r in records:
                    await self.handle(topic, partition, r.offset, r.key, r.value, due,
                                      arrived)
                if self.metrics.refusal is not None:
                    return {}
                handled[tp] = (first, records[-1].offset)
                for t in self.states.verdicts(topic, partition):
                    due.setdefault(t, (topic, partition, records[-1].offset))
            if due:
                await self.acknowledge()
                self.snapshot(due)
            elif len(self.acks) > 10_000:  # keep the list short; acknowledged ones go
                self.acks[:] = [a for a in self.acks if not a.done()]
        return handled

    # -- 6. commit -------------------------------------------------------------------

    async def commit(self) -> None:
        """After the consumer marked a fetch's offsets done: commit once enough are
        marked (Faust's `broker_commit_every`)."""
        if self.consumer.commit_due():
            await self.consumer.commit()

    def skip(self, tp: Any, first: int, last: int) -> None:
        """Offsets `first`..`last` of `tp` hold nothing to audit: the position moves to
        `last` and they are marked done (the caller commits, outside the lock). Called
        under the lock."""
        self.position[(tp.topic, tp.partition)] = last
        self.consumer.mark_done(tp, first, last)

    # -- outside a fetch: revocation, timers -----------------------------------------

    def forget(self) -> None:
        """The partitions were revoked: the tables and the positions go (the next
        owner restores them from their snapshots and the committed offsets)."""
        self.states.forget()
        self.position.clear()

    def next_to_read(self, tp: Any) -> int:
        """The offset the audit reads next on `tp`: after its last read, else the
        group's committed offset (-1 when unknown)."""
        read = self.position.get((tp.topic, tp.partition))
        if read is not None:
            return read + 1
        committed = self.consumer.committed(tp)
        return -1 if committed is None else int(committed)

    def caught_up(self, topic: str, partition: int) -> bool:
        read = self.position.get((topic, partition))
        if read is None:
            return False
        try:
            highwater = self.consumer.highwater(TP(topic, partition))
        except Exception:  # not assigned any more, or not fetched yet
            return False
        return highwater is not None and read + 1 >= highwater

    async def expire_idle(self, timeout_s: float) -> None:
        """The processing-time rule (the time-out measured on this worker's clock,
        only for tables whose partition is caught up). A verdict goes into the table's
        snapshot with the next event of its partition (Faust writes a table only while
        an event is in hand); should the worker die before that, the next one reaches
        the same verdict, with the same violation id, once the time-out passes again."""
        async with self.lock:
            found = self.states.expire_idle(self.caught_up, timeout_s)
            if found:
                await self.send(found)
            self.states.evict_idle()  # live state stays bounded (processors/state.py)

    def assigned(self) -> list[Any]:
        """The events topic's partitions assigned to this worker (none before it
        started)."""
        try:
            return [tp for tp in self.consumer.assignment() if tp.topic == self.events_topic]
        except Exception:  # not started yet
            return []

    async def settle_start(self, tp: Any) -> None:
        """A partition assigned and not read yet whose committed offset lies below its
        first offset: what lies between was deleted before the audit read it. Noted
        now, not when a next record comes; the position and the commit move past it."""
        try:
            done = await self.catch_up.committed(tp.topic, tp.partition)
            first = await self.catch_up.first_offset(tp.topic, tp.partition)
        except Exception as e:  # Kafka busy or away: the next tick asks again
            log.info("could not ask where %s starts (%s)", tp, e)
            return
        if done is None or done >= first:
            return
        async with self.lock:
            if self.position.get((tp.topic, tp.partition)) is not None:
                return
            self.note_lost(tp.topic, tp.partition, (done, first - 1))
            self.skip(tp, done, first - 1)
        await self.consumer.commit()

    async def settle(self) -> None:
        """A partition whose audit has read up to offset L while its last stable offset
        E is past L + 1 has no readable record left before E when the broker gives
        none from L + 1 on (a transaction's marker, an aborted batch, deleted offsets):
        the read position and the group's commit move to E, within a tick of the last
        record. The broker is asked outside the audit's lock (one fetch, the first
        record at most); the position moves only if the audit has not moved meanwhile.
        A partition not read yet is checked for offsets deleted since its commit."""
        for tp in self.assigned():
            key = (tp.topic, tp.partition)
            last = self.position.get(key)
            if last is None and self.metrics.refusal is None:
                await self.settle_start(tp)
                continue
            if last is None or self.metrics.refusal:
                continue
            try:  # the broker's last stable offset now, not the consumer's last fetch's
                end = await self.probe.end_offset(tp.topic, tp.partition)
                if end <= last + 1:
                    continue
                stretch = await self.probe.read(tp.topic, tp.partition, last + 1, end,
                                                limit=1)
            except Exception as e:  # Kafka busy or away: the next tick asks again
                log.info("could not settle %s past offset %d (%s)", tp, last, e)
                continue
            if stretch:  # records the consumer will deliver: not ours to take
                continue
            async with self.lock:
                if self.position.get(key) != last:  # the audit moved on meanwhile
                    continue
                if stretch.lost is not None:
                    self.note_lost(tp.topic, tp.partition, stretch.lost)
                self.skip(tp, last + 1, end - 1)
            await self.consumer.commit()


class Batch(Protocol):
    """The sink's rows waiting for ClickHouse (`sink.Batches`)."""

    def __len__(self) -> int: ...

    def due(self, now: float, max_rows: int, max_wait: float) -> bool: ...


class SinkCheckpoint:
    """The sink's order (the module's docstring): a batch is sent to ClickHouse and
    acknowledged by it (`write`), then the consumer's offsets are committed
    (`commit`), then the sink's heartbeat and metrics say so (`landed`). `assigned`
    says whether the consumer holds partitions (an idle commit needs some)."""

    def __init__(self, batches: Batch, write: Callable[[Any], Awaitable[int]],
                 commit: Callable[[], Awaitable[None]], assigned: Callable[[], bool],
                 heartbeat: Path, landed: Callable[[int], None], max_rows: int,
                 max_wait: float, now: float) -> None:
        self.batches = batches
        self.write = write
        self._commit = commit
        self.assigned = assigned
        self.heartbeat = heartbeat
        self.landed = landed
        self.max_rows = max_rows
        self.max_wait = max_wait
        self.written = 0
        self.committed_at = now

    async def after_fetch(self, now: float) -> None:
        """After a fetch was folded into the batch: a batch that is due is written and
        then committed; with nothing waiting, the position may still have moved past
        offsets that hold no row (a transaction's marker), which the group commits
        too, once a batch time."""
        if self.batches.due(now, self.max_rows, self.max_wait):
            self.written += await self.write(self.batches)
            await self._commit()
            self.committed_at = now
            self.heartbeat.write_text(f"{time.time():.3f}")
            self.landed(self.written)
        elif not len(self.batches) and self.assigned() \
                and now - self.committed_at >= self.max_wait:
            await self._commit()
            self.committed_at = now

    async def close(self) -> None:
        """On the way out: what is waiting is written, then committed (a write that
        fails raises, and nothing is committed)."""
        if len(self.batches):
            await self.write(self.batches)
            await self._commit()
