"""The live feed: violations pushed to every open page the moment they arrive.

`Hub` fans messages out to subscribers (one bounded queue per open page) and keeps the
latest alerts, so a page that opens gets them at once. Two sources fill it: the alerts
topic (`KafkaAlerts`, when the console has --kafka), decoded with the core's codec, and
the store (`StorePoller`), which brings violations the topic did not (an embedded
audit's, or those landed before the console started). A message that does not decode is
counted, logged with its partition and offset, and announced on the feed; the feed goes
on.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from pitwatch.engine.alerts import decode_violation

from .data import alert

log = logging.getLogger("pitwatch.console")

RECENT = 1000  # alerts kept for pages that open
QUEUE = 1000  # messages a slow page may fall behind before it is told to reload


class Hub:
    def __init__(self) -> None:
        self.recent: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.subscribers: set[asyncio.Queue[dict[str, Any]]] = set()
        self.bad_messages = 0
        self.kafka_state = "off"  # off | connecting | live | error: ...
        self.silent: list[dict[str, Any]] = []  # tables silent now: table_id, age_ms
        self.floor_checked = False

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        q: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE)
        self.subscribers.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[dict[str, Any]]) -> None:
        self.subscribers.discard(q)

    def publish(self, msg: dict[str, Any]) -> None:
        for q in list(self.subscribers):
            try:
                q.put_nowait(msg)
            except asyncio.QueueFull:  # a page that stopped reading: it reloads
                self.subscribers.discard(q)
                log.warning("console: a page fell %d messages behind; dropped it", QUEUE)

    def add_alert(self, a: dict[str, Any]) -> bool:
        """Publish an alert not seen before; False for one already known."""
        vid = a["violation_id"]
        if vid in self.recent:
            return False
        self.recent[vid] = a
        while len(self.recent) > RECENT:
            self.recent.popitem(last=False)
        self.publish({"type": "alert", "alert": a})
        return True

    def bad(self, where: str, reason: str) -> None:
        self.bad_messages += 1
        log.warning("console: undecodable message on alerts at %s: %s", where, reason)
        self.publish({"type": "bad", "where": where, "reason": reason,
                      "count": self.bad_messages})

    def set_silent(self, tables: list[dict[str, Any]]) -> None:
        """Publish the silent tables when the set of them changes (ages alone do not)."""
        changed = {t["table_id"] for t in tables} != {t["table_id"] for t in self.silent}
        self.silent = tables
        self.floor_checked = True
        if changed:
            self.publish({"type": "silent", "tables": tables})

    def status(self) -> dict[str, Any]:
        return {"kafka": self.kafka_state, "bad_messages": self.bad_messages,
                "pages": len(self.subscribers), "recent": len(self.recent),
                "silent": [t["table_id"] for t in self.silent],
                "checked": self.floor_checked}


class KafkaAlerts:
    """Reads the alerts topic from its end (every partition assigned, no consumer
    group: each console sees everything) and feeds the hub."""

    def __init__(self, hub: Hub, bootstrap: str, topic: str,
                 jurisdictions: dict[str, str]) -> None:
        self.hub = hub
        self.bootstrap = bootstrap
        self.topic = topic
        self.jurisdictions = jurisdictions

    async def run(self) -> None:
        while True:
            try:
                await self._consume()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # broker down, topic missing: retry, say so
                self.hub.kafka_state = f"error: {e}"
                log.warning("console: alerts topic %s on %s: %s; retrying in 2 s",
                            self.topic, self.bootstrap, e)
                await asyncio.sleep(2)

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        self.hub.kafka_state = "connecting"
        from pitwatch.connect import KafkaAuth

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="latest",
                                    **KafkaAuth.from_env().aiokafka())
        await consumer.start()
        try:
            ids: set[int] | None = None
            for _ in range(50):
                # aiokafka's public partitions_for_topic() answers only for subscribed
                # topics; a manual assignment reads the cluster's metadata itself
                meta = await consumer._client.fetch_all_metadata()
                ids = meta.partitions_for_topic(self.topic)
                if ids:
                    break
                await asyncio.sleep(0.2)
            if not ids:
                raise RuntimeError(f"topic {self.topic!r} does not exist yet")
            tps = [TopicPartition(self.topic, p) for p in sorted(ids)]
            consumer.assign(tps)
            await consumer.seek_to_end(*tps)
            for tp in tps:  # resolve the end offsets now: nothing sent after "live" is missed
                await consumer.position(tp)
            self.hub.kafka_state = "live"
            log.info("console: reading %s (%d partitions) from its end", self.topic, len(tps))
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                for tp, msgs in batch.items():
                    for m in msgs:
                        self._one(f"{tp.topic}[{tp.partition}]@{m.offset}", m.value)
        finally:
            await consumer.stop()

    def _one(self, where: str, value: bytes | None) -> None:
        if value is None:
            self.hub.bad(where, "empty message (tombstone)")
            return
        try:
            v = decode_violation(value)
        except Exception as e:  # any damage: reported, never fatal
            self.hub.bad(where, f"{type(e).__name__}: {e}"[:300])
            return
        self.hub.add_alert(alert(v.to_json(), self.jurisdictions))


class SilentWatch:
    """Every `every` seconds, the floor's silent tables into the hub: a table that went
    quiet is an alert on the live feed too."""

    def __init__(self, hub: Hub, fetch: Callable[[], Awaitable[list[dict[str, Any]]]],
                 every: float = 5.0) -> None:
        self.hub = hub
        self.fetch = fetch
        self.every = every

    async def run(self) -> None:
        while True:
            try:
                floor = await self.fetch()
                self.hub.set_silent([{"table_id": t["table_id"], "age_ms": t["age_ms"]}
                                     for t in floor if t["silent"]])
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the store away for a while: try again
                log.warning("console: floor check failed: %s", e)
            await asyncio.sleep(self.every)


class StorePoller:
    """Brings the store's newest violations into the hub every `every` seconds, or
    once when `every` is None (an embedded store: no other process writes to it).
    After the first read it asks only for device times from LOOKBACK_MS before the
    newest it has seen (rows land late, a sink batches)."""

    LOOKBACK_MS = 600_000

    def __init__(self, hub: Hub,
                 fetch: Callable[[int | None], Awaitable[list[dict[str, Any]]]],
                 every: float | None = 2.0) -> None:
        self.hub = hub
        self.fetch = fetch
        self.every = every
        self.newest: int | None = None

    async def run(self) -> None:
        while True:
            try:
                since = None if self.newest is None else self.newest - self.LOOKBACK_MS
                rows = await self.fetch(since)
                for a in sorted(rows, key=lambda a: a["detected_at"]):
                    self.hub.add_alert(a)
                    self.newest = max(self.newest or 0, a["detected_at"])
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the store away for a while: the feed goes on
                log.warning("console: store poll failed: %s", e)
            if self.every is None:
                return
            await asyncio.sleep(self.every)
