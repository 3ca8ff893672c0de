"""Batches of records from Faust's own consumer, without a Faust Event or stream each.

Why this module uses Faust's private API (faust-streaming, pinned in pyproject.toml):
Faust feeds an agent one message at a time (consumer -> conductor -> topic queue ->
Event -> stream -> buffer -> ack), and on this machine that costs more than the audit
itself (issue 9: a Faust agent that only counts costs 230-272 us an event, the audit
about 71). Faust is kept for what it does well: it joins the group and assigns the
partitions (its assignor puts a table's changelog partition with its source
partition), recovers and writes the `open-rounds` table, commits offsets, and runs the
timers and the web server. Only the loop that hands fetched records on is replaced,
and only for the topics registered with `BatchApp.batches`: their records go, as
fetched (a list per partition), to one coroutine; every other topic (the changelog
during recovery, say) takes Faust's own path unchanged. This module marks done what
that coroutine returns as handled and never commits by itself: when to commit is the
checkpoint's (processors/checkpoint.py, which holds the order of the steps).

Committed records only: Faust's consumer reads `read_committed` only under its
exactly-once guarantee, which would also make every write of the worker transactional.
The consumer thread here builds aiokafka's consumer as Faust does and then sets its
isolation level, and checks, once it has started, that its fetcher reads committed
records; if it does not (a Faust or aiokafka whose internals moved), the worker
refuses to start and says why. Its high watermark is the last stable offset, so lag
counts only what a committed read can reach.

What is private, all here: `Consumer._drain_messages` (the fetch loop, copied from
faust-streaming 0.15.3 and cut down), `_wait_next_records`, `_read_offset`, `_acked`,
`_acked_index`, `_n_acked`, `_commit_every` and `_committed_offset` (the bookkeeping
that decides how far the group's commit may go), `faust.streams._current_event` (how a
table write finds its changelog partition),
`AIOKafkaConsumerThread._create_worker_consumer`, and aiokafka's
`AIOKafkaConsumer._isolation_level` and `_fetcher._isolation_level`.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import faust
from faust.streams import _current_event
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.transport.drivers.aiokafka import Consumer as AIOKafkaConsumer
from faust.types import TP

from .catch_up import ISOLATION

#: A record as Faust's consumer fetched it (aiokafka's ConsumerRecord: topic, partition,
#: offset, key, value, timestamp).
Record = Any
#: Handles one fetch: the records of each partition, in offset order. Returns, per
#: partition, the inclusive range of offsets it handled (read-backs included), which
#: the group's commit may then move past.
BatchHandler = Callable[[Mapping[TP, Sequence[Record]]], Awaitable[Mapping[TP, tuple[int, int]]]]


@dataclass(frozen=True)
class _Held:
    """What Faust's table write reads from the event in hand: its message's topic and
    partition (the changelog partition), and its offset."""

    topic: str
    partition: int
    offset: int

    @property
    def tp(self) -> TP:
        return TP(self.topic, self.partition)


class _InHand:
    """A stand-in for a Faust Event (weak-referenceable, as Faust keeps a weakref)."""

    def __init__(self, message: _Held) -> None:
        self.message = message


@contextmanager
def in_hand(topic: str, partition: int, offset: int) -> Iterator[None]:
    """Faust writes a table on the partition of the event in hand: a snapshot written
    in here goes to the changelog partition of `topic`[`partition`]."""
    holder = _InHand(_Held(topic, partition, offset))
    token = _current_event.set(weakref.ref(cast(Any, holder)))
    try:
        yield
    finally:
        _current_event.reset(token)


class NotCommitted(RuntimeError):
    """The consumer would read records of aborted transactions: the worker must not
    start."""


def require_committed(consumer: Any) -> None:
    """Raise NotCommitted unless aiokafka's `consumer` (started) fetches only
    committed records."""
    from aiokafka.consumer.fetcher import READ_COMMITTED

    fetcher = getattr(consumer, "_fetcher", None)
    if getattr(fetcher, "_isolation_level", None) != READ_COMMITTED:
        raise NotCommitted(
            "the events topic's consumer does not read read_committed (its aiokafka "
            "fetcher says isolation level "
            f"{getattr(fetcher, '_isolation_level', 'unknown')!r}): it would audit "
            "records of aborted transactions. The worker does not start; run it with "
            "the faust-streaming and aiokafka versions pinned in pyproject.toml")


class CommittedConsumerThread(AIOKafkaConsumerThread):
    """Faust's consumer thread, its consumer reading only committed records, and its
    high watermark the last stable offset."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        consumer._isolation_level = ISOLATION  # read by its start(), for the fetcher
        return consumer

    async def on_start(self) -> None:
        await super().on_start()
        require_committed(self._ensure_consumer())

    def highwater(self, tp: TP) -> int:
        return cast(int, self._ensure_consumer().last_stable_offset(tp))

    async def _highwaters(self, partitions: list[TP]) -> Mapping[TP, int]:
        # a committed read's end offsets are the last stable offsets
        return cast(Mapping[TP, int], await self._ensure_consumer().end_offsets(partitions))


class BatchConsumer(AIOKafkaConsumer):
    """Faust's aiokafka consumer, whose fetch loop hands the batch topics' records to
    the app's handler a fetch at a time."""

    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return CommittedConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover (real Kafka)
        app = cast(BatchApp, self.app)
        consumer_should_stop = self._stopped.is_set
        fetcher_should_stop = fetcher._stopped.is_set
        while not (consumer_should_stop() or fetcher_should_stop()):
            records, active = await self._wait_next_records(1.0)
            await self.sleep(0)  # getmany can return at once, again and again
            if not records or self.should_stop:
                continue
            await self.deliver(app, records, active)

    async def deliver(self, app: BatchApp, records: Mapping[TP, Sequence[Record]],
                      active: set[TP] | None) -> None:
        """One fetch: the batch topics' records to the handler, the rest to Faust's
        own per-message path; records fetched before a rebalance, or while the flow is
        stopped, are dropped (they are read again from the committed offset, or read
        back by the handler)."""
        generation = app.consumer_generation_id
        read_offset = self._read_offset
        batches: dict[TP, Sequence[Record]] = {}
        for tp, recs in records.items():
            if not self.flow_active or app.consumer_generation_id != generation:
                return
            if active is not None and tp not in active and tp not in self._buffered_partitions:
                continue
            start = read_offset[tp]
            if start is not None and recs and recs[0].offset < start:
                recs = [r for r in recs if r.offset >= start]
            if not recs:
                continue
            if tp.topic in app.batches:
                batches[tp] = recs
                continue
            for r in recs:  # Faust's own path, a message at a time
                if not self.flow_active or app.consumer_generation_id != generation:
                    return
                await self.wait_first(self.callback(self._to_message(tp, r)),
                                      self.suspend_flow.wait())
                read_offset[tp] = r.offset
        if not batches or app.on_batch is None:
            return
        handled = await app.on_batch(batches)
        # after a rebalance, Faust has set the read offsets itself (its seek)
        if self.flow_active and app.consumer_generation_id == generation:
            for tp, recs in batches.items():
                read_offset[tp] = recs[-1].offset
            for tp, (first, last) in handled.items():
                self.mark_done(tp, first, last)
            if app.on_commit is not None:  # the checkpoint says when to commit
                await app.on_commit()

    def commit_due(self) -> bool:
        """Whether enough offsets were marked done since the last commit due for one
        (Faust's `broker_commit_every`, as its own acks count them); counts afresh."""
        commit_every = self._commit_every
        if commit_every is not None and self._n_acked >= commit_every:
            self._n_acked = 0
            return True
        return False

    def committed(self, tp: TP) -> int | None:
        """The group's committed offset of `tp` as this consumer knows it (None:
        unknown)."""
        return self._committed_offset.get(tp)

    def mark_done(self, tp: TP, first: int, last: int) -> None:
        """Offsets `first`..`last` of `tp` were handled: the group's commit may move
        past them (what `Consumer.ack` does for each message, in bulk)."""
        if not self.app.topics.acks_enabled_for(tp.topic):
            return
        committed = self._committed_offset[tp]
        if committed is not None:
            first = max(first, committed)
        index = self._acked_index[tp]
        offsets = [o for o in range(first, last + 1) if o not in index]
        if offsets:
            index.update(offsets)
            self._acked[tp].extend(offsets)
            self._n_acked += len(offsets)


class BatchApp(faust.App):
    """A Faust app whose consumer hands the records of `batches` topics to `on_batch`
    in bulk (see the module's docstring)."""

    batches: frozenset[str] = frozenset()
    on_batch: BatchHandler | None = None
    on_commit: Callable[[], Awaitable[None]] | None = None

    def batch_consume(self, topic: Any, handler: BatchHandler,
                      commit: Callable[[], Awaitable[None]] | None = None) -> None:
        """Subscribe to `topic` (a Faust topic) and hand its records to `handler`, a
        fetch at a time; once the offsets it returns as handled are marked done,
        `commit` is called (it decides whether to commit: processors/checkpoint.py).
        Faust still assigns its partitions, commits past what is marked done on its own
        timer, and co-partitions the app's tables with it."""
        self.batches = self.batches | frozenset(topic.topics)
        self.on_batch = handler
        self.on_commit = commit
        self.topics.add(topic)

    def _new_consumer(self) -> Any:
        # the transport builds the consumer from its class attribute: ours, for this app
        self.transport.Consumer = BatchConsumer  # type: ignore[misc]
        return super()._new_consumer()
