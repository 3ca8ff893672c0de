"""Each table's auditor, durable across crashes and rebalances.

Event sourcing with snapshots, with Kafka as the log. A snapshot is the auditor's
`export_state()` (JSON, versioned, no code: see pitwatch/engine/auditor.py) with the
offset of the table's last event it covers, kept in a changelog-backed Faust table.
The caller writes one only after Kafka acknowledged every alert and round it covers
(`due` says when one is wanted), so a crash never loses what a snapshot claims.

A worker that takes a table over (after a start, a crash or a rebalance) loads the
snapshot and folds the table's events after its offset straight from the partition, up
to the event in hand. Events at or below a snapshot's offset are already in it: they
are skipped by offset, however far the snapshot is ahead of the committed offset, so a
restore invents nothing. A snapshot of another version, or a damaged one, is dropped:
the table is folded again from the start of the partition. Violations found on the way
go out again with the same ids, so the store counts them once.

Offsets the broker deleted before the audit read them (retention, delete-records) are
a break in the record, not the dealer's doing: each table this worker holds state for
on that partition is told (`TableAuditor.lost`), whether it is live when the loss is
noticed (`lost`) or restored later from a snapshot the loss came after (its fold's
read names the deleted stretch). Its next sequence gap is then one EVENTS_LOST finding
naming where, and the checks that need the missing part wait for the record to decide
them again. A snapshot names the partition it was taken on: a table whose events now
arrive on another partition (the topic grew) is refused (`Moved`), never folded from
the wrong partition's offsets.

The consumer can hand the audit a partition with a hole in it: around a rebalance Faust
drops the records it fetched while the flow was stopped, and resumes from its fetch
position, not from the committed offset, when the group committed nothing (or 0) there.
The audit (processors/checkpoint.py) reads any such stretch back from the partition and
feeds it here in order before the message in hand, so nothing is lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from pitwatch.audit.run import taken
from pitwatch.engine.auditor import PackSelector, RoundSummary, StateError, TableAuditor
from pitwatch.engine.errors import EngineError, EngineErrorSink
from pitwatch.engine.record import Fed
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.store.rows import refused_row

log = logging.getLogger("pitwatch.worker")
#: reads the partition's messages with offsets in [start, stop): (offset, key, value)
CatchUp = Callable[[str, int, int, int], Awaitable[list[tuple[int, bytes, bytes | None]]]]
#: A snapshot at a round's end once this many events of the table came since the last
#: one (and always on a table event, a new table or a time-out verdict): the catch-up
#: after a take-over reads at most about this many of the table's events.
SNAPSHOT_EVERY = 200
#: Live tables in memory: past this many, idle ones (no open round, every event in a
#: snapshot) are evicted, least recently used first, and restored from their snapshot
#: when their next event comes. A table idle for IDLE_EVICT_S is evicted anyway.
MAX_LIVE_TABLES = 256
IDLE_EVICT_S = 600.0
#: A snapshot bigger than this is not written (the table refolds from an older one):
#: changelog messages stay well inside the broker's limit.
SNAPSHOT_MAX_BYTES = 900_000


class Moved(RuntimeError):
    """A table's snapshot was taken on another partition than its events now come from:
    the events topic's partitions changed under the worker."""


def utc_now() -> str:
    """The wall clock, UTC, to the second: when a loss was noticed (never compared with
    device time)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def lost_where(topic: str, partition: int, lost: tuple[int, int], noticed: str) -> str:
    """What a loss finding says of where the events went (the `where` of
    TableAuditor.lost)."""
    first, last = lost
    n = last - first + 1
    return (f"{topic}[{partition}] offsets {first}..{last} ({n:,} offset{'s' * (n != 1)}) "
            f"were deleted by Kafka before the audit read them (noticed {noticed})")


def tell_lost(auditor: TableAuditor, where: str) -> bool:
    """Tell the table's auditor that events of its record were lost at `where`; False
    when the engine has no such note (then the gap shows as the engine judges it)."""
    lost = getattr(auditor, "lost", None)
    if lost is None:
        log.error("the engine cannot take the note of lost events (%s)", where)
        return False
    lost(where)
    return True


@dataclass
class Found:
    """What one step of the audit found: to be sent before any snapshot covering it."""

    violations: list[Violation] = field(default_factory=list)
    rounds: list[RoundSummary] = field(default_factory=list)
    #: the quarantine rows (`store.rows.refused_row`) of events the record took in as
    #: refused (`audit.run.taken`, as the embedded audit keeps them)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.violations or self.rounds or self.refused)


@dataclass
class _Table:
    auditor: TableAuditor
    topic: str
    partition: int
    covered: int  # the offset the state in memory covers (events at or below: skipped)
    snapshot_offset: int | None  # the offset of the last snapshot written (None: none)
    since_snapshot: int = 0
    verdict: bool = False  # a time-out verdict not yet in a snapshot
    arrived: float = 0.0  # time.monotonic() of the table's last event


class TableStates:
    def __init__(self, table: MutableMapping[bytes, bytes], select_pack: PackSelector,
                 round_timeout_ms: int | None = None, keys: KeyRegistry | None = None,
                 max_tables: int = MAX_LIVE_TABLES) -> None:
        self.table = table
        self.keys = keys
        #: live auditors kept past this only while they hold what no snapshot has
        self.max_tables = max_tables
        self.select_pack = select_pack
        self.round_timeout_ms = round_timeout_ms
        self.tables: dict[str, _Table] = {}
        self._violations: list[Violation] = []
        self._rounds: list[RoundSummary] = []
        self._refused: list[dict[str, Any]] = []
        self.snapshots = 0
        self.restored = 0
        self.evicted = 0
        #: tables told that events of their record were lost
        self.told_lost = 0
        #: each engine error of every auditor (the worker's metrics count them)
        self.on_engine_error: EngineErrorSink | None = None

    def lost(self, topic: str, partition: int, where: str) -> list[str]:
        """Offsets of `topic`[`partition`] were deleted before the audit read them:
        tell each live table of that partition (tables restored later learn it from
        their fold's read). Returns the tables told."""
        told = [k for k, t in self.tables.items() if t.topic == topic
                and t.partition == partition and tell_lost(t.auditor, where)]
        self.told_lost += len(told)
        return told

    def forget(self) -> None:
        """After a rebalance: what is in memory may be stale; restore on next use."""
        self.tables.clear()

    def _take(self) -> Found:
        """What was found since the last take: each caller takes its own, synchronously
        after the step that found it, so no two callers share a list."""
        found = Found(self._violations[:], self._rounds[:], self._refused[:])
        self._violations.clear()
        self._rounds.clear()
        self._refused.clear()
        return found

    def _fold(self, a: TableAuditor, ev: Event) -> None:
        """Feed `ev` to its table's auditor; an event the record took in as refused
        leaves its quarantine row to be sent (a fold again after a restore sends it
        again: the store keeps one row of it)."""
        if a.feed(ev) is Fed.REFUSED and ev.refused is not None and taken(a, ev):
            self._refused.append(refused_row(ev, ev.refused))

    #: the auditor a table gets (a subclass adds to the fold: processors/observe.py)
    auditor_type: type[TableAuditor] = TableAuditor

    def _new_auditor(self, table_id: str, **extra: Any) -> TableAuditor:
        return self.auditor_type(table_id, self.select_pack, self._violations.append,
                                 self._rounds.append, self._engine_error,
                                 round_timeout_ms=self.round_timeout_ms, keys=self.keys,
                                 released=released_writers(), **extra)

    def _engine_error(self, e: EngineError) -> None:
        if self.on_engine_error is not None:
            self.on_engine_error(e)

    async def _restore(self, table_id: str, topic: str, partition: int, offset: int,
                       catch_up: CatchUp) -> _Table:
        """The table's auditor at `offset`: from its snapshot plus the partition after
        it; new when it has none (a table's first event is snapshotted before its
        offset can be committed, so no snapshot means no earlier events); folded from
        the partition's start when its snapshot cannot be read."""
        a = self._new_auditor(table_id)
        raw = self.table.get(table_id.encode())
        if raw is None:
            return _Table(a, topic, partition, covered=-1, snapshot_offset=None)
        try:
            snap = orjson.loads(raw)
            taken_on = snap.get("partition", partition)
            if taken_on != partition:
                raise Moved(f"table {table_id}'s events now arrive on {topic}[{partition}], "
                            f"its state was kept for partition {taken_on}: the topic's "
                            "partitions changed")
            a.import_state(snap["state"])
            done = int(snap["offset"])
            how = f"snapshot at {topic}[{partition}]@{done}"
        except (orjson.JSONDecodeError, StateError, KeyError, TypeError, ValueError,
                AttributeError) as e:
            log.warning("snapshot of table %s dropped (%s): folding the partition from "
                        "its start", table_id, e)
            a, done, how = self._new_auditor(table_id), -1, "unreadable snapshot dropped"
        t = _Table(a, topic, partition, covered=done,
                   snapshot_offset=None if done < 0 else done)
        folded = 0
        if done + 1 < offset:
            key = table_id.encode()
            records = await catch_up(topic, partition, done + 1, offset)
            gone = getattr(records, "lost", None)
            if gone is not None:  # deleted after its snapshot, before this fold
                where = lost_where(topic, partition, gone, utc_now())
                log.warning("table %s restored past events Kafka deleted: %s", table_id,
                            where)
                self.told_lost += tell_lost(a, where)
            for o, k, value in records:
                if k != key or not value:
                    continue
                try:
                    ev: Event = decode_single(value)
                except DecodeError as e:
                    if e.event is None:
                        continue  # it went to the dead-letter topic when first read
                    ev = e.event  # so did this one, and the record holds its place
                if ev.table_id != table_id:
                    continue  # so did an event under another table's key
                self._fold(a, ev)
                t.covered = o
                folded += 1
        t.since_snapshot = folded
        self.restored += 1
        log.info("restored table %s: %s, %d later event(s) folded", table_id, how, folded)
        return t

    async def process(self, ev: Event, topic: str, partition: int, offset: int,
                      catch_up: CatchUp) -> Found:
        """Fold one event read at `offset`; returns what it (and any catch-up before
        it) found. Events a restored snapshot already covers change nothing."""
        t = self.tables.get(ev.table_id)
        if t is None:
            t = self.tables[ev.table_id] = await self._restore(
                ev.table_id, topic, partition, offset, catch_up)
        elif t.partition != partition or t.topic != topic:
            raise Moved(f"table {ev.table_id}'s events now arrive on {topic}[{partition}], "
                        f"not {t.topic}[{t.partition}]: the topic's partitions changed")
        t.arrived = time.monotonic()
        if offset <= t.covered:
            return self._take()
        self._fold(t.auditor, ev)
        t.covered = offset
        t.since_snapshot += 1
        return self._take()

    def expire_idle(self, caught_up: Callable[[str, int], bool], timeout_s: float) -> Found:
        """The processing-time rule: each open round of a table whose partition is
        caught up and for which nothing arrived for `timeout_s` is incomplete, and a
        signing device's events after its last checkpoint there are a truncated chain."""
        now = time.monotonic()
        for t in self.tables.values():
            if now - t.arrived <= timeout_s or not caught_up(t.topic, t.partition):
                continue
            if t.auditor.round_open and t.auditor.expire_idle(int(timeout_s * 1000)):
                t.verdict = True
            if t.auditor.expire_unsigned(int(timeout_s * 1000)):  # a truncated chain
                t.verdict = True
        return self._take()

    def due(self, table_id: str, ev: Event | None = None) -> bool:
        """Whether the table's state should be snapshotted now (once what was found
        so far has been acknowledged)."""
        t = self.tables.get(table_id)
        if t is None or t.covered < 0:
            return False
        if t.snapshot_offset is None or t.verdict:
            return True
        if ev is not None and ev.round_id is None:
            return t.since_snapshot > 0
        if len(self.tables) > self.max_tables and t.since_snapshot and not t.auditor.round_open:
            return True  # over the bound: between rounds, so that it can be evicted
        return t.since_snapshot >= SNAPSHOT_EVERY and not t.auditor.round_open

    def verdicts(self, topic: str, partition: int) -> list[str]:
        """Tables of the partition with a time-out verdict not yet in a snapshot (a
        snapshot is written while an event of its partition is in hand)."""
        return [k for k, t in self.tables.items()
                if t.verdict and t.partition == partition and t.topic == topic]

    def snapshot(self, table_id: str) -> None:
        """Write the table's state, covering its offsets up to the last folded. Call
        only once everything found up to here has been acknowledged."""
        t = self.tables[table_id]
        raw = orjson.dumps({"offset": t.covered, "partition": t.partition,
                            "state": t.auditor.export_state()})
        if len(raw) > SNAPSHOT_MAX_BYTES:
            log.warning("snapshot of table %s is %d bytes, over %d: not written (a take-over "
                        "folds from the previous one)", table_id, len(raw), SNAPSHOT_MAX_BYTES)
        else:
            self.table[table_id.encode()] = raw
            self.snapshots += 1
        t.snapshot_offset, t.since_snapshot, t.verdict = t.covered, 0, False

    def evictable(self, t: _Table) -> bool:
        """Nothing would be lost: no open round, no verdict waiting, every event folded
        is in the snapshot."""
        return not t.auditor.round_open and not t.verdict and t.since_snapshot == 0 \
            and t.snapshot_offset is not None and t.snapshot_offset == t.covered

    def evict_idle(self, idle_s: float = IDLE_EVICT_S) -> int:
        """Bound the live state: drop the auditors of tables idle for `idle_s`, and of
        the least recently used idle ones while more than `max_tables` are live. Only
        tables whose snapshot holds everything go (`evictable`: over the bound, `due`
        asks for a snapshot at each round's end); the next event of one restores it
        from its snapshot. Returns how many were evicted."""
        now = time.monotonic()
        idle = sorted((t.arrived, k) for k, t in self.tables.items() if self.evictable(t))
        over = len(self.tables) - self.max_tables
        gone = 0
        for arrived, k in idle:
            if now - arrived > idle_s or gone < over:
                del self.tables[k]
                gone += 1
        self.evicted += gone
        return gone

    def open_rounds(self) -> int:
        return sum(t.auditor.round_open for t in self.tables.values())
