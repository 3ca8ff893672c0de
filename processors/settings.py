"""Worker settings: where Kafka and ClickHouse are, topic names, batching, time-outs.

`pitwatch worker` takes each setting from its flag, else from the environment as
PITWATCH_<FLAG>, the flag's name (`env_default`: PITWATCH_KAFKA for --kafka,
PITWATCH_ROUND_TIMEOUT for --round-timeout), else from the defaults here."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from pitwatch.topics import (
    ALERTS_TOPIC,
    DEAD_LETTER_TOPIC,
    EVENTS_TOPIC,
    OBSERVATIONS_TOPIC,
    PARTITIONS,
    REFUSED_TOPIC,
    ROUNDS_TOPIC,
)


@dataclass(frozen=True)
class Settings:
    kafka: str = "127.0.0.1:19092"
    clickhouse_host: str = "127.0.0.1"
    clickhouse_port: int = 19000
    clickhouse_db: str = "pitwatch"
    #: the servers tried after clickhouse_host:clickhouse_port, in order, when it dies
    clickhouse_alt_hosts: tuple[tuple[str, int], ...] = ()
    app_id: str = "pitwatch"
    topic_prefix: str = ""
    events_topic: str = EVENTS_TOPIC
    alerts_topic: str = ALERTS_TOPIC
    rounds_topic: str = ROUNDS_TOPIC
    refused_topic: str = REFUSED_TOPIC
    observations_topic: str = OBSERVATIONS_TOPIC
    dead_letter_topic: str = DEAD_LETTER_TOPIC
    partitions: int = PARTITIONS
    replication_factor: int = 1
    #: Faust table store for the open rounds: memory:// (tests) or rocksdb:// (production)
    store: str = "memory://"
    data_dir: str = ".run/worker"
    #: health and metrics (0: no web server)
    web_port: int = 6066
    web_bind: str = "127.0.0.1"
    sink_batch_rows: int = 5000
    sink_batch_seconds: float = 1.0
    #: the sink's consumer: longer than this between polls and it would be evicted, so
    #: it pauses its partitions and keeps polling while ClickHouse is down
    sink_max_poll_interval_s: float = 300.0
    round_timeout_s: float = 900.0
    #: how often the processing-time rule is checked
    idle_check_s: float = 5.0
    #: a crashed worker's partitions move to the others after this
    session_timeout_s: float = 10.0
    heartbeat_s: float = 2.0
    #: a partition with messages waiting whose read position stands still this long
    #: restarts the worker (a consumer that does not recover)
    stall_timeout_s: float = 120.0
    sink: bool = True

    def with_prefix(self, prefix: str) -> Settings:
        """The same settings with every topic name prefixed (isolated runs, tests)."""
        return replace(self, topic_prefix=prefix, events_topic=prefix + self.events_topic,
                       alerts_topic=prefix + self.alerts_topic,
                       rounds_topic=prefix + self.rounds_topic,
                       refused_topic=prefix + self.refused_topic,
                       observations_topic=prefix + self.observations_topic,
                       dead_letter_topic=prefix + self.dead_letter_topic)


def env_default(name: str, default: object) -> object:
    """The value of PITWATCH_<NAME> if set (as the default's type), else `default`."""
    raw = os.environ.get("PITWATCH_" + name.upper())
    if raw is None or isinstance(default, bool):
        return default
    convert: Callable[[str], object] = type(default)
    return convert(raw)
