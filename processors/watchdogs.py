"""The worker's watchdogs: what it notices about itself and Kafka on a timer, apart from
the audit.

- The events topic's partition count changed: tables now keyed to other partitions
  would be audited without their state, so the audit stops (`Checkpoint.refuse`).
- The process was frozen (SIGSTOP, a paused VM) for longer than its Kafka session: its
  partitions have moved on, and Faust does not always recover its consumer from that.
- A partition it holds has messages to read but its read position has not moved for
  the stall time-out.

The last two start the worker again, clean, from its snapshots and committed offsets
(`supervise.restart_self`). A broker that does not answer is nothing to judge: a
watchdog that cannot ask Kafka waits for its next tick.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from .supervise import log_tasks, restart_self

log = logging.getLogger("pitwatch.worker")

#: the watchdog's wait for a partition's end offset (a broker down answers nothing)
END_OFFSET_WAIT_S = 3.0
#: how often the events topic's partition count is asked of Kafka
PARTITIONS_CHECK_S = 10.0
FREEZE_CHECK_S = 1.0
STALL_CHECK_S = 5.0


class Frozen:
    """Notices that the process did not run for longer than `limit_s` (monotonic time
    goes on while a process is stopped)."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.last: float | None = None  # from the first tick: start-up is not a freeze

    def tick(self) -> float | None:
        now = time.monotonic()
        gap = None if self.last is None else now - self.last
        self.last = now
        return gap if gap is not None and gap > self.limit_s else None


class Stalled:
    """Notices a partition this worker holds that has messages to read (by its end
    offset) while the worker's read position has not moved for `limit_s`."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.since: dict[object, tuple[int, float]] = {}

    def check(self, tp: object, read: int, end: int) -> float | None:
        """`read`: the last offset read (-1 for none); `end`: the end offset. Returns
        how long it has been stalled, once that is over the limit."""
        now = time.monotonic()
        if end <= read + 1:
            self.since.pop(tp, None)
            return None
        prev = self.since.get(tp)
        if prev is None or prev[0] != read:
            self.since[tp] = (read, now)
            return None
        stalled = now - prev[1]
        return stalled if stalled > self.limit_s else None

    def forget(self) -> None:
        self.since.clear()


class Offsets(Protocol):
    """What the watchdogs ask Kafka (catch_up.PartitionReader)."""

    async def partition_count(self, topic: str) -> int | None: ...

    async def end_offset(self, topic: str, partition: int) -> int: ...

    async def first_offset(self, topic: str, partition: int) -> int: ...


class Audit(Protocol):
    """What the watchdogs see of the audit (checkpoint.Checkpoint)."""

    def assigned(self) -> Iterable[Any]: ...

    def next_to_read(self, tp: Any) -> int: ...

    def refuse(self, reason: str) -> None: ...


class Shown(Protocol):
    """Where the partition count Kafka last gave is shown (metrics.Metrics)."""

    partitions: int | None


class Watchdogs:
    """The three watchdogs of one worker, over its `audit`; `kafka` answers their
    questions; `partitions` is the count the worker's state is kept for, and `shown`
    shows the count Kafka gives; `restart` starts the worker again, clean."""

    def __init__(self, audit: Audit, kafka: Offsets, shown: Shown, topic: str,
                 partitions: int, session_timeout_s: float, stall_timeout_s: float,
                 restart: Callable[[], None] = restart_self) -> None:
        self.audit, self.kafka, self.shown = audit, kafka, shown
        self.topic, self.partitions = topic, partitions
        self.frozen = Frozen(session_timeout_s)
        self.stalled = Stalled(stall_timeout_s)
        self.restart = restart

    def install(self, app: Any) -> None:
        """Run each on the app's timers."""
        app.timer(interval=PARTITIONS_CHECK_S)(self.check_partitions)
        app.timer(interval=FREEZE_CHECK_S)(self.check_frozen)
        app.timer(interval=STALL_CHECK_S)(self.check_stalled)

    def forget(self) -> None:
        """The partitions were revoked: what was read of them says nothing now."""
        self.stalled.forget()

    async def check_partitions(self) -> None:
        try:
            n = await self.kafka.partition_count(self.topic)
        except Exception as e:  # Kafka away: nothing to judge now
            log.info("could not ask Kafka for %s's partitions (%s)", self.topic, e)
            return
        self.shown.partitions = n
        if n is not None and n != self.partitions:
            self.audit.refuse(
                f"{self.topic} has {n} partitions, not the {self.partitions} this "
                "worker's state is kept for: tables now keyed to other partitions would be "
                "audited without their state")

    async def check_frozen(self) -> None:
        """This awaits nothing, so a gap between its ticks is a freeze, never a wait."""
        gap = self.frozen.tick()
        if gap is not None:
            log.error("this worker was frozen for %.0f s, longer than its %.0f s session: "
                      "its partitions have moved on; restarting it clean", gap,
                      self.frozen.limit_s)
            self.restart()

    async def check_stalled(self) -> None:
        """Never under the audit's lock: it must work when the audit is stuck."""
        for tp in self.audit.assigned():
            try:
                end = await asyncio.wait_for(self.kafka.end_offset(tp.topic, tp.partition),
                                             END_OFFSET_WAIT_S)
                nxt = self.audit.next_to_read(tp)
                if nxt < 0:  # nothing read, nothing committed: reading starts at its first
                    nxt = await asyncio.wait_for(
                        self.kafka.first_offset(tp.topic, tp.partition), END_OFFSET_WAIT_S)
            except Exception as e:  # Kafka unreachable: nothing to judge now
                log.info("watchdog: no end offset for %s (%s)", tp, e)
                return
            still = self.stalled.check((tp.topic, tp.partition), nxt - 1, end)
            if still is not None:
                log.error("%s[%d] has messages up to offset %d but nothing was read for "
                          "%.0f s; restarting this worker clean", tp.topic, tp.partition,
                          end - 1, still)
                log_tasks()
                self.restart()
                return
