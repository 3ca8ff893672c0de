"""Reading a stretch of one partition again: how a worker that takes a table over folds
the events after the table's last snapshot."""

from __future__ import annotations

from typing import Any

from pitwatch.connect import KafkaAuth


class PartitionReader:
    """One consumer outside any group, assigned and seeked per read; started on first
    use and kept."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._consumer: Any = None

    async def read(self, topic: str, partition: int, start: int, stop: int
                   ) -> list[tuple[int, bytes, bytes]]:
        """The messages with offsets in [start, stop), as (offset, key, value)."""
        from aiokafka import AIOKafkaConsumer, TopicPartition

        if self._consumer is None:
            self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap,
                                              enable_auto_commit=False, group_id=None,
                                              **KafkaAuth.from_env().aiokafka())
            await self._consumer.start()
        tp = TopicPartition(topic, partition)
        self._consumer.assign([tp])
        self._consumer.seek(tp, start)
        out: list[tuple[int, bytes, bytes]] = []
        for _ in range(60):  # the messages before `stop` exist: wait for them, a minute at most
            batch = await self._consumer.getmany(tp, timeout_ms=1000)
            for m in batch.get(tp, []):
                if m.offset >= stop:
                    return out
                out.append((m.offset, m.key or b"", m.value or b""))
            if await self._consumer.position(tp) >= stop:
                return out
        raise TimeoutError(f"could not read {topic}[{partition}] offsets {start}..{stop - 1}")

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
