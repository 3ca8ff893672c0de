"""Replay's table context is bounded by the round's shoe, not by how long its table has
been open (issue 33, "Lookups independent of history"): a round is rebuilt from its
shoe's ShoeLoaded on, with the posted rules of the table's last TableOpened read alone
by position (`history.context_of`), and comes out exactly as when its whole context
from that TableOpened on is fed (same findings, same ids, same summary) on simulated
floors with shoe changes and breaks in the record, signed or not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.keys import KeyRegistry
from pitwatch.producers.simulate import Floor
from pitwatch.replay.rebuild import Fed, Rebuilt, rebuild_span
from pitwatch.store import history, lookup
from pitwatch.store.base import Store
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.history import Context, context_of
from pitwatch.store.order import table_clock

#: Rounds a table: several shoes under one TableOpened (a table that stays open).
ROUNDS = 75


def _floor(tmp: Path, seed: int, signed: bool) -> tuple[Store, KeyRegistry | None]:
    f = Floor(2, ROUNDS, seed=seed, inject=0.3, jurisdiction="NJ", game="BLACKJACK")
    events = list(f.events())
    keys = f.registry() if signed else None
    store = EmbeddedStore(tmp / "data")
    store.setup()
    audit_events(events, store=store, keys=keys)
    store.sync()
    return store, keys


@pytest.fixture(scope="module", params=[(7, False), (5, True)], ids=["plain", "signed"])
def floor(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[Store, KeyRegistry | None]]:
    seed, signed = request.param
    store, keys = _floor(tmp_path_factory.mktemp("ctx"), seed, signed)
    yield store, keys
    store.close()


def _whole(store: Store, table_id: str, first: int) -> Context:
    """The context from the earlier of the last TableOpened and the last ShoeLoaded
    (every event since the table opened): what the bounded one must equal."""
    found = lookup.mark_before(store, table_id, ("TableOpened", "ShoeLoaded"), first)
    return Context(0 if len(found) < 2 else min(found.values()))


def _picked(store: Store) -> list[tuple[str, str, int, int]]:
    """(table, round, first, last) of the rounds whose context the bound shortens: the
    first of each later shoe, and each round with a stored finding or right after one
    (a break in the record among them)."""
    spans = lookup.round_spans(store, [
        x["round_id"] for x in store.query("SELECT round_id FROM rounds FINAL")])
    flagged = {r["round_id"] for r in store.query(
        "SELECT DISTINCT round_id FROM violations FINAL WHERE round_id != ''")}
    marks = store.query("SELECT table_id, type, pos FROM events FINAL WHERE type IN "
                        "('TableOpened', 'ShoeLoaded') ORDER BY table_id, pos")
    out = []
    for t in sorted({s.table_id for s in spans.values()}):
        opened = [int(m["pos"]) for m in marks if m["table_id"] == t
                  and m["type"] == "TableOpened"]
        shoes = [int(m["pos"]) for m in marks if m["table_id"] == t
                 and m["type"] == "ShoeLoaded" and int(m["pos"]) > opened[0]]
        ordered = sorted((s.first, r) for r, s in spans.items() if s.table_id == t)
        for i, (first, rid) in enumerate(ordered):
            if not shoes or first < shoes[0]:
                continue  # the context starts at the TableOpened: nothing bounded
            new_shoe = any(ordered[i - 1][0] < p < first for p in shoes)
            if new_shoe or rid in flagged or ordered[i - 1][1] in flagged:
                out.append((t, rid, first, spans[rid].last))
    return out[::2] + out[1::2][:4]  # every other one (a test's time), a shoe each


def _seen(rb: Rebuilt) -> dict[str, Any]:
    return {"violations": [(v.violation_id, v.code, v.event_id, v.message)
                           for v in rb.violations],
            "summary": rb.summary, "rules": rb.rules, "game": rb.game, "pack": rb.pack,
            "steps": [(s.pos, s.event.event_id) for s in rb.steps],
            "matches": rb.matches_store, "chains": {d: (c.breaks, c.uncovered)
                                                    for d, c in rb.chains.items()}}


def test_a_round_rebuilt_from_its_shoe_is_the_round_rebuilt_from_its_table_opened(
        floor: tuple[Store, KeyRegistry | None]) -> None:
    store, keys = floor
    picked = _picked(store)
    shoes = {context_of(store, t, first).begin for t, _, first, _ in picked}
    assert len(picked) >= 10 and len(shoes) >= 4  # across shoe changes
    codes = {r["code"] for r in store.query(
        "SELECT DISTINCT code FROM violations FINAL WHERE round_id IN {r:Array(String)}",
        {"r": tuple(r for _, r, _, _ in picked)})}
    assert codes & {"EVENTS_LOST", "DEVICE_RESTARTED", "SEQUENCE_CONFLICT"}  # a break
    for t, rid, first, last in picked:
        fed: list[Fed] = []
        bounded = rebuild_span(store, t, first, last, [rid], keys=keys, fed=fed)[rid]
        whole = rebuild_span(store, t, first, last, [rid], keys=keys,
                             context=_whole(store, t, first))[rid]
        assert _seen(bounded) == _seen(whole), rid
        assert bounded.matches_store, rid
        # the rules are the TableOpened read alone, fed after its device's last event
        assert fed[0].rules[-1].type == "TableOpened"
        assert len(fed[0].rules) <= 2


def test_the_context_reads_the_shoe_not_the_table_s_history(
        floor: tuple[Store, KeyRegistry | None]) -> None:
    store, _ = floor
    t, rid, first, last = _picked(store)[-1]
    fed: list[Fed] = []
    rebuild_span(store, t, first, last, [rid], fed=fed)
    ctx = context_of(store, t, first)
    whole = _whole(store, t, first)
    assert ctx.begin > whole.begin
    # what is fed before the round is the shoe so far and the TableOpened alone
    shoe = [st for st in lookup.stream(store, t, ctx.begin, first - 1)]
    assert len(fed[0].context) == len(shoe)
    assert fed[0].context[0].type == "ShoeLoaded"
    assert len(fed[0].context) < len(list(lookup.stream(store, t, whole.begin, first - 1)))


def test_the_audit_s_own_reads_find_what_a_scan_of_the_table_finds(
        floor: tuple[Store, KeyRegistry | None]) -> None:
    """The recent positions, each device's last seq, a device's event at a seq and the
    latest audit state, read in windows by position, are what a scan of the table's
    events finds."""
    store, _ = floor
    for t in [r["table_id"] for r in store.query("SELECT DISTINCT table_id FROM events "
                                                   "WHERE position(table_id, '~') = 0")]:
        rows = store.query("SELECT pos, device_id, seq, event_id FROM events FINAL WHERE "
                           "table_id = {t:String} ORDER BY pos, event_id", {"t": t})
        for r in rows[::97] + rows[-1:]:
            upto = int(r["pos"])
            scan = {x["device_id"]: int(x["s"]) for x in store.query(
                "SELECT device_id, max(seq) AS s FROM events FINAL WHERE table_id = "
                "{t:String} AND pos <= {p:UInt64} GROUP BY device_id", {"t": t, "p": upto})}
            assert history.last_seqs(store, t, upto) == scan
            last = sorted((int(x["pos"]), x["event_id"]) for x in rows
                           if int(x["pos"]) <= upto)[-50:]
            assert history.recent_positions(store, t, upto, 50) == {e: p for p, e in last}
            assert lookup.at_seq(store, t, r["device_id"], int(r["seq"])) == sorted(
                (x["event_id"], int(x["pos"])) for x in rows
                if x["device_id"] == r["device_id"] and x["seq"] == r["seq"])
        state = store.query("SELECT max(pos) AS p FROM audit_states WHERE table_id = "
                            "{t:String}", {"t": t})[0]
        assert history._state_before(store, t, None)[0]["pos"] == state["p"]


def test_a_device_s_last_seq_is_its_largest_after_a_restart(
        floor: tuple[Store, KeyRegistry | None]) -> None:
    """A device restarted (seq 1 again) or a late copy moves no device forward on the
    record clock (pitwatch/store/order.py): its last seq read back by position is the
    largest it sent, as a scan of its events finds."""
    sent = [("A", 1), ("B", 1), ("A", 2), ("A", 3), ("B", 2), ("A", 1), ("A", 2),
            ("B", 3), ("A", 3), ("A", 4), ("B", 2), ("A", 5), ("B", 4)]
    clock = table_clock()
    values = []
    for i, (d, seq) in enumerate(sent):
        ev = SimpleNamespace(event_id=f"e{i:02d}", device_id=d, seq=seq)
        values.append(f"('x{i:02d}', 'T~restart', '{d}', {seq}, "
                      f"toDateTime({1_700_000_000 + i}), {clock.position(ev)})")
    store, _ = floor
    store.query("INSERT INTO events (event_id, table_id, device_id, seq, ts, pos) VALUES "
                + ", ".join(values))
    for r in store.query("SELECT pos FROM events WHERE table_id = 'T~restart' ORDER BY pos"):
        scan = {x["device_id"]: int(x["s"]) for x in store.query(
            "SELECT device_id, max(seq) AS s FROM events WHERE table_id = 'T~restart' AND "
            "pos <= {p:UInt64} GROUP BY device_id", {"p": int(r["pos"])})}
        assert lookup.seqs_upto(store, "T~restart", int(r["pos"])) == scan
    assert lookup.seqs_upto(store, "T~restart", 10**12) == {"A": 5, "B": 4}
