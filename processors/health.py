"""The worker's readiness: what it needs to audit, asked every PROBE_S seconds.

    kafka        the broker answers (the events topic's end offsets, or its metadata
                 while this worker holds no partition)
    partitions   this worker holds partitions of the events topic (a worker that has
                 not joined its group, or is spare, audits nothing)
    clickhouse   the store answers `SELECT 1` (with the sink only)
    sink         the sink process runs (with the sink only)

A check not asked yet, or whose last answer is older than STALE_S, is not ready: the
worker never says ok on old news. Each change of a check's state is one log line
(ERROR when it fails, WARNING when it is back or has not passed yet since the start),
not one per failed attempt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .catch_up import PartitionReader
    from .settings import Settings

log = logging.getLogger("pitwatch.worker")

#: seconds between two rounds of checks
PROBE_S = 2.0
#: a check's answer older than this is no answer (a few rounds: one slow answer, up to
#: ASK_S, is not an outage)
STALE_S = 15.0
#: how long one check may wait for its answer
ASK_S = 3.0


class Readiness:
    """The last answer of each check, by name, and when it came."""

    def __init__(self, names: Sequence[str], stale_s: float = STALE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.names = tuple(names)
        self.stale_s = stale_s
        self.clock = clock
        #: name -> (ok, what it said, when)
        self._answers: dict[str, tuple[bool, str, float]] = {}

    def report(self, name: str, ok: bool, detail: str = "") -> None:
        """A check's answer; a change of its state is logged."""
        before = self._answers.get(name)
        self._answers[name] = (ok, detail, self.clock())
        if ok and before is not None and not before[0]:
            log.warning("%s is back: %s", name, detail or "ok")
        elif not ok and before is None:  # starting: not yet, rather than lost
            log.warning("not ready yet: %s: %s", name, detail)
        elif not ok and before is not None and before[0]:
            log.error("not ready: %s: %s (said again only when it changes)", name, detail)

    def ok(self, name: str) -> bool:
        """The check's last answer was ok, and is fresh."""
        answer = self._answers.get(name)
        return (answer is not None and answer[0]
                and self.clock() - answer[2] <= self.stale_s)

    def reasons(self) -> list[str]:
        """Why the worker is not ready, one line a check (empty: ready)."""
        out = []
        now = self.clock()
        for name in self.names:
            answer = self._answers.get(name)
            if answer is None:
                out.append(f"{name}: not checked yet")
            elif now - answer[2] > self.stale_s:
                out.append(f"{name}: no answer for {now - answer[2]:.0f} s")
            elif not answer[0]:
                out.append(f"{name}: {answer[1]}")
        return out


def assigned(app: Any, topic: str) -> list[Any] | None:
    """The partitions of `topic` this worker holds (None: its consumer is not up)."""
    try:
        return sorted((tp for tp in app.consumer.assignment() if tp.topic == topic),
                      key=lambda tp: tp.partition)
    except Exception:  # not started yet
        return None


class Probe:
    """Asks Kafka, the consumer group, ClickHouse and the sink, and tells `readiness`."""

    def __init__(self, app: Any, settings: Settings, readiness: Readiness,
                 reader: PartitionReader, sink_alive: Callable[[], bool | None]) -> None:
        self.app = app
        self.settings = settings
        self.readiness = readiness
        self.reader = reader
        self.sink_alive = sink_alive

    async def kafka(self) -> dict[tuple[str, int], int] | None:
        """The last stable offset of each partition of the events topic this worker
        holds, from the broker now (None: the broker did not answer in ASK_S)."""
        tps = assigned(self.app, self.settings.events_topic) or []
        try:
            if tps:
                got = await asyncio.wait_for(asyncio.gather(
                    *(self.reader.end_offset(tp.topic, tp.partition) for tp in tps)), ASK_S)
                ends = {(tp.topic, tp.partition): e for tp, e in zip(tps, got, strict=True)}
            else:
                await asyncio.wait_for(
                    self.reader.partition_count(self.settings.events_topic), ASK_S)
                ends = {}
        except Exception as e:
            self.readiness.report("kafka", False, f"no answer ({_said(e)})")
            return None
        self.readiness.report("kafka", True)
        return ends

    def partitions(self) -> None:
        tps = assigned(self.app, self.settings.events_topic)
        if tps is None:
            self.readiness.report("partitions", False, "the consumer is not up")
        elif not tps:
            self.readiness.report("partitions", False, "none assigned to this worker")
        else:
            self.readiness.report("partitions", True, f"{len(tps)} assigned")

    async def clickhouse(self) -> None:
        try:
            await asyncio.wait_for(asyncio.to_thread(clickhouse_answers, self.settings),
                                   ASK_S + 1)
        except Exception as e:
            self.readiness.report("clickhouse", False, f"no answer ({_said(e)})")
            return
        self.readiness.report("clickhouse", True)

    def sink(self) -> None:
        alive = self.sink_alive()
        self.readiness.report("sink", bool(alive),
                              "the process runs" if alive else "the process is not running "
                              "(its supervisor starts it again)")

    async def run(self) -> None:
        """One round of every check."""
        self.partitions()
        if self.settings.sink:
            self.sink()
            await asyncio.gather(self.kafka(), self.clickhouse())
        else:
            await self.kafka()


def clickhouse_answers(settings: Settings) -> None:
    """`SELECT 1` on the first of the store's servers that answers; raises when none
    does."""
    from clickhouse_driver import Client

    from pitwatch.connect import ClickHouseAuth

    auth = ClickHouseAuth.from_env()
    error: Exception | None = None
    for host, port in ((settings.clickhouse_host, settings.clickhouse_port),
                       *settings.clickhouse_alt_hosts):
        client = Client(host, port=port, connect_timeout=ASK_S, send_receive_timeout=ASK_S,
                        **auth.driver(host))
        try:
            client.execute("SELECT 1")
            return
        except Exception as e:
            error = e
        finally:
            client.disconnect()
    raise error or RuntimeError("no ClickHouse server configured")


def _said(e: BaseException) -> str:
    """An exception in one line: its type and its text."""
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
