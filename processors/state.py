"""Each table's auditor, durable across crashes and rebalances.

Event sourcing with snapshots, with Kafka as the log: when a round ends (and on a
table-level event, and when a table is first seen) the worker writes the whole auditor
as a snapshot, with the offset of the event it has folded up to, into a
changelog-backed Faust table. A worker that takes a table over (after a start, a crash
or a rebalance) loads the snapshot and folds the table's events after that offset
straight from the partition, up to the event in hand. Violations found on the way go
out again: their ids are deterministic, so the store counts them once.

Writing once a round, not once an event, keeps the changelog about forty times
smaller than the stream it protects.
"""

from __future__ import annotations

import logging
import pickle
import struct
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pitwatch.engine.auditor import PackSelector, RoundSink, TableAuditor, ViolationSink
from pitwatch.events.avro import DecodeError, decode_single
from pitwatch.events.model import Event, RoundEnded

log = logging.getLogger("pitwatch.worker")
_HEAD = struct.Struct("<q")  # the offset folded up to
#: reads the partition's messages with offsets in [start, stop): (offset, key, value)
CatchUp = Callable[[str, int, int, int], Awaitable[list[tuple[int, bytes, bytes]]]]


class TableStates:
    def __init__(self, table: MutableMapping[bytes, bytes], select_pack: PackSelector,
                 on_violation: ViolationSink, on_round: RoundSink) -> None:
        self.table = table
        self.select_pack = select_pack
        self.on_violation = on_violation
        self.on_round = on_round
        self.auditors: dict[str, TableAuditor] = {}

    def forget(self) -> None:
        """After a rebalance: what is in memory may be stale; restore on next use."""
        self.auditors.clear()

    async def auditor(self, table_id: str, topic: str, partition: int, offset: int,
                      catch_up: CatchUp) -> tuple[TableAuditor, bool]:
        """The table's auditor, restored if need be; and whether it is new here (then
        the caller snapshots it)."""
        a = self.auditors.get(table_id)
        if a is not None:
            return a, False
        a = TableAuditor(table_id, self.select_pack, self.on_violation, self.on_round)
        snap = self.table.get(table_id.encode())
        if snap is None:
            self.auditors[table_id] = a
            return a, True
        done = _HEAD.unpack_from(snap)[0]
        a.import_state(pickle.loads(snap[_HEAD.size:]))  # our own changelog: trusted
        folded = 0
        if done + 1 < offset:
            key = table_id.encode()
            for _, k, value in await catch_up(topic, partition, done + 1, offset):
                if k != key:
                    continue
                try:
                    ev: Event = decode_single(value)
                except DecodeError:
                    continue  # it went to the dead-letter topic when first read
                a.feed(ev)
                folded += 1
        log.info("restored table %s: snapshot at %s[%d]@%d, %d later event(s) folded",
                 table_id, topic, partition, done, folded)
        self.auditors[table_id] = a
        return a, False

    async def process(self, ev: Event, topic: str, partition: int, offset: int,
                      catch_up: CatchUp) -> None:
        """Fold one event read at `offset`; snapshot at a boundary."""
        auditor, new = await self.auditor(ev.table_id, topic, partition, offset, catch_up)
        auditor.feed(ev)
        if new or ev.round_id is None or type(ev.payload) is RoundEnded:
            self.snapshot(ev.table_id, offset)

    def snapshot(self, table_id: str, offset: int) -> None:
        state: Any = self.auditors[table_id].export_state()
        self.table[table_id.encode()] = _HEAD.pack(offset) + pickle.dumps(state, protocol=5)
