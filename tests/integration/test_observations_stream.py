"""Game protection streamed (docs/analytics.md, "Streaming"): the same floor through the
worker and the sink, and through the embedded `pitwatch protect`, gives the same
observations. The worker's scopes (seat sessions, the table's hold) come from the
observations topic; the floor-wide ones (dealers) from `pitwatch protect` over the
sink's store. Every wait is on a condition with a deadline."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from pitwatch.cli import main
from pitwatch.events.avro import digest
from pitwatch.events.model import Event, PayoutMade, RoundStarted
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.observation import DEALER, SEAT_SESSION, TABLE, Observation
from pitwatch.protect.rounds import read_floor
from pitwatch.protect.run import observe
from pitwatch.protect.stored import observation_row

from .conftest import CH_HOST, CH_PORT, Expected, Pipeline, wait_until

#: the columns compared: the id, what it says and every figure
COLUMNS = ("observation_id", "code", "scope", "table_id", "subject", "seat", "dealer_id",
           "statistic", "value", "p_value", "likelihood_ratio", "strength", "rounds",
           "weight_rounds", "inferred", "player_id", "player_kind", "message", "details")


def _floor() -> list[Event]:
    """Two small tables of a Hi-Lo counter, a flat bettor and a hole-card player at a
    flashing dealer: one without seat events (sessions inferred), one with them; and a
    dealer who overpays a hand in each of ERRORS rounds (the floor's only errors)."""
    out: list[Event] = []
    seats = {1: "counter-8", 3: "flat", 4: "holecard"}
    for v, seated in ((0, False), (1, True)):
        players = {s: make_player(p, 5, s, v) for s, p in seats.items()}
        out += events(SimTable(v, 5, players, flash=0.3, variant=v, seated=seated), 120, 5)
    return _overpaid(out, "SD00000-001")


ERRORS = 4


def _overpaid(evs: list[Event], dealer: str) -> list[Event]:
    """The first payout of each of the dealer's first ERRORS paying rounds raised by a
    chip, each device's digest chain linked again over the changed event."""
    relinked: dict[bytes, bytes] = {}
    out: list[Event] = []
    dealt, paid = "", set[str | None]()
    for ev in evs:
        new = ev
        if type(ev.payload) is RoundStarted:
            dealt = ev.payload.dealer_id
        elif (type(ev.payload) is PayoutMade and dealt == dealer and len(paid) < ERRORS
              and ev.round_id not in paid):
            paid.add(ev.round_id)
            new = replace(ev, payload=replace(ev.payload, amount=ev.payload.amount + 100))
        if new is not ev or (ev.prev_digest is not None and ev.prev_digest in relinked):
            new = replace(new, raw=None, prev_digest=None if ev.prev_digest is None
                          else relinked.get(ev.prev_digest, ev.prev_digest))
            relinked[digest(ev)] = digest(new)
        out.append(new)
    assert len(paid) == ERRORS
    return out


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row as compared: nan figures as None, lists as tuples, counts as ints."""
    out: list[Any] = []
    for c in COLUMNS:
        v = row[c]
        if isinstance(v, float) and math.isnan(v):
            v = None
        elif isinstance(v, list):
            v = tuple(v)
        elif c in ("seat", "rounds", "inferred"):
            v = int(v)
        out.append(v)
    return tuple(out)


def _stored(p: Pipeline, where: str = "") -> dict[str, tuple[Any, ...]]:
    rows = p.store.query(f"SELECT {', '.join(COLUMNS)} FROM observations FINAL {where}")
    return {r["observation_id"]: _key(r) for r in rows}


def _rows(found: list[Observation]) -> dict[str, tuple[Any, ...]]:
    return {o.observation_id: _key(observation_row(o)) for o in found}


@pytest.mark.integration
def test_streamed_and_embedded_observations_are_the_same(pipeline: Pipeline,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    floor = _floor()
    read = read_floor(floor)
    embedded = observe(read.floor.tables, read.violations, read.floor.seatings)
    worker_scopes = _rows([o for o in embedded if o.scope in (SEAT_SESSION, TABLE)])
    assert [(o.code, o.subject) for o in embedded if o.scope == DEALER] == [
        ("DEALER_ERROR_RATE", "SD00000-001")]
    assert {k[1] for k in worker_scopes.values()} == {"COUNT_CORRELATED_BETTING",
                                                      "HOLE_CARD_PLAY"}

    # a table quiet for 2 s publishes its open sessions and hold as they stand
    pipeline.start_worker("w", "--round-timeout", "2", "--idle-check", "0.5")
    pipeline.produce(floor)
    exp = Expected(floor)
    pipeline.wait_for(exp, timeout=300)

    def streamed() -> bool:
        return _stored(pipeline) == worker_scopes

    try:
        wait_until("the worker's observations in ClickHouse", streamed, timeout=120)
    except AssertionError:
        got = _stored(pipeline)
        diff = [f"  {k}: stream {got.get(k)}\n     embedded {worker_scopes.get(k)}"
                for k in sorted(set(got) | set(worker_scopes))
                if got.get(k) != worker_scopes.get(k)]
        raise AssertionError("observations that differ:\n" + "\n".join(diff)) from None

    # the floor-wide scopes: `pitwatch protect` over the sink's store, written back there
    assert main(["protect", "--clickhouse", f"{CH_HOST}:{CH_PORT}", "--clickhouse-db",
                 pipeline.id, "--format", "jsonl"]) == 0
    capsys.readouterr()
    assert _stored(pipeline) == _rows(embedded)
