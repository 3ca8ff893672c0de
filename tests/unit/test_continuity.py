"""A break in the record (docs/events.md § The record): "one finding about the record,
EVENTS_LOST (HIGH), per break", after which "checks that need the missing part suspend
judgement until the record decides them again"; and "One seq, one event": an identical
copy is a no-op however far back it lies, a different one is refused.

On simulated floors with a stretch of one table deleted (cut mid-round, across a
ShoeLoaded, between rounds), and on hand-built streams (tests/rounds.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import cache

import orjson
import pytest

from pitwatch.engine.auditor import Auditor, RoundSummary, StateError, TableAuditor
from pitwatch.engine.record import HISTORY_SEQS, TRIM, Fed
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import digest
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Event, PayoutMade, RoundEnded, RoundStarted, ShoeLoaded
from pitwatch.events.schema import released_writers
from pitwatch.packs.base import RECORD_CITATIONS
from pitwatch.packs.registry import select
from pitwatch.producers.simulate import Floor
from tests.rounds import TableScript, codes, only

SEED = 606
LOST = RECORD_CITATIONS["EVENTS_LOST"][1]
#: what a deleted stretch alone must never cause (issue 43's cascade)
CASCADE = {"CARD_COUNT_EXCEEDED", "PROCEDURE_OUT_OF_ORDER", "ROUND_INCOMPLETE",
           "SEQUENCE_CONFLICT", "DIGEST_MISMATCH", "SIGNATURE_INVALID", "TABLE_NOT_OPENED"}

Key = tuple[str, str, str, str]  # code, table, round, event


@cache
def floor(inject: float) -> tuple[tuple[Event, ...], KeyRegistry]:
    f = Floor(3, 40, seed=SEED, inject=inject)
    events = tuple(f.events())
    keys = f.registry()
    assert keys is not None
    return events, keys


def run(events: list[Event] | tuple[Event, ...], keys: KeyRegistry | None
        ) -> tuple[list[Violation], list[RoundSummary]]:
    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    a = Auditor(select, found.append, rounds.append, keys=keys, released=released_writers())
    for ev in events:
        a.feed(ev)
    a.finish()
    return found, rounds


def keyed(vs: list[Violation]) -> Counter[Key]:
    return Counter((v.code, v.table_id, v.round_id, v.event_id) for v in vs)


def table_events(events: tuple[Event, ...], table: str) -> list[int]:
    return [i for i, e in enumerate(events) if e.table_id == table]


def stretch(events: tuple[Event, ...], how: str) -> tuple[str, set[int]]:
    """(table, positions of its events to delete) for a stretch cut `how`."""
    table = events[0].table_id
    mine = table_events(events, table)
    evs = [events[i] for i in mine]

    def round_no(k: int) -> int:
        rid = evs[k].round_id
        return int(rid.rsplit("-", 1)[1]) if rid else -1

    def first(pred: object, after: int = 0) -> int:
        return next(k for k in range(after, len(evs)) if pred(evs[k]))  # type: ignore[operator]

    if how == "mid-round":  # from the middle of round 10 to the middle of round 14
        a = first(lambda e: type(e.payload) is PayoutMade, first(lambda e: round_no_of(e) == 10))
        b = first(lambda e: type(e.payload) is PayoutMade, first(lambda e: round_no_of(e) == 14))
    elif how == "mid-shoe":  # across a ShoeLoaded, both ends mid-round
        s = first(lambda e: type(e.payload) is ShoeLoaded, first(lambda e: round_no_of(e) == 8))
        a = s - 15
        b = s + 25
    else:  # between rounds: after round 10's last event to before round 14's first
        a = first(lambda e: round_no_of(e) == 11)
        while evs[a - 1].round_id is None:  # table events between rounds go too
            a -= 1
        b = first(lambda e: type(e.payload) is RoundStarted and round_no_of(e) == 14)
    assert round_no(a) >= 0 or how == "between"
    return table, {mine[k] for k in range(a, b)}


def round_no_of(e: Event) -> int:
    return int(e.round_id.rsplit("-", 1)[1]) if e.round_id else -1


@pytest.mark.parametrize("how", ["mid-round", "mid-shoe", "between"])
def test_a_clean_floor_with_a_stretch_deleted_gives_one_events_lost(how: str) -> None:
    """A clean floor audits to nothing; with a stretch of one table deleted it gives
    exactly one EVENTS_LOST for that table, with and without signatures, and no round
    is blamed (the cut ones are incomplete, nothing else)."""
    events, keys = floor(0.0)
    table, gone = stretch(events, how)
    kept = [e for i, e in enumerate(events) if i not in gone]
    for k in (None, keys):
        assert run(events, k)[0] == []
        found, rounds = run(kept, k)
        assert codes(found) == ["EVENTS_LOST"]
        v = found[0]
        assert (v.table_id, v.severity, v.citation) == (table, "HIGH", LOST)
        assert "missing" in v.message and "events lost" in v.message
        cut = [s for s in rounds if not s.complete]
        assert all(s.table_id == table for s in cut) and len(cut) <= 2


@pytest.mark.parametrize("how", ["mid-round", "mid-shoe", "between"])
def test_a_stretch_deleted_leaves_the_rest_of_the_floor_judged(how: str) -> None:
    """With faults injected: the other tables' findings are exactly what they were; the
    damaged table's are one EVENTS_LOST plus findings it had anyway (none the gap
    caused), and every finding of its rounds after the next whole round is found."""
    events, keys = floor(0.35)
    table, gone = stretch(events, how)
    kept = [e for i, e in enumerate(events) if i not in gone]
    whole, _ = run(events, keys)
    found, _ = run(kept, keys)
    before, after = keyed(whole), keyed(found)
    others = Counter({k: n for k, n in before.items() if k[1] != table})
    assert Counter({k: n for k, n in after.items() if k[1] != table}) == others
    mine = Counter({k: n for k, n in after.items() if k[1] == table})
    extra = mine - before
    assert [k[0] for k in extra.elements()] == ["EVENTS_LOST"], \
        f"caused by the gap: {sorted(extra)}"
    last_gone = max(round_no_of(events[i]) for i in gone)
    later = {k for k in before if k[1] == table and k[2]
             and round_no_of_id(k[2]) > last_gone + 1 and k[0] != "CARD_COUNT_EXCEEDED"}
    assert later and later <= set(mine)


def round_no_of_id(rid: str) -> int:
    return int(rid.rsplit("-", 1)[1])


# --- hand-built streams -------------------------------------------------------------------


def plain(sc: TableScript, n: int, paid: int = 2000, reader: bool = False) -> None:
    """A clean round at an NJ blackjack table: seat 1 stands on 19, the dealer busts
    (the hole card read by the reader with `reader`)."""
    sc.start(n, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "9")}, up="9", hole="7")
    if reader:
        sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    sc.dealer("10", "C")
    sc.pay(1, "MAIN", paid)
    sc.clear(1, 0)
    sc.finish_round()


def table(rounds: int = 4) -> TableScript:
    sc = TableScript.opened("nj_blackjack", "T-01")
    for n in range(1, rounds + 1):
        if n % 5 == 0:  # the same cards every round: a new shoe before six decks run out
            sc.shoe()
        plain(sc, n)
    return sc


def auditor(found: list[Violation], rounds: list[RoundSummary] | None = None,
            keys: KeyRegistry | None = None) -> TableAuditor:
    return TableAuditor("T-01", select, found.append,
                        (rounds.append if rounds is not None else (lambda _: None)), keys=keys,
                        released=released_writers())


def test_feed_says_what_the_record_did_with_each_event() -> None:
    """ACCEPTED, then REDELIVERY for an identical copy (however far back), REFUSED for a
    different copy of a recorded seq."""
    sc = table(2)
    found: list[Violation] = []
    a = auditor(found)
    assert [a.feed(e) for e in sc.events] == [Fed.ACCEPTED] * len(sc.events)
    assert [a.feed(e) for e in sc.events] == [Fed.REDELIVERY] * len(sc.events)
    pay = next(e for e in sc.events if type(e.payload) is PayoutMade)
    p = pay.payload
    assert isinstance(p, PayoutMade)
    assert a.feed(replace(pay, payload=replace(p, amount=p.amount * 10))) is Fed.REFUSED
    assert codes(found) == ["SEQUENCE_CONFLICT"]
    assert found[0].severity == "HIGH" and "the first copy stands" in found[0].message


def test_a_tenfold_payout_copy_is_a_high_finding_not_a_redelivery() -> None:
    """A copy of a PayoutMade with 10x the amount and the same event_id and seq: "A copy
    whose content differs from what was recorded for its device and seq is a
    substitution (SEQUENCE_CONFLICT, HIGH)"; the round's money stays what was
    recorded."""
    sc = table(1)
    pay = next(e for e in sc.events if type(e.payload) is PayoutMade)
    p = pay.payload
    assert isinstance(p, PayoutMade)
    forged = replace(pay, payload=replace(p, amount=p.amount * 10))
    at = sc.events.index(pay)
    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    a = auditor(found, rounds)
    for e in [*sc.events[:at + 1], forged, *sc.events[at + 1:]]:
        a.feed(e)
    v = only(found, "SEQUENCE_CONFLICT")
    assert (v.severity, v.event_id) == ("HIGH", pay.event_id)
    assert rounds[0].paid == p.amount and rounds[0].complete


def test_a_whole_history_sent_again_is_a_no_op() -> None:
    """A producer re-sending a table's whole history from its start: "an identical copy
    is a redelivery and changes nothing, as far back as the audit holds its seq" (the
    4,096 seqs kept of each device)."""
    sc = table(200)
    assert max(e.seq for e in sc.events) > 1024
    found: list[Violation] = []
    a = auditor(found)
    for e in [*sc.events, *sc.events]:
        a.feed(e)
    a.finish()
    assert found == []


def test_a_copy_older_than_the_history_kept_is_not_compared() -> None:
    from pitwatch.engine.record import Device

    dev = Device()
    dev.start(1, bytes(range(32)))
    top = HISTORY_SEQS + TRIM + 10
    for seq in range(2, top + 1):
        dev.append(seq, seq.to_bytes(32, "big"))
        assert len(dev.hist) <= (HISTORY_SEQS + TRIM) * 8
    kept = top - HISTORY_SEQS + 1
    assert dev.recorded(kept) == kept.to_bytes(32, "big")[:8]
    assert dev.recorded(5) is None and dev.recorded(top) is not None
    found: list[Violation] = []
    a = auditor(found)
    sc = table(1)
    for e in sc.events:
        a.feed(e)
    shoe = a.devices["T-01-shoe"]
    shoe.hist_from += 2  # as if its first seqs had been dropped
    del shoe.hist[:16]
    second = [e for e in sc.events if e.device_id == "T-01-shoe"][1]
    assert a.feed(second) is Fed.REFUSED
    assert codes(found) == ["SEQUENCE_CONFLICT"] and found[0].severity == "LOW"
    assert "not compared, not applied" in found[0].message


def test_a_devices_first_event_past_seq_1_is_a_break_unless_primed() -> None:
    """Issue 35: "A device's first event must be seq 1, or be continued from stored
    history". A table read from its middle is one EVENTS_LOST, and its round (whose
    RoundStarted was not read) is not judged; primed with each device's last event
    before, the same events audit to nothing."""
    sc = table(3)
    second = next(i for i, e in enumerate(sc.events) if e.round_id == "T-01-000002")
    tail = sc.events[second + 3:]
    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    a = auditor(found, rounds)
    for e in tail:
        a.feed(e)
    a.finish()
    assert codes(found) == ["EVENTS_LOST"]
    assert "with no history before it" in found[0].message
    assert [s.complete for s in rounds] == [False, True]
    found.clear()
    context = len(sc.events)
    sc.open()  # where a stored table's context starts: its posted rules and shoe again
    sc.shoe()
    plain(sc, 4)
    b = auditor(found)
    last: dict[str, Event] = {}
    for e in sc.events[:context]:
        last[e.device_id] = e
    for e in last.values():
        b.prime(e)
    for e in sc.events[context:]:
        b.feed(e)
    b.finish()
    assert found == []
    c = auditor(found)
    for e in sc.events[context:]:
        c.feed(e)
    c.finish()
    assert codes(found) == ["EVENTS_LOST"]


def test_lost_names_where_on_the_next_break() -> None:
    """`TableAuditor.lost(where)`: the table's next break is EVENTS_LOST with the text;
    nothing is raised when the table shows no break."""
    sc = table(1)
    for n in (2, 3):
        plain(sc, n)
    where = "partition 3 offsets 120–4508 deleted before the worker read them"
    r2 = [i for i, e in enumerate(sc.events) if e.round_id == "T-01-000002"]
    kept = sc.events[:r2[0]] + sc.events[r2[-1] + 1:]
    found: list[Violation] = []
    a = auditor(found)
    for e in kept[:r2[0]]:
        a.feed(e)
    a.lost(where)
    for e in kept[r2[0]:]:
        a.feed(e)
    a.finish()
    v = only(found, "EVENTS_LOST")
    assert codes(found) == ["EVENTS_LOST"] and where in v.message
    found.clear()
    b = auditor(found)
    for e in sc.events[:r2[0]]:
        b.feed(e)
    b.lost(where)
    for e in sc.events[r2[0]:]:
        b.feed(e)
    b.finish()
    assert found == []


def test_lost_lapses_once_every_device_continued() -> None:
    sc = table(1)
    plain(sc, 2)
    sc.skip("rfid", 2)
    plain(sc, 3)
    found: list[Violation] = []
    a = auditor(found)
    r2 = next(i for i, e in enumerate(sc.events) if e.round_id == "T-01-000002")
    for e in sc.events[:r2]:
        a.feed(e)
    a.lost("partition 0 offsets 1–9")
    for e in sc.events[r2:]:
        a.feed(e)
    v = only(found, "EVENTS_LOST")
    assert "partition 0" not in v.message and v.round_id == "T-01-000003"


def test_gaps_of_several_devices_are_one_break() -> None:
    """Every device of the table skips: one EVENTS_LOST, not one per device."""
    sc = table(1)
    for kind in ("console", "shoe", "reader", "rfid"):
        sc.skip(kind, 5)
    for n in (2, 3):
        plain(sc, n)
    found: list[Violation] = []
    a = auditor(found)
    for e in sc.events:
        a.feed(e)
    a.finish()
    assert codes(found) == ["EVENTS_LOST"]


def test_a_gap_before_a_checkpoint_of_a_signing_device_is_events_lost_alone() -> None:
    """A gap followed by a verified checkpoint is proof that signed evidence is
    missing: one HIGH EVENTS_LOST, no SIGNATURE_INVALID for what the gap took."""
    events, keys = floor(0.0)
    table = events[0].table_id
    shoe = next(e.device_id for e in events if e.table_id == table
                and e.device_id.endswith("-shoe"))
    from pitwatch.events.model import Checkpoint

    cps = [i for i, e in enumerate(events) if e.device_id == shoe
           and type(e.payload) is Checkpoint]
    at = cps[len(cps) // 2]
    gone = {at - k for k in range(1, 40) if events[at - k].device_id == shoe}
    gone = {i for i in gone if i > cps[len(cps) // 2 - 1]}
    kept = [e for i, e in enumerate(events) if i not in gone]
    found, _ = run(kept, keys)
    assert codes(found) == ["EVENTS_LOST"] and found[0].severity == "HIGH"


def test_a_snapshot_in_a_cut_round_audits_on_as_the_live_auditor() -> None:
    """export_state/import_state mid-way through a round a break cut: the restored
    auditor finds what the live one finds, and the round stays unjudged."""
    sc = table(1)
    plain(sc, 2, paid=1)  # a wrong payout, after the gap: not judged
    r2 = [i for i, e in enumerate(sc.events) if e.round_id == "T-01-000002"]
    events = sc.events[:r2[2]] + sc.events[r2[4]:]
    plain(sc, 3, paid=1)  # judged again: PAYOUT_WRONG
    events += sc.events[r2[-1] + 1:]
    live: list[Violation] = []
    a = auditor(live)
    for e in events:
        a.feed(e)
    a.finish()
    assert codes(live) == ["EVENTS_LOST", "PAYOUT_WRONG"]
    for cut in range(r2[2] + 1, r2[2] + 6):
        found: list[Violation] = []
        b = auditor(found)
        for e in events[:cut]:
            b.feed(e)
        state = orjson.loads(orjson.dumps(b.export_state()))
        c = auditor(found)
        c.import_state(state)
        for e in events[cut:]:
            c.feed(e)
        c.finish()
        assert codes(found) == codes(live)


def test_a_version_1_snapshot_still_imports() -> None:
    """A snapshot of version 1 (a seq window of event ids) is brought up to version 2:
    the restored auditor continues each device's record from its last event."""
    sc = table(2)
    found: list[Violation] = []
    a = auditor(found)
    for e in sc.events:
        a.feed(e)
    v2 = a.export_state()
    v1 = {k: v for k, v in v2.items() if k != "record"}
    v1["version"] = 1
    v1["devices"] = {
        k: {"last_seq": d["last_seq"], "last_digest": d["last_digest"],
            "window": {"first": d["last_seq"], "steps": None, "n": 0, "ids": []},
            "unsigned": 0, "unsigned_from": 0, "unsigned_last": [0, "", 0],
            "unsigned_round": None, "stranger_round": None}
        for k, d in v2["devices"].items()}
    b = auditor(found)
    b.import_state(v1)
    n = len(sc.events)
    plain(sc, 3, paid=1)
    for e in sc.events[n:]:
        b.feed(e)
    b.finish()
    assert codes(found) == ["PAYOUT_WRONG"]
    with pytest.raises(StateError):
        auditor(found).import_state({"version": 1, "devices": 3})
    with pytest.raises(StateError):
        auditor(found).import_state({"version": 99})


def test_a_round_ended_after_a_break_is_incomplete_and_unblamed() -> None:
    sc = table(1)
    sc.start(2, [1])
    sc.wager(1, "MAIN", 2000)
    sc.skip("shoe", 3)
    sc.dealer("10", "C")
    sc.pay(1, "MAIN", 1)
    sc.emit(RoundEnded())
    plain(sc, 3)
    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    a = auditor(found, rounds)
    for e in sc.events:
        a.feed(e)
    a.finish()
    assert codes(found) == ["EVENTS_LOST"]
    assert [s.complete for s in rounds] == [True, False, True]


def test_digest_prefixes_are_what_the_record_compares() -> None:
    sc = table(1)
    e = sc.events[3]
    a = auditor([])
    for x in sc.events:
        a.feed(x)
    assert a.devices[e.device_id].recorded(e.seq) == digest(e)[:8]


def test_a_loss_the_caller_knows_of_is_reported_though_a_break_is_open() -> None:
    """A break episode still open (the reader not heard from since) does not swallow a
    loss the worker reports: the next break is EVENTS_LOST with its text."""
    sc = TableScript.opened("nj_blackjack", "T-01")
    plain(sc, 1, reader=True)
    sc.start(2, [1])
    sc.wager(1, "MAIN", 2000)
    sc.skip("shoe", 2)
    first = sc.card(1, "10", "S")
    sc.skip("reader", 3)
    sc.insert_hole(False)
    sc.emit(RoundEnded())
    plain(sc, 3)
    at = sc.events.index(first) + 1
    found: list[Violation] = []
    a = auditor(found)
    for e in sc.events[:at]:
        a.feed(e)
    a.lost("partition 1 offsets 7–9")
    for e in sc.events[at:]:
        a.feed(e)
    a.finish()
    assert codes(found) == ["EVENTS_LOST", "EVENTS_LOST"]
    assert "partition 1 offsets 7–9" in found[1].message
    assert found[1].message.startswith("T-01-reader seq ")
