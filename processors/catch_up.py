"""Reading a stretch of one partition again: how a worker that takes a table over folds
the events after the table's last snapshot."""

from __future__ import annotations

from typing import Any

from pitwatch.connect import KafkaAuth


class PartitionReader:
    """Reads outside any consumer group: a stretch of a partition (a consumer per
    read), or its end offset (one consumer, kept)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._consumer: Any = None

    async def _started(self) -> Any:
        from aiokafka import AIOKafkaConsumer

        if self._consumer is None:
            self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap,
                                              enable_auto_commit=False, group_id=None,
                                              **KafkaAuth.from_env().aiokafka())
            await self._consumer.start()
        return self._consumer

    async def end_offset(self, topic: str, partition: int) -> int:
        """The partition's end offset (the offset the next message will get)."""
        from aiokafka import TopicPartition

        tp = TopicPartition(topic, partition)
        consumer = await self._started()
        return int((await consumer.end_offsets([tp]))[tp])

    async def read(self, topic: str, partition: int, start: int, stop: int
                   ) -> list[tuple[int, bytes, bytes]]:
        """The messages with offsets in [start, stop), as (offset, key, value), in
        order and without holes. A consumer of its own for each read: a reused one can
        hand back records it fetched for an earlier read of the same partition, and a
        restore that took those for this range would fold the wrong events."""
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap,
                                    enable_auto_commit=False, group_id=None)
        await consumer.start()
        try:
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            consumer.seek(tp, start)
            out: list[tuple[int, bytes, bytes]] = []
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
                    out.append((m.offset, m.key or b"", m.value or b""))
                    expected = m.offset + 1
                if expected >= stop:
                    return out
            raise TimeoutError(f"could not read {topic}[{partition}] offsets "
                               f"{start}..{stop - 1}")
        finally:
            await consumer.stop()

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
