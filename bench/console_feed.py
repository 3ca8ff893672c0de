"""The console's live feed: from a violation reaching the alerts topic to its arrival on
an open page (the server-sent event), beside a bare aiokafka consumer of the same topic
in the same run (what reading the topic costs without the console).

    PITWATCH_KAFKA=127.0.0.1:19092 .venv/bin/python bench/console_feed.py [--alerts 300] [--rate 50]

Needs Kafka (deploy/services.sh start). Target (issue 11): within 1 s of the topic.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from aiohttp import ClientSession, web  # noqa: E402
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402

from pitwatch.console.app import Settings, make_app  # noqa: E402
from pitwatch.engine.violation import Violation  # noqa: E402
from pitwatch.events.violation_avro import decode_violation, encode_violation  # noqa: E402
from pitwatch.store.embedded import EmbeddedStore  # noqa: E402

KAFKA = os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092")


def violation(i: int) -> Violation:
    return Violation("PAYOUT_WRONG", "CRITICAL", "AC-BJ-01", f"AC-BJ-01-{i:06d}", 1, 0,
                     str(uuid.uuid4()), (), "N.J.A.C. 13:69F-2.8(a)1–2", "bench",
                     "nj-blackjack", "2024.09-1", 1796064572723 + i)


def pct(xs: list[float], p: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]


async def main(n: int, rate: float) -> None:
    topic = f"bench-{uuid.uuid4().hex[:8]}-alerts"
    producer = AIOKafkaProducer(bootstrap_servers=KAFKA, linger_ms=0)
    await producer.start()
    await producer.send_and_wait(topic, b"warm-up: creates the topic")  # auto-created
    with tempfile.TemporaryDirectory() as tmp:
        store = EmbeddedStore(tmp)
        store.setup()
        app = make_app(store, Settings(kafka=KAFKA, alerts_topic=topic, poll_every=None))
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{port}"
        sent: dict[str, float] = {}
        page: list[float] = []
        bare: list[float] = []
        async with ClientSession() as http:
            while (await (await http.get(f"{base}/api/health")).json())["kafka"] != "live":
                await asyncio.sleep(0.05)
            bare_consumer = AIOKafkaConsumer(bootstrap_servers=KAFKA, group_id=None)
            await bare_consumer.start()
            tps = [TopicPartition(topic, p) for p in
                   (await bare_consumer._client.fetch_all_metadata()).partitions_for_topic(topic)]
            bare_consumer.assign(tps)
            await bare_consumer.seek_to_end(*tps)
            for tp in tps:
                await bare_consumer.position(tp)

            async def read_page() -> None:
                resp = await http.get(f"{base}/api/feed")
                event = b""
                async for line in resp.content:
                    if line.startswith(b"event: "):
                        event = line[7:].strip()
                    elif line.startswith(b"data: ") and event == b"alert":
                        vid = orjson.loads(line[6:])["alert"]["violation_id"]
                        page.append(time.perf_counter() - sent[vid])
                        if len(page) == n:
                            return

            async def read_bare() -> None:
                while len(bare) < n:
                    for msgs in (await bare_consumer.getmany(timeout_ms=200)).values():
                        for m in msgs:
                            vid = decode_violation(m.value).violation_id
                            bare.append(time.perf_counter() - sent[vid])

            readers = [asyncio.create_task(read_page()), asyncio.create_task(read_bare())]
            await asyncio.sleep(0.5)  # the page's stream is open (snapshot sent)
            for i in range(n):
                v = violation(i)
                msg = encode_violation(v)
                sent[v.violation_id] = time.perf_counter()
                await producer.send_and_wait(topic, msg)
                await asyncio.sleep(1 / rate)
            await asyncio.wait_for(asyncio.gather(*readers), 30)
            await bare_consumer.stop()
        await runner.cleanup()
    await producer.stop()
    print(f"{n} alerts at {rate:g}/s, from the send to arrival (ms):")
    for name, xs in (("bare aiokafka consumer", bare), ("console page (SSE)", page)):
        print(f"  {name:24} p50 {statistics.median(xs) * 1000:7.1f}  "
              f"p99 {pct(xs, 0.99) * 1000:7.1f}  max {max(xs) * 1000:7.1f}")
    print(f"  ratio console/bare: p50 {statistics.median(page) / statistics.median(bare):.2f}"
          f"  p99 {pct(page, 0.99) / pct(bare, 0.99):.2f}")
    print(f"  within 1 s: {sum(x < 1 for x in page)} of {len(page)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--alerts", type=int, default=300)
    ap.add_argument("--rate", type=float, default=50.0, help="alerts per second")
    args = ap.parse_args()
    asyncio.run(main(args.alerts, args.rate))
