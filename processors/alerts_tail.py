"""Watch the alerts topic: each violation as one line, as it arrives.

    python -m processors.alerts_tail [--kafka 127.0.0.1:19092] [--topic alerts] [--from-start]
"""

from __future__ import annotations

import argparse

from pitwatch.engine.alerts import decode_violation


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kafka", default="127.0.0.1:19092")
    ap.add_argument("--topic", default="alerts")
    ap.add_argument("--from-start", action="store_true", help="not only new alerts")
    args = ap.parse_args()
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(args.topic, bootstrap_servers=args.kafka,
                             auto_offset_reset="earliest" if args.from_start else "latest")
    try:
        for msg in consumer:
            v = decode_violation(msg.value)
            seat = "" if v.seat is None else f" seat {v.seat}/{v.hand}"
            print(f"{v.severity:8} {v.code:32} {v.table_id} {v.round_id}{seat}  "
                  f"[{v.citation}] {v.message}", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
