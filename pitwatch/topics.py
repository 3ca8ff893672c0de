"""The pipeline's topics, as every stage that makes or reads them knows them: their
names, configs, partition count and replication, applied by whichever part starts
first (a producer, a worker). Missing topics are created with them, existing ones get
their configs set again (a topic a client auto-created with the broker's defaults is
fixed), and a partition count that differs from the one asked is reported (it is never
changed: that would move tables between partitions and break their order): one line,
and the caller goes on (a producer sends by key to the partitions the topic has)."""

from __future__ import annotations

import contextlib
import logging
import os

from .connect import KafkaAuth

log = logging.getLogger("pitwatch.topics")

#: the devices' events: one casino table = one partition = one order
EVENTS_TOPIC = "table-events"
#: the audit's findings
ALERTS_TOPIC = "alerts"
#: each closed round's summary
ROUNDS_TOPIC = "rounds"
#: the quarantine rows of events the record took in as refused (`store.rows.refused_row`)
REFUSED_TOPIC = "refused"
#: the game-protection observations the worker decides (`protect.stored.observation_row`)
OBSERVATIONS_TOPIC = "observations"
#: what the pipeline could not read, with why
DEAD_LETTER_TOPIC = "dead-letters"
#: partitions of a topic made here, unless asked otherwise
PARTITIONS = 4
#: where the topics' replication factor is read (`replication`)
REPLICATION_ENV = "PITWATCH_REPLICATION"

DAY_MS = 24 * 3600 * 1000
#: topic -> configs
TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    EVENTS_TOPIC: {"retention.ms": str(90 * DAY_MS)},
    ALERTS_TOPIC: {"retention.ms": str(30 * DAY_MS)},
    ROUNDS_TOPIC: {"retention.ms": str(30 * DAY_MS)},
    REFUSED_TOPIC: {"retention.ms": str(90 * DAY_MS)},
    OBSERVATIONS_TOPIC: {"retention.ms": str(30 * DAY_MS)},
    DEAD_LETTER_TOPIC: {"retention.ms": str(365 * DAY_MS)},
}


def replication() -> int:
    """The topics' replication factor: PITWATCH_REPLICATION (default 1, one broker)."""
    raw = os.environ.get(REPLICATION_ENV, "1")
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{REPLICATION_ENV}={raw!r}: a whole number of replicas, 1 or more")
    return int(raw)


def min_insync(replication_factor: int) -> int:
    """The replicas that must hold a record before an acks=all write is acknowledged:
    2 of 3 or more (one broker may die, and no acknowledged record is on one disk only),
    1 with fewer replicas."""
    return 2 if replication_factor >= 3 else 1


def topic_configs(name: str, replication_factor: int) -> dict[str, str]:
    """A topic's configs: TOPIC_CONFIGS', and its `min_insync` replicas."""
    return {**TOPIC_CONFIGS[name], "min.insync.replicas": str(min_insync(replication_factor))}


def ensure_topics(bootstrap: str, partitions: int = PARTITIONS, prefix: str = "",
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
            warn_partitions(topic_partitions(admin, old), partitions)
        return [t.name for t in new]
    finally:
        admin.close()


def warn_partitions(counts: dict[str, int], partitions: int) -> None:
    """One warning line for each topic whose partition count is not the one asked."""
    for name, n in counts.items():
        if n != partitions:
            log.warning("topic %s has %d partitions, not the %d asked: left as it "
                        "is (docs/deployment.md, growing the events topic)",
                        name, n, partitions)


def topic_partitions(admin: object, topics: list[str]) -> dict[str, int]:
    """Each existing topic's partition count, as the broker's metadata has it, through
    a kafka-python admin client."""
    out: dict[str, int] = {}
    for meta in admin.describe_topics(topics):  # type: ignore[attr-defined]
        name = meta.get("name", meta.get("topic"))  # kafka-python 3 says "name"
        n = len(meta.get("partitions") or ())
        if isinstance(name, str) and n:
            out[name] = n
    return out
