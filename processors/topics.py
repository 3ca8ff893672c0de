"""The pipeline's topics and their configs, applied by whichever part starts first (a
producer, a worker): missing topics are created with them, existing ones get their
configs set again (a topic a client auto-created with the broker's defaults is fixed),
and a partition count that differs from the one asked is reported (it is never changed:
that would move tables between partitions and break their order): one line, and the
caller goes on (a producer sends by key to the partitions the topic has)."""

from __future__ import annotations

import contextlib
import logging
import os

from pitwatch.connect import KafkaAuth

log = logging.getLogger("pitwatch.topics")

DAY_MS = 24 * 3600 * 1000
#: topic -> configs. table-events: one table = one partition = one order.
TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    "table-events": {"retention.ms": str(90 * DAY_MS)},
    "alerts": {"retention.ms": str(30 * DAY_MS)},
    "rounds": {"retention.ms": str(30 * DAY_MS)},
    "dead-letters": {"retention.ms": str(365 * DAY_MS)},
}


def replication() -> int:
    """The topics' replication factor: PITWATCH_REPLICATION (default 1, one broker)."""
    raw = os.environ.get("PITWATCH_REPLICATION", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"PITWATCH_REPLICATION={raw!r}: a whole number of replicas, 1 or more")
    return int(raw)


def topic_configs(name: str, replication_factor: int) -> dict[str, str]:
    """A topic's configs: TOPIC_CONFIGS', and the replicas that must hold a record before
    an acks=all write is acknowledged: 2 of 3 or more (one broker may die, and no
    acknowledged record is on one disk only), 1 with fewer replicas."""
    insync = 2 if replication_factor >= 3 else 1
    return {**TOPIC_CONFIGS[name], "min.insync.replicas": str(insync)}


def ensure_topics(bootstrap: str, partitions: int = 4, prefix: str = "",
                  replication_factor: int | None = None) -> list[str]:
    """Create the pipeline's topics that do not exist yet and set every one's configs;
    returns the names created. Replication factor by default from PITWATCH_REPLICATION."""
    replication_factor = replication_factor or replication()
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="pitwatch-admin",
                             **KafkaAuth.from_env().kafka_python())
    try:
        existing = set(admin.list_topics())
        new = [NewTopic(prefix + name, partitions, replication_factor,
                        topic_configs=topic_configs(name, replication_factor))
               for name in TOPIC_CONFIGS if prefix + name not in existing]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):  # another creator won
                admin.create_topics(new)
        old = [prefix + name for name in TOPIC_CONFIGS if prefix + name in existing]
        if old:
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name,
                                                configs=topic_configs(name[len(prefix):],
                                                                      replication_factor))
                                 for name in old])
            for name, n in _counts(admin, old).items():
                if n != partitions:
                    log.warning("topic %s has %d partitions, not the %d asked: left as it "
                                "is (docs/deployment.md, growing the events topic)",
                                name, n, partitions)
        return [t.name for t in new]
    finally:
        admin.close()


def _counts(admin: object, topics: list[str]) -> dict[str, int]:
    """Each existing topic's partition count, as the broker's metadata has it."""
    out: dict[str, int] = {}
    for meta in admin.describe_topics(topics):  # type: ignore[attr-defined]
        name = meta.get("name", meta.get("topic"))  # kafka-python 3 says "name"
        n = len(meta.get("partitions") or ())
        if isinstance(name, str) and n:
            out[name] = n
    return out


def ensure_changelog(bootstrap: str, name: str, partitions: int, replication_factor: int,
                     timeout_s: float = 60.0) -> None:
    """Make the audit's changelog topic (compacted, as Faust would) before Faust starts,
    and wait until the metadata gives its partitions: on several brokers a topic just
    made shows none for a moment, and Faust, finding it so, stops the worker
    (PartitionsMismatch)."""
    import time

    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="pitwatch-admin",
                             **KafkaAuth.from_env().kafka_python())
    try:
        if name not in set(admin.list_topics()):
            with contextlib.suppress(TopicAlreadyExistsError):  # another worker won
                admin.create_topics([NewTopic(
                    name, partitions, replication_factor, topic_configs={
                        "cleanup.policy": "compact",
                        "min.insync.replicas": "2" if replication_factor >= 3 else "1"})])
        deadline = time.monotonic() + timeout_s
        while _counts(admin, [name]).get(name, 0) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name} shows no {partitions} partitions "
                                   f"after {timeout_s:.0f}s")
            time.sleep(0.2)
    finally:
        admin.close()


def partition_counts(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """The partition count of each of `topics` that exists (missing ones are left out)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="pitwatch-admin",
                             **KafkaAuth.from_env().kafka_python())
    try:
        existing = set(admin.list_topics())
        asked = [t for t in topics if t in existing]
        return _counts(admin, asked) if asked else {}
    finally:
        admin.close()
