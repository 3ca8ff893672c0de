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
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from pitwatch.events.violation_avro import decode_violation

from .data import alert
from .feed_types import Polled

log = logging.getLogger("pitwatch.console")

RECENT = 5000  # alerts kept for pages that open
QUEUE = 10000  # messages a slow page may fall behind before it is told to reload (a
#                flood of a few thousand findings reaches an open page whole)


class Hub:
    def __init__(self) -> None:
        self.recent: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.subscribers: set[asyncio.Queue[dict[str, Any]]] = set()
        self.bad_messages = 0
        self.kafka_state = "off"  # off | connecting | live | error: ...
        self.silent: list[dict[str, Any]] = []  # tables silent now: table_id, age_ms
        self.floor_checked = False
        self.kafka_lag: int | None = None  # the worker group's lag on the events topic
        self.kafka_checked_ms: int | None = None
        self.store_ok: bool | None = None  # None: not asked yet
        self.store_error = ""
        self.store_since_ms: int | None = None  # when it last changed between up and down
        self.webhook: asyncio.Queue[dict[str, Any]] | None = None

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
        if a["severity"] == "CRITICAL" and self.webhook is not None:
            try:
                self.webhook.put_nowait(a)
            except asyncio.QueueFull:
                log.warning("console: webhook queue full; CRITICAL %s not sent",
                            a["violation_id"])
        return True

    def set_store(self, ok: bool, error: str, at_ms: int) -> None:
        """The store answered or did not; a change is published at once."""
        if ok != self.store_ok:
            self.store_since_ms = at_ms
            if not ok:
                log.warning("console: the store does not answer: %s", error)
            elif self.store_ok is False:
                log.info("console: the store answers again")
        changed = ok != self.store_ok
        self.store_ok, self.store_error = ok, "" if ok else error[:300]
        if changed:
            self.publish({"type": "status", "status": self.status()})

    def set_kafka(self, state: str) -> None:
        changed = state != self.kafka_state
        self.kafka_state = state
        if changed:
            self.publish({"type": "status", "status": self.status()})

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
        return {"kafka": self.kafka_state, "kafka_lag": self.kafka_lag,
                "kafka_checked": self.kafka_checked_ms,
                "store": "unknown" if self.store_ok is None else
                ("up" if self.store_ok else "down"),
                "store_error": self.store_error, "store_since": self.store_since_ms,
                "bad_messages": self.bad_messages,
                "pages": len(self.subscribers), "recent": len(self.recent),
                "silent": [t["table_id"] for t in self.silent],
                "checked": self.floor_checked}


class KafkaAlerts:
    """Reads the alerts topic from its end (every partition assigned, no consumer
    group: each console sees everything) and feeds the hub."""

    def __init__(self, hub: Hub, bootstrap: str, topic: str,
                 jurisdictions: dict[str, str], group: str = "",
                 events_topic: str = "") -> None:
        self.hub = hub
        self.bootstrap = bootstrap
        self.topic = topic
        self.jurisdictions = jurisdictions
        self.group = group
        self.events_topic = events_topic
        self._admin: Any = None

    async def run(self) -> None:
        while True:
            try:
                await self._consume()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # broker down, topic missing: retry, say so
                self.hub.set_kafka(f"down: {e}"[:200])
                log.warning("console: alerts topic %s on %s: %s; retrying in 2 s",
                            self.topic, self.bootstrap, e)
                await asyncio.sleep(2)

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        self.hub.set_kafka("connecting")
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
            self.hub.set_kafka("live")
            log.info("console: reading %s (%d partitions) from its end", self.topic, len(tps))
            next_check = 0.0
            loop = asyncio.get_running_loop()
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                for tp, msgs in batch.items():
                    for m in msgs:
                        self._one(f"{tp.topic}[{tp.partition}]@{m.offset}", m.value)
                if loop.time() >= next_check:  # the reader says nothing when the broker
                    next_check = loop.time() + self.CHECK_EVERY  # goes: ask it
                    await self._check(consumer)
        finally:
            if self._admin is not None:
                admin, self._admin = self._admin, None
                await asyncio.wait_for(admin.close(), 5)
            await asyncio.wait_for(consumer.stop(), 5)

    CHECK_EVERY = 2.0  # seconds between asking the broker whether it answers
    CHECK_TIMEOUT = 3.0  # with the page's 3 s status poll: a banner within 10 s

    async def _check(self, consumer: Any) -> None:
        """The broker answers (its metadata, within CHECK_TIMEOUT) or the reader is down;
        and the worker group's lag on the events topic when it is named."""
        import time

        from aiokafka import TopicPartition

        try:
            meta = await asyncio.wait_for(consumer._client.fetch_all_metadata(),
                                          self.CHECK_TIMEOUT)
            if not meta.brokers():
                raise ConnectionError("no broker answers")
            lag = None
            if self.group and self.events_topic:
                ids = meta.partitions_for_topic(self.events_topic) or set()
                tps = [TopicPartition(self.events_topic, p) for p in sorted(ids)]
                if tps:
                    ends = await asyncio.wait_for(consumer.end_offsets(tps),
                                                  self.CHECK_TIMEOUT)
                    done = await asyncio.wait_for(self._committed(tps), self.CHECK_TIMEOUT)
                    lag = sum(max(0, ends[tp] - done.get(tp, 0)) for tp in tps)
            self.hub.kafka_lag = lag
            self.hub.kafka_checked_ms = time.time_ns() // 1_000_000
        except (TimeoutError, ConnectionError) as e:
            why = f"the broker does not answer ({e or 'timed out'})"
            self.hub.set_kafka(f"down: {why}")  # now, before the reader's slow goodbye
            raise ConnectionError(why) from e

    async def _committed(self, tps: list[Any]) -> dict[Any, int]:
        from aiokafka.admin import AIOKafkaAdminClient

        from pitwatch.connect import KafkaAuth

        if self._admin is None:
            self._admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap,
                                              **KafkaAuth.from_env().aiokafka())
            await self._admin.start()
        got = await self._admin.list_consumer_group_offsets(self.group, partitions=tps)
        return {tp: int(m.offset) for tp, m in got.items() if m.offset >= 0}

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
    """Brings the store's violations and triage changes into the hub every `every`
    seconds, or once when `every` is None (an embedded store: no other process writes
    to it). The first read is the newest violations; after it, those the store received
    since the last read (on the store's own clock, `violations_found`), so a finding
    that lands late, whatever its device time, still reaches the feed; and the triage
    changes other console processes made."""

    OVERLAP_S = 5  # re-read this much of the past (arrival times are whole seconds)
    TRIAGE_OVERLAP_MS = 60_000  # consoles' clocks and inserts are not in lockstep

    def __init__(self, hub: Hub,
                 fetch: Callable[[int | None, int | None], Awaitable[Polled]],
                 every: float | None = 2.0) -> None:
        self.hub = hub
        self.fetch = fetch
        self.every = every
        self.since_s: int | None = None
        self.triage_after: int | None = None
        self.seen_changes: set[str] = set()

    async def run(self) -> None:
        while True:
            try:
                got = await self.fetch(self.since_s, self.triage_after)
                for a in sorted(got.alerts, key=lambda a: a["detected_at"]):
                    self.hub.add_alert(a)
                for t in sorted(got.changes, key=lambda t: t["at"]):
                    if t["change_id"] not in self.seen_changes:
                        self.seen_changes.add(t["change_id"])
                        self.hub.publish({"type": "triage", "triage": t})
                    self.triage_after = max(self.triage_after or 0,
                                            t["at"] - self.TRIAGE_OVERLAP_MS)
                self.since_s = got.store_now_s - self.OVERLAP_S
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the store away for a while: the feed goes on
                log.warning("console: store poll failed: %s", e)
            if self.every is None:
                return
            await asyncio.sleep(self.every)


class StoreProbe:
    """Asks the store a trivial question every `every` seconds and tells the hub whether
    it answered within `timeout`: the console's banner and health, within seconds of an
    outage, whatever the pages are doing."""

    def __init__(self, hub: Hub, ask: Callable[[], Awaitable[object]],
                 now_ms: Callable[[], int], every: float = 1.0, timeout: float = 3.0) -> None:
        self.hub = hub
        self.ask = ask
        self.now_ms = now_ms
        self.every = every
        self.timeout = timeout

    async def run(self) -> None:
        pending: asyncio.Task[object] | None = None
        while True:
            if pending is None or pending.done():
                pending = asyncio.ensure_future(self.ask())
            try:
                await asyncio.wait_for(asyncio.shield(pending), self.timeout)
                self.hub.set_store(True, "", self.now_ms())
            except asyncio.CancelledError:
                pending.cancel()
                raise
            except TimeoutError:
                self.hub.set_store(False, f"no answer in {self.timeout:g} s", self.now_ms())
            except Exception as e:
                self.hub.set_store(False, f"{type(e).__name__}: {e}"[:300], self.now_ms())
            await asyncio.sleep(self.every)


def webhook_failure(e: BaseException) -> str:
    """Why a webhook post failed, without its URL (a secret: a paging system's token is
    in its path, and an exception's text names the URL or its host): the exception's
    type and, for a connection refused or reset, the error number's text."""
    errno = getattr(getattr(e, "os_error", None), "errno", None)
    reason = os.strerror(errno) if isinstance(errno, int) else None  # it names no host
    status = getattr(e, "status", None)
    if reason:
        return f"{type(e).__name__} ({reason})"
    if isinstance(status, int):
        return f"{type(e).__name__} (HTTP {status})"
    return type(e).__name__


class Webhook:
    """Posts each CRITICAL to the site's paging system (a JSON body: the alert and a
    link to it), retrying with back-off for up to `give_up_s`; what it could not deliver
    is logged with the violation id. One console of a site should have it set."""

    def __init__(self, hub: Hub, url: str, console_url: str, give_up_s: float = 300.0
                 ) -> None:
        self.hub = hub
        self.url = url
        self.console_url = console_url.rstrip("/")
        self.give_up_s = give_up_s
        self.sent = 0
        self.failed = 0
        hub.webhook = asyncio.Queue(1000)

    async def run(self) -> None:
        from urllib.parse import quote

        import aiohttp

        assert self.hub.webhook is not None
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            while True:
                a = await self.hub.webhook.get()
                body = {"severity": a["severity"], "code": a["code"],
                        "table_id": a["table_id"], "round_id": a["round_id"],
                        "message": a["message"], "citation": a["citation"],
                        "violation_id": a["violation_id"], "detected_at": a["detected_at"],
                        "link": f"{self.console_url}/violations/"
                                f"{quote(a['violation_id'], safe='')}"}
                delay, waited = 1.0, 0.0
                while True:
                    try:
                        async with http.post(self.url, json=body) as r:
                            if r.status < 300:
                                self.sent += 1
                                break
                            why = f"HTTP {r.status}"
                    except (aiohttp.ClientError, TimeoutError) as e:
                        why = webhook_failure(e)
                    if waited >= self.give_up_s:
                        self.failed += 1
                        log.error("console: webhook gave up on CRITICAL %s: %s",
                                  a["violation_id"], why)
                        break
                    log.warning("console: webhook %s; retrying in %g s", why, delay)
                    await asyncio.sleep(delay)
                    waited += delay
                    delay = min(delay * 2, 30.0)
