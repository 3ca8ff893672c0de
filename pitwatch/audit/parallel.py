"""`pitwatch audit --jobs N`: the audit of files across processes, with the same output,
store and exit status as one process.

Sharding. One process, the reader, reads the input once and hands each record to the
worker of its table (`_Feed`); tables are shared by their number of records among the
input's first 10,000 (`_Owners`). A table's events stay in one process, in input order.
Of an Avro block, the reader only inflates it and frames it: the framer
(`events/native.py`, in C) finds where each record ends and its table without decoding
it, and `split` joins each worker's records' bytes, which that worker alone builds into
events. A block the framer refuses, the reader reads with fastavro as one process reads
it, up to its error, and hands on each record's bytes. JSON Lines are parsed by the
reader (orjson) for their table, and by the worker of that table. Each worker's pipe
holds at most a megabyte: the reader stays that close behind the slowest worker.

Merging. Everything a worker finds (violations, round summaries, engine errors, rejected
records) is tagged with the input record it was found at (its number in the input, or,
for what the end of the input closes, past the last record in the order the tables
first appeared) and, within it, in the order found. One process meets the records in
that order, so merging the workers' streams by tag gives exactly one process's order,
and the report, the printed violations, the rejects file and the exit status follow
byte for byte. The merge goes on as the workers go (each says how far it has read), so
what is printed streams and memory does not grow with the input.

The store. The main process owns the embedded store: a worker asks it the store queries
that continue a table's history (`store/history.py`, `store/order.py`) and hands it
each batch as an Arrow file it staged (`store/embedded.py`); the main process inserts
them and merges the replaced rows at the end, as one process does.
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import multiprocessing
import os
import pickle
import resource
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, cast

import orjson

from ..engine.auditor import RoundSummary
from ..engine.errors import EngineError
from ..engine.violation import Violation
from ..events.avro import (
    ContainerBlock,
    ContainerSchema,
    DecodeError,
    read_container_blocks,
)
from ..events.files import AVRO_SUFFIXES, Rejected, expand
from ..events.jsonl import InvalidEvent, loads
from ..events.keys import KeyRegistry
from ..events.model import Event
from ..events.native import split
from ..store.arrow import stage, stage_events
from ..store.base import Params, StoreError, to_columns
from ..store.embedded import EmbeddedStore
from .run import AuditReport, audit_events

#: Tags past every input record: what the end of the input closes, by table order.
_END = 1 << 62
#: Records a worker reads between two reports to the main process.
_CHUNK = 4000
#: Records read first to share the tables by their share of the input.
_PLAN = 10_000
#: JSON Lines the reader hands on at a time.
_LINES = 1000
#: The buffer of the pipe of a worker's records (Linux's default limit for a user).
_PIPE = 1 << 20

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


# --- the reader ---------------------------------------------------------------------


class _Feed:
    """The input read once, in the reader process, each record handed on to the worker
    of its table (`outs[k]`, a pipe). Every worker gets every message, its own records
    of it possibly none, so that each knows how far the input is read. Messages:

    - ("schema", file, writer schema): the Avro file whose records follow;
    - ("framed", at, n, indices, bytes, ends): a block's records at those indices (the
      framer's), their bytes joined and where each ends; record i of the block is the
      input's record at + i + 1 and the file's n + i + 1;
    - ("read", at, n, indices, [bytes]): the same of a block the framer refuses (or a
      file under another schema), read here as one process reads it, up to its error;
    - ("lines", at, file, [(tag, line number, line)]): JSON Lines;
    - ("reject", tag, Rejected): the rest of an Avro file unreadable (to worker 0);
    - ("end", ranks): the input is read; each table's order of first sight."""

    def __init__(self, files: Sequence[Path], outs: Sequence[Any]) -> None:
        self.files, self.outs = files, outs
        self.owners = _Owners(len(outs))
        self.owners.plan(first_tables(files, _PLAN))
        self.at = 0  # the input's records read
        #: each table's worker, by its table_id as framed
        self.owner: dict[str | None, int] = {}

    def run(self) -> None:
        for path in self.files:
            with open(path, "rb") as f:
                if path.suffix in AVRO_SUFFIXES:
                    self._avro(f, str(path))
                else:
                    self._jsonl(f, str(path))
        self._all(("end", self.owners.rank))

    def _all(self, msg: tuple[Any, ...]) -> None:
        for out in self.outs:
            out.send(msg)

    def _avro(self, f: Any, name: str) -> None:
        start = self.at  # the file's record n is the input's start + n
        schema = None
        try:
            for block in read_container_blocks(f):
                if block.schema is not schema:
                    schema = block.schema
                    self._all(("schema", name, schema.writer))
                framed = block.frame() if schema.buildable else None
                if framed is None:
                    self._read(block, self.at - start)
                else:
                    self._framed(block, self.at - start, *framed)
        except Exception as e:  # a corrupt block: the rest of the file cannot be framed
            n = self.at - start
            self.at += 1
            self.outs[0].send(("reject", self.at, Rejected(
                name, n + 1, f"corrupt Avro container after record {n}: {e}", "")))

    def _framed(self, block: ContainerBlock, n: int, ends: list[int],
                tables: list[str | None]) -> None:
        owner, of = self.owner, self.owners.of
        for t in tables:  # the tables first seen here, in order: `of` ranks them
            if t not in owner:
                owner[t] = of(t)
        parts = split(block.raw, ends, [owner[t] for t in tables], len(self.outs))
        for out, (mine, data, own_ends) in zip(self.outs, parts, strict=True):
            out.send(("framed", self.at, n, mine, data, own_ends))
        self.at += block.count

    def _read(self, block: ContainerBlock, n: int) -> None:
        """A block read by fastavro, as one process reads it: each record's bytes to its
        table's worker, those before an error included (the error is raised on)."""
        at, jobs = self.at, len(self.outs)
        mine: list[list[int]] = [[] for _ in range(jobs)]
        raws: list[list[bytes]] = [[] for _ in range(jobs)]
        try:
            for i, (d, raw) in enumerate(block.records()):
                k = self.owners.of(d.get("table_id"))
                mine[k].append(i)
                raws[k].append(raw)
                self.at = at + i + 1
        finally:
            for k, out in enumerate(self.outs):
                out.send(("read", at, n, mine[k], raws[k]))

    def _jsonl(self, f: Any, name: str) -> None:
        jobs, of = len(self.outs), self.owners.of
        lines: list[list[tuple[int, int, bytes]]] = [[] for _ in range(jobs)]
        at = self.at
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            self.at += 1
            lines[of(_table_of(line))].append((self.at, lineno, line))
            if self.at - at >= _LINES:
                self._lines(at, name, lines)
                at, lines = self.at, [[] for _ in range(jobs)]
        self._lines(at, name, lines)

    def _lines(self, at: int, name: str, lines: list[list[tuple[int, int, bytes]]]) -> None:
        for out, own in zip(self.outs, lines, strict=True):
            out.send(("lines", at, name, own))


def _reader(conn: Connection, outs: list[Connection], files: list[Path]) -> None:
    """Read the input for the workers (`_Feed`), and say so on `conn`."""
    try:
        with contextlib.suppress(BrokenPipeError):  # a worker stopped: it says why
            _Feed(files, outs).run()
        use = resource.getrusage(resource.RUSAGE_SELF)
        conn.send(("read", use.ru_utime + use.ru_stime))
    except BaseException as e:  # handed to the main process, which raises it there
        conn.send(("error", _picklable(e, "audit reader"), traceback.format_exc()))
    finally:
        for out in outs:
            out.close()
        conn.close()


def _picklable(e: BaseException, who: str) -> BaseException:
    try:
        pickle.dumps(e)
        return e
    except Exception:
        return RuntimeError(f"{who}: {e!r}")


# --- the worker ---------------------------------------------------------------------


class _ReaderGone(Exception):
    """The reader's pipe closed before the end of the input: the reader says why."""


class _Shard:
    """One worker's records, as the reader hands them on (`_Feed`): its own tables'
    events, each with its input record's tag in `self.at` while it is audited; rejects
    of its own records as items."""

    def __init__(self, recv: Callable[[], Any], emit: Callable[[int, str, Any], None],
                 report: Callable[[int], None]) -> None:
        self.recv, self.emit, self.report = recv, emit, report
        self.at = 0
        self.reported = 0  # the last record reported judged
        self.rank: dict[str, int] = {}  # each table's order of first sight, at the end
        self.name, self.schema = "", cast(ContainerSchema, None)

    def events(self) -> Iterator[Event]:
        while True:
            try:
                msg = self.recv()
            except EOFError:
                raise _ReaderGone from None
            what = msg[0]
            if what == "schema":
                self.name, self.schema = msg[1], ContainerSchema(msg[2])
                continue
            if what == "reject":
                self.emit(msg[1], "reject", msg[2])
                continue
            if what == "end":
                self.rank, self.at = msg[1], _END
                return
            if msg[1] - self.reported >= _CHUNK:
                self.report(msg[1])  # every record before the message is judged
                self.reported = msg[1]
            if what == "lines":
                yield from self._lines(msg[2], msg[3])
            else:
                at, n, mine, recs = msg[1:5]
                if what == "framed":
                    recs = self._built(recs, msg[5])
                yield from self._records(at, n, mine, recs)

    def _built(self, data: bytes, ends: list[int]) -> Sequence[Event | bytes]:
        """The records framed, built in C; else each record's bytes, for fastavro."""
        built = self.schema.build(data, len(ends))
        if built is not None:
            return built
        return [data[a:b] for a, b in zip([0, *ends], ends, strict=False)]

    def _records(self, at: int, n: int, mine: list[int],
                 recs: Sequence[Event | bytes]) -> Iterator[Event]:
        schema = self.schema
        for i, got in zip(mine, recs, strict=True):
            self.at, seen = at + i + 1, n + i + 1
            rec: Event | tuple[dict[str, Any], bytes]
            if isinstance(got, bytes):  # not built in C: fastavro reads it
                try:
                    rec = (schema.datum(got), got)
                except Exception as e:  # fastavro raises many kinds on bad bytes
                    self.emit(self.at, "reject", Rejected(
                        self.name, seen, f"record {seen}: not a record of the file's "
                        f"schema: {e}", ""))
                    continue
            else:
                rec = got
            try:
                ev = schema.judged(rec)
            except (DecodeError, KeyError) as e:
                self.emit(self.at, "reject", Rejected(
                    self.name, seen, f"record {seen}: {e}", schema.shown(rec)))
                continue
            yield ev

    def _lines(self, name: str, lines: list[tuple[int, int, bytes]]) -> Iterator[Event]:
        for self.at, lineno, line in lines:
            try:
                yield loads(line)
            except InvalidEvent as e:
                self.emit(self.at, "reject", Rejected(
                    name, lineno, str(e), line.decode("utf-8", "replace").rstrip("\n")))


class _StoreProxy:
    """The store as a worker sees it: queries asked of the main process, batches staged
    as Arrow files and handed over; the merge of replaced rows is the main process's."""

    def __init__(self, conn: Connection, staging: Path) -> None:
        self.conn, self.staging = conn, staging

    def setup(self) -> None:
        pass

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.insert_columns(table, to_columns(table, rows))

    def insert_columns(self, table: str, cols: Sequence[Sequence[Any]]) -> None:
        if cols and len(cols[0]):
            self.conn.send(("file", table, str(stage(self.staging, table, cols))))

    def insert_events(self, events: list[Event], positions: list[int]) -> None:
        if events:
            self.conn.send(("file", "events",
                            str(stage_events(self.staging, events, positions))))

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        self.conn.send(("query", sql, None if params is None else dict(params)))
        ok, answer = self.conn.recv()
        if not ok:
            raise answer
        return answer  # type: ignore[no-any-return]

    def dedupe(self) -> None:
        pass

    def close(self) -> None:
        pass


def _worker(conn: Connection, data: Connection, k: int, staging: Path | None,
            keys: dict[str, Any] | None = None) -> None:
    """Audit worker k's records, as the reader hands them on `data`, reporting to the
    main process on `conn` (with the key registry's JSON, when signatures are verified)."""
    items: list[Item] = []
    order = 0
    counted = sent = 0
    shard: _Shard

    def emit(at: int, kind: str, payload: Any) -> None:
        nonlocal order
        if at >= _END and kind != "reject":  # closed by the end of the input: table order
            at = _END + shard.rank[payload.table_id]
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

    rep = AuditReport()
    try:
        shard = _Shard(data.recv, emit, report)
        store = None if staging is None else _StoreProxy(conn, staging)
        audit_events(counting(shard.events()), store=store, report=rep,
                     keep_violations=False,
                     keys=None if keys is None else KeyRegistry.from_json(keys),
                     on_violation=lambda v: emit(shard.at, "violation", v),
                     on_round=lambda s: emit(shard.at, "round", s),
                     on_engine_error=lambda e: emit(shard.at, "engine_error", e))
        report(_END * 2)
        use = resource.getrusage(resource.RUSAGE_SELF)
        conn.send(("done", rep.events, sorted(rep.tables), use.ru_utime + use.ru_stime))
    except BaseException as e:  # handed to the main process, which raises it there
        conn.send(("error", _picklable(e, f"audit worker {k}"), traceback.format_exc()))
    finally:
        data.close()
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
) -> AuditReport:
    """`audit_paths` over `jobs` processes; into the embedded store in `data` (None:
    judge only). The report, the order of every callback and the store's rows are
    those of one process."""
    files = expand(paths)
    rep = AuditReport(files=len(files))
    rep.signing_devices = None if keys is None else len(keys.devices)
    registry = None if keys is None else keys.to_json()
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    store = EmbeddedStore(data) if data is not None else None
    staging = store.staging if store is not None else None
    conns: list[Connection] = []
    procs = []
    try:
        if store is not None:
            store.setup()
        outs = []
        for k in range(jobs):
            mine, theirs = ctx.Pipe()
            into, out = _data_pipe(ctx)
            p = ctx.Process(target=_worker, args=(theirs, into, k, staging, registry),
                            name=f"pitwatch-audit-{k}", daemon=True)
            p.start()
            theirs.close()
            into.close()
            conns.append(mine)
            outs.append(out)
            procs.append(p)
        mine, theirs = ctx.Pipe()
        p = ctx.Process(target=_reader, args=(theirs, outs, files),
                        name="pitwatch-audit-reader", daemon=True)
        p.start()
        for c in (theirs, *outs):
            c.close()
        procs.append(p)
        _serve(conns, mine, store, rep, on_violation, on_reject, keep_violations,
               _bar(files) if progress else None)
        for p in procs:
            p.join()
        if store is not None:
            store.dedupe()
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        if store is not None:
            store.close()
    return rep


def _data_pipe(ctx: Any) -> tuple[Connection, Connection]:
    """A one-way pipe for a worker's records, its buffer as large as Linux lets it be
    (`_PIPE`): the reader may read that far ahead of the worker."""
    into, out = ctx.Pipe(duplex=False)
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or past the limit
        fcntl.fcntl(out.fileno(), fcntl.F_SETPIPE_SZ, _PIPE)
    return into, out


def _bar(files: Sequence[Path]) -> Any:
    if sum(f.stat().st_size for f in files) <= 5_000_000:
        return None
    from tqdm import tqdm

    return tqdm(unit=" events", unit_scale=True, file=sys.stderr, desc="audit",
                mininterval=0.5)


def _serve(conns: list[Connection], reader: Connection, store: EmbeddedStore | None,
           rep: AuditReport,
           on_violation: Callable[[Violation], None] | None,
           on_reject: Callable[[Rejected], None] | None, keep_violations: bool,
           bar: Any) -> None:
    """Answer the workers (and the reader) until each is done, handing on what they found
    in order."""
    merge = _Merge(len(conns))
    index = {id(c): w for w, c in enumerate(conns)}
    live = [*conns, reader]
    tables: set[str] = set()

    def deliver() -> None:
        for kind, x in merge.ready():
            if kind == "violation":
                v: Violation = x
                rep.add_violation(v)
                if keep_violations:
                    rep.violations.append(v)
                if on_violation is not None:
                    on_violation(v)
            elif kind == "round":
                s: RoundSummary = x
                rep.add_round(s)
            elif kind == "engine_error":
                e: EngineError = x
                rep.engine_errors.append(e)
            else:
                r: Rejected = x
                rep.rejected += 1
                if on_reject is not None:
                    on_reject(r)

    try:
        while live:
            for c in wait(live):
                conn: Connection = c  # type: ignore[assignment]
                w = index.get(id(conn), -1)
                who = "the audit's reader" if w < 0 else f"audit worker {w}"
                try:
                    msg = conn.recv()
                except EOFError:
                    raise RuntimeError(f"{who} stopped without a word "
                                       "(killed? out of memory?)") from None
                what = msg[0]
                if what == "error" and isinstance(msg[1], _ReaderGone):
                    live.remove(conn)  # the reader stopped first: it says why
                    continue
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
                elif what == "file":
                    store.insert_staged(msg[1], Path(msg[2]))  # type: ignore[union-attr]
                elif what == "done":
                    rep.events += msg[1]
                    tables.update(msg[2])
                    rep.worker_cpu.append(msg[3])
                    live.remove(conn)
                elif what == "read":
                    rep.worker_cpu.append(msg[1])
                    live.remove(conn)
                else:  # "error": the worker's (or the reader's) exception, raised here
                    if not isinstance(msg[1], ValueError | OSError | StoreError):
                        print(f"pitwatch audit: {who} failed:\n{msg[2]}", file=sys.stderr)
                    raise msg[1]
        deliver()
    finally:
        if bar is not None:
            bar.close()
    rep.tables.update(tables)

