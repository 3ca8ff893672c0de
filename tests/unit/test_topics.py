"""The pipeline's topics as the core defines them for every stage (pitwatch.topics):
their configs, replication and the partition check, without a broker."""

from __future__ import annotations

import logging

import pytest

from pitwatch.topics import (
    ALERTS_TOPIC,
    DEAD_LETTER_TOPIC,
    EVENTS_TOPIC,
    REFUSED_TOPIC,
    ROUNDS_TOPIC,
    TOPIC_CONFIGS,
    min_insync,
    topic_configs,
    warn_partitions,
)


def test_every_pipeline_topic_has_its_configs() -> None:
    assert set(TOPIC_CONFIGS) >= {EVENTS_TOPIC, ALERTS_TOPIC, ROUNDS_TOPIC, DEAD_LETTER_TOPIC,
                                  REFUSED_TOPIC}
    assert all("retention.ms" in c for c in TOPIC_CONFIGS.values())


def test_an_acknowledged_record_is_on_two_disks_from_three_replicas() -> None:
    """"2 of 3 or more (one broker may die, and no acknowledged record is on one disk
    only), 1 with fewer replicas." """
    assert [min_insync(n) for n in (1, 2, 3, 5)] == [1, 1, 2, 2]
    assert topic_configs(EVENTS_TOPIC, 3)["min.insync.replicas"] == "2"
    assert topic_configs(ALERTS_TOPIC, 1) == {**TOPIC_CONFIGS[ALERTS_TOPIC],
                                              "min.insync.replicas": "1"}


def test_a_partition_count_not_the_one_asked_is_one_warning_and_left_as_it_is(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pitwatch.topics"):
        warn_partitions({"p-table-events": 8, "p-alerts": 4}, 4)
    assert [r.getMessage() for r in caplog.records] == [
        "topic p-table-events has 8 partitions, not the 4 asked: left as it is "
        "(docs/deployment.md, growing the events topic)"]
