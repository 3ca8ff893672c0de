"""`pitwatch worker`: start one Faust worker (the audit and its ClickHouse sink)."""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from typing import Any

from pitwatch.connect import add_connection_flags
from pitwatch.events.keys import KeyRegistry
from pitwatch.registry import add_site_public_key_option
from pitwatch.topics import ensure_topics

from .settings import SETTINGS, SettingError, Settings, add_flags, settings_from_args

log = logging.getLogger("pitwatch.worker")


class _Worker:
    name = "worker"
    help = "run a streaming worker: Kafka in, alerts out, ClickHouse sink"
    description = """\
Start one worker of the streaming audit. It joins the consumer group on the
table-events topic, audits each table's rounds as the events arrive, sends every
violation to the alerts topic at once (Avro), and lands events, rounds and violations
in ClickHouse in batches (a sink process it starts, and restarts if it dies). Start
more workers with the same --app-id to split the partitions between them.

A round is incomplete when its table moves on, when a later event of the table carries
a device ts more than --round-timeout after the round's last event, or when the
partition is caught up and nothing arrived for the table for --round-timeout seconds
(docs/procedure.md, "When a round is incomplete").

Every flag but {switches} can also be set in the environment as
PITWATCH_<FLAG> (e.g. PITWATCH_KAFKA, PITWATCH_CLICKHOUSE, PITWATCH_ROUND_TIMEOUT,
PITWATCH_KAFKA_SECURITY); a flag wins over the environment. Every setting: docs/settings.md.
Health and Prometheus metrics: http://127.0.0.1:<web-port>/health/live (the process
answers), /health/ready (= /health: Kafka answers, partitions held, ClickHouse and the
sink up; 503 naming what is not) and /metrics (processors/metrics.py).

Local services for trying it: deploy/services.sh start (Kafka on 127.0.0.1:19092,
ClickHouse on 127.0.0.1:19000).

examples:
  pitwatch worker
  pitwatch worker --kafka 127.0.0.1:19092 --clickhouse 127.0.0.1:19000 --store rocksdb://
  PITWATCH_KAFKA=kafka:9092 PITWATCH_CLICKHOUSE=clickhouse:9000 pitwatch worker""".format(
        switches=" and ".join(s.flag for s in SETTINGS if s.env is None))

    def configure(self, p: argparse.ArgumentParser) -> None:
        add_flags(p)  # processors/settings.py: the table of the worker's settings
        add_site_public_key_option(p)
        add_connection_flags(p)

    def run(self, args: argparse.Namespace) -> int:
        from .web import WebServer

        try:
            settings = settings_from_args(args)
        except SettingError as e:
            print(f"pitwatch worker: {e}", file=sys.stderr)
            return 2
        web = None
        if args.web_port > 0:  # first: liveness answers from the process's start on
            try:
                web = WebServer(args.web_bind, args.web_port, args.kafka).start()
            except OSError as e:
                print(f"pitwatch worker: cannot serve health and metrics on "
                      f"{args.web_bind}:{args.web_port}: {e}", file=sys.stderr)
                return 2
        from pathlib import Path

        from faust.worker import Worker

        from .log_rate import limit_repeats

        class _QuietRepeats(Worker):
            """Faust's worker, whose log holds repeats of a line (log_rate.py)."""

            def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
                super().on_setup_root_logger(logger, level)
                limit_repeats(logger)

        from pitwatch.events.keys import KeyRegistryError

        from .app import create_app

        try:  # a registry that cannot be used is refused before anything starts
            keys = worker_registry(args)
        except KeyRegistryError as e:
            print(f"pitwatch worker: {e}", file=sys.stderr)
            return 2
        logging.basicConfig(level=args.loglevel.upper(),
                            format="[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s")
        limit_repeats(logging.getLogger())  # until Faust sets its own handlers up
        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
        from .topics import ensure_changelog

        try:  # the project's topic configs, whoever starts first
            ensure_topics(settings.kafka, settings.partitions, settings.topic_prefix,
                          settings.replication_factor)
        except Exception as e:  # Kafka not up yet: Faust declares them later
            log.warning("could not create the topics now (%s); the worker declares them", e)
        try:
            settings = learn_partitions(settings)
        except PartitionsChanged as e:
            print(f"pitwatch worker: refusing to start: {e}", file=sys.stderr)
            return 2
        try:  # the changelog made and seen before Faust looks for it
            ensure_changelog(settings.kafka,
                             f"{settings.app_id}-{settings.topic_prefix}open-rounds-changelog",
                             settings.partitions, settings.replication_factor)
        except Exception as e:  # Kafka not up yet: Faust declares it later
            log.warning("could not create the changelog topic now (%s); Faust declares it", e)
        stop = threading.Event()
        if settings.sink:  # in a process of its own: the audit and the sink use both cores
            from .supervise import supervise_sink

            threading.Thread(target=supervise_sink, args=(settings, args.loglevel, stop),
                             name="pitwatch-sink-supervisor", daemon=True).start()
        app = create_app(settings, keys, web)
        if web is not None:
            from .supervise import on_restart

            on_restart(web.restart)
        worker = _QuietRepeats(app, loglevel=args.loglevel, quiet=True)
        try:
            worker.execute_from_commandline()
        finally:
            stop.set()
        return 0


def worker_registry(args: argparse.Namespace, store: Any = None) -> KeyRegistry | None:
    """The registry the worker checks signatures against (None for none), by the
    core's one loader (`pitwatch.registry.load_registry`): --keys (or $PITWATCH_KEYS),
    else the one pinned in the ClickHouse store (`store`, else the server of
    --clickhouse, closed after), handed to the audit as loaded (no file written); the
    site key's signature checked when --site-public-key (or its env) is given. A
    registry named is pinned in the store (a change said with both SHA-256s). Said on
    stderr; KeyRegistryError when it cannot be used, or with --require-signatures
    when there is none."""
    from pitwatch.events.keys import KEYS_ENV, NOT_CHECKED, KeyRegistryError
    from pitwatch.registry import load_registry
    from pitwatch.store import registry_pin
    from pitwatch.store.base import StoreError
    from pitwatch.terminal import printable

    def say(line: str) -> None:
        print(printable(f"pitwatch worker: {line}"), file=sys.stderr)

    name = f"the store {args.clickhouse}/{args.clickhouse_db}"
    if store is None:
        from pitwatch.store.server import ServerStore

        server = ServerStore.at(args.clickhouse, args.clickhouse_db)
        try:
            return worker_registry(args, server)
        finally:
            server.close()
    pinned = None
    try:
        try:
            pinned = registry_pin.read(store)
        except StoreError:  # a store not made yet (its database): made as the sink does
            store.setup()
            pinned = registry_pin.read(store)
    except StoreError as e:
        store = None
        say(f"the key registry pinned in {name} could not be read ({e}): only a registry "
            f"named counts (--keys FILE or ${KEYS_ENV})")
    loaded = load_registry(args.keys, pinned=pinned, store_name=name,
                           site_public_key_file=args.site_public_key)
    if loaded.registry is None:
        if args.require_signatures:
            raise KeyRegistryError(f"--require-signatures: no key registry (--keys FILE or "
                                   f"${KEYS_ENV}, or one pinned in the store): {NOT_CHECKED}, "
                                   "so the worker did not start")
        for line in loaded.lines():
            say(line)
        return None
    for line in loaded.lines():
        say(line)
    if not loaded.from_store and store is not None:
        replaced = registry_pin.pin(store, loaded.registry.raw, loaded.signature)
        if replaced is not None:
            say(f"key registry CHANGED since the store's last pin (it was sha256 "
                f"{replaced}, now sha256 {loaded.sha256}): the store now holds this one")
    return loaded.registry


class PartitionsChanged(RuntimeError):
    """The events topic and the worker's state (its changelog) differ in partitions."""


def changelog_topic(settings: Settings) -> str:
    """The open-rounds table's changelog, as Faust names it."""
    return f"{settings.app_id}-{settings.topic_prefix}open-rounds-changelog"


def learn_partitions(settings: Settings) -> Settings:
    """The settings with the events topic's partition count as Kafka has it (the flag
    only for a topic not made yet). Raises PartitionsChanged when the worker's state
    was kept for another count: its tables' state would not be where their events are."""
    from dataclasses import replace

    from .topics import partition_counts

    try:
        counts = partition_counts(settings.kafka, [settings.events_topic,
                                                   changelog_topic(settings)])
    except Exception as e:  # Kafka not up yet: the flag's count, checked again later
        log.warning("could not ask Kafka for the partitions (%s); assuming %d", e,
                    settings.partitions)
        return settings
    n = counts.get(settings.events_topic, settings.partitions)
    kept = counts.get(changelog_topic(settings))
    if kept is not None and kept != n:
        from .checkpoint import MOVED_TODO

        raise PartitionsChanged(
            f"{settings.events_topic} has {n} partitions, but this app's state "
            f"({changelog_topic(settings)}) is kept for {kept}: tables keyed to other "
            f"partitions would be audited without their state. {MOVED_TODO}")
    if n != settings.partitions:
        log.warning("%s has %d partitions (from Kafka), not the %d of --partitions: "
                    "auditing %d", settings.events_topic, n, settings.partitions, n)
    return replace(settings, partitions=n)


command = _Worker()
