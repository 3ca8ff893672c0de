"""The open rounds of a worker's tables, kept in a changelog-backed Faust table.

Event sourcing with snapshots: after a round ends (and after a table-level event) the
whole auditor is written as a snapshot under `T|snap`; every event after it is written
under `T|0`, `T|1`, … tagged with the snapshot's generation. A worker that takes over a
table restores the snapshot and folds the events of its generation, silently: their
violations went out when they were first seen.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import MutableMapping
from typing import Any

from pitwatch.engine.auditor import PackSelector, RoundSink, TableAuditor, ViolationSink
from pitwatch.events.avro import decode_single

_GEN = struct.Struct("<Q")


class TableStates:
    def __init__(self, table: MutableMapping[bytes, bytes], select_pack: PackSelector,
                 on_violation: ViolationSink, on_round: RoundSink) -> None:
        self.table = table
        self.select_pack = select_pack
        self.on_violation = on_violation
        self.on_round = on_round
        self.auditors: dict[str, TableAuditor] = {}
        self.generation: dict[str, int] = {}
        self.next_delta: dict[str, int] = {}

    def forget(self) -> None:
        """After a rebalance: what is in memory may be stale; restore on next use."""
        self.auditors.clear()
        self.generation.clear()
        self.next_delta.clear()

    def auditor(self, table_id: str) -> TableAuditor:
        a = self.auditors.get(table_id)
        if a is None:
            a = self._restore(table_id)
        return a

    def _restore(self, table_id: str) -> TableAuditor:
        muted: list[Any] = []
        a = TableAuditor(table_id, self.select_pack, muted.append, muted.append)
        gen, n = 0, 0
        snap = self.table.get(f"{table_id}|snap".encode())
        if snap is not None:
            gen = _GEN.unpack_from(snap)[0]
            a.import_state(pickle.loads(snap[_GEN.size:]))
            while True:
                delta = self.table.get(f"{table_id}|{n}".encode())
                if delta is None or _GEN.unpack_from(delta)[0] != gen:
                    break
                a.feed(decode_single(delta[_GEN.size:]))
                n += 1
        a.on_violation, a.on_round = self.on_violation, self.on_round
        self.auditors[table_id] = a
        self.generation[table_id] = gen
        self.next_delta[table_id] = n
        return a

    def record(self, table_id: str, raw: bytes, boundary: bool) -> None:
        """Persist one fed event: a delta, or at a boundary a fresh snapshot."""
        a = self.auditors[table_id]
        gen = self.generation[table_id]
        if boundary:
            gen += 1
            state = a.export_state()
            snapshot = _GEN.pack(gen) + pickle.dumps(state, protocol=5)
            self.table[f"{table_id}|snap".encode()] = snapshot
            self.generation[table_id] = gen
            self.next_delta[table_id] = 0
        else:
            n = self.next_delta[table_id]
            self.table[f"{table_id}|{n}".encode()] = _GEN.pack(gen) + raw
            self.next_delta[table_id] = n + 1
