"""A table's stored history, read back in its order of record (`order.py`): what a
round needs around it to be judged again exactly as it was.

A round is judged with the table context it had: the posted rules (the last
`TableOpened` before it), the shoe's card counts (everything dealt since the last
`ShoeLoaded`), and each device's record (its last event before, for the seq and digest
checks). `context(store, table_id, pos)` gives the events to feed an auditor before the
event at `pos`: each device's last event before the context starts, then everything from
the earlier of the last TableOpened and the last ShoeLoaded on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..engine.auditor import TableAuditor
from ..events.model import Event
from .base import Store
from .rows import EVENT_COLUMNS, stored_event

PAGE = 2000
#: The start of a select of a table's events (`t`), each with its position.
_SELECT = f"SELECT pos, {EVENT_COLUMNS} FROM events FINAL WHERE table_id = {{t:String}} AND "


@dataclass(frozen=True, slots=True)
class Stored:
    pos: int
    event: Event


def _rows(store: Store, sql: str, params: dict[str, object]) -> list[Stored]:
    return [Stored(int(r["pos"]), stored_event(r)) for r in store.query(sql, params)]


def context_start(store: Store, table_id: str, before: int) -> int:
    """Where the table context of the event at `before` starts: the earlier of the last
    TableOpened and the last ShoeLoaded before it (0, the table's first event, when one
    of them never came: the rules or the counts then go back to the start)."""
    rows = store.query(
        "SELECT type, max(pos) AS p FROM events FINAL WHERE table_id = {t:String} "
        "AND pos < {b:UInt64} AND type IN ('TableOpened', 'ShoeLoaded') GROUP BY type",
        {"t": table_id, "b": before})
    found = {r["type"]: int(r["p"]) for r in rows}
    if len(found) < 2:
        return 0
    return min(found.values())


def primers(store: Store, table_id: str, begin: int) -> list[Stored]:
    """Each device's last event before `begin`, in order: an auditor fed these first
    checks the seq and digest of each device's next event as it was checked then."""
    if begin == 0:
        return []
    return _rows(store,
                 _SELECT + "(device_id, pos) IN (SELECT device_id, max(pos) FROM events "
                 "FINAL WHERE table_id = {t:String} AND pos < {b:UInt64} GROUP BY device_id) "
                 "ORDER BY pos, event_id", {"t": table_id, "b": begin})


def stream(store: Store, table_id: str, begin: int, end: int | None = None
           ) -> Iterator[Stored]:
    """The table's events from position `begin` (to `end` inclusive), in order, a page
    at a time (the caller may stop early)."""
    pos, last_id = begin, ""
    while True:
        page = _rows(store,
                     _SELECT + "(pos > {p:UInt64} OR (pos = {p:UInt64} AND event_id > {e:String}))"
                     + ("" if end is None else " AND pos <= {z:UInt64}") +
                     " ORDER BY pos, event_id LIMIT {n:UInt64}",
                     {"t": table_id, "p": pos, "e": last_id, "z": end or 0, "n": PAGE})
        yield from page
        if len(page) < PAGE:
            return
        pos, last_id = page[-1].pos, page[-1].event.event_id


def context(store: Store, table_id: str, before: int) -> Iterator[Stored]:
    """The events to feed an auditor so the event at `before` finds the table as the
    audit found it (see the module's note), in order; none for a table's first event."""
    begin = context_start(store, table_id, before)
    yield from primers(store, table_id, begin)
    if before > 0:
        yield from (s for s in stream(store, table_id, begin, before - 1))


def round_span(store: Store, round_id: str) -> tuple[str, int, int] | None:
    """(table, first position, last position) of a round's stored events."""
    rows = store.query("SELECT any(table_id) AS t, min(pos) AS a, max(pos) AS z, "
                       "count() AS n FROM events FINAL WHERE round_id = {r:String}",
                       {"r": round_id})
    if not rows or not int(rows[0]["n"]):
        return None
    return rows[0]["t"], int(rows[0]["a"]), int(rows[0]["z"])


class HistoryConflict(ValueError):
    """The store holds another history under the same table and device ids."""


def continue_history(store: Store, auditor: TableAuditor, ev: Event) -> None:
    """Before a table's first event in an audit run: bring `auditor` (fresh, for the
    table) to where the stored history stands, so a second run continues the first (a
    shift audited in two files judges its second part with the rules, counts and
    records of the first). Findings and rounds of the history are not raised again.
    Refuses (`HistoryConflict`) when the store holds a different event under this
    event's device and seq: another floor's history with the same ids."""
    rows = store.query("SELECT event_id, pos FROM events FINAL WHERE table_id = {t:String} "
                       "AND device_id = {d:String} AND seq = {s:UInt64}",
                       {"t": ev.table_id, "d": ev.device_id, "s": ev.seq})
    if any(r["event_id"] != ev.event_id for r in rows):
        raise HistoryConflict(
            f"the store already holds another history of table {ev.table_id}: "
            f"{ev.device_id} seq {ev.seq} is event {rows[0]['event_id']} there and "
            f"{ev.event_id} here (another floor with the same ids?); audit it into its "
            "own store with --data DIR")
    top = store.query("SELECT max(pos) AS p, count() AS n FROM events FINAL "
                      "WHERE table_id = {t:String}", {"t": ev.table_id})
    if not top or not int(top[0]["n"]):
        return
    before = int(rows[0]["pos"]) if rows else int(top[0]["p"]) + 1
    sinks = auditor.on_violation, auditor.on_round
    auditor.on_violation, auditor.on_round = (lambda v: None), (lambda s: None)
    try:
        begin = context_start(store, ev.table_id, before)
        for st in primers(store, ev.table_id, begin):  # each device's last event: primed
            auditor.prime(st.event)
        for st in stream(store, ev.table_id, begin, before - 1) if before > 0 else ():
            auditor.feed(st.event)
    finally:
        auditor.on_violation, auditor.on_round = sinks
    r = auditor.round
    if r is not None and not r.ended and store.query(
            "SELECT round_id FROM rounds FINAL WHERE round_id = {r:String}", {"r": r.round_id}):
        # the run that stored it closed it (its input ended there): it stays closed
        r.ended = True
        auditor.closed[r.round_id] = None
