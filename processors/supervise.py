"""Keeping the worker's processes alive: the sink process (started, and restarted when
it dies, by a thread of the worker) and the worker itself after it was frozen."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from .settings import Settings

log = logging.getLogger("pitwatch.worker")
_sink: Any = None  # the running sink process
_stop = threading.Event()  # set when the sink is to stay down
#: when this process started (monotonic): how long a worker ran before it restarts
_STARTED = time.monotonic()
#: restarts of the worker in a row, handed from one process to the next across `execv`
RESTARTS_ENV = "PITWATCH_RESTARTS_IN_A_ROW"
#: told what a restart of the worker says, as it begins (the web server's readiness)
_restart_listeners: list[Callable[[str], None]] = []


def on_restart(listener: Callable[[str], None]) -> None:
    """`listener` is told, as a restart of this worker begins, what it says."""
    _restart_listeners.append(listener)


class Backoff:
    """An exponential back-off with a cap and no jitter, so its schedule is known in
    advance: the n-th restart in a row (n from 0) waits min(base_s * 2**n, cap_s).
    A process that ran for `healthy_s` or more before it died was not in a crash loop:
    its restart is the first of a new row."""

    def __init__(self, base_s: float, cap_s: float, healthy_s: float) -> None:
        self.base_s = base_s
        self.cap_s = cap_s
        self.healthy_s = healthy_s

    def next(self, in_a_row: int, ran_s: float) -> tuple[int, float]:
        """After `in_a_row` restarts in a row, a process that ran `ran_s` seconds died:
        the number of this restart in its row and the seconds to wait before it."""
        n = 0 if ran_s >= self.healthy_s else in_a_row
        return n, min(self.base_s * 2.0 ** min(n, 64), self.cap_s)


#: the sink process's restarts: 0.5 s, 1 s, 2 s ... 10 s
SINK_BACKOFF = Backoff(0.5, 10.0, 60.0)
#: the worker's restarts of itself: 1 s, 2 s, 4 s ... 60 s
WORKER_BACKOFF = Backoff(1.0, 60.0, 300.0)


def supervise_sink(settings: Settings, loglevel: str, stop: threading.Event) -> None:
    """Run the sink process; whenever it dies (a crash, SIGKILL, OOM), log it and start
    another after a short back-off. The sink stops by itself when the worker is gone."""
    import multiprocessing

    from .sink import sink_process

    global _sink
    ctx = multiprocessing.get_context("spawn")
    in_a_row = 0
    while not stop.is_set() and not _stop.is_set():
        _sink = ctx.Process(target=sink_process, args=(settings, loglevel), daemon=True,
                            name="pitwatch-sink")
        _sink.start()
        started = time.monotonic()
        log.warning("sink started (pid %s)", _sink.pid)
        _sink.join()
        if stop.is_set() or _stop.is_set():
            return
        n, delay = SINK_BACKOFF.next(in_a_row, time.monotonic() - started)
        in_a_row = n + 1
        log.error("sink (pid %s) exited with code %s; restarting it in %.1f s (restart %d "
                  "in a row)", _sink.pid, _sink.exitcode, delay, n + 1)
        if stop.wait(delay):
            return


def sink_alive() -> bool | None:
    """Whether the sink process runs (None: this worker started none)."""
    sink = _sink
    return None if sink is None else bool(sink.is_alive())


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


def restart_plan(env: Mapping[str, str], ran_s: float) -> tuple[int, float]:
    """This restart's number in its row (from 0) and its wait (`WORKER_BACKOFF`), from
    the count the previous process handed on in `RESTARTS_ENV` and how long this one
    ran."""
    try:
        in_a_row = max(int(env.get(RESTARTS_ENV, "0")), 0)
    except ValueError:
        in_a_row = 0
    return WORKER_BACKOFF.next(in_a_row, ran_s)


def restart_self(sleep: Callable[[float], None] = time.sleep) -> None:
    """Stop the sink, wait out the back-off (`WORKER_BACKOFF`: a worker that keeps
    failing as it starts does not spin), then replace this process with a fresh worker
    (same pid, same arguments): it restores its tables from their snapshots like any
    new worker. The wait blocks the event loop: nothing more is audited or committed;
    the web server's thread (processors/web.py) answers throughout."""
    n, delay = restart_plan(os.environ, time.monotonic() - _STARTED)
    log.error("restarting the worker in %.1f s (restart %d in a row; the waits double "
              "from %.0f s up to %.0f s, and start again after %.0f s of running)", delay,
              n + 1, WORKER_BACKOFF.base_s, WORKER_BACKOFF.cap_s, WORKER_BACKOFF.healthy_s)
    for listener in _restart_listeners:
        listener(f"the worker restarts after a back-off of {delay:.1f} s (restart {n + 1} "
                 "in a row)")
    _stop.set()
    sink = _sink
    if sink is not None and sink.pid is not None:
        try:
            os.kill(sink.pid, signal.SIGTERM)
            sink.join(10)
        except (OSError, AssertionError):
            pass
    sleep(delay)
    logging.shutdown()
    os.execve(sys.executable, [sys.executable, "-m", "pitwatch.cli", *sys.argv[1:]],
              {**os.environ, RESTARTS_ENV: str(n + 1)})
