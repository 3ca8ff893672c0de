"""A rebuild reads the quarantine around what it rebuilds, not the table's whole
quarantine: "Every query ... finds its rows ... through the sort key (table, then time
or position)". A table whose quarantine holds thousands of other refused events (far
later seqs of the same device) rebuilds the round of its refused event as before
(EVENT_REFUSED, not EVENTS_LOST, the chain verified across it), under a bound of rows
of `refused_events` its whole quarantine is well over; and those other rows, junk that
would not decode, are never read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pitwatch.replay.rebuild import rebuild
from pitwatch.store import base, embedded
from pitwatch.store.base import StoreError
from pitwatch.store.history import SEQ_BLOCK, Quarantine

from .test_refused_quarantine import _audited, _floor, _refused
from .test_store_lookups import BOUND, _bounded

#: Other refused events of the device in the quarantine, at seqs far past its own.
OTHERS = 4 * BOUND


def test_a_rebuild_reads_the_quarantine_of_the_seqs_it_meets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fine() -> list[str]:  # the quarantine in granules of 32 rows
        return [s + " SETTINGS index_granularity = 32"
                if (m := re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", s))
                and m.group(1) == "refused_events" else s for s in base.ddl_statements()]

    monkeypatch.setattr(embedded, "ddl_statements", fine)
    events, keys = _floor()
    store = _audited(tmp_path / "data", events, keys)
    try:
        bad = _refused(events)[0]
        assert bad.round_id is not None
        store.query(
            "INSERT INTO refused_events SELECT table_id, device_id, {s:UInt64} + number, "
            "concat('other-', toString(number)), round_id, ts, ts_ms, writer, 'not hex', "
            "reason FROM refused_events CROSS JOIN numbers({n:UInt64}) AS k "
            "WHERE event_id = {e:String}",
            {"s": bad.seq + 4 * SEQ_BLOCK, "n": OTHERS, "e": bad.event_id})
        store.sync()
        with pytest.raises(ValueError):  # what a read of the whole quarantine meets
            Quarantine(store, bad.table_id).held[bad.device_id][bad.seq + 4 * SEQ_BLOCK]
        _bounded(store, BOUND)
        try:
            rb = rebuild(store, bad.round_id, keys=keys)
            with pytest.raises(StoreError, match="Limit for rows"):  # the read replaced
                store.query("SELECT DISTINCT table_id, device_id, seq, event_id, writer, "
                            "raw, reason FROM refused_events WHERE table_id = {t:String}",
                            {"t": bad.table_id})
        finally:
            _bounded(store, 0)
        codes = {v.code for v in rb.violations}
        assert "EVENT_REFUSED" in codes and "EVENTS_LOST" not in codes
        assert rb.matches_store
        assert rb.chains[bad.device_id].verdict.startswith("VERIFIED")
    finally:
        store.close()
