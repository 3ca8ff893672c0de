"""Watch the alerts topic: each violation as one line, as it arrives.

    python -m pitwatch.processors.alerts_tail [--kafka 127.0.0.1:19092] [--topic alerts]
        [--from-start]
"""

from __future__ import annotations

import argparse
import os

from pitwatch.events.violation_avro import decode_violation
from pitwatch.topics import ALERTS_TOPIC


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kafka", default=os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092"),
                    help="bootstrap server (env PITWATCH_KAFKA; default %(default)s)")
    ap.add_argument("--topic", default=ALERTS_TOPIC)
    ap.add_argument("--from-start", action="store_true", help="not only new alerts")
    args = ap.parse_args()
    from kafka import KafkaConsumer

    from pitwatch.connect import KafkaAuth

    consumer = KafkaConsumer(args.topic, bootstrap_servers=args.kafka,
                             auto_offset_reset="earliest" if args.from_start else "latest",
                             isolation_level="read_committed",
                             **KafkaAuth.from_env().kafka_python())
    try:
        for msg in consumer:
            try:
                v = decode_violation(msg.value)
            except Exception as e:  # a tombstone or garbage: the sink dead-letters it
                print(f"{'?':8} {'not a violation':32} {msg.topic}[{msg.partition}]@"
                      f"{msg.offset}: {e}", flush=True)
                continue
            seat = "" if v.seat is None else f" seat {v.seat}/{v.hand}"
            print(f"{v.severity:8} {v.code:32} {v.table_id} {v.round_id}{seat}  "
                  f"[{v.citation}] {v.message}", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
