"""The embedded store: chDB, an in-process ClickHouse, in a data directory.

Rows go in as data, in columnar batches: each batch becomes an Arrow table (one typed
array per column, typed from the DDL: `arrow.py`), appended at once to its table's
staged Arrow IPC file in the data directory, and each file, once it holds `INSERT_ROWS`
rows (`OTHER_INSERT_ROWS` of the other tables), is inserted with `INSERT ... SELECT ...
FROM file(..., Arrow)`; no value is ever spliced into SQL text, and no batch waits in
memory. What a killed process staged is removed when the store is next opened
(`arrow.orphans`). An Arrow file is the cheapest form chDB reads: a JSONEachRow file of
the same batch takes three times as long, and chDB's `Python()` table function over the
same Arrow table longer than the file. The audit hands its batches already as columns,
`insert_columns`, with no dict a row, and its events' rows as C wrote them
(`events_insert`: `insert_event_rows`, else `insert_events`, whose Arrow buffers are
written in C, `arrow_events`).

The inserts run on a thread of the store's own (`_Inserter`), in order, at most
`WAITING_BATCHES` files waiting: chDB releases the GIL while it inserts, so the audit goes
on in Python on one core while chDB works on the other.
"""

from __future__ import annotations

import functools
import os
import queue
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..events.model import Event
from .arrow import (
    StagedFile,
    arrow_columns,
    arrow_event_rows,
    arrow_events,
    event_rows,
    orphans,
)
from .base import (
    TABLES,
    EventsInsert,
    Params,
    StoreError,
    check_params,
    columns,
    ddl_statements,
    to_columns,
)
from .native import RowWriter


def _param_values(params: Params) -> dict[str, Any]:
    """chDB reads an array parameter from its text form: quote its strings."""

    def one(v: Any) -> Any:
        if isinstance(v, list | tuple):
            return "[" + ",".join(
                "'" + x.replace("\\", "\\\\").replace("'", "\\'") + "'"
                if isinstance(x, str) else str(x) for x in v) + "]"
        return v

    return {k: one(v) for k, v in params.items()}


#: Batches that may wait for the inserter thread behind the one it is inserting, so the
#: audit runs ahead by that many at most (a store slower than the audit holds it back).
#: A waiting batch is a file: its rows are on disk, not in memory. Four, not one, so that
#: the store process goes on reading the audit's batches while an insert runs
#: (`process.INBOX`) and the audit's sends do not wait on chDB; the peak is the same
#: (docs/performance.md, "Into chDB").
WAITING_BATCHES = 4
#: Rows an insert: a table's batches are appended to its staged file until it holds
#: this many (or until `sync`). chDB spends about 0.1 s of CPU an insert whatever its
#: size, and it holds about 2.5 times an insert's rows while it inserts (read, gathered
#: into one block, sorted), while small inserts make many parts to merge: of the sizes
#: from 15,000 to 50,000 rows, 25,000 gives the lowest peak (docs/performance.md,
#: "Where the memory goes").
INSERT_ROWS = 25_000
#: Rows an insert of the other tables (`rounds`, `violations`): a round comes every 44
#: events or so, so at `INSERT_ROWS` an audit's rounds would wait in their staged file to
#: its end, and the audit for their insert after its last event. At 5,000 rows the last
#: insert of rounds is small (0.035 s at the end of 1.08M events), for a few more inserts
#: while the audit runs.
OTHER_INSERT_ROWS = 5_000
#: Rows a block of `dedupe`'s counts, not chDB's 65,505: a count with FINAL reads the
#: sorting key of every part at once, a block of each, and at the end of an audit that
#: count sets the store process's peak: blocks of 2,048 rows take about 12 MB off it, in
#: the same time.
DEDUPE_BLOCK_ROWS = 2048


def _run(session: Any, sql: str, fmt: str = "CSV", params: Params | None = None) -> str:
    try:
        res = session.query(sql, fmt, params=_param_values(params) if params else None)
    except Exception as e:  # chDB raises its own error types
        raise StoreError(f"chDB: {e}") from e
    return str(res)


def _insert_file(session: Any, table: str, staged: Path) -> None:
    """Insert a staged batch of `table`, then remove the file."""
    col_list = ", ".join(columns(table))
    try:
        _run(session, f"INSERT INTO {table} ({col_list}) SELECT {col_list} "
                      f"FROM file('{staged}', Arrow)")
    finally:
        staged.unlink()


class _Inserter:
    """Inserts staged files on a thread of its own, in the order handed over. chDB's
    `query` releases the GIL (a Python loop runs at full speed beside a long query), so
    the audit goes on in Python on one core while chDB inserts on the other. It holds no
    reference to the store: a store dropped without `close` is still collected, and its
    session closed."""

    def __init__(self, insert: Callable[[str, Path], None]) -> None:
        self._insert = insert
        self._pending: queue.Queue[tuple[str, Path, int] | None] = queue.Queue(WAITING_BATCHES)
        self._thread: threading.Thread | None = None
        self.failed: StoreError | None = None
        self.reported = False

    def put(self, table: str, staged: Path, rows: int) -> None:
        """Hand over a staged file of `rows` rows of `table`; after a failed insert the
        file is removed (nothing after a gap is inserted) and the failure raised."""
        if self.failed is not None:
            staged.unlink(missing_ok=True)
            self.check()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True,
                                            name="pitwatch-chdb-insert")
            self._thread.start()
        self._pending.put((table, staged, rows))  # blocks while WAITING_BATCHES wait

    def _loop(self) -> None:
        """After a failure nothing more is inserted (a later batch would land past a
        gap); `check` raises the failure in the caller's thread."""
        while (item := self._pending.get()) is not None:
            table, staged, rows = item
            try:
                if self.failed is None:
                    self._insert(table, staged)
                else:
                    staged.unlink(missing_ok=True)
            except Exception as e:  # any: raised in the caller's thread by `check`
                self.failed = StoreError(
                    f"chDB: a background insert of {rows} rows into {table} "
                    f"failed, and nothing handed over after it was inserted: {e}")
                self.failed.__cause__ = e
            finally:
                self._pending.task_done()
        self._pending.task_done()

    def check(self) -> None:
        """Raise the failed insert, if one failed (every call after it too: the store
        holds a gap)."""
        if self.failed is not None:
            self.reported = True
            raise self.failed

    def sync(self) -> None:
        self._pending.join()
        self.check()

    def stop(self) -> None:
        """Wait for the batches handed over, and end the thread."""
        if self._thread is not None:
            self._pending.put(None)
            self._thread.join()
            self._thread = None


def _hand_over(staged: dict[str, StagedFile], inserter: _Inserter,
               table: str | None = None) -> None:
    """Close the staged file of `table` (None: of every table) and hand it over."""
    for t in list(staged) if table is None else [table]:
        f = staged.pop(t, None)
        if f is not None:
            inserter.put(t, f.close(), f.rows)


def _finish(staged: dict[str, StagedFile], inserter: _Inserter) -> None:
    """A store dropped unclosed: what it staged still lands."""
    try:
        _hand_over(staged, inserter)
    finally:
        inserter.stop()


#: chDB's allocator (the jemalloc built into it) keeps the pages an insert or a merge
#: frees for 5 s by default before it returns them, and an audit frees pages all the
#: time: kept, they are about a quarter of the audit's peak memory over chDB opened.
#: Returning them at once costs kernel time (about 3 s more of kernel CPU for the inserts
#: of 1.08M events than a 1 s decay, which peaks 55-72 MB higher). Read once, when chDB
#: loads; a user's own setting wins.
JEMALLOC_CONF = "dirty_decay_ms:0,muzzy_decay_ms:0"
#: The allocator of the main process of `audit --jobs N`, whose work is the store while
#: every other core audits, keeps the pages it frees for a second: there the store's CPU
#: is the command's time: chDB's inserts take about 45% less CPU, for about 70 MB more at
#: the peak. `audit --jobs 1`'s store process (`process.StoreProcess`) hands them back at
#: once: it has a core of its own beside the audit, whose thread sets the time, so its
#: extra CPU (1.4-2.4 s for 1.08M events) does not slow the command, and its peak is
#: 30-40 MB lower.
KEEPING_JEMALLOC_CONF = "dirty_decay_ms:1000,muzzy_decay_ms:0"
#: The allocator of `audit --jobs 1`'s store process: pages handed back at once, as
#: `JEMALLOC_CONF`, and no cache of freed blocks a thread (each of chDB's threads fills
#: one in turn, an insert's and a merge's alike): a few MB off its peak for about 1 s
#: more CPU of 11-13 for 1.08M events, on the core it has to itself.
STORE_PROCESS_JEMALLOC_CONF = JEMALLOC_CONF + ",tcache:false"


#: Merges one column at a time, not all columns of every part at once: a merge holds one
#: column of each part, not all of them, in the same time. And compressed blocks of 16 to
#: 64 KiB, not 64 KiB to 1 MiB: each column an insert or a merge writes or reads holds a
#: block and its compressed form (the store on disk no larger).
#: And fewer files a part: a String column in one stream (chDB 4.4 writes its lengths as a
#: stream of their own, two more files a String column), and an insert's part of
#: `INSERT_ROWS` events Compact (one file for every column) while merged parts of 32 MiB
#: and more stay Wide and merge vertically. On a file system without a journal (this
#: project's machines: ext4, no journal) each new file's inode is found past every inode
#: freed in the last ~35 s (`recently_deleted`), and a store's merges free files all the
#: time: making files is a sixth to a quarter of the inserts' CPU, and these settings
#: make about half as many (1.08M events: 2,162 files made, not 4,062), for a few MB more
#: at the peak.
#: Set here, not in schemas/clickhouse: the server (18.16) takes no MODIFY SETTING, and
#: its memory is not the audit's.
TABLE_SETTINGS = ("vertical_merge_algorithm_min_rows_to_activate = 1, "
                  "vertical_merge_algorithm_min_columns_to_activate = 1, "
                  "min_compress_block_size = 16384, max_compress_block_size = 65536, "
                  "string_serialization_version = 'single_stream', "
                  "min_bytes_for_wide_part = 33554432")


#: Settings a table of a new store is made with (a table made before keeps its own; both
#: read the same). Granules of 2,048 rows, not 8,192: merging the Compact parts of
#: `events` reads a granule of every column from every part it merges, and a granule of
#: 8,192 events is about 4 MB. Merging 8 parts of `INSERT_ROWS` events alone holds 89 MB
#: at 8,192 rows a granule, 78 at 4,096, 46 at 2,048 and 26 at 1,024; 2,048 takes about
#: 20-30 MB off the store process's peak in the same CPU, and 1,024 little more for more
#: CPU.
CREATE_SETTINGS = {"events": "index_granularity = 2048"}


#: Settings of the store's session. `FINAL` merges a key's rows within each month's
#: partition alone, not across them: every table's partition is a function of device
#: times its rows' identity fixes (an event's `ts`, a round's start, a violation's
#: detection), so a key's copies share one partition, and its merges never cross one
#: either. (ClickHouse 18.16 has no such setting: it merges across them.)
SESSION_SETTINGS = ("do_not_merge_across_partitions_select_final = 1",)


def _created(stmt: str) -> str:
    """A CREATE TABLE statement of schemas/clickhouse with its table's `CREATE_SETTINGS`."""
    words = stmt.split(None, 6)
    if words[:5] == ["CREATE", "TABLE", "IF", "NOT", "EXISTS"] and len(words) > 5:
        extra = CREATE_SETTINGS.get(words[5].split("(")[0])
        if extra:
            return f"{stmt}\nSETTINGS {extra}"
    return stmt


def _chdb_session(allocator: str = JEMALLOC_CONF) -> Any:
    """chDB's session module, loaded with the `allocator` setting unless the user set a
    `JE_MALLOC_CONF` of their own (imported here: a heavy module, only when used). chDB
    reads it once, as it loads; it is not left in the environment, where the processes
    started after it (a forkserver, a bench's next side) would inherit it."""
    if "chdb.session" in sys.modules or "JE_MALLOC_CONF" in os.environ:
        from chdb import session

        return session
    os.environ["JE_MALLOC_CONF"] = allocator
    try:
        from chdb import session
    finally:
        del os.environ["JE_MALLOC_CONF"]
    return session


def holds_store(path: str | Path) -> bool:
    """Whether `path` holds an embedded store already (chDB's files are made when one is
    first opened there)."""
    return (Path(path) / "chdb").exists()


def _open_session(session: Any, path: Path) -> Any:
    """chDB's session on the store in `path`. chDB says why it cannot open one only on
    fd 2 (its exception just says it failed), so fd 2 is read while it opens: a store
    another process holds open is a StoreError that says so, any other failure one
    that gives chDB's reason, and what chDB writes when it opens is passed on."""
    with tempfile.TemporaryFile() as said:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(said.fileno(), 2)
        try:
            opened = session.Session(str(path / "chdb"))
        except Exception as e:  # chDB raises its own error types
            failed: Exception | None = e
        else:
            failed = None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        said.seek(0)
        text = said.read().decode(errors="replace")
    if failed is None:
        sys.stderr.write(text)
        return opened
    if "Cannot lock file" in text:
        raise StoreError(f"chDB: the store {path} is open in another process (an audit, "
                         "the console or a demo using it): wait for it to end, or give "
                         "another data directory") from failed
    said_all = f"{failed} {text}".split("Stack trace", 1)[0]  # not chDB's own frames
    reason = " ".join(said_all.split()).rstrip(", ")
    raise StoreError(f"chDB: cannot open the store {path}: {reason}") from failed


class EmbeddedStore:
    #: Rows a writer hands over at a time (`BatchWriter`): each batch goes to its
    #: table's staged file at once, so neither the events nor their Arrow form wait in
    #: memory for an insert of `INSERT_ROWS`.
    batch_rows = 2_000

    def __init__(self, path: str | Path, allocator: str = JEMALLOC_CONF) -> None:
        """The store in `path`. `allocator`: chDB's allocator setting where this loads
        chDB (`KEEPING_JEMALLOC_CONF` in a process whose work is the store,
        `STORE_PROCESS_JEMALLOC_CONF` in the store process; no effect once chDB is
        loaded)."""
        session = _chdb_session(allocator)

        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.staging = self.path / "staging"
        self.staging.mkdir(exist_ok=True)
        self._session = _open_session(session, self.path)
        for setting in SESSION_SETTINGS:
            self._run(f"SET {setting}")
        for f in orphans(self.staging):  # the store is ours now: chDB locks it
            f.unlink(missing_ok=True)
        self._staged: dict[str, StagedFile] = {}
        self._inserter = _Inserter(functools.partial(_insert_file, self._session))
        weakref.finalize(self, _finish, self._staged, self._inserter)

    def _run(self, sql: str, fmt: str = "CSV", params: Params | None = None) -> str:
        return _run(self._session, sql, fmt, params)

    def setup(self) -> None:
        from .lookup import add_columns, migrate

        add_columns(self)  # a later version's columns, before a view reads them
        for stmt in ddl_statements():
            self._run(_created(stmt))
        for t in TABLES:
            self._run(f"ALTER TABLE {t} MODIFY SETTING {TABLE_SETTINGS}")
        migrate(self)  # the index tables of a store made before them

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.insert_columns(table, to_columns(table, rows))

    def insert_columns(self, table: str, cols: Sequence[Sequence[Any]]) -> None:
        """A batch as one sequence per column, in DDL order, made an Arrow table (a value
        its column refuses is a StoreError now) and appended to the table's staged file;
        the file is inserted in the background once it holds `INSERT_ROWS` rows
        (`OTHER_INSERT_ROWS` of a table other than `events`), while the caller goes on.
        `sync` hands over what is staged and waits for it; every other statement syncs
        first."""
        if cols and len(cols[0]):
            self._stage(table, arrow_columns(table, cols))

    def events_insert(self) -> EventsInsert:
        return self

    def row_writer(self) -> RowWriter | None:
        """The `events` rows written in C an event at a time (`arrow.event_rows`)."""
        return event_rows()

    def insert_events(self, events: list[Event], positions: list[int]) -> None:
        """A batch of the `events` table as its events and their positions, made an
        Arrow table here (`arrow_events`) and staged as `insert_columns` does."""
        if events:
            self._stage("events", arrow_events(events, positions))

    def insert_event_rows(self, raw: tuple[Any, ...], rows: int) -> None:
        """`rows` rows of the `events` table as C wrote them an event at a time
        (`arrow.event_rows`), staged as `insert_columns` does."""
        if rows:
            self._stage("events", arrow_event_rows(raw, rows))

    def _stage(self, table: str, data: Any) -> None:
        self._inserter.check()
        f = self._staged.get(table)
        try:
            if f is None:
                f = self._staged[table] = StagedFile(self.staging, table)
            f.append(data)
        except OSError as e:
            raise StoreError(f"chDB: cannot stage a batch of {table} in {self.staging}: "
                             f"{e}") from e
        if f.rows >= (INSERT_ROWS if table == "events" else OTHER_INSERT_ROWS):
            _hand_over(self._staged, self._inserter, table)

    def sync(self) -> None:
        """Hand over what is staged, and wait until every batch given to
        `insert_columns` or `insert_events` is stored; the first that failed is raised
        here as a StoreError (and by every later statement)."""
        _hand_over(self._staged, self._inserter)
        self._inserter.sync()

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        check_params(sql, params)
        self.sync()
        out = self._run(sql, "JSONEachRow", params)
        return [orjson.loads(line) for line in out.splitlines() if line.strip()]

    def read_only(self) -> None:
        """From now on this session refuses anything but reading the store (DDL, DML,
        and table functions that reach files or the network)."""
        self.sync()
        self._run("SET readonly = 1")

    def dedupe(self, events_of: Collection[str] | None = None) -> None:
        """Merge the replaced rows of each table that holds any (of `events`, given
        `events_of`, only if the events of those table ids hold any: `Store.dedupe`).
        Whether it does is its row count with FINAL and without, which reads only the
        sorting key (of those tables' rows alone: it starts with the table id): an audit
        seldom repeats a row, and rewriting every column of a table that holds none
        would be a tenth of the whole audit into chDB. Counted in blocks of `DEDUPE_BLOCK_ROWS`."""
        self.sync()
        small = f" SETTINGS max_block_size = {DEDUPE_BLOCK_ROWS}"
        for t in TABLES:
            where, params = "", None
            if t == "events" and events_of is not None:
                if not events_of:
                    continue
                where, params = " WHERE table_id IN {ids:Array(String)}", {
                    "ids": sorted(events_of)}
            n = self._run(f"SELECT count() FROM {t}{where}{small}", params=params)
            if n != self._run(f"SELECT count() FROM {t} FINAL{where}{small}", params=params):
                self._run(f"OPTIMIZE TABLE {t} FINAL")

    def close(self) -> None:
        """Hand over what is staged, wait for the background inserts, then close; a
        failed one nobody was told of yet is raised here (never lost with the thread)."""
        try:
            _finish(self._staged, self._inserter)
        finally:
            self._session.close()
        if not self._inserter.reported:
            self._inserter.check()
