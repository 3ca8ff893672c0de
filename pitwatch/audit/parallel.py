"""`pitwatch audit --jobs N`: the audit of files across processes, with the same output,
store and exit status as one process.

Sharding. Every worker reads all the input and audits only its own tables, shared by
their number of records among the input's first 10,000 (`_Owners`). Every worker sees
the same input, so each finds the same owners on its own; a table's events stay in one
process, in input order. Of an Avro file, a worker decodes only its own tables' records:
one walk in C (`events/native.py`'s `pick`) finds where each record of a block ends and
its table, and builds only the worker's own, and a block it refuses is decoded whole, as
one process decodes it. JSON Lines are parsed whole (orjson) for their table.

Merging. Everything a worker finds (violations, the first round of each game, engine
errors, rejected records, events the record refused) is tagged with the input record it
was found at (its number in the input, or, for what the end of the input closes, past
the last record in the order the tables first appeared) and, within it, in the order
found. The rounds themselves a worker adds up, and sends the totals when it is done. One
process meets the records in that order, so merging the workers' streams by tag gives
exactly one process's order, and the report, the printed violations, the rejects file
and the exit status follow byte for byte. The merge goes on as the workers go (each says
how far it has read), so what is printed streams and memory does not grow with the
input.

The store. The main process owns the embedded store: a worker asks it the store queries
that continue a table's history (`store/history.py`, `store/order.py`) and hands it
each batch as `store/process.py` hands one to a store process (its events as their Avro
bytes and positions); the main process builds their rows, stores them, and merges the
replaced rows at the end, as one process does. A worker stores its tables' engine states
after their events and closes their books (`--final`); the main process then closes
those of the store's other tables and reads the rounds left open (`run.audit_events`
with no events), after every worker's items, where one process closes them too. Its
allocator keeps freed pages a second, as a store process's does.
"""

from __future__ import annotations

import heapq
import multiprocessing
import os
import pickle
import resource
import sys
import traceback
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkContext, ForkServerContext
from pathlib import Path
from typing import Any

import orjson

from ..engine.auditor import RoundSummary
from ..engine.errors import EngineError
from ..engine.violation import Violation
from ..events.avro import (
    ContainerBlock,
    DecodeError,
    read_container_blocks,
)
from ..events.files import AVRO_SUFFIXES, Rejected, expand
from ..events.jsonl import InvalidEvent, from_json, loads
from ..events.keys import KeyRegistry
from ..events.model import Event
from ..events.order import in_record_order
from ..store.base import Params, StoreError
from ..store.embedded import KEEPING_JEMALLOC_CONF, EmbeddedStore
from ..store.process import Handing, Receiver
from .run import AuditReport, audit_events, game_of

#: Tags past every input record: what the end of the input closes, by table order.
_END = 1 << 62
#: Records a worker reads between two reports to the main process.
_CHUNK = 4000
#: Records read first to share the tables by their share of the input.
_PLAN = 10_000

Item = tuple[int, int, str, Any]  # (record tag, order within it, kind, payload)


def default_jobs() -> int:
    """The machine's cores (the ones this process may run on)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# --- the worker ---------------------------------------------------------------------


class _Owners:
    """Which worker audits a table. Tables seen in the first records of the input
    (`plan`) are shared by their number of records there, the busiest first, each to
    the worker with the fewest records so far (ties: the lower worker); a table first
    seen later goes to the least loaded worker then. Every worker plans from the same
    records, so all find the same owners. `rank` is the order of first sight."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.rank: dict[str, int] = {}
        self.owner: dict[str, int] = {}
        self.load = [0] * jobs
        self.typical = 1

    def plan(self, counts: dict[str, int]) -> None:
        """Share the tables of `counts` (records each, in order of first sight)."""
        order = sorted(enumerate(counts.items()), key=lambda x: (-x[1][1], x[0]))
        for _, (table, n) in order:
            w = self.load.index(min(self.load))
            self.owner[table] = w
            self.load[w] += n
        if counts:
            self.typical = max(1, sum(counts.values()) // len(counts))

    def of(self, table_id: object) -> int:
        """Owner of the table; a record without a readable table goes to worker 0."""
        if not isinstance(table_id, str):
            return 0
        if table_id not in self.rank:
            self.rank[table_id] = len(self.rank)
            w = self.owner.get(table_id)
            if w is None:
                w = self.owner[table_id] = self.load.index(min(self.load))
                self.load[w] += self.typical
            return w
        return self.owner[table_id]


def first_tables(files: Sequence[Path], records: int) -> dict[str, int]:
    """Records per table among the input's first `records` (in order of first sight)."""
    counts: dict[str, int] = {}
    seen = 0
    for path in files:
        with open(path, "rb") as f:
            try:
                if path.suffix in AVRO_SUFFIXES:
                    ids: Iterator[object] = (t for block in read_container_blocks(f)
                                             for t in _table_ids(block))
                else:
                    ids = (_table_of(line) for line in f if line.strip())
                for t in ids:
                    if isinstance(t, str):
                        counts[t] = counts.get(t, 0) + 1
                    seen += 1
                    if seen >= records:
                        return counts
            except Exception:  # a damaged file: plan on what was read
                pass
    return counts


def _table_ids(block: ContainerBlock) -> Iterable[object]:
    """The table_id of each record of an Avro block: framed in C, not decoded, where the
    framer takes the block; else from fastavro's records (which raise where the block
    is damaged, after the records before it)."""
    framed = block.frame()
    if framed is not None:
        return framed[1]
    return (d.get("table_id") for d, _ in block.records())


def _table_of(line: bytes) -> object:
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return d.get("table_id") if isinstance(d, dict) else None


class _Shard:
    """One worker's view of the input: its own tables' events, each with its record
    number in `self.at` while it is audited; rejects of its own records as items."""

    def __init__(self, files: Sequence[Path], k: int, jobs: int,
                 emit: Callable[[int, str, Any], None], report: Callable[[int], None]) -> None:
        self.files, self.k, self.owners = files, k, _Owners(jobs)
        self.owners.plan(first_tables(files, _PLAN))
        self.emit, self.report = emit, report
        self.at = 0
        self.reported = 0  # the last record reported judged
        #: whether each table seen (by its table_id as framed) is this worker's
        self.ours: dict[str | None, bool] = {}

    def _reject(self, r: Rejected) -> None:
        self.emit(self.at, "reject", r)

    def events(self) -> Iterator[Event]:
        for path in self.files:
            with open(path, "rb") as f:
                if path.suffix in AVRO_SUFFIXES:
                    yield from self._avro(f, str(path))
                else:
                    yield from self._jsonl(f, str(path))
        self.at = _END

    def _avro(self, f: Any, name: str) -> Iterator[Event]:
        n = 0  # records of the file read
        try:
            for block in read_container_blocks(f):
                if self.at - self.reported >= _CHUNK:
                    self.report(self.at)  # every record before this block is judged
                    self.reported = self.at
                first, at = n, self.at
                for i, rec in self._mine(block):
                    n, self.at = first + i + 1, at + i + 1
                    if rec is None:
                        continue
                    try:
                        ev = block.judged(rec)
                    except DecodeError as e:
                        if e.event is not None:  # the record's, refused: in its place
                            yield e.event
                            continue
                        self._reject(Rejected(name, n, f"record {n}: {e}", block.shown(rec)))
                        continue
                    except KeyError as e:
                        self._reject(Rejected(name, n, f"record {n}: {e}", block.shown(rec)))
                        continue
                    yield ev
                n, self.at = first + block.count, at + block.count
        except Exception as e:  # a corrupt block: the rest of the file cannot be framed
            self.at += 1
            if self.k == 0:
                self._reject(Rejected(name, n + 1,
                                      f"corrupt Avro container after record {n}: {e}", ""))

    def _mine(self, block: ContainerBlock) -> Iterator[tuple[int, Any]]:
        """This worker's records of the block, by their index in it, as
        `ContainerBlock.read` gives them. Picked in C (`events/native.py`), only they are
        built. A block the walk refuses is read whole, as one process reads it, errors
        and all, and each of its records is given (None when it is another's), so that
        an error is met after the record it follows."""
        k, owner = self.k, self.owners.of
        # a table first met is ranked by `owner` then, in the order met, as it is below
        picked = block.pick(self.ours, lambda t: owner(t) == k)
        if picked is not None:
            return zip(*picked, strict=True)
        return ((i, rec if owner(rec[0].get("table_id") if isinstance(rec, tuple)
                                 else rec.table_id) == k else None)
                for i, rec in enumerate(block.read()))

    def _jsonl(self, f: Any, name: str) -> Iterator[Event]:
        k, owner = self.k, self.owners.of
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            self.at += 1
            if self.at % _CHUNK == 0:
                self.report(self.at - 1)
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError:
                d = None
            if owner(d.get("table_id") if isinstance(d, dict) else None) != k:
                continue
            try:
                yield loads(line) if d is None else from_json(d)
            except InvalidEvent as e:
                if e.event is not None:  # the record's, refused: in its place
                    yield e.event
                    continue
                self._reject(Rejected(name, lineno, str(e),
                                      line.decode("utf-8", "replace").rstrip("\n")))


class _StoreProxy(Handing):
    """The store as a worker sees it: queries asked of the main process, batches sent to
    it as `Handing` sends them (the main process's `Receiver` stores them); the merge of
    replaced rows is the main process's."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def _send(self, msg: tuple[Any, ...]) -> None:
        self.conn.send(msg)

    def setup(self) -> None:
        pass

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        self.conn.send(("query", sql, None if params is None else dict(params)))
        ok, answer = self.conn.recv()
        if not ok:
            raise answer
        return answer  # type: ignore[no-any-return]

    def dedupe(self, events_of: Collection[str] | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def _worker(conn: Connection, files: list[Path], k: int, jobs: int,
            stored: bool, keys: dict[str, Any] | None = None, finish: bool = True) -> None:
    """Audit worker k's tables of `files`, reporting to the main process on `conn`
    (with the key registry's JSON, when signatures are verified); with `finish`, the
    end of the input closes its tables' books (the main process closes the others')."""
    items: list[Item] = []
    order = 0
    counted = sent = 0
    shard: _Shard

    def emit(at: int, kind: str, payload: Any) -> None:
        nonlocal order
        if at >= _END and kind not in ("reject", "refused"):  # closed by the end: table order
            table_id = payload[1] if kind == "game" else payload.table_id
            at = _END + shard.owners.rank[table_id]
        items.append((at, order, kind, payload))
        order += 1

    def report(upto: int) -> None:
        nonlocal items, sent
        conn.send(("items", items, upto, counted - sent))
        sent, items = counted, []

    def counting(evs: Iterator[Event]) -> Iterator[Event]:
        nonlocal counted
        for ev in evs:
            counted += 1
            yield ev

    def on_round(s: RoundSummary) -> None:
        # the worker's report adds up its rounds; the main process needs only where each
        # game's first round was, for the order of the report's games
        game = game_of(s)
        if rep.games[game] == 1:
            emit(shard.at, "game", (game, s.table_id))

    rep = AuditReport()
    try:
        shard = _Shard(files, k, jobs, emit, report)
        store = _StoreProxy(conn) if stored else None
        audit_events(counting(shard.events()), store=store, report=rep,
                     keep_violations=False,
                     keys=None if keys is None else KeyRegistry.from_json(keys),
                     on_violation=lambda v: emit(shard.at, "violation", v),
                     on_known=lambda v: emit(shard.at, "known", v),
                     finish=finish, books=False,
                     on_round=on_round,
                     on_engine_error=lambda e: emit(shard.at, "engine_error", e),
                     on_refused=lambda r: emit(shard.at, "refused", r))
        report(_END * 2)
        use = resource.getrusage(resource.RUSAGE_SELF)
        conn.send(("done", rep.events, sorted(rep.tables), use.ru_utime + use.ru_stime,
                   rep.rounds_only(), rep.stored_again))
    except BaseException as e:  # handed to the main process, which raises it there
        try:
            pickle.dumps(e)
            err: BaseException = e
        except Exception:
            err = RuntimeError(f"audit worker {k}: {e!r}")
        conn.send(("error", err, traceback.format_exc()))
    finally:
        conn.close()


# --- the main process ---------------------------------------------------------------


class _Merge:
    """The workers' tagged streams, merged in tag order as far as every worker has read."""

    def __init__(self, jobs: int) -> None:
        self.heap: list[tuple[int, int, int, str, Any]] = []
        self.upto = [0] * jobs

    def add(self, w: int, items: list[Item], upto: int) -> None:
        for at, order, kind, payload in items:
            heapq.heappush(self.heap, (at, order, w, kind, payload))
        self.upto[w] = upto

    def ready(self) -> Iterator[tuple[str, Any]]:
        """Items no worker can still precede: tagged at or before every worker's mark
        (a tag belongs to one worker, so ties do not arise between workers)."""
        low = min(self.upto)
        heap = self.heap
        while heap and heap[0][0] <= low:
            _, _, _, kind, payload = heapq.heappop(heap)
            yield kind, payload


def audit_parallel(
    paths: Sequence[str | Path],
    jobs: int,
    *,
    data: Path | None = None,
    on_violation: Callable[[Violation], None] | None = None,
    on_reject: Callable[[Rejected], None] | None = None,
    progress: bool = False,
    keep_violations: bool = True,
    keys: KeyRegistry | None = None,
    on_known: Callable[[Violation], None] | None = None,
    finish: bool = True,
    on_refused: Callable[[Rejected], None] | None = None,
) -> AuditReport:
    """`audit_paths` over `jobs` processes; into the embedded store in `data` (None:
    judge only). The report, the order of every callback and the store's rows are
    those of one process: the workers close their own tables' books (`finish`), then
    this process the store's other tables' (`audit_events` with no events)."""
    files = in_record_order(expand(paths))  # refused here, before any worker starts
    rep = AuditReport(files=len(files))
    rep.signing_devices = None if keys is None else len(keys.devices)
    registry = None if keys is None else keys.to_json()
    ctx = _context()
    store: EmbeddedStore | None = None
    conns: list[Connection] = []
    procs = []
    try:
        for k in range(jobs):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=_worker,
                            args=(theirs, files, k, jobs, data is not None, registry,
                                  finish),
                            name=f"pitwatch-audit-{k}", daemon=True)
            p.start()
            theirs.close()
            conns.append(mine)
            procs.append(p)
        if data is not None:  # opened while the workers start (0.4 s each): they wait for it
            store = EmbeddedStore(data, KEEPING_JEMALLOC_CONF)  # its work is the store's
            store.setup()
        _serve(conns, store, rep, on_violation, on_known, on_reject, keep_violations,
               _bar(files) if progress else None, on_refused)
        for p in procs:
            p.join()
        if store is not None:
            audit_events((), store=store, report=rep, keys=keys, finish=finish,
                         on_violation=on_violation, on_known=on_known,
                         keep_violations=keep_violations)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        if store is not None:
            store.close()
    return rep


def _context() -> ForkContext | ForkServerContext:
    """How the workers start: forked where this process runs one thread, so they begin
    with every module it has loaded (0.2-0.3 s sooner); else from a fork server, as a
    process that runs threads (chDB's, a caller's) cannot be forked safely."""
    if _threads() == 1:
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


def _threads() -> int:
    """This process's threads, its native ones too (0: unknown)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _bar(files: Sequence[Path]) -> Any:
    if sum(f.stat().st_size for f in files) <= 5_000_000:
        return None
    from tqdm import tqdm

    return tqdm(unit=" events", unit_scale=True, file=sys.stderr, desc="audit",
                mininterval=0.5)


def _serve(conns: list[Connection], store: EmbeddedStore | None, rep: AuditReport,
           on_violation: Callable[[Violation], None] | None,
           on_known: Callable[[Violation], None] | None,
           on_reject: Callable[[Rejected], None] | None, keep_violations: bool,
           bar: Any, on_refused: Callable[[Rejected], None] | None = None) -> None:
    """Answer the workers until each is done, handing on what they found in order."""
    merge = _Merge(len(conns))
    receiver = Receiver(store) if store is not None else None
    index = {id(c): w for w, c in enumerate(conns)}
    live = list(conns)
    tables: set[str] = set()
    rounds: list[AuditReport] = []  # added once every game's first round is delivered

    def deliver() -> None:
        for kind, x in merge.ready():
            if kind in ("violation", "known"):
                v: Violation = x
                known = kind == "known"
                rep.add_violation(v, known=known)
                if keep_violations:
                    rep.violations.append(v)
                    if known:
                        rep.known_ids.add(v.violation_id)
                if known and on_known is not None:
                    on_known(v)
                elif on_violation is not None:
                    on_violation(v)
            elif kind == "game":  # a game's first round: its place in the report's order
                rep.games.setdefault(x[0], 0)
            elif kind == "engine_error":
                e: EngineError = x
                rep.engine_errors.append(e)
            elif kind == "refused":  # by the record, or the store's first copy
                rep.refused += 1
                if on_refused is not None:
                    on_refused(x)
            else:
                r: Rejected = x
                rep.rejected += 1
                if on_reject is not None:
                    on_reject(r)

    try:
        while live:
            for c in wait(live):
                conn: Connection = c  # type: ignore[assignment]
                w = index[id(conn)]
                try:
                    msg = conn.recv()
                except EOFError:
                    raise RuntimeError(f"audit worker {w} stopped without a word "
                                       "(killed? out of memory?)") from None
                what = msg[0]
                if what == "items":
                    merge.add(w, msg[1], msg[2])
                    if bar is not None:
                        bar.update(msg[3])
                    deliver()
                elif what == "query":
                    try:
                        conn.send((True, store.query(msg[1], msg[2])))  # type: ignore[union-attr]
                    except Exception as e:
                        conn.send((False, e))
                elif what in Receiver.KINDS:
                    receiver.take(what, msg[1:])  # type: ignore[union-attr]
                elif what == "done":
                    rep.events += msg[1]
                    tables.update(msg[2])
                    rep.worker_cpu.append(msg[3])
                    rounds.append(msg[4])
                    rep.stored_again.update(msg[5])
                    live.remove(conn)
                else:  # "error": the worker's exception, raised here
                    if not isinstance(msg[1], ValueError | OSError | StoreError):
                        print(f"pitwatch audit: worker {w} failed:\n{msg[2]}", file=sys.stderr)
                    raise msg[1]
        deliver()
    finally:
        if bar is not None:
            bar.close()
    rep.tables.update(tables)
    for r in rounds:
        rep.add_rounds(r)

