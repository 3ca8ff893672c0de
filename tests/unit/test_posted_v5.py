"""Schema version 5: `rules` posts the five other wagers 13:69F-2.25(h) bars beside the
bonus wager and the rounding rule (issue 36, the contract), and every TableOpened
written before keeps its bytes and digest, as Avro and as JSON Lines (docs/events.md:
"a `TableOpened` whose rules have them all at their defaults is written as the union's
`TableOpened` ... so every `TableOpened` written before version 5, as Avro or as JSON
Lines with or without the new keys, keeps its bytes and digest")."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import fastavro
import orjson
import pytest

from pitwatch.events.avro import decode_single, digest, encode, encode_single, to_datum
from pitwatch.events.jsonl import InvalidEvent, dumps, loads
from pitwatch.events.model import POSTED_V5, Event, TableOpened
from pitwatch.events.schema import schemas_dir, strip_logical
from pitwatch.producers.simulate import Floor
from tests.rounds import TableScript, audit


def _released(version: int) -> Any:
    path = schemas_dir() / "avro" / "released" / f"v{version}" / "TableEvent.avsc"
    return fastavro.parse_schema(strip_logical(json.loads(path.read_text())))


def _opened() -> list[Event]:
    return [e for e in Floor(4, 1, seed=3).events() if isinstance(e.payload, TableOpened)]


def _posting(ev: Event, **changes: Any) -> Event:
    assert isinstance(ev.payload, TableOpened)
    return replace(ev, payload=replace(ev.payload, rules=replace(ev.payload.rules, **changes)),
                   raw=None)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_a_table_opened_that_posts_nothing_new_keeps_its_bytes(version: int) -> None:
    old = _released(version)
    for ev in _opened():
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, old, to_datum(ev))
        assert encode(ev) == buf.getvalue()


def test_a_json_line_written_before_version_5_keeps_its_digest() -> None:
    """The line without the new keys (as it is written), and with them at their
    defaults, is the same event under the same digest."""
    for ev in _opened():
        old = orjson.loads(dumps(ev))
        assert not POSTED_V5.keys() & old["rules"].keys()
        d = {**old, "rules": {**old["rules"], **POSTED_V5}}
        for line in (orjson.dumps(old), orjson.dumps(d)):
            got = loads(line)
            assert got == ev and digest(got) == digest(ev)


@pytest.mark.parametrize("changes", [{"in_between_wager": True}, {"streak_wager": True},
                                     {"rounding": "HOUSE"}, {"rounding": "CHIP_UNIT"}])
def test_a_posting_of_version_5_is_a_posted_table_opened(changes: dict[str, Any]) -> None:
    ev = _posting(_opened()[0], **changes)
    assert to_datum(ev)["payload"][0] == "pitwatch.events.PostedTableOpened"
    assert decode_single(encode_single(ev)) == ev
    assert loads(dumps(ev)) == ev and digest(loads(dumps(ev))) == digest(ev)
    with pytest.raises(ValueError):  # version 4 has no way to say it
        fastavro.schemaless_writer(io.BytesIO(), _released(4), to_datum(ev))


def test_a_rounding_outside_the_vocabulary_is_refused() -> None:
    d = orjson.loads(dumps(_opened()[0]))
    d["rules"]["rounding"] = "DEALER"
    with pytest.raises(InvalidEvent, match="rounding"):
        loads(orjson.dumps(d))
    d["rules"]["rounding"] = "HOUSE"
    d["rules"]["streak_wager"] = "yes"
    with pytest.raises(InvalidEvent, match="streak_wager"):
        loads(orjson.dumps(d))


@pytest.mark.parametrize("rounding, paid, ok", [
    ("HOUSE", 1501, True), ("HOUSE", 1502, False),
    ("PLAYER", 1502, True), ("PLAYER", 1501, False),
])
def test_a_posted_rounding_is_the_rule_judged(rounding: str, paid: int, ok: bool) -> None:
    """procedure: "Rounding is one stated rule" (a table posts its rule, `rules.rounding`).

    A blackjack on 1,001 cents at 3 to 2 is 1,501.5 cents: at a table posting HOUSE the
    house keeps the odd cent, and 1,502 is a cent too much; at PLAYER the reverse."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-R5", rounding=rounding)
    sc.start(1, [1])
    sc.wager(1, "MAIN", 1001)
    sc.deal({1: ("A", "K")}, up="9", hole="8")
    sc.insert_hole(False)
    sc.pay(1, "MAIN", paid)
    sc.clear(1)
    sc.reveal()
    sc.finish_round()
    found = [v.code for v in audit(sc.events)]
    assert found == ([] if ok else ["PAYOUT_WRONG"])


@pytest.mark.parametrize("rounding", ["HOUSE", "CHIP_UNIT"])
@pytest.mark.parametrize("k", range(4))
def test_the_simulator_pays_by_the_posted_rounding_and_the_audit_agrees(rounding: str,
                                                                        k: int) -> None:
    """Each game's table posting another rounding: dealt by it, judged by it, clean."""
    from pitwatch.audit.run import audit_events
    from pitwatch.producers.floor import KINDS, TableConfig
    from pitwatch.producers.table import TableRun

    jurisdiction, game, variants = KINDS[k]
    variant, rules = variants[0]
    cfg = TableConfig(1, f"RD-{k}", jurisdiction, game, variant,
                      replace(rules, rounding=rounding))
    run = TableRun(cfg, 11, 200, 0.0, [], sign=False)
    evs = run.opening()
    for n in range(1, 201):
        evs += run.play(n)
    evs += run.close()
    rep = audit_events(evs)
    assert rep.violations == [] and rep.engine_errors == []
