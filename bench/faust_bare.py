"""A Faust agent that only counts: what Faust's per-message stream costs an event on
this machine, the ceiling of any worker fed through a Faust stream (pitwatch's worker
reads a fetch at a time instead: processors/faust_batch.py). Used by bench/stream.py as
a second baseline.

    .venv/bin/python bench/faust_bare.py TOPIC N
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any

import faust
from faust.worker import Worker


def main() -> None:
    topic_name, n = sys.argv[1], int(sys.argv[2])
    app_id = "fb" + uuid.uuid4().hex[:8]
    kafka = os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092")
    app = faust.App(app_id, broker=f"kafka://{kafka}", store="memory://",
                    web_enabled=False, key_serializer="raw", value_serializer="raw",
                    consumer_auto_offset_reset="earliest", datadir=f"/tmp/{app_id}")
    topic = app.topic(topic_name, key_type=bytes, value_type=bytes)
    seen = {"n": 0, "t": 0.0, "cpu": 0.0}

    @app.agent(topic)
    async def count(stream: Any) -> None:
        async for _ in stream.events():
            if seen["n"] == 0:  # timed from the first event: the group join is not
                seen["t"] = time.perf_counter()  # (as for the worker and the bare consumer)
                seen["cpu"] = time.process_time()
            seen["n"] += 1
            if seen["n"] == n:
                print(f"RATE {(n - 1) / (time.perf_counter() - seen['t']):.0f}", flush=True)
                print(f"CPU_US {(time.process_time() - seen['cpu']) / (n - 1) * 1e6:.1f}",
                      flush=True)
                os._exit(0)

    Worker(app, loglevel="error", quiet=True, redirect_stdouts=False).execute_from_commandline()


if __name__ == "__main__":
    main()
