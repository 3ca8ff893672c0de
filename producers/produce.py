"""`pitwatch produce`: send a simulated floor or event files to Kafka."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from pitwatch.connect import add_connection_flags
from pitwatch.events.files import Rejected, expand, read_files
from pitwatch.events.model import Event
from pitwatch.events.order import in_record_order
from pitwatch.topics import EVENTS_TOPIC, PARTITIONS, ensure_topics

from .devices import HEARTBEAT_S
from .kafka_out import OUTAGE_S, DeliveryError, Pacing, make_producer, send_events
from .simulate import Floor


class _Produce:
    name = "produce"
    help = "send a simulated floor or event files to Kafka"
    description = """\
Send table events to the table-events topic, keyed by table_id (one table, one
partition, one order), as Avro single-object messages, with acks=all, the idempotent
producer, compression and batching. Creates the pipeline's topics first if they are
missing.

Either simulate a floor (the flags of `pitwatch simulate`) or name event files.
By default as fast as possible; --rate paces to N events/s, --live keeps the gaps of
the events' own device clock (scaled by --speed).

A simulated floor's devices sign their chains (Ed25519 checkpoints, keys made from the
seed). --keys-out FILE writes their public keys, the registry the worker verifies them
against (`pitwatch worker --keys FILE`, or PITWATCH_KEYS), before anything is sent;
without it no file is written (produce has no folder to put one beside), and a worker
without a registry does not require signatures. Event files bring their own registry:
`pitwatch simulate --out DIR` writes DIR/keys.json.

Through a broker outage the records wait and are retried in order for up to
--outage-timeout seconds; an event Kafka never acknowledged is an error (exit 1)
naming the first one, never dropped in silence.

examples:
  pitwatch produce --tables 8 --rounds 50 --seed 1 --inject 0.1
  pitwatch produce --tables 8 --rounds 50 --seed 1 --keys-out floor-keys.json
  pitwatch produce floor/events.jsonl --rate 2000
  pitwatch produce --tables 4 --rounds 1000 --live --speed 10"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="*", metavar="PATH", help="event files or directories")
        p.add_argument("--kafka", default=os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092"),
                       help="bootstrap server (env PITWATCH_KAFKA; default %(default)s)")
        p.add_argument("--topic-prefix", default=os.environ.get("PITWATCH_TOPIC_PREFIX", ""),
                       help="prefix of every topic name (env PITWATCH_TOPIC_PREFIX)")
        p.add_argument("--partitions", type=int, default=PARTITIONS,
                       help="partitions for topics created here (default %(default)s)")
        sim = p.add_argument_group("simulate (when no PATH is given)")
        sim.add_argument("--tables", type=int, default=8)
        sim.add_argument("--rounds", type=int, default=50)
        sim.add_argument("--seed", type=int, default=1)
        sim.add_argument("--inject", type=float, default=0.0)
        sim.add_argument("--jurisdiction")
        sim.add_argument("--game")
        sim.add_argument("--keys-out", metavar="FILE",
                         help="write the devices' public keys (the key registry for "
                         "`pitwatch worker --keys`) to FILE; default: none written")
        pace = p.add_argument_group("pacing")
        pace.add_argument("--rate", type=float, help="events per second")
        pace.add_argument("--live", action="store_true", help="follow the events' ts gaps")
        pace.add_argument("--speed", type=float, default=1.0, help="with --live: speed-up")
        pace.add_argument("--heartbeat", type=float, metavar="S",
                          help="a simulated floor's dealer's console signs a heartbeat (a "
                          "checkpoint with the table's order, no end) through every pause "
                          "of its table longer than S seconds of device time, so the "
                          "worker hears that a paused table's record goes on; keep it "
                          "below the worker's --round-timeout (default: "
                          f"{HEARTBEAT_S:g} with --live, else none; 0: none)")
        p.add_argument("--outage-timeout", type=float, metavar="S",
                       default=float(os.environ.get("PITWATCH_OUTAGE_TIMEOUT", OUTAGE_S)),
                       help="retry through a broker outage for up to S seconds (env "
                            "PITWATCH_OUTAGE_TIMEOUT; default %(default)g)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        add_connection_flags(p, clickhouse=False)

    def floor(self, args: argparse.Namespace) -> Floor:
        heartbeat = getattr(args, "heartbeat", None)
        if heartbeat is None:
            heartbeat = HEARTBEAT_S if getattr(args, "live", False) else 0.0
        if heartbeat < 0:
            raise ValueError(f"--heartbeat is seconds, 0 or more, not {heartbeat:g}")
        return Floor(args.tables, args.rounds, args.seed, args.inject,
                     jurisdiction=args.jurisdiction, game=args.game,
                     heartbeat_ms=round(heartbeat * 1000))

    def write_keys(self, args: argparse.Namespace) -> str | None:
        """The simulated floor's key registry to --keys-out (None when not asked)."""
        if not args.keys_out:
            return None
        if args.paths:
            raise ValueError("--keys-out is for a simulated floor; event files come with "
                             "their own registry (pitwatch simulate writes DIR/keys.json)")
        keys = self.floor(args).registry()
        assert keys is not None  # a simulated floor signs
        keys.write(Path(args.keys_out))
        return str(args.keys_out)

    def events(self, args: argparse.Namespace) -> Iterator[Event]:
        if args.paths:
            def reject(r: Rejected) -> None:
                print(f"pitwatch produce: skipped {r.source}:{r.line}: {r.reason}",
                      file=sys.stderr)

            yield from read_files(in_record_order(expand(args.paths)), reject)
            return
        yield from self.floor(args).events()

    def run(self, args: argparse.Namespace) -> int:
        written = self.write_keys(args)
        if written:
            print(f"wrote the devices' public keys to {written}: give it to the worker "
                  f"(--keys {written} or PITWATCH_KEYS)", file=sys.stderr)
        from kafka.errors import AuthorizationError

        try:
            created = ensure_topics(args.kafka, args.partitions, args.topic_prefix)
        except AuthorizationError:  # a device's login may only write the events topic
            created = []
            print("pitwatch produce: this Kafka user may not create or configure the "
                  "topics; the worker (or an admin) makes them", file=sys.stderr)
        if created:
            print(f"created topics: {', '.join(created)}", file=sys.stderr)
        producer = make_producer(args.kafka, args.outage_timeout)
        bar = None
        if not args.quiet and sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(unit=" events", unit_scale=True, file=sys.stderr, desc="produce")
        try:
            n = send_events(producer, args.topic_prefix + EVENTS_TOPIC, self.events(args),
                            Pacing(args.rate, args.live, args.speed),
                            None if bar is None else bar.update)
        except DeliveryError as e:
            print(f"pitwatch produce: error: {e}", file=sys.stderr)
            return 1
        finally:
            if bar is not None:
                bar.close()
            producer.close()  # type: ignore[attr-defined]
        print(f"sent {n:,} events to {args.topic_prefix}table-events at {args.kafka}")
        return 0


command = _Produce()
