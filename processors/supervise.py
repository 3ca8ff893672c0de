"""Keeping the worker's processes alive: the sink process (started, and restarted when
it dies, by a thread of the worker) and the worker itself after it was frozen."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from typing import Any, cast

from .settings import Settings

log = logging.getLogger("pitwatch.worker")
_sink: Any = None  # the running sink process
_stop = threading.Event()  # set when the sink is to stay down


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


def supervise_sink(settings: Settings, loglevel: str, stop: threading.Event) -> None:
    """Run the sink process; whenever it dies (a crash, SIGKILL, OOM), log it and start
    another after a short back-off. The sink stops by itself when the worker is gone."""
    import multiprocessing

    from .sink import sink_process

    global _sink
    ctx = multiprocessing.get_context("spawn")
    delay = 0.5
    while not stop.is_set() and not _stop.is_set():
        _sink = ctx.Process(target=sink_process, args=(settings, loglevel), daemon=True,
                            name="pitwatch-sink")
        _sink.start()
        started = time.monotonic()
        log.warning("sink started (pid %s)", _sink.pid)
        _sink.join()
        if stop.is_set() or _stop.is_set():
            return
        if time.monotonic() - started > 60:
            delay = 0.5  # it ran a good while: not a crash loop
        log.error("sink (pid %s) exited with code %s; restarting in %.1f s", _sink.pid,
                  _sink.exitcode, delay)
        if stop.wait(delay):
            return
        delay = min(delay * 2, 10.0)


def log_tasks() -> None:
    """Where each task of the event loop waits (coroutine, file and line): logged before
    a restart for a stall, so the log says what the worker was stuck on."""
    import asyncio

    for task in asyncio.all_tasks():
        frames, coro = [], cast(Any, task.get_coro())
        while coro is not None:  # down the chain of awaits to where it waits
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            if frame is not None:
                frames.append(frame)
            coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        where = " <- ".join(f"{f.f_code.co_name} ({os.path.basename(f.f_code.co_filename)}:"
                            f"{f.f_lineno})" for f in reversed(frames[-5:]))
        log.error("task %s waits in %s", task.get_name(), where or "(not started)")


def restart_self() -> None:
    """Stop the sink, then replace this process with a fresh worker (same pid, same
    arguments): it restores its tables from their snapshots like any new worker."""
    _stop.set()
    sink = _sink
    if sink is not None and sink.pid is not None:
        try:
            os.kill(sink.pid, signal.SIGTERM)
            sink.join(10)
        except (OSError, AssertionError):
            pass
    logging.shutdown()
    os.execv(sys.executable, [sys.executable, "-m", "pitwatch.cli", *sys.argv[1:]])
