"""`pitwatch worker`: start one Faust worker (audit agent and ClickHouse sink)."""

from __future__ import annotations

import argparse
import logging

from .settings import Settings


class _Worker:
    name = "worker"
    help = "run a streaming worker: Kafka in, alerts out, ClickHouse sink"
    description = """\
Start one worker of the streaming audit. It joins the consumer group on the
table-events topic, audits each table's rounds as the events arrive, sends every
violation to the alerts topic at once (Avro), and lands events, rounds and violations
in ClickHouse in batches. Start more workers with the same --app-id to split the
partitions between them.

Local services for trying it: deploy/services.sh start (Kafka on 127.0.0.1:19092,
ClickHouse on 127.0.0.1:19000).

examples:
  pitwatch worker
  pitwatch worker --kafka 127.0.0.1:19092 --clickhouse 127.0.0.1:19000 --store rocksdb://"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        d = Settings()
        p.add_argument("--kafka", default=d.kafka, help=f"bootstrap server (default {d.kafka})")
        p.add_argument("--clickhouse", default=f"{d.clickhouse_host}:{d.clickhouse_port}",
                       help="ClickHouse native host:port (default %(default)s)")
        p.add_argument("--clickhouse-db", default=d.clickhouse_db,
                       help="ClickHouse database (created if missing; default %(default)s)")
        p.add_argument("--app-id", default=d.app_id, help="consumer group / app id")
        p.add_argument("--topic-prefix", default="",
                       help="prefix for every topic name (isolated runs)")
        p.add_argument("--partitions", type=int, default=d.partitions,
                       help="partitions of table-events (default %(default)s)")
        p.add_argument("--store", default=d.store,
                       help="Faust table store: memory:// or rocksdb:// (default %(default)s)")
        p.add_argument("--data-dir", default=d.data_dir, help="worker state directory")
        p.add_argument("--web-port", type=int, default=d.web_port)
        p.add_argument("--no-sink", action="store_true", help="audit and alert only")
        p.add_argument("--round-timeout", type=float, default=d.round_timeout_s,
                       help="seconds before an open round is incomplete (default %(default)s)")
        p.add_argument("--loglevel", default="warning")

    def run(self, args: argparse.Namespace) -> int:
        from faust.worker import Worker

        from .app import create_app

        host, _, port = args.clickhouse.rpartition(":")
        settings = Settings(kafka=args.kafka, clickhouse_host=host or "127.0.0.1",
                            clickhouse_port=int(port), clickhouse_db=args.clickhouse_db,
                            app_id=args.app_id,
                            partitions=args.partitions, store=args.store,
                            data_dir=args.data_dir, web_port=args.web_port,
                            sink=not args.no_sink, round_timeout_s=args.round_timeout
                            ).with_prefix(args.topic_prefix)
        logging.basicConfig(level=args.loglevel.upper())
        from pathlib import Path

        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
        if settings.sink:  # in a process of its own: the audit and the sink use both cores
            import multiprocessing

            from .sink import sink_process

            ctx = multiprocessing.get_context("spawn")
            ctx.Process(target=sink_process, args=(settings, args.loglevel), daemon=True,
                        name="pitwatch-sink").start()
        app = create_app(settings)
        worker = Worker(app, loglevel=args.loglevel, quiet=True)
        worker.execute_from_commandline()
        return 0


command = _Worker()
