"""The console's fold over stored history (console/protection.py, `fold_rounds`) feeds
the events the record took in as refused back at their place, as every rebuild does
(`Quarantine.feed`): its rounds and findings are those `pitwatch protect` reads over the
same store (`read_stored`), with no break where a refused event sits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pitwatch.audit.run import audit_events
from pitwatch.console.protection import TableFold, fold_begin, fold_rounds, take
from pitwatch.producers.simulate import Floor
from pitwatch.protect.run import BREAKS
from pitwatch.protect.stored import read_stored
from pitwatch.store import lookup
from pitwatch.store.embedded import EmbeddedStore


async def _direct(fn: Any, *args: Any) -> Any:
    """The store thread and the fold's thread as direct calls."""
    return fn(*args)


def test_the_console_fold_feeds_the_quarantine_back_at_its_place(tmp_path: Path) -> None:
    f = Floor(2, 4, seed=2, inject=0.5, jurisdiction="NJ", game="BLACKJACK",
              contract=True)
    events = list(f.events())
    refused = [e for e in events if e.refused is not None]
    assert refused, "the contract floor injects a refused event"
    table = refused[0].table_id
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        audit_events(events, store=store, keys=f.registry())
        store.sync()
        fold = asyncio.run(fold_rounds(_direct, _direct, store, table, 0, None))
        read, _ = read_stored(store, [table])
        # without the quarantine (the chunks alone): the refused event's gap is a break
        rules, before, begin = fold_begin(store, table, 0)
        bare = TableFold(table, rules, before, 0)
        bare.feed(take(lookup.stream(store, table, begin, None), 10 ** 6))
    finally:
        store.close()
    assert not {v.code for v in fold.violations} & BREAKS
    assert {v.code for v in bare.violations} & BREAKS
    assert [r.round_id for r in fold.rounds] == [r.round_id
                                                 for r in read.floor.tables[table]]
    assert sorted(v.code for v in fold.violations) == sorted(
        v.code for v in read.violations if v.table_id == table)
