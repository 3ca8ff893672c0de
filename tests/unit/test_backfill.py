"""Back-fill (docs/events.md § Back-fill): "Events re-sent for a stretch the worker was
told was lost are audited in order, as a back-fill, from the table's state when the loss
was noticed", and "once every hole is filled and each device's chain joins the record
after it, the loss finding is raised again under its own id, LOW, saying the record is
whole again"; nothing is judged twice, and a stretch that does not join is a
DIGEST_MISMATCH while the loss stands.

On a simulated floor with faults injected, one table's stretch deleted (cut mid-round,
across a ShoeLoaded, between rounds) and sent again after the table moved on."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import orjson
import pytest

from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.record import Fed
from pitwatch.engine.violation import Violation
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from tests.unit.test_continuity import Key, floor, keyed, round_no_of, run, stretch

WHERE = "events[0] offsets 100..180 were deleted by Kafka before the audit read them"


def streamed(events: tuple[Event, ...], table: str, gone: set[int],
             resend: list[Event] | None, snapshot_at: int | None = None
             ) -> tuple[list[Violation], list[RoundSummary], list[Fed]]:
    """The floor as a worker reads it: `table`'s stretch `gone` deleted (the table told
    `lost` where it starts), then `resend` sent after everything else (snapshotting
    and restoring the table after `snapshot_at` re-sent events)."""
    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    a = Auditor(select, found.append, rounds.append, keys=floor(0.35)[1],
                released=released_writers())
    first = min(gone)
    for i, e in enumerate(events):
        if i == first:
            a.table(table).lost(WHERE)
        if i not in gone:
            a.feed(e)
    fed = []
    for k, e in enumerate(resend or []):
        if k == snapshot_at:
            state = orjson.loads(orjson.dumps(a.table(table).export_state()))
            del a.tables[table]
            a.table(table).import_state(state)
        fed.append(a.feed(e))
    a.finish()
    return found, rounds, fed


def fed_whole(events: tuple[Event, ...], at: set[int]) -> list[Fed]:
    a = Auditor(select, lambda _: None, lambda _: None, keys=floor(0.35)[1],
                released=released_writers())
    fed = [a.feed(e) for e in events]
    return [fed[i] for i in sorted(at)]


def mine(found: list[Violation], table: str) -> Counter[Key]:
    return Counter({k: n for k, n in keyed(found).items() if k[1] == table})


@pytest.mark.parametrize("how", ["mid-round", "mid-shoe", "between"])
def test_a_re_sent_stretch_is_audited_in_order_and_heals_the_loss(how: str) -> None:
    """What the stretch held is found with the ids an unbroken audit gives; the loss
    finding's last copy is LOW and says the record is whole again; rounds inside the
    stretch are summarised as the unbroken audit summarises them."""
    events, keys = floor(0.35)
    table, gone = stretch(events, how)
    resend = [events[i] for i in sorted(gone)]
    whole, whole_rounds = run(events, keys)
    broken, _, _ = streamed(events, table, gone, None)
    found, rounds, fed = streamed(events, table, gone, resend)
    assert fed == fed_whole(events, gone)  # what an unbroken audit did with each
    losses = [v for v in found if v.code == "EVENTS_LOST" and WHERE in v.message]
    assert len(losses) == 2 and losses[0].violation_id == losses[1].violation_id
    assert losses[0].severity == "HIGH" and WHERE in losses[0].message
    assert losses[1].severity == "LOW" and "the record is whole again" in losses[1].message
    assert losses[1].detected_at == losses[0].detected_at  # the same row, replaced
    got, truth = mine(found, table), mine(whole, table)
    assert set(got) - set(truth) == {("EVENTS_LOST", table, losses[0].round_id,
                                      losses[0].event_id)}
    # the stretch's findings, which the broken audit could not see, are found now
    nos = [round_no_of(events[i]) for i in gone if events[i].round_id]
    inside = {k for k in truth if k[2] and min(nos) < round_no_of_id(k[2]) < max(nos)}
    assert inside or how != "mid-round"  # the others hold no finding in a whole round
    assert inside <= set(got) and not inside & set(mine(broken, table))
    # nothing judged twice: no key raised more often than the unbroken audit raises it
    assert all(n <= truth[k] for k, n in got.items() if k[0] != "EVENTS_LOST")
    # missed only where the break still stands: the round running on past the stretch,
    # and card counts until the next shoe
    end = round_no_of(next(events[i] for i in range(max(gone) + 1, len(events))
                           if events[i].table_id == table and events[i].round_id))
    missed = set(truth) - set(got)
    assert all(round_no_of_id(k[2]) == end or k[0] == "CARD_COUNT_EXCEEDED" for k in missed)
    last = {s.round_id: s for s in rounds}
    want = {s.round_id: s for s in whole_rounds}
    for rid in {r for i in gone if (r := events[i].round_id) is not None}:
        if round_no_of_id(rid) != end:
            assert last[rid] == want[rid], rid


def round_no_of_id(rid: str) -> int:
    return int(rid.rsplit("-", 1)[1])


def test_a_back_fill_survives_a_snapshot_and_a_second_copy_is_a_redelivery() -> None:
    events, _ = floor(0.35)
    table, gone = stretch(events, "mid-round")
    resend = [events[i] for i in sorted(gone)]
    straight, rounds, fed = streamed(events, table, gone, resend)
    restored, rounds2, _ = streamed(events, table, gone, resend,
                                    snapshot_at=len(resend) // 2)
    assert keyed(restored) == keyed(straight) and rounds2 == rounds
    _, _, twice = streamed(events, table, gone, resend + resend)
    assert twice[len(resend):] == [Fed.REDELIVERY if f is Fed.ACCEPTED else f for f in fed]


def forged(how: str, pick: int) -> tuple[str, list[Event], list[Violation]]:
    """The floor streamed with its stretch re-sent, the `pick`-th event of the
    stretch's console (0: its first, -1: its last) under another event id (so another digest)."""
    events, _ = floor(0.35)
    table, gone = stretch(events, how)
    resend = [events[i] for i in sorted(gone)]
    console = [k for k, e in enumerate(resend) if e.device_id.endswith("-console")]
    k = console[pick]
    resend[k] = replace(resend[k], event_id=resend[k].event_id[::-1])
    return table, resend, streamed(events, table, gone, resend)[0]


def test_a_re_sent_stretch_that_does_not_join_does_not_heal_the_loss() -> None:
    """The last re-sent event of a device is not the one the record after the stretch
    names as its predecessor: a DIGEST_MISMATCH, HIGH, and the loss stands."""
    table, _, found = forged("between", -1)
    losses = [v for v in found if v.code == "EVENTS_LOST" and WHERE in v.message]
    assert [v.severity for v in losses] == ["HIGH"]
    joins = [v for v in found if v.code == "DIGEST_MISMATCH" and "do not join" in v.message]
    assert [(v.severity, v.table_id) for v in joins] == [("HIGH", table)]
    assert f"{table}-console" in joins[0].message


def test_a_changed_event_inside_a_re_sent_stretch_is_judged_as_in_a_live_stream() -> None:
    """An event changed inside the stretch breaks the chain at the device's next event,
    a DIGEST_MISMATCH exactly where an unbroken audit of the changed stream finds it;
    the seqs are whole, so the loss is healed."""
    events, keys = floor(0.35)
    table, resend, found = forged("between", 0)
    _, gone = stretch(events, "between")
    changed = list(events)
    for i, e in zip(sorted(gone), resend, strict=True):
        changed[i] = e
    whole, _ = run(changed, keys)
    want = {k for k in keyed(whole) if k[0] == "DIGEST_MISMATCH" and k[1] == table}
    got = {k for k in keyed(found) if k[0] == "DIGEST_MISMATCH" and k[1] == table}
    assert want and got == want
    losses = [v for v in found if v.code == "EVENTS_LOST" and WHERE in v.message]
    assert [v.severity for v in losses] == ["HIGH", "LOW"]


def test_without_a_loss_told_late_events_are_not_back_filled() -> None:
    """A gap the worker was not told of (a device that skipped seqs): its late events
    are refused as before (SEQUENCE_CONFLICT, LOW), not audited as a stretch."""
    events, keys = floor(0.35)
    _, gone = stretch(events, "between")
    found: list[Violation] = []
    a = Auditor(select, found.append, lambda _: None, keys=keys, released=released_writers())
    for i, e in enumerate(events):
        if i not in gone:
            a.feed(e)
    before = Counter(v.code for v in found)
    fed = [a.feed(events[i]) for i in sorted(gone)]
    assert set(fed) == {Fed.REFUSED}
    late = Counter(v.code for v in found) - before
    assert set(late) == {"SEQUENCE_CONFLICT"}
    assert {v.severity for v in found[sum(before.values()):]} == {"LOW"}


def test_a_re_send_that_skips_seqs_leaves_the_loss_standing() -> None:
    """A re-send missing part of the stretch: the fold reports what it still lacks
    (EVENTS_LOST, as any audit of that record would) and the loss is not healed."""
    events, _ = floor(0.35)
    table, gone = stretch(events, "mid-round")
    resend = [events[i] for i in sorted(gone)]
    first_rfid = next(k for k, e in enumerate(resend) if e.device_id.endswith("-rfid"))
    found, _, _ = streamed(events, table, gone, resend[:first_rfid] + resend[first_rfid + 1:])
    losses = [v for v in found if v.code == "EVENTS_LOST" and WHERE in v.message]
    assert [v.severity for v in losses] == ["HIGH"]
    rfid = f"{table}-rfid seq {resend[first_rfid].seq} missing"
    assert any(v.code == "EVENTS_LOST" and v.message.startswith(rfid) for v in found)


def test_a_table_whose_first_events_were_lost_is_back_filled_from_its_start() -> None:
    """Every device first seen past seq 1 after the loss: their seqs from 1 are the
    holes; re-sent, the table is audited from its TableOpened, and a copy sent again
    afterwards is a redelivery (not a restart)."""
    events, keys = floor(0.35)
    table = events[0].table_id
    gone = set([i for i, e in enumerate(events) if e.table_id == table][:150])
    resend = [events[i] for i in sorted(gone)]
    whole, _ = run(events, keys)
    found, _, fed = streamed(events, table, gone, resend + resend[:20])
    losses = [v for v in found if v.code == "EVENTS_LOST" and WHERE in v.message]
    assert [v.severity for v in losses] == ["HIGH", "LOW"]
    assert fed[len(resend):] == [Fed.REDELIVERY if f is Fed.ACCEPTED else f
                                 for f in fed[:20]]
    got, truth = mine(found, table), mine(whole, table)
    assert set(got) - set(truth) == {("EVENTS_LOST", table, losses[0].round_id,
                                      losses[0].event_id)}
    assert "DEVICE_RESTARTED" not in {k[0] for k in got} - {k[0] for k in truth}


def test_an_event_refused_inside_the_stretch_keeps_its_place_and_the_loss_heals() -> None:
    """A re-sent event its decoder refused (a negative wager) is EVENT_REFUSED in the
    back-fill, as in a live stream, and holds its seq: the stretch is still whole."""
    from tests.unit.test_refused_events import _as_decoded, _with_bad_wager

    evs, bad = _with_bad_wager()
    events = tuple(_as_decoded(evs))
    table = bad.table_id
    mine_at = [i for i, e in enumerate(events) if e.table_id == table]
    at = next(i for i, e in enumerate(events) if e.event_id == bad.event_id)
    gone = {i for i in mine_at if at - 20 <= i <= at + 20}
    found: list[Violation] = []
    a = Auditor(select, found.append, lambda _: None, released=released_writers())
    for i, e in enumerate(events):
        if i == min(gone):
            a.table(table).lost(WHERE)
        if i not in gone:
            a.feed(e)
    fed = [a.feed(events[i]) for i in sorted(gone)]
    assert fed[sorted(gone).index(at)] is Fed.REFUSED
    assert [v.event_id for v in found if v.code == "EVENT_REFUSED"] == [bad.event_id]
    losses = [v for v in found if v.code == "EVENTS_LOST" and WHERE in v.message]
    assert [v.severity for v in losses] == ["HIGH", "LOW"]
