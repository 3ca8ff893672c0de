"""The embedded store in a process of its own: `StoreProcess`, what `pitwatch audit
--jobs 1` stores through.

In one process, the audit's thread sets the time of an audit into chDB: besides judging,
it writes every event's row (in C) and stages it, and chDB's inserts share its core.
Here the audit's process hands the store process each batch of events as it read
them, and the store process does the rest on the other core (its threads keep off one
core, where the audit's thread runs alone: `_leave_a_core`). An event decoded from this
schema's Avro bytes goes as those bytes and its position, and its row is written there
in C straight from the bytes, with no event built again (`native.write_rows`: a third of
the CPU of building each event and writing its row), so the audit's process does no row
work for it (the bytes and the position are kept in C: `native.EventBytes`). Any other
event (JSON Lines, an older schema's bytes) goes as its row, written in C in the audit's
process (`arrow.event_rows`). Round and violation rows go as their columns. The same
hand-over (`Handing`, and `Receiver` in the process that owns the store) carries the
batches of `audit --jobs N`'s workers to its main process.

Nothing is lost on the way: the store process takes the batches in the order handed
over and stores them as the embedded store does (`embedded.py`). A batch it cannot store
is a StoreError raised here at the next hand-over or statement (and at `close`), and what
was handed over after it is not stored; a store process that dies is a StoreError that
says so. The store process reads up to `INBOX` messages ahead of its work and the pipe
holds `SEND_BUFFER` bytes, so the audit runs at most a few megabytes ahead; a slower
store then holds it back. Dropped unclosed, the store process still stores what it was
given, then exits.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.util
import os
import queue
import resource
import socket
import threading
from collections.abc import Collection, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

from ..events.avro import _current_program, decode
from ..events.model import Event
from .arrow import event_rows
from .base import EventsInsert, Params, StoreError, to_columns
from .batch import BatchWriter
from .embedded import STORE_PROCESS_JEMALLOC_CONF, EmbeddedStore, holds_store
from .native import EventBytes, EventBytesBatch, EventRows, event_bytes, write_rows

#: Messages the store process reads ahead of its work (a thread of its own, `_drain`),
#: and bytes the audit's end of the pipe may hold in flight: a batch of events is about
#: 300 KB. Read ahead, with chDB's inserter holding up to `embedded.WAITING_BATCHES`
#: staged files waiting, the store process goes on taking batches while an insert runs,
#: so the audit's sends seldom wait on its pipe.
INBOX = 8
SEND_BUFFER = 4 << 20
#: Blocks of this many bytes and more glibc's malloc maps on their own in the store
#: process, and unmaps when they are freed, and the free top of a heap past it goes
#: back too. By default glibc raises both to the largest block freed (a batch's bytes,
#: its columns: a few hundred KB), and such blocks then stay in its heaps between
#: batches, raising the store process's peak.
MALLOC_THRESHOLD = 128 << 10
#: Arrow's allocator in the store process: glibc's malloc, with the thresholds above,
#: which hands a batch's buffers back as they are freed. pyarrow's own (mimalloc) keeps
#: them, a few MB more at the store process's peak. A user's own setting wins.
ARROW_POOL = "system"


def _rebuilt(data: bytes, lengths: bytes, count: int) -> list[Event]:
    """The events of this schema's Avro bytes joined: built in C, or one by one with
    fastavro where C is not built or refuses them."""
    program = _current_program()
    built = None if program is None else program.build(data, count)
    if built is not None:
        return built
    out, at = [], 0
    for n in memoryview(lengths).cast("I"):
        out.append(decode(data[at:at + n]))
        at += n
    return out


def _serve(conn: Connection, path: str) -> None:
    """The store process: open the store in `path`, then take what `StoreProcess` sends
    until it closes the store or goes away. A batch that fails is reported once, and
    nothing handed over after it is stored; every later call answers with it. (chDB's
    allocator hands freed pages back at once here, and keeps no thread caches:
    `embedded.STORE_PROCESS_JEMALLOC_CONF`.)"""
    _leave_a_core()
    _hand_back_freed_blocks()
    # read ahead while chDB opens too: an audit into a new store does not wait for it
    inbox: queue.Queue[tuple[Any, ...] | Exception | None] = queue.Queue(INBOX)
    threading.Thread(target=_drain, args=(conn, inbox), name="pitwatch-store-inbox",
                     daemon=True).start()
    try:
        store = EmbeddedStore(path, STORE_PROCESS_JEMALLOC_CONF)
    except Exception as e:  # the store is locked, or chDB cannot open it: said there
        _tell(conn, ("answer", False, _sendable(e)))
        return
    _tell(conn, ("answer", True, None))
    receiver = Receiver(store)
    failed: Exception | None = None
    try:
        while True:
            msg = inbox.get()
            if msg is None:  # the audit's process went away: store what it gave
                break
            if isinstance(msg, Exception):  # a message it could not read: the end
                _tell(conn, ("failed", _sendable(msg)))
                break
            kind, *args = msg
            if kind == "call":
                name, call_args = args
                if name == "close":
                    break
                try:
                    if failed is not None:
                        raise failed
                    answer = getattr(store, name)(*call_args)
                except Exception as e:  # raised in the audit's process
                    _tell(conn, ("answer", False, _sendable(e)))
                else:
                    _tell(conn, ("answer", True, answer))
            elif failed is None:  # after a failure, a gap: nothing more is stored
                try:
                    receiver.take(kind, args)
                except Exception as e:  # reported at the audit's next hand-over
                    failed = _sendable(e)
                    _tell(conn, ("failed", failed))
    finally:
        try:
            store.close()
        except Exception as e:  # a background insert that failed
            closing: tuple[Any, ...] = ("answer", False, _sendable(e))
        else:
            closing = ("answer", True, _usage())
        _tell(conn, closing)


def _tell(conn: Connection, msg: tuple[Any, ...]) -> None:
    """Answer the audit's process; gone, it hears nothing, and what it gave is stored
    all the same."""
    with contextlib.suppress(OSError):
        conn.send(msg)


def store_cpus(allowed: set[int]) -> set[int] | None:
    """The CPUs the store process runs on, of those it may use: all but the first, which
    is left to the audit's thread; None (as they are) where there is only one."""
    return allowed - {min(allowed)} if len(allowed) > 1 else None


def _leave_a_core() -> None:
    """Keep this process's threads off one of its CPUs (`store_cpus`), before chDB loads:
    its threads, created after, inherit it. Otherwise the scheduler wakes the store's
    threads (the pipe's reader, chDB's inserter and merges) on the core the audit is
    running on, and the audit's thread both waits and finds its caches cold (a core kept
    busy by another program does not slow it). Kept off a core, an audit into chDB takes
    about 1.3x `--no-store`, where it takes about 1.7x otherwise (docs/performance.md,
    "Into chDB"). The audit's process is left as it is: two audits at once still spread
    over the cores."""
    with contextlib.suppress(AttributeError, OSError):  # no affinity on this system
        cpus = store_cpus(os.sched_getaffinity(0))
        if cpus is not None:
            os.sched_setaffinity(0, cpus)


def _hand_back_freed_blocks() -> None:
    """glibc's malloc thresholds (`MALLOC_THRESHOLD`), where the C library has them, and
    Arrow's allocator (`ARROW_POOL`: read when pyarrow first allocates, later here)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_POOL)
    with contextlib.suppress(AttributeError, OSError):  # not glibc
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-1, MALLOC_THRESHOLD)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, MALLOC_THRESHOLD)  # M_MMAP_THRESHOLD


def _drain(conn: Connection,
           inbox: queue.Queue[tuple[Any, ...] | Exception | None]) -> None:
    """Read what the audit's process hands over into `inbox` as it comes, while the
    store works on what came before (None: the audit's process went away). A message
    that cannot be read goes as its error, and ends the store process's work: the store
    keeps what came before it, and the audit's process is told."""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            inbox.put(None)
            return
        except Exception as e:
            inbox.put(e)
            return
        inbox.put(msg)
        if msg[0] == "call" and msg[1] == "close":
            return


def _widen(conn: Connection) -> None:
    """Let the audit's end of the pipe hold `SEND_BUFFER` bytes in flight (the kernel
    caps it at net.core.wmem_max), so that a send returns once its bytes are copied;
    where the system refuses, the pipe stays as it is."""
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(conn.fileno())) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)


def _sendable(e: Exception) -> Exception:
    """`e` as the audit's process is to raise it: a StoreError as it is, anything else
    a StoreError that says what it was."""
    if isinstance(e, StoreError):
        return e
    return StoreError(f"chDB: the store process failed: {type(e).__name__}: {e}")


def _usage() -> tuple[float, int]:
    """This process's CPU seconds and peak RSS (KiB: VmHWM, which unlike ru_maxrss does
    not start from the forking process's)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    try:
        with open("/proc/self/status") as f:
            peak = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM"))
    except (OSError, StopIteration):
        peak = use.ru_maxrss
    return use.ru_utime + use.ru_stime, peak


class Receiver:
    """What the process that owns a store does with the batches another hands over
    (`Handing`): the store process here, and the main process of `audit --jobs N`. A
    batch of events has its rows written in C from its Avro bytes (`_add_events`) and
    staged by the store; the rows the other process wrote, and the other tables'
    columns, are staged as they came."""

    KINDS = frozenset({"events", "event_objects", "columns"})

    def __init__(self, store: EmbeddedStore) -> None:
        self.store = store
        self.writer = BatchWriter(store, 1 << 62)  # flushed a batch at a time, as given

    def take(self, kind: str, args: Sequence[Any]) -> None:
        """Store one batch as `Handing` sent it: (kind, *args)."""
        if kind == "events":
            data, lengths, positions, count, rows, n_rows = args[0]
            self._add_events(data, lengths, positions, count)
            self.writer.flush_table("events")
            if rows is not None:
                self.store.insert_event_rows(rows, n_rows)
        elif kind == "columns":
            self.store.insert_columns(*args)
        else:  # "event_objects": events C writes no row of, as themselves
            self.store.insert_events(*args)

    def _add_events(self, data: bytes, lengths: bytes, positions: bytes, count: int) -> None:
        """The rows of a batch of this schema's Avro bytes, written in C straight from
        them (`native.write_rows`: no event built); what C does not write, and every
        event where C is not built or refuses the bytes, built and added one by one."""
        # the embedded store's row writer: an EventRows (`EmbeddedStore.row_writer`)
        program, rows = _current_program(), cast("EventRows | None", self.writer.rows)
        written = (None if program is None or rows is None
                   else write_rows(program, rows, data, lengths, positions))
        add = self.writer.add_event
        if written is not None:
            for ev, pos in written:
                add(ev, pos)
            return
        for ev, pos in zip(_rebuilt(data, lengths, count), memoryview(positions).cast("Q"),
                           strict=True):
            add(ev, pos)


class Handing:
    """A store as a process that does not own it sees it: every batch sent, as the
    `Receiver` in the owner takes it, and not waited for (`_send`)."""

    #: Rows a batch (`BatchWriter`): the embedded store's.
    batch_rows = 2_000

    def _send(self, msg: tuple[Any, ...]) -> None:
        raise NotImplementedError

    def events_insert(self) -> EventsInsert:
        return self

    def row_writer(self) -> EventBytes:
        """The events of a batch as the owner takes them (`BatchWriter`): as their Avro
        bytes where they were decoded from this schema's, else as their rows."""
        return event_bytes(event_rows())

    def insert_event_rows(self, batch: EventBytesBatch, rows: int) -> None:
        if rows:
            self._send(("events", batch))

    def insert_events(self, events: list[Event], positions: list[int]) -> None:
        if events:
            self._send(("event_objects", events, positions))

    def insert_columns(self, table: str, cols: Sequence[Sequence[Any]]) -> None:
        if cols and len(cols[0]):
            self._send(("columns", table, cols))

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.insert_columns(table, to_columns(table, rows))

    def sync(self) -> None:
        """Nothing to wait for here: what is sent is the owner's to store."""


class StoreProcess(Handing):
    """The embedded store in `path`, run by a process of its own (module doc). A Store:
    its statements are answered by the store process; its inserts return at once, and so
    do `setup` and, over a new store, the opening (the store process reads ahead while
    chDB opens, so an audit does not wait for it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        ctx = multiprocessing.get_context("forkserver")
        self._conn, theirs = ctx.Pipe()
        _widen(self._conn)
        self._proc = ctx.Process(target=_serve, args=(theirs, str(self.path)),
                                 name="pitwatch-store")
        self._proc.start()
        theirs.close()
        self._failed: Exception | None = None
        self._reported = False
        #: answers owed to calls not waited for (the opening of a new store, `setup`),
        #: taken in order before any other
        self._owed = 0
        #: the store process's CPU seconds and peak RSS in KiB, once closed (for benches)
        self.usage: tuple[float, int] | None = None
        self._closed = False
        # dropped unclosed: the store process stores what it has, then exits (before
        # multiprocessing waits for it at exit)
        multiprocessing.util.Finalize(self, self._conn.close, exitpriority=10)
        #: nothing stored: a new store, given nothing but `setup` yet. An audit into it
        #: starts while chDB opens it, and hears why it could not at its next
        #: hand-over or call.
        self.empty = not holds_store(self.path)
        if self.empty:
            self._owed = 1
            return
        try:
            self._answer()  # opened, or why not (another process holds the store, ...)
        except BaseException:
            self._closed = True
            self._conn.close()
            self._proc.join()
            raise

    # --- statements: answered ------------------------------------------------------

    def setup(self) -> None:
        """Make the tables; not waited for (a failure is raised at the next hand-over or
        call), as nothing can be stored before it in the store process anyway."""
        self._send(("call", "setup", ()))
        self._owed += 1

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        return self._call("query", sql, None if params is None else dict(params))  # type: ignore[no-any-return]

    def sync(self) -> None:
        self._call("sync")

    def dedupe(self, events_of: Collection[str] | None = None) -> None:
        self._call("dedupe", None if events_of is None else sorted(events_of))

    def read_only(self) -> None:
        self._call("read_only")

    def close(self) -> None:
        """Wait until the store process has stored everything handed over and closed
        the store; a failure nobody was told of yet is raised here."""
        if self._closed:
            return
        self._closed = True
        told = self._reported  # of a failure: it is not raised again, nor its aftermath
        try:
            self._conn.send(("call", "close", ()))
            self.usage = self._answer(raise_failed=not told)
        except OSError as e:
            if not told:
                raise self._gone() from e
        except StoreError:
            if not told:
                raise
        finally:
            self._conn.close()
            self._proc.join()

    # --- the pipe ------------------------------------------------------------------

    def _send(self, msg: tuple[Any, ...]) -> None:
        self._check()
        if msg != ("call", "setup", ()):
            self.empty = False
        try:
            self._conn.send(msg)
        except OSError as e:
            raise self._gone() from e

    def _call(self, name: str, *args: Any) -> Any:
        self._send(("call", name, args))
        return self._answer()

    def _answer(self, raise_failed: bool = True) -> Any:
        """The store process's answer to the last call; a batch it reported failed
        before it is raised instead."""
        while True:
            msg = self._recv()
            if self._took_unasked(msg):
                continue
            _, ok, value = msg
            if self._failed is not None and raise_failed:
                self._reported = True
                raise self._failed
            if not ok:
                raise value
            return value

    def _check(self) -> None:
        """Raise a failure the store process reported (at every call after it too)."""
        while self._failed is None and self._conn.poll():
            self._took_unasked(self._recv())
        if self._failed is not None:
            self._reported = True
            raise self._failed

    def _took_unasked(self, msg: tuple[Any, ...]) -> bool:
        """Take `msg` when it is a failure reported or an answer owed (`_owed`): a call
        not waited for that failed is a failure reported."""
        if msg[0] == "failed":
            self._failed = msg[1]
        elif self._owed:
            self._owed -= 1
            if not msg[1] and self._failed is None:
                self._failed = msg[2]
        else:
            return False
        return True

    def _recv(self) -> tuple[Any, ...]:
        try:
            return self._conn.recv()  # type: ignore[no-any-return]
        except (EOFError, OSError) as e:
            raise self._gone() from e

    def _gone(self) -> Exception:
        """Why the store process went away: what it said first, when nobody was told of
        it yet (it could not open the store, ...), else how it stopped."""
        with contextlib.suppress(EOFError, OSError):
            while self._failed is None and self._conn.poll():
                self._took_unasked(self._conn.recv())
        if self._failed is not None and not self._reported:
            self._reported = True
            return self._failed
        self._proc.join(1.0)
        code = self._proc.exitcode
        how = ("still running" if code is None else
               f"killed by signal {-code}{' (out of memory?)' * (code == -9)}" if code < 0
               else f"exit status {code}")
        return StoreError(f"chDB: the store process of {self.path} stopped ({how}): what "
                          "it had not stored is not in the store; audit the input again "
                          "to store it")
