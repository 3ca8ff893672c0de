"""The record checks the auditor makes for every pack (docs/events.md: seq, prev_digest,
redelivery, RoundEnded) and the procedure and card checks every pack holds, on
hand-built streams.

Each fault asserts exactly the one violation it should raise and its fields; each
compliant stream asserts none at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from pitwatch.events.avro import digest
from pitwatch.events.model import CardDealt, Event, RoundStarted, TableOpened
from pitwatch.packs.base import RECORD_CITATIONS, SHOE_POSTED
from tests.rounds import GAMES, Audit, TableScript, audit, codes, expect, only

KINDS = sorted(GAMES)
PACKS = {"nj_blackjack": "nj-blackjack", "nj_switch": "nj-blackjack-switch",
         "pa_free_bet": "pa-free-bet-blackjack", "nz_blackjack": "nz-blackjack"}
LOST = RECORD_CITATIONS["EVENTS_LOST"][1]
CONFLICT = RECORD_CITATIONS["SEQUENCE_CONFLICT"][1]
DIGEST = RECORD_CITATIONS["DIGEST_MISMATCH"][1]
INCOMPLETE = RECORD_CITATIONS["ROUND_INCOMPLETE"][1]
PROCEDURE = RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1]
CARD_COUNT = SHOE_POSTED


def plain_round(sc: TableScript, round_no: int | str = 1, *, end: bool = True,
                before_pay: Callable[[], object] | None = None,
                hole_card_dealt: Callable[[], object] | None = None,
                draw_suit: str = "C", paid: int = 2000) -> None:
    """A compliant round for any of the four tables: seat 1 (hands 0 and 1 at Blackjack
    Switch) stands on 19 (its first card the 10 of spades) against a dealer 9 + 7 that
    draws a 10 of `draw_suit` (with no hole card the 7 comes after the players act):
    the dealer busts and every hand is paid `paid`. The hooks run just before the first
    payment and right after the dealer's second card."""
    switch = sc.game == "BLACKJACK_SWITCH"
    hands = [0, 1] if switch else [0]
    none = sc.rules.hole_card == "NONE"
    sc.start(round_no, [1])
    for hand in hands:
        sc.wager(1, "MAIN", 2000, hand)
    sc.deal({(1, hand): ("10", "9") for hand in hands}, up="9", hole=None if none else "7")
    if hole_card_dealt is not None and not none:
        hole_card_dealt()
    if switch:
        sc.offer_switch(1)
    for hand in hands:
        sc.decide(1, "STAND", hand)
    if none:
        sc.dealer("7", "C")
        if hole_card_dealt is not None:
            hole_card_dealt()
    else:
        sc.reveal()
    sc.dealer("10", draw_suit)  # 26
    if before_pay is not None:
        before_pay()
    for hand in hands:
        sc.pay(1, "MAIN", paid, hand)
        sc.clear(1, hand)
    if end:
        sc.finish_round()


def device_events(events: list[Event], device: str) -> list[Event]:
    return [e for e in events if e.device_id == device]


@pytest.mark.parametrize("kind", KINDS)
def test_a_plain_round_of_every_table_is_clean(kind: str) -> None:
    sc = TableScript.opened(kind, "T-01")
    plain_round(sc)
    assert audit(sc.events) == []
    devices = {e.device_id for e in sc.events}
    assert devices >= {"T-01-console", "T-01-shoe", "T-01-rfid"}


# --- seq ------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_a_sequence_gap_is_events_lost_naming_the_missing_range(kind: str, missing: int) -> None:
    """docs/events.md § The record: "A device whose `seq` jumps lost events: a break in
    the record (EVENTS_LOST)". Raised once, on the event after the gap, naming the
    missing seq (or range). The round the gap cuts is not judged after it: the payment
    of 1 cent is no PAYOUT_WRONG, and the round is no ROUND_INCOMPLETE either."""
    sc = TableScript.opened(kind, "T-01")
    plain_round(sc, before_pay=lambda: sc.skip("rfid", missing), paid=1)
    rfid = device_events(sc.events, "T-01-rfid")
    last = len([e for e in rfid if type(e.payload).__name__ == "WagerPlaced"])
    shown = rfid[last]
    assert shown.seq == last + missing + 1
    found = audit(sc.events)
    v = only(found, "EVENTS_LOST")
    assert codes(found) == ["EVENTS_LOST"]
    expect(v, code="EVENTS_LOST", severity="HIGH", citation=LOST, event=shown, seat=None,
           hand=None, pack=PACKS[kind])
    gap = f"seq {last + 1}" if missing == 1 else f"seq {last + 1}–{last + missing}"
    assert v.message.startswith(
        f"T-01-rfid {gap} missing (got {last + missing + 1} after {last}): events lost")


def test_a_sequence_gap_on_a_table_event_has_no_round() -> None:
    """A gap seen on `ShoeLoaded` (round_id null) is the table's, not a round's."""
    sc = TableScript.of("nj_blackjack", "T-01")
    sc.open()
    sc.shoe()
    sc.skip("shoe")
    shoe = sc.shoe()
    plain_round(sc)
    v = only(audit(sc.events), "EVENTS_LOST")
    assert (v.round_id, v.event_id, v.pack) == ("", shoe.event_id, "nj-blackjack")


@pytest.mark.parametrize("kind", KINDS)
def test_sequence_conflict_is_raised_and_the_copy_ignored(kind: str) -> None:
    """docs/events.md: one `seq` of one device carried two different events. The
    second is raised and not applied: here a second card with the seq of the dealer's
    drawn 10 would have made the dealer's hand 36, which nothing else then judges."""
    sc = TableScript.opened(kind, "T-01")
    copy: list[Event] = []

    def conflicting() -> None:
        last = device_events(sc.events, "T-01-shoe")[-1]
        copy.append(sc.emit(CardDealt("DEALER", None, None, "K", "H", True),
                            seq=last.seq, event_id=sc.event_id(last.device_id, last.seq, "b"),
                            prev_digest=last.prev_digest, record=False))

    plain_round(sc, before_pay=conflicting)
    v = only(audit(sc.events), "SEQUENCE_CONFLICT")
    expect(v, code="SEQUENCE_CONFLICT", severity="HIGH", citation=CONFLICT, event=copy[0],
           seat=None, hand=None, pack=PACKS[kind])
    first = device_events(sc.events, "T-01-shoe")[-2]
    assert v.message == (f"T-01-shoe seq {first.seq} was recorded as {digest(first)[:8].hex()}… "
                         f"and now comes as {digest(copy[0])[:8].hex()}…, another event: a "
                         "different copy of a recorded event, not applied (the first copy "
                         "stands)")


@pytest.mark.parametrize("kind", KINDS)
def test_redelivery_is_a_no_op(kind: str) -> None:
    """docs/events.md: a second copy of the same event_id is a redelivery, not a new
    event: no violation, and nothing counted twice (the wager of a redelivered
    WagerPlaced, the events of the round)."""
    sc = TableScript.opened(kind, "T-01")
    plain_round(sc)
    once = Audit().feed(sc.events)
    once.auditor.finish()
    wager = next(e for e in sc.events if type(e.payload).__name__ == "WagerPlaced")
    card = next(e for e in sc.events if type(e.payload).__name__ == "CardDealt")
    end = sc.events[-1]
    stream = []
    for e in sc.events:
        stream.append(e)
        if e in (wager, card, end):
            stream.append(e)  # redelivered at once
    stream.extend(sc.events[3:8])  # and a few again, late
    twice = Audit().feed(stream)
    twice.auditor.finish()
    assert twice.violations == []
    assert twice.rounds == once.rounds
    assert twice.rounds[0].wagered == once.rounds[0].wagered == (4000 if kind == "nj_switch"
                                                                  else 2000)


def test_a_whole_stream_delivered_twice_is_audited_once() -> None:
    sc = TableScript.opened("nz_blackjack", "T-01")
    plain_round(sc)
    a = Audit().feed(sc.events + sc.events)
    a.auditor.finish()
    assert a.violations == []
    assert len(a.rounds) == 1


# --- prev_digest ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_digest_mismatch_on_an_altered_prev_digest(kind: str) -> None:
    """docs/events.md: `prev_digest` is SHA-256 of the previous event from the same
    device, in its canonical Avro binary form. One event's prev_digest altered (the
    chain then goes on from that event as sent): exactly one violation, on it."""
    sc = TableScript.opened(kind, "T-01")
    plain_round(sc, before_pay=lambda: sc.corrupt_next("rfid"))
    bad = next(e for e in sc.events if type(e.payload).__name__ == "PayoutMade")
    assert bad.prev_digest == bytes(32)
    v = only(audit(sc.events), "DIGEST_MISMATCH")
    expect(v, code="DIGEST_MISMATCH", severity="LOW", citation=DIGEST, event=bad,
           seat=None, hand=None, pack=PACKS[kind])
    before = device_events(sc.events, "T-01-rfid")[bad.seq - 2]
    assert v.message == (f"T-01-rfid seq {bad.seq} prev_digest 000000000000… does not match "
                         f"its previous event ({digest(before).hex()[:12]}…)")


def test_digest_mismatch_proves_an_event_was_altered() -> None:
    """An event altered after it was sent (here the dealer on RoundStarted): the next
    event of its device no longer chains to it."""
    sc = TableScript.opened("nj_blackjack", "T-01")
    plain_round(sc)
    i = next(i for i, e in enumerate(sc.events) if type(e.payload).__name__ == "RoundStarted")
    events = list(sc.events)
    events[i] = replace(events[i], payload=RoundStarted("D-6666", (1,)))
    shown = next(e for e in events[i + 1:] if e.device_id == "T-01-console")
    assert shown.prev_digest == digest(sc.events[i]) != digest(events[i])
    v = only(audit(events), "DIGEST_MISMATCH")
    expect(v, code="DIGEST_MISMATCH", severity="LOW", citation=DIGEST, event=shown, seat=None,
           hand=None, pack="nj-blackjack")


def test_digest_mismatch_on_a_first_event_that_claims_a_predecessor() -> None:
    """A device's seq 1 has no predecessor: its prev_digest is null. (Seen on the
    TableOpened itself, before it selects the pack: the record-only pack raises it.)"""
    sc = TableScript.of("pa_free_bet", "T-01")
    opened = sc.emit(TableOpened(sc.jurisdiction, sc.game, sc.rules), prev_digest=b"\x01" * 32)
    sc.shoe()
    plain_round(sc)
    v = only(audit(sc.events), "DIGEST_MISMATCH")
    expect(v, code="DIGEST_MISMATCH", severity="LOW", citation=DIGEST, event=opened,
           seat=None, hand=None, pack="record-only")
    assert v.message.endswith("does not match its previous event (none…)")


# --- ROUND_INCOMPLETE -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_round_incomplete_when_the_next_round_starts(kind: str) -> None:
    """docs/violations.md: a round with no RoundEnded after the table moved on. Raised
    on the next round's first event (its evidence, and its time), cited on the round's
    last event as every ROUND_INCOMPLETE is (docs/procedure.md); the next round itself
    is clean."""
    sc = TableScript.opened(kind, "T-01")
    plain_round(sc, 1, end=False)
    sc.clear()
    last = sc.events[-1]
    nxt = len(sc.events)
    plain_round(sc, 2)
    shown = sc.events[nxt]
    v = only(audit(sc.events), "ROUND_INCOMPLETE")
    assert (v.code, v.severity, v.citation, v.pack) == (
        "ROUND_INCOMPLETE", "LOW", INCOMPLETE, PACKS[kind])
    assert (v.table_id, v.round_id, v.seat, v.hand) == ("T-01", "T-01-000001", None, None)
    assert (v.event_id, v.evidence, v.detected_at) == (
        last.event_id, (shown.event_id,), shown.ts)
    assert v.message == ("round T-01-000001 has no RoundEnded: the table moved on to round "
                         "T-01-000002")


@pytest.mark.parametrize("kind", KINDS)
def test_round_incomplete_when_the_input_ends(kind: str) -> None:
    sc = TableScript.opened(kind, "T-01")
    plain_round(sc, end=False)
    last = sc.events[-1]
    v = only(audit(sc.events), "ROUND_INCOMPLETE")
    expect(v, code="ROUND_INCOMPLETE", severity="LOW", citation=INCOMPLETE, event=last,
           seat=None, hand=None, pack=PACKS[kind])
    assert v.message.endswith("the input ended before RoundEnded")


def test_round_incomplete_after_its_time_out_by_the_callers_clock() -> None:
    """`expire(now, timeout)`: a round with nothing for more than `timeout` ms by the
    caller's `now` is incomplete; at exactly `timeout` it is not yet."""
    sc = TableScript.opened("nj_switch", "T-01")
    plain_round(sc, end=False)
    last = sc.events[-1]
    assert audit(sc.events, now=last.ts + 60_000, timeout=60_000, finish=False) == []
    now = last.ts + 60_001
    v = only(audit(sc.events, now=now, timeout=60_000, finish=False), "ROUND_INCOMPLETE")
    assert (v.event_id, v.round_id, v.detected_at) == (last.event_id, last.round_id, now)
    assert v.message.endswith("no RoundEnded within 60 s of its last event")
    # a complete round never expires
    done = TableScript.opened("nj_switch", "T-01")
    plain_round(done)
    assert audit(done.events, now=done.events[-1].ts + 10**9, timeout=1, finish=False) == []


def test_an_event_for_an_expired_round_is_out_of_order() -> None:
    sc = TableScript.opened("nj_blackjack", "T-01")
    plain_round(sc, end=False)
    late = sc.end()
    a = Audit().feed(sc.events[:-1])
    a.auditor.expire(late.ts + 1, 0)
    a.feed([late])
    a.auditor.finish()
    assert [v.code for v in a.violations] == ["ROUND_INCOMPLETE", "PROCEDURE_OUT_OF_ORDER"]
    expect(a.violations[1], code="PROCEDURE_OUT_OF_ORDER", severity="MEDIUM",
           citation=PROCEDURE, event=late, seat=None, hand=None, pack="nj-blackjack")
    assert a.violations[1].message == "RoundEnded after the round ended"
    assert [r.complete for r in a.rounds] == [False]


@pytest.mark.parametrize("kind", KINDS)
def test_a_round_that_ended_is_not_incomplete_when_the_next_one_starts(kind: str) -> None:
    """Two complete rounds in a row: nothing raised, each summed once, complete."""
    sc = TableScript.opened(kind, "T-01")
    plain_round(sc, 1)
    plain_round(sc, 2)
    a = Audit().feed(sc.events)
    a.auditor.finish()
    assert a.violations == []
    assert [(r.round_id, r.complete) for r in a.rounds] == [("T-01-000001", True),
                                                           ("T-01-000002", True)]


# --- the procedure and the cards (every pack) ----------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_event_before_round_started_is_out_of_order(kind: str) -> None:
    sc = TableScript.opened(kind, "T-01")
    sc.round_id = sc.round_name(1)
    early = sc.wager(1, "MAIN", 500, 3)  # before RoundStarted: void, and handed back
    plain_round(sc, before_pay=lambda: sc.give_back(1, "MAIN", 500, 3))
    v = only(audit(sc.events), "PROCEDURE_OUT_OF_ORDER")
    expect(v, code="PROCEDURE_OUT_OF_ORDER", severity="MEDIUM", citation=PROCEDURE,
           event=early, seat=None, hand=None, pack=PACKS[kind])
    assert v.message == "WagerPlaced before RoundStarted"


def _procedure_fault(sc: TableScript, fault: str) -> list[Event]:
    """A plain round with one event it cannot admit, placed where it shows."""
    shown: list[Event] = []
    if fault == "main after the first card":
        plain_round(sc, hole_card_dealt=lambda: (shown.append(sc.wager(2, "MAIN", 1000)),
                                                 sc.give_back(2, "MAIN", 1000)))
    elif fault == "card to a seat with no wager":
        plain_round(sc, hole_card_dealt=lambda: shown.append(sc.card(4, "5", "D")))
    elif fault == "decision for a seat not playing":
        plain_round(sc, hole_card_dealt=lambda: shown.append(sc.decide(3, "HIT")))
    elif fault == "split wager with no split":
        plain_round(sc, hole_card_dealt=lambda: (shown.append(sc.wager(1, "SPLIT", 2000, 2)),
                                                 sc.give_back(1, "SPLIT", 2000, 2)))
    elif fault == "double for a hand not in play":
        plain_round(sc, hole_card_dealt=lambda: (shown.append(sc.wager(1, "DOUBLE", 2000, 3)),
                                                 sc.give_back(1, "DOUBLE", 2000, 3)))
    elif fault == "side wager never placed settled":
        plain_round(sc, before_pay=lambda: shown.append(sc.pay(1, "MATCH", 500)))
    elif fault == "event after the round ended":
        plain_round(sc)
        shown.append(sc.decide(1, "HIT"))
    return shown


PROCEDURE_FAULTS = {
    "main after the first card": ((2, 0), "placed after the first card"),
    "card to a seat with no wager": ((4, 0), "which has no wager"),
    "decision for a seat not playing": ((3, 0), "which is not in play; playing: [1]"),
    "split wager with no split": ((1, 2), "with no SPLIT decision before it"),
    "double for a hand not in play": ((1, 3), "which is not in play"),
    "side wager never placed settled": ((1, 0), "but no such wager was placed"),
    "event after the round ended": ((None, None), "PlayerDecision after the round ended"),
}


@pytest.mark.parametrize("fault", sorted(PROCEDURE_FAULTS))
@pytest.mark.parametrize("kind", KINDS)
def test_procedure_out_of_order(kind: str, fault: str) -> None:
    """docs/procedure.md: an event the round's state cannot admit is raised once, with
    what was expected, and is void (it changes nothing, so the round is clean
    otherwise)."""
    sc = TableScript.opened(kind, "T-01")
    shown = _procedure_fault(sc, fault)
    (seat, hand), text = PROCEDURE_FAULTS[fault]
    v = only(audit(sc.events), "PROCEDURE_OUT_OF_ORDER")
    expect(v, code="PROCEDURE_OUT_OF_ORDER", severity="MEDIUM", citation=PROCEDURE,
           event=shown[0], seat=seat, hand=hand, pack=PACKS[kind])
    assert text in v.message


@pytest.mark.parametrize("decks, code", [(2, None), (1, "CARD_COUNT_EXCEEDED")])
@pytest.mark.parametrize("kind", KINDS)
def test_card_count_exceeded(kind: str, decks: int, code: str | None) -> None:
    """A shoe holds `decks` copies of each card (ShoeLoaded.decks, not the posted
    rules): the dealer's drawn 10 of spades is the second of the round, after seat 1's
    first card; one deck cannot hold it, two can. The count is raised on the card and
    the card is taken in (the round is otherwise clean)."""
    sc = TableScript.opened(kind, "T-01")
    sc.shoe(decks)
    plain_round(sc, draw_suit="S")
    vs = audit(sc.events)
    if code is None:
        assert vs == []
        return
    drawn = [e for e in sc.events if isinstance(e.payload, CardDealt)
             and e.payload.to == "DEALER"][-1]
    v = only(vs, code)
    expect(v, code=code, severity="MEDIUM", citation=CARD_COUNT, event=drawn, seat=None,
           hand=None, pack=PACKS[kind])
    assert v.message.startswith("10S dealt 2 times")
    assert v.message.endswith("from a shoe of 1 deck(s), which holds 1")


def test_unknown_table_gets_the_record_only_pack() -> None:
    """A table whose jurisdiction no pack covers is judged on the record and the
    procedure only: a wrong payout goes unjudged there (and not at an NJ table), a seq
    gap does not."""
    rules = GAMES["nj_blackjack"][2]
    sc = TableScript("XX-01", "OTHER", "BLACKJACK", rules)
    sc.open()
    sc.shoe()
    plain_round(sc, before_pay=lambda: sc.skip("rfid"), paid=1)
    v = only(audit(sc.events), "EVENTS_LOST")
    assert (v.pack, v.pack_version) == ("record-only", "2")
    nj = TableScript("NJ-01", "NJ", "BLACKJACK", rules)
    nj.open()
    nj.shoe()
    plain_round(nj, paid=1)
    assert codes(audit(nj.events)) == ["PAYOUT_WRONG"]


def test_posted_rules_change_from_the_next_round_on() -> None:
    """docs/events.md: a later TableOpened replaces the rules from the next round on.
    Posted mid-round without surrender, it leaves this round's surrender standing and
    voids the next round's."""
    sc = TableScript.opened("nj_blackjack", "T-01")
    for n in (1, 2):
        sc.start(n, [1])
        sc.wager(1, "MAIN", 2000)
        sc.deal({1: ("10", "6")}, up="6", hole="10")
        if n == 1:
            sc.open(replace(sc.rules, surrender=False))
        surrender = sc.decide(1, "SURRENDER")
        if n == 1:
            sc.collect(1, "MAIN", 1000)
            sc.give_back(1, "MAIN", 1000)
        else:
            sc.decide(1, "STAND")
        sc.reveal()
        if n == 2:
            sc.dealer("5", "C")  # 21
            sc.collect(1, "MAIN", 2000)
        sc.clear(1)
        sc.finish_round()
    v = only(audit(sc.events), "SURRENDER_NOT_AVAILABLE")
    assert (v.round_id, v.event_id) == ("T-01-000002", surrender.event_id)
