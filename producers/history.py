"""A long history in a store, fast: the floor audited into it, stored again as the same
tables' later days, by the store itself (INSERT ... SELECT, no row through Python).

Copy `k` of the stored floor is the same tables `k` x `day_s` seconds later, each event,
round and violation under its id with `~k` added, each event `k` x `span` positions
further on (past every position of the floor, by whole steps of the record clock), each
device's seqs `k` x `seqs` further on. It is history to look things up past: its
events' bodies are the floor's (their digests chain the floor's events, not the
copy's), so only the floor's own rounds are rebuilt. Deterministic: the same store and
copies give the same rows. Only what ClickHouse 18.16 and chDB both run.
"""

from __future__ import annotations

from dataclasses import dataclass

from pitwatch.store.base import Store
from pitwatch.store.order import STRIDE

#: Seconds between one copy of the floor and the next: a day.
DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class Extent:
    """What a copy moves past: past the floor's last position, at a whole number of the
    record clock's steps (a position's clock part is what a device's latest seq is read
    by), and past its largest seq."""

    span: int
    seqs: int


def extent(store: Store) -> Extent:
    """The stored floor's extent (copies left out: their ids hold `~`)."""
    r = store.query("SELECT max(pos) AS p, max(seq) AS s FROM events "
                    "WHERE position(event_id, '~') = 0")[0]
    return Extent((int(r["p"]) // STRIDE + 1) * STRIDE, int(r["s"]) + 1)


def _copies(first: int, last: int) -> str:
    return f"arrayJoin(arrayMap(x -> x + {first}, range({last - first + 1}))) AS k"


def copy_floor(store: Store, first: int, last: int, day_s: int = DAY_S,
               at: Extent | None = None) -> None:
    """Store copies `first`..`last` of the floor (see the module's note)."""
    at = at or extent(store)
    ks = _copies(first, last)
    tag = "concat('~', toString(k))"
    store.query(
        "INSERT INTO events (event_id, table_id, device_id, seq, ts, ts_ms, round_id, "
        "type, seat, hand, kind, amount, pos, body, writer) "
        f"SELECT concat(event_id, {tag}), table_id, device_id, seq + k * {at.seqs}, "
        f"addSeconds(ts, k * {day_s}), ts_ms, if(round_id = '', '', concat(round_id, "
        f"{tag})), type, seat, hand, kind, amount, pos + k * {at.span}, body, writer "
        f"FROM (SELECT *, {ks} FROM events WHERE position(event_id, '~') = 0)")
    store.query(
        "INSERT INTO rounds (round_id, table_id, jurisdiction, game, pack, pack_version, "
        "dealer_id, seats, events, wagered, paid, collected, returned, violations, "
        "complete, started, started_ms, ended, ended_ms) "
        f"SELECT concat(round_id, {tag}), table_id, jurisdiction, game, pack, pack_version, "
        "dealer_id, seats, events, wagered, paid, collected, returned, violations, "
        f"complete, addSeconds(started, k * {day_s}), started_ms, addSeconds(ended, k * "
        f"{day_s}), ended_ms FROM (SELECT *, {ks} FROM rounds "
        "WHERE position(round_id, '~') = 0)")
    store.query(
        "INSERT INTO violations (violation_id, code, severity, table_id, round_id, seat, "
        "hand, event_id, evidence, citation, message, pack, pack_version, detected_at, "
        f"detected_ms) SELECT concat(violation_id, {tag}), code, severity, table_id, "
        f"concat(round_id, {tag}), seat, hand, concat(event_id, {tag}), evidence, "
        f"citation, message, pack, pack_version, addSeconds(detected_at, k * {day_s}), "
        f"detected_ms FROM (SELECT *, {ks} FROM violations "
        "WHERE position(violation_id, '~') = 0)")
