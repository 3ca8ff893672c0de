"""The bench's tables keep each event's Avro bytes (`events(keep_raw=True)`): the audit
then hashes them without encoding the event again, and judges the same."""

from __future__ import annotations

from pitwatch.events.avro import encode
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.rounds import read_floor

SEATS = {1: "counter-8", 2: "flat", 3: "holecard", 4: "random", 5: "paroli",
         6: "martingale", 7: "counter-8-camo"}


def _table() -> SimTable:
    return SimTable(3, 37, {s: make_player(p, 37, s, 3) for s, p in SEATS.items()}, flash=0.3)


def test_kept_bytes_are_each_events_avro_form() -> None:
    kept = events(_table(), 12, 37, keep_raw=True)
    assert kept and all(ev.raw == encode(ev) for ev in kept)
    assert all(ev.raw is None for ev in events(_table(), 12, 37))


def test_the_audit_reads_and_judges_the_same_with_the_bytes_kept() -> None:
    plain = read_floor(events(_table(), 12, 37))
    kept = read_floor(events(_table(), 12, 37, keep_raw=True))
    assert kept.violations == plain.violations
    assert repr(kept.floor.tables) == repr(plain.floor.tables)
    assert len(next(iter(plain.floor.tables.values()))) == 12
