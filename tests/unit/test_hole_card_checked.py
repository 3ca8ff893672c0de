"""The dealer's peek at a PEEK table: HoleCardChecked, schema version 4 (issue 36, the
contract). Appending the payload to the end of the union leaves every event of the
earlier versions with its bytes and digest; the peek times insurance and its collection
(docs/regulations/posted-rules.txt (d)3-4); the simulator's PEEK tables emit it."""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import replace
from typing import Any

import fastavro
import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import decode_single, digest, encode, encode_single, to_datum
from pitwatch.events.jsonl import dumps, loads
from pitwatch.events.model import Event, HoleCardChecked
from pitwatch.events.schema import schemas_dir, strip_logical, writer_schemas
from pitwatch.producers.floor import BLACKJACK, NJ_BLACKJACK, TableConfig
from pitwatch.producers.simulate import Floor
from pitwatch.producers.table import TableRun
from tests.rounds import TableScript, audit, expect, only, quotes, regulation_text

INSURANCE = ("Posted insurance at a New Jersey blackjack table (13:69F-2.9 not retrieved), "
             "docs/regulations/posted-rules.txt (d)")


def _released(version: int) -> Any:
    path = schemas_dir() / "avro" / "released" / f"v{version}" / "TableEvent.avsc"
    return fastavro.parse_schema(strip_logical(json.loads(path.read_text())))


def _branches(schema: Any) -> set[str]:
    payload = next(f for f in schema["fields"] if f["name"] == "payload")
    return {b["name"].rsplit(".", 1)[-1] for b in payload["type"]}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_v4_keeps_every_earlier_event_s_bytes_and_digest(version: int) -> None:
    """Each event of a signed seeded floor that version `version` can write is the same
    bytes, so the same digest, under it as under v4 (the current writer)."""
    old = _released(version)
    branches = _branches(old)
    seen = 0
    for ev in Floor(4, 6, seed=3).events():
        datum = to_datum(ev)
        if datum["payload"][0].rsplit(".", 1)[-1] not in branches:
            continue
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, old, datum)
        assert buf.getvalue() == encode(ev), ev
        seen += 1
    assert seen > 500


def test_v4_is_v3_with_one_payload_appended() -> None:
    v3, v4 = (json.loads((schemas_dir() / "avro" / "released" / f"v{v}" /
                          "TableEvent.avsc").read_text()) for v in (3, 4))
    u3, u4 = (next(f for f in s["fields"] if f["name"] == "payload")["type"] for s in (v3, v4))
    assert u4[:-1] == u3 and u4[-1]["name"] == "HoleCardChecked"
    assert {k: v for k, v in v3.items() if k not in ("fields", "version")} == \
        {k: v for k, v in v4.items() if k not in ("fields", "version")}
    assert v3["fields"][:-1] == v4["fields"][:-1]


def test_a_v3_message_reads_with_its_digest() -> None:
    """A message under the v3 header (a device not yet upgraded) still reads, its bytes
    and digest as written."""
    v3 = next(w for w in writer_schemas().values() if w.source.endswith("v3/TableEvent.avsc"))
    ev = next(iter(Floor(1, 1, seed=3, sign=False).events()))
    msg = b"\xc3\x01" + v3.crc + encode(ev)
    got = decode_single(msg)
    assert got == ev and digest(got) == digest(ev) and got.writer == v3.crc


def test_the_peek_in_each_form() -> None:
    ev = Event("e-1", "T-01", "T-01-console", 9, 5, "R-1", b"\x01" * 32, HoleCardChecked(True))
    assert decode_single(encode_single(ev)) == ev
    assert loads(dumps(ev)) == ev
    assert b'"type":"HoleCardChecked"' in dumps(ev) and b'"dealer_blackjack":true' in dumps(ev)


# --- the checks the peek enables -----------------------------------------------------


def _peek_round(*, insure: str = "before", collect: str = "at once") -> TableScript:
    """Seat 1 (2,000) holds 10 9 against an ace at a PEEK table; the hole card is a 7
    (no blackjack). Insurance of 1,000 `insure`s the peek ("before", "after": then void
    and handed back). The losing insurance is collected `collect` ("at once" after the
    peek, "after the decision")."""
    sc = TableScript.opened("nj_blackjack", "T-PEEK", hole_card="PEEK")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "9")}, up="A", hole="7")
    sc.offer_insurance()
    if insure == "before":
        sc.wager(1, "INSURANCE", 1000)
    sc.peek(False)
    if insure == "after":
        sc.wager(1, "INSURANCE", 1000)
        sc.give_back(1, "INSURANCE", 1000)
    elif collect == "at once":
        sc.collect(1, "INSURANCE", 1000)
    sc.decide(1, "STAND")
    if insure == "before" and collect != "at once":
        sc.collect(1, "INSURANCE", 1000)
    sc.reveal()
    sc.pay(1, "MAIN", 2000)  # 19 against a soft 18
    sc.clear(1)
    sc.clear()
    sc.end()
    return sc


def test_insurance_before_the_peek_collected_at_once_is_compliant() -> None:
    assert audit(_peek_round().events) == []


def test_insurance_after_the_peek_is_too_late() -> None:
    """posted-rules.txt (d)3:

    > Insurance is placed after the initial deal and before any further card, and, where
    > a card reader is used, before the hole card goes into the reader; where the dealer
    > peeks at the hole card instead, before the peek."""
    sc = _peek_round(insure="after")
    wager = next(e for e in sc.events if e.type == "WagerPlaced"
                 and getattr(e.payload, "kind", "") == "INSURANCE")
    v = only(audit(sc.events), "INSURANCE_TOO_LATE")
    expect(v, code="INSURANCE_TOO_LATE", severity="HIGH",
           citation=f"{INSURANCE}3", event=wager, seat=1,
           hand=0, pack="nj-blackjack")
    assert "after the dealer peeked at the hole card" in v.message


def test_losing_insurance_is_collected_as_soon_as_the_peek_shows_no_blackjack() -> None:
    """posted-rules.txt (d)4:

    > Losing insurance is collected as soon as the hole card is known to make no
    > blackjack and before the dealer draws any further card.

    The peek makes it known: still up when the player acts is late."""
    sc = _peek_round(collect="after the decision")
    decision = next(e for e in sc.events if e.type == "PlayerDecision")
    v = only(audit(sc.events), "INSURANCE_COLLECTION_LATE")
    expect(v, code="INSURANCE_COLLECTION_LATE", severity="MEDIUM",
           citation=f"{INSURANCE}4", event=decision,
           seat=1, hand=0, pack="nj-blackjack")


def test_the_quotes_are_the_posted_rules_text() -> None:
    text = regulation_text()
    assert text is not None
    docs = [test_insurance_after_the_peek_is_too_late.__doc__,
            test_losing_insurance_is_collected_as_soon_as_the_peek_shows_no_blackjack.__doc__]
    found = [q for doc in docs for q in quotes(doc or "")]
    assert len(found) == 2
    for q in found:
        assert q in text, q


# --- the simulator ----------------------------------------------------------------------


def test_the_simulator_peeks_at_a_peek_table_and_the_audit_finds_nothing() -> None:
    variant, rules = NJ_BLACKJACK[3]
    cfg = TableConfig(1, "PK-BJ-01", "NJ", BLACKJACK, variant + "-peek",
                      replace(rules, hole_card="PEEK"))
    run = TableRun(cfg, 5, 300, 0.0, [], sign=False)
    evs = run.opening()
    for k in range(1, 301):
        evs += run.play(k)
    evs += run.close()
    types = Counter(e.type for e in evs)
    ups = sum(1 for e in evs if e.type == "CardDealt" and getattr(e.payload, "to", "") ==
              "DEALER" and getattr(e.payload, "face_up", False))
    assert 0 < types["HoleCardChecked"] < ups
    assert types["HoleCardInserted"] == 0
    rep = audit_events(evs)
    assert rep.violations == [] and rep.engine_errors == []


def test_a_seeded_floor_has_no_peek_table_and_no_peek() -> None:
    """No table of the floor peeks, so the payload changes no event of a seeded floor."""
    assert not any(e.type == "HoleCardChecked" for e in Floor(8, 20, seed=7).events())
