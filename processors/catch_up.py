"""Reading a stretch of one partition again: how a worker that takes a table over folds
the events after the table's last snapshot."""

from __future__ import annotations

from typing import Any


class PartitionReader:
    """One consumer outside any group, assigned and seeked per read; started on first
    use and kept."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._consumer: Any = None

    async def _started(self) -> Any:
        from aiokafka import AIOKafkaConsumer

        if self._consumer is None:
            self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap,
                                              enable_auto_commit=False, group_id=None)
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
        """The messages with offsets in [start, stop), as (offset, key, value)."""
        from aiokafka import TopicPartition

        consumer = await self._started()
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, start)
        out: list[tuple[int, bytes, bytes]] = []
        expected = start  # offsets come in order and without holes: check it
        reseeked = -1
        for _ in range(60):  # the messages before `stop` exist: wait for them, a minute at most
            batch = await consumer.getmany(tp, timeout_ms=1000)
            for m in batch.get(tp, []):
                if m.offset < expected:
                    continue  # fetched before the seek
                if m.offset > expected and reseeked != expected:
                    # a hole: records fetched for an earlier read; read from here again
                    # (a second hole at the same place is real, e.g. a transaction marker)
                    reseeked = expected
                    consumer.seek(tp, expected)
                    break
                if m.offset >= stop:
                    return out
                out.append((m.offset, m.key or b"", m.value or b""))
                expected = m.offset + 1
            if expected >= stop or await consumer.position(tp) >= stop:
                return out  # (the position: the offsets left were no messages)
        raise TimeoutError(f"could not read {topic}[{partition}] offsets {start}..{stop - 1}")

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
