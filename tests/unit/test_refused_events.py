"""A rejected event of the record surfaces as what it is (issue 36, the contract).

docs/events.md § Ranges: "An event refused for a field of its payload alone, its
envelope inside the ranges, is still an event of its device's record: the audit raises
it as EVENT_REFUSED (HIGH), naming the event and why it was refused, and keeps its place
in the device's record". Its digest is of its bytes as sent, so the device's next event
continues the chain: no EVENTS_LOST, no DIGEST_MISMATCH, and that next event is judged
as any other. An event whose envelope is out of range stays a dead letter."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from pitwatch.audit.run import audit_events, audit_paths
from pitwatch.engine.auditor import Auditor, TableAuditor
from pitwatch.engine.record import Fed
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import DecodeError, decode_single, digest, encode_single
from pitwatch.events.files import Rejected, read_files, write_avro, write_jsonl
from pitwatch.events.model import Event, PayoutMade, WagerPlaced
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.simulate import Floor

RECORD_BREAKS = {"EVENTS_LOST", "SEQUENCE_CONFLICT", "DIGEST_MISMATCH", "DEVICE_RESTARTED"}


def _floor() -> list[Event]:
    return list(Floor(1, 3, seed=9, sign=False).events())


def _with_bad_wager(amount: int = -500) -> tuple[list[Event], Event]:
    """The floor with round 2's first wager at `amount`, its device's chain recomputed
    over the bytes as sent (an honest device that sent a bad value)."""
    evs = _floor()
    i = next(k for k, e in enumerate(evs) if isinstance(e.payload, WagerPlaced)
             and e.round_id == "AC-BJ-01-000002")
    bad = evs[i]
    assert isinstance(bad.payload, WagerPlaced)
    evs[i] = replace(bad, payload=replace(bad.payload, amount=amount), raw=None)
    prev = digest(evs[i])
    for k in range(i + 1, len(evs)):
        if evs[k].device_id == bad.device_id:
            evs[k] = replace(evs[k], prev_digest=prev, raw=None)
            prev = digest(evs[k])
    return evs, evs[i]


def _refused(vs: list[Violation]) -> list[Violation]:
    return [v for v in vs if v.code == "EVENT_REFUSED"]


@pytest.mark.parametrize("form", ["jsonl", "avro"])
def test_a_negative_wager_in_a_file_is_one_high_finding_not_a_gap(tmp_path: Path,
                                                                  form: str) -> None:
    evs, bad = _with_bad_wager()
    f = tmp_path / f"events.{form}"
    (write_jsonl if form == "jsonl" else write_avro)(f, evs)
    rejected: list[Rejected] = []
    refused: list[Rejected] = []
    rep = audit_paths([f], on_reject=rejected.append, on_refused=refused.append)
    [v] = _refused(rep.violations)
    assert (v.severity, v.event_id, v.round_id) == ("HIGH", bad.event_id, bad.round_id)
    for part in (bad.device_id, f"seq {bad.seq}", bad.event_id, "round AC-BJ-01-000002",
                 "WagerPlaced.amount: -500 is outside 0..1000000000000"):
        assert part in v.message
    assert v.citation.startswith("pitwatch record rule, docs/events.md § Ranges")
    assert not RECORD_BREAKS & {v.code for v in rep.violations}
    assert rejected == []  # not a malformed record: the record's, refused
    [letter] = refused  # set aside as the record refused it, never stored
    assert letter.source == "record" and "EVENT_REFUSED" in letter.reason


def test_the_device_s_next_event_is_judged_normally() -> None:
    """The wager after it, of the same device, stands and is settled without a finding;
    the hand whose wager was refused has none standing (its payout is a wager never
    placed), which is the record's content, not a break."""
    evs, bad = _with_bad_wager()
    assert isinstance(bad.payload, WagerPlaced)
    nxt = next(e for e in evs if e.device_id == bad.device_id and e.seq == bad.seq + 1)
    assert isinstance(nxt.payload, WagerPlaced)
    rep = audit_events(_as_decoded(evs))
    seats = {v.seat for v in rep.violations if v.round_id == bad.round_id and v.seat}
    assert nxt.payload.seat not in seats
    assert bad.payload.seat in seats
    assert rep.refused == 1


def _as_decoded(evs: list[Event]) -> list[Event]:
    """Each event as the worker reads it from Kafka: decoded from its message, a refused
    one marked (`DecodeError.event`)."""
    out = []
    for ev in evs:
        try:
            out.append(decode_single(encode_single(ev)))
        except DecodeError as e:
            assert e.event is not None and e.event.refused == str(e)
            out.append(e.event)
    return out


def test_the_worker_and_the_file_give_the_same_finding(tmp_path: Path) -> None:
    evs, bad = _with_bad_wager()
    f = tmp_path / "events.jsonl"
    write_jsonl(f, evs)
    from_file = _refused(audit_paths([f]).violations)
    found: list[Violation] = []
    t = TableAuditor("AC-BJ-01", select, found.append, lambda s: None, released=released_writers())
    fed = [t.feed(ev) for ev in _as_decoded(evs)]
    assert fed.count(Fed.REFUSED) == 1
    assert [(v.violation_id, v.message) for v in _refused(found)] == \
        [(v.violation_id, v.message) for v in from_file]
    assert t.devices[bad.device_id].last_seq == max(
        e.seq for e in evs if e.device_id == bad.device_id)


def test_a_copy_of_a_refused_event_is_a_redelivery() -> None:
    evs, bad = _with_bad_wager()
    dec = _as_decoded(evs)
    found: list[Violation] = []
    t = TableAuditor("AC-BJ-01", select, found.append, lambda s: None, released=released_writers())
    for ev in dec:
        t.feed(ev)
        if ev.event_id == bad.event_id:
            assert t.feed(ev) is Fed.REDELIVERY
    assert len(_refused(found)) == 1


def test_an_event_whose_envelope_is_out_of_range_stays_a_dead_letter(tmp_path: Path) -> None:
    evs = _floor()
    i = next(k for k, e in enumerate(evs) if isinstance(e.payload, PayoutMade))
    evs[i] = replace(evs[i], seq=0, raw=None)
    with pytest.raises(DecodeError) as e:
        decode_single(encode_single(evs[i]))
    assert e.value.event is None
    f = tmp_path / "events.jsonl"
    write_jsonl(f, evs)
    rejected: list[Rejected] = []
    assert len(list(read_files([f], rejected.append))) == len(evs) - 1
    assert [r.line for r in rejected] == [i + 1]


def test_a_clean_stream_has_no_refusal(tmp_path: Path) -> None:
    evs = _floor()
    f = tmp_path / "events.avro"
    write_avro(f, evs)
    rep = audit_paths([f])
    assert rep.refused == 0
    assert "EVENT_REFUSED" not in Counter(v.code for v in rep.violations)
    assert not any(ev.refused for ev in read_files([f], lambda r: None))


@pytest.mark.parametrize("form", ["jsonl", "avro"])
def test_audit_jobs_gives_the_one_job_finding(tmp_path: Path, form: str) -> None:
    from pitwatch.audit.parallel import audit_parallel

    evs, _ = _with_bad_wager()
    f = tmp_path / f"events.{form}"
    (write_jsonl if form == "jsonl" else write_avro)(f, evs)
    one = audit_paths([f])
    two = audit_parallel([f], 2)
    assert [v.violation_id for v in _refused(two.violations)] == \
        [v.violation_id for v in _refused(one.violations)]
    assert (two.refused, two.rejected) == (one.refused, one.rejected) == (1, 0)


@pytest.mark.parametrize("form", ["jsonl", "avro"])
def test_files_cut_after_a_refused_event_are_ordered_by_it(tmp_path: Path, form: str) -> None:
    """The set's first pass reads the refused event's digest as the audit does: the file
    that continues it follows, whatever the names say."""
    evs, bad = _with_bad_wager()
    cut = evs.index(bad) + 1
    write = write_jsonl if form == "jsonl" else write_avro
    write(tmp_path / f"b.{form}", evs[:cut])
    write(tmp_path / f"a.{form}", evs[cut:])
    rep = audit_paths([tmp_path / f"a.{form}", tmp_path / f"b.{form}"])
    assert [v.event_id for v in _refused(rep.violations)] == [bad.event_id]
    assert not RECORD_BREAKS & {v.code for v in rep.violations}


def test_the_worker_restored_from_a_snapshot_folds_a_refused_event_in_its_place() -> None:
    """processors/state.py: the catch-up after a snapshot reads the partition again; the
    refused event there takes its place as when first read (no EVENTS_LOST after it)."""
    from pitwatch.processors.state import TableStates
    from tests.unit.test_worker_records import _feed, _partition

    evs, bad = _with_bad_wager()
    dec = _as_decoded(evs)
    log = _partition(evs)
    i = evs.index(bad)
    table: dict[bytes, bytes] = {}
    first = TableStates(table, select, 15 * 60 * 1000)
    before = _feed(first, dec, range(0, i - 3), log)
    first.snapshot("AC-BJ-01")  # taken before the refused event
    after = _feed(TableStates(table, select, 15 * 60 * 1000), dec, range(i + 3, len(evs)),
                  log)
    found = before + after
    assert [v.event_id for v in _refused(found)] == [bad.event_id]
    assert not RECORD_BREAKS & {v.code for v in found}


def test_malformed_copies_from_a_peer_change_nothing_in_the_record() -> None:
    """"Any other refused event (a malformed copy of a seq already recorded, one that
    does not continue its device's chain) is a dead letter only": copies of a device's
    first and of a later event, with payloads out of range, neither restart, break nor
    displace its record, and raise nothing."""
    evs = _floor()
    clean: list[Violation] = []
    a = Auditor(select, clean.append, lambda _: None, released=released_writers())
    for ev in evs:
        a.feed(ev)
    wagers = [e for e in evs if isinstance(e.payload, WagerPlaced)]
    first = next(w for w in wagers if w.seq == 1)
    later = next(w for w in wagers if w.seq > 2)
    found: list[Violation] = []
    b = Auditor(select, found.append, lambda _: None, released=released_writers())
    for k, ev in enumerate(evs):
        b.feed(ev)
        if k % 7 == 3:  # a peer's malformed copies, again and again
            for n, w in enumerate((first, later)):
                assert isinstance(w.payload, WagerPlaced)
                bad = replace(w, event_id=f"{w.event_id}-{k}-{n}", raw=None,
                              payload=replace(w.payload, amount=-1 - k))
                assert b.feed(replace(bad, refused="amount out of range")) is Fed.REFUSED
    assert [v.violation_id for v in found] == [v.violation_id for v in clean]
