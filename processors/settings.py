"""Worker settings: where Kafka and ClickHouse are, topic names, batching."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    kafka: str = "127.0.0.1:19092"
    clickhouse_host: str = "127.0.0.1"
    clickhouse_port: int = 19000
    clickhouse_db: str = "pitwatch"
    app_id: str = "pitwatch"
    events_topic: str = "table-events"
    alerts_topic: str = "alerts"
    rounds_topic: str = "rounds"
    dead_letter_topic: str = "dead-letters"
    partitions: int = 4
    #: Faust table store for the open rounds: memory:// (tests) or rocksdb:// (production)
    store: str = "memory://"
    data_dir: str = ".run/worker"
    web_port: int = 6066
    sink_batch_rows: int = 5000
    sink_batch_seconds: float = 1.0
    round_timeout_s: float = 900.0
    sink: bool = True

    def with_prefix(self, prefix: str) -> Settings:
        """The same settings with every topic name prefixed (isolated runs, tests)."""
        from dataclasses import replace

        return replace(self, events_topic=prefix + self.events_topic,
                       alerts_topic=prefix + self.alerts_topic,
                       rounds_topic=prefix + self.rounds_topic,
                       dead_letter_topic=prefix + self.dead_letter_topic)
