"""The worker's own topics: the audit's changelog, made before Faust starts, and the
partition counts it watches. The pipeline's topics (names, configs, partitions) are
the core's, `pitwatch.topics`."""

from __future__ import annotations

import contextlib

from pitwatch.connect import KafkaAuth
from pitwatch.topics import min_insync, topic_partitions


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
                        "min.insync.replicas": str(min_insync(replication_factor))})])
        deadline = time.monotonic() + timeout_s
        while topic_partitions(admin, [name]).get(name, 0) < partitions:
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
        return topic_partitions(admin, asked) if asked else {}
    finally:
        admin.close()
