"""Reading a stretch of one partition again: how a worker that takes a table over folds
the events after the table's last snapshot, and how the audit reads back what its
consumer skipped.

Every read here is `read_committed`, as the audit's own consumer is: a record of an
aborted transaction is never read, and offsets that hold no record (transaction
markers, aborted batches, offsets compaction removed) are passed over, not waited for:
a stretch is read once the consumer's position, the next readable offset the broker
gives, has reached its end. Offsets the broker has already deleted (retention,
delete-records) cannot be read: a stretch names them (`Stretch.lost`) instead of
starting quietly at what is left."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from pitwatch.connect import KafkaAuth

#: (offset, key, value) of one message; value None for a tombstone
Record = tuple[int, bytes, bytes | None]
#: the isolation level of every consumer of the pipeline's topics
ISOLATION = "read_committed"
#: how long one stretch may take to read before the read fails
READ_S = 60.0


class Stretch(list[Record]):
    """The readable records of [start, stop) of a partition, in offset order. `lost`
    is the inclusive range of offsets at its start that the broker had already deleted
    (None when nothing was)."""

    def __init__(self, records: Iterable[Record] = (), start: int = 0,
                 lost: tuple[int, int] | None = None) -> None:
        super().__init__(records)
        self.start = start
        self.lost = lost


async def _start(consumer: Any) -> Any:
    """The consumer, started; one whose start failed or was cancelled (a broker that
    does not answer) is closed, not left to the garbage collector."""
    try:
        await consumer.start()
    except BaseException:
        with contextlib.suppress(Exception):
            await consumer.stop()
        raise
    return consumer


def committed_reader(bootstrap: str, **kwargs: Any) -> Any:
    """An aiokafka consumer that reads only committed records and raises, rather than
    jumping, when its position was deleted under it."""
    from aiokafka import AIOKafkaConsumer

    return AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                            isolation_level=ISOLATION, **{"group_id": None,
                                                          "auto_offset_reset": "none",
                                                          **kwargs,
                                                          **KafkaAuth.from_env().aiokafka()})


class PartitionReader:
    """Reads outside the consumer group's membership: a stretch of a partition, its
    first and end offsets (one consumer, kept, reads all of them in turn), or where the
    group's reading of it starts (one group-bound consumer that never joins or
    commits)."""

    def __init__(self, bootstrap: str, group: str | None = None) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self._consumer: Any = None
        self._group_consumer: Any = None
        self._lock = asyncio.Lock()  # one stretch at a time on the kept consumer

    async def _started(self) -> Any:
        if self._consumer is None:  # kept only once started (a start can be cancelled)
            self._consumer = await _start(committed_reader(self.bootstrap))
        return self._consumer

    async def end_offset(self, topic: str, partition: int) -> int:
        """The partition's last stable offset: the end of what a committed read can
        reach (the end offset when no transaction is open)."""
        from aiokafka import TopicPartition

        tp = TopicPartition(topic, partition)
        consumer = await self._started()
        return int((await consumer.end_offsets([tp]))[tp])

    async def first_offset(self, topic: str, partition: int) -> int:
        """The partition's first offset still held (its low watermark)."""
        from aiokafka import TopicPartition

        tp = TopicPartition(topic, partition)
        consumer = await self._started()
        return int((await consumer.beginning_offsets([tp]))[tp])

    async def partition_count(self, topic: str) -> int | None:
        """The topic's partition count as the brokers' metadata says now (None: no such
        topic). aiokafka's client has no public call that refreshes it on demand."""
        consumer = await self._started()
        cluster = await consumer._client.fetch_all_metadata()
        parts = cluster.partitions_for_topic(topic)
        return None if parts is None else len(parts)

    async def committed(self, topic: str, partition: int) -> int | None:
        """The group's committed offset on the partition (None: nothing committed)."""
        from aiokafka import TopicPartition

        if self.group is None:
            return None
        if self._group_consumer is None:
            self._group_consumer = await _start(committed_reader(
                self.bootstrap, group_id=self.group, auto_offset_reset="earliest"))
        committed = await self._group_consumer.committed(TopicPartition(topic, partition))
        return None if committed is None or committed < 0 else int(committed)

    async def start_offset(self, topic: str, partition: int) -> int:
        """The first offset the group has not processed on the partition: its committed
        offset, else the partition's first offset (nothing committed yet)."""
        committed = await self.committed(topic, partition)
        if committed is not None:
            return committed
        return await self.first_offset(topic, partition)

    async def read(self, topic: str, partition: int, start: int, stop: int,
                   limit: int | None = None) -> Stretch:
        """The committed records with offsets in [start, stop), as (offset, key, value),
        in order (the first `limit` of them, when given); offsets that hold none are
        passed over. What the broker deleted before it could be read is named in the
        Stretch's `lost`, never skipped quietly. Raises TimeoutError when the stretch
        cannot be read in READ_S."""
        from aiokafka import TopicPartition
        from aiokafka.errors import OffsetOutOfRangeError

        tp = TopicPartition(topic, partition)
        out = Stretch(start=start)
        async with self._lock:
            consumer = await self._started()
            consumer.assign([tp])
            try:
                expected = start
                deadline = asyncio.get_running_loop().time() + READ_S
                first = int((await consumer.beginning_offsets([tp]))[tp])
                while True:
                    if first > expected:  # deleted before it was read: lost, named
                        end = min(first, stop) - 1
                        out.lost = (start if out.lost is None else out.lost[0], end)
                        expected = end + 1
                    if expected >= stop:
                        return out
                    consumer.seek(tp, expected)  # drops whatever was fetched before
                    try:
                        while expected < stop:
                            if asyncio.get_running_loop().time() > deadline:
                                raise TimeoutError(f"could not read {topic}[{partition}] "
                                                   f"offsets {start}..{stop - 1}")
                            batch = await consumer.getmany(tp, timeout_ms=500)
                            for m in batch.get(tp, []):
                                if m.offset < expected:
                                    continue
                                if m.offset >= stop:
                                    return out
                                out.append((m.offset, m.key or b"", m.value))
                                expected = m.offset + 1
                                if limit is not None and len(out) >= limit:
                                    return out
                            # past markers and aborted batches: the next readable offset
                            expected = max(expected, min(await consumer.position(tp), stop))
                        return out
                    except OffsetOutOfRangeError:  # deleted while being read
                        first = int((await consumer.beginning_offsets([tp]))[tp])
                        if first <= expected:  # not a deletion: give up cleanly
                            raise
            finally:
                consumer.unsubscribe()

    async def stop(self) -> None:
        for consumer in (self._consumer, self._group_consumer):
            if consumer is not None:
                await consumer.stop()
        self._consumer = self._group_consumer = None
