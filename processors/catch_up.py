"""Reading a stretch of one partition again: how a worker that takes a table over folds
the events after the table's last snapshot."""

from __future__ import annotations

import contextlib
from typing import Any

from pitwatch.connect import KafkaAuth

#: (offset, key, value) of one message; value None for a tombstone
Record = tuple[int, bytes, bytes | None]


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


class PartitionReader:
    """Reads outside the consumer group's membership: a stretch of a partition (a
    consumer per read), its end offset (one consumer, kept), or where the group's
    reading of it starts (one group-bound consumer that never joins or commits)."""

    def __init__(self, bootstrap: str, group: str | None = None) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self._consumer: Any = None
        self._group_consumer: Any = None

    async def _started(self) -> Any:
        from aiokafka import AIOKafkaConsumer

        if self._consumer is None:  # kept only once started (a start can be cancelled)
            self._consumer = await _start(AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None,
                **KafkaAuth.from_env().aiokafka()))
        return self._consumer

    async def end_offset(self, topic: str, partition: int) -> int:
        """The partition's end offset (the offset the next message will get)."""
        from aiokafka import TopicPartition

        tp = TopicPartition(topic, partition)
        consumer = await self._started()
        return int((await consumer.end_offsets([tp]))[tp])

    async def start_offset(self, topic: str, partition: int) -> int:
        """The first offset the group has not processed on the partition: its committed
        offset, else the partition's first offset (nothing committed yet)."""
        from aiokafka import AIOKafkaConsumer, TopicPartition

        tp = TopicPartition(topic, partition)
        if self.group is not None:
            if self._group_consumer is None:
                self._group_consumer = await _start(AIOKafkaConsumer(
                    bootstrap_servers=self.bootstrap, group_id=self.group,
                    enable_auto_commit=False, **KafkaAuth.from_env().aiokafka()))
            committed = await self._group_consumer.committed(tp)
            if committed is not None and committed >= 0:
                return int(committed)
        consumer = await self._started()
        return int((await consumer.beginning_offsets([tp]))[tp])

    async def read(self, topic: str, partition: int, start: int, stop: int
                   ) -> list[Record]:
        """The messages with offsets in [start, stop), as (offset, key, value), in
        order and without holes. A consumer of its own for each read: a reused one can
        hand back records it fetched for an earlier read of the same partition, and a
        restore that took those for this range would fold the wrong events."""
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = await _start(AIOKafkaConsumer(bootstrap_servers=self.bootstrap,
                                                 enable_auto_commit=False, group_id=None,
                                                 **KafkaAuth.from_env().aiokafka()))
        try:
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            # what retention already deleted cannot be read: start at what is left
            start = max(start, int((await consumer.beginning_offsets([tp]))[tp]))
            consumer.seek(tp, start)
            out: list[Record] = []
            expected = start
            for _ in range(60):  # the messages before `stop` exist: a minute at most
                batch = await consumer.getmany(tp, timeout_ms=1000)
                for m in batch.get(tp, []):
                    if m.offset < expected:
                        continue
                    if m.offset >= stop:
                        return out
                    if m.offset > expected:  # a hole: read from the expected offset again
                        consumer.seek(tp, expected)
                        break
                    out.append((m.offset, m.key or b"", m.value))
                    expected = m.offset + 1
                if expected >= stop:
                    return out
            raise TimeoutError(f"could not read {topic}[{partition}] offsets "
                               f"{start}..{stop - 1}")
        finally:
            await consumer.stop()

    async def stop(self) -> None:
        for consumer in (self._consumer, self._group_consumer):
            if consumer is not None:
                await consumer.stop()
        self._consumer = self._group_consumer = None
