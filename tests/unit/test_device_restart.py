"""A device that restarts, or is replaced, mid-shift (issue 44; docs/events.md § The
record): "A device that loses its counter ... starts again at seq 1 with `prev_digest`
null: a new chain ... The audit reports it once, DEVICE_RESTARTED (MEDIUM), naming the
device and where its record restarted, and treats it as a break". Built with the
simulator's restart fault (`pitwatch.producers.devices.restarted`) on clean floors."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.violation import Violation
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import CardDealt, Checkpoint, Event, PayoutMade, ShoeLoaded
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.devices import device_key, restarted
from pitwatch.producers.simulate import Floor
from pitwatch.producers.table import secret

SEED = 101


@cache
def floor() -> tuple[Event, ...]:
    """The issue's floor: 4 tables x 60 rounds, no fault injected (audits to nothing)."""
    return tuple(Floor(4, 60, seed=SEED).events())


@cache
def registry() -> KeyRegistry:
    reg = Floor(4, 60, seed=SEED).registry()
    assert reg is not None
    return reg


def audit(events: list[Event], keys: KeyRegistry | None = None
          ) -> tuple[list[Violation], list[RoundSummary]]:
    found: list[Violation] = []
    rounds: list[RoundSummary] = []
    a = Auditor(select, found.append, rounds.append, keys=keys, released=released_writers())
    for ev in events:
        a.feed(ev)
    a.finish()
    return found, rounds


def shoe_of(events: list[Event] | tuple[Event, ...]) -> str:
    return next(e.device_id for e in events if e.device_id.endswith("-shoe"))


def mid_round_card(events: tuple[Event, ...], device: str, round_no: int) -> Event:
    """A card of the round in the middle of the shift, after the round's first card."""
    cards = [e for e in events if e.device_id == device and type(e.payload) is CardDealt
             and e.round_id is not None and e.round_id.endswith(f"-{round_no:06d}")]
    return cards[2]


def codes(found: list[Violation]) -> list[str]:
    return [v.code for v in found]


def test_the_clean_floor_audits_to_nothing() -> None:
    assert audit(list(floor()))[0] == []
    assert audit(list(floor()), registry())[0] == []


def test_a_shoe_restarting_mid_round_is_one_finding_and_no_critical() -> None:
    """Issue 44's case: one table's shoe restarts halfway through the shift, mid-round,
    with seq from 1 and a new chain; every card is still dealt in order. One finding
    naming the device and where; the round it cut is incomplete, not the dealer's."""
    events = floor()
    shoe = shoe_of(events)
    at = mid_round_card(events, shoe, 30)
    found, rounds = audit(restarted(events, shoe, at.event_id))
    assert codes(found) == ["DEVICE_RESTARTED"]
    v = found[0]
    assert (v.severity, v.event_id, v.round_id) == ("MEDIUM", at.event_id, at.round_id)
    assert v.message.startswith(f"{shoe} restarted round {at.round_id}: its record starts "
                                "again at seq 1, a new chain, after seq ")
    cut = [s for s in rounds if s.round_id == at.round_id]
    assert len(cut) == 1 and not cut[0].complete
    assert sum(not s.complete for s in rounds) == 1 and len(rounds) == 4 * 60


def test_a_signing_shoe_restarting_mid_round_is_high_for_its_unsigned_tail() -> None:
    """With the key registry the restarted device signs its new chain (its checkpoints
    verify); its events before the restart since its last checkpoint are covered by no
    signature: still one finding, HIGH, naming them."""
    events = floor()
    shoe = shoe_of(events)
    at = mid_round_card(events, shoe, 30)
    found, _ = audit(restarted(events, shoe, at.event_id, device_key(secret(SEED), shoe)),
                     registry())
    assert codes(found) == ["DEVICE_RESTARTED"]
    assert found[0].severity == "HIGH"
    assert "covered by no checkpoint" in found[0].message


def test_a_restart_between_rounds_judges_every_round() -> None:
    """The shoe restarts on a ShoeLoaded between rounds: no round is cut, the new shoe's
    counts are whole, and every round is complete."""
    events = floor()
    shoe = shoe_of(events)
    loads = [e for e in events if e.device_id == shoe and type(e.payload) is ShoeLoaded]
    at = loads[len(loads) // 2]
    for keys in (None, registry()):
        key = None if keys is None else device_key(secret(SEED), shoe)
        found, rounds = audit(restarted(events, shoe, at.event_id, key), keys)
        assert codes(found) == ["DEVICE_RESTARTED"]
        assert (found[0].severity, found[0].round_id) == ("MEDIUM", "")
        assert "restarted between rounds" in found[0].message
        assert all(s.complete for s in rounds)


def test_a_restart_still_judges_the_rounds_after_it() -> None:
    """Its later events are audited, never refused: a wrong payout two rounds after the
    restart is found."""
    events = list(floor())
    shoe = shoe_of(events)
    at = mid_round_card(floor(), shoe, 30)
    table = at.table_id
    pay = next(e for e in events if e.table_id == table and type(e.payload) is PayoutMade
               and e.round_id is not None and e.round_id > f"{table}-000031")
    p = pay.payload
    assert isinstance(p, PayoutMade)
    events[events.index(pay)] = replace(pay, payload=replace(p, amount=p.amount * 10))
    # the rfid's chain re-linked after the change, as a device would have sent it
    found, _ = audit(restarted(_relinked(events, pay.device_id, pay.event_id), shoe,
                               at.event_id))
    assert codes(found) == ["DEVICE_RESTARTED", "PAYOUT_WRONG"]
    assert found[1].event_id == pay.event_id


def _relinked(events: list[Event], device: str, start: str) -> list[Event]:
    """The device's chain re-linked from `start` on (no signatures: an unsigned floor)."""
    from pitwatch.events.avro import digest

    out: list[Event] = []
    prev: bytes | None = None
    on = False
    for ev in events:
        if ev.device_id == device:
            on = on or ev.event_id == start
            if on and prev is not None:
                ev = replace(ev, prev_digest=prev)
            prev = digest(ev)
        out.append(ev)
    return out


def test_a_replaced_device_starts_a_new_chain_and_signs_with_its_own_key() -> None:
    """A spare put in a shoe's place starts at seq 1 under the shoe's id and signs with
    its own key. A registry that does not name that key finds its checkpoints
    SIGNATURE_INVALID (a forger's spare is no better); with no registry, the restart
    alone."""
    events = floor()
    shoe = shoe_of(events)
    loads = [e for e in events if e.device_id == shoe and type(e.payload) is ShoeLoaded]
    at = loads[len(loads) // 2]
    spare = device_key("a spare", shoe)
    sent = restarted(events, shoe, at.event_id, spare, key_id=f"{shoe}/spare")
    found, _ = audit(sent, registry())
    assert codes(found)[0] == "DEVICE_RESTARTED"
    assert set(codes(found)[1:]) == {"SIGNATURE_INVALID"}
    assert all(f"{shoe}/spare" in v.message for v in found[1:])
    found, _ = audit(sent)
    assert codes(found) == ["DEVICE_RESTARTED"]


def test_a_forged_restart_hiding_a_changed_payout_does_not_pass() -> None:
    """A forger raises a payout tenfold and, to keep the round from being judged, fakes
    a restart of the rfid reader on it (seq 1, a new chain he computes). He holds no
    key: with the registry the new chain's checkpoints do not verify (HIGH). Without a
    registry the round is not judged after the restart (docs/events.md says so), and
    DEVICE_RESTARTED names it."""
    events = list(floor())
    pay = next(e for e in events if type(e.payload) is PayoutMade
               and e.round_id is not None and e.round_id.endswith("-000030"))
    p = pay.payload
    assert isinstance(p, PayoutMade)
    events[events.index(pay)] = replace(pay, payload=replace(p, amount=p.amount * 10))
    forged = restarted(events, pay.device_id, pay.event_id)
    found, _ = audit(forged, registry())
    high = [v for v in found if v.severity in ("HIGH", "CRITICAL")]
    assert {v.code for v in high} == {"SIGNATURE_INVALID", "DEVICE_RESTARTED"}
    assert any(v.round_id == pay.round_id and v.code == "SIGNATURE_INVALID" for v in high)
    found, _ = audit(forged)
    assert codes(found) == ["DEVICE_RESTARTED"]
    assert found[0].round_id == pay.round_id and pay.device_id in found[0].message


def test_old_copies_after_a_restart_are_redeliveries() -> None:
    """A late copy of an event from the chain before the restart is known and changes
    nothing, though its seq is now the new chain's."""
    events = floor()
    shoe = shoe_of(events)
    at = mid_round_card(events, shoe, 30)
    sent = restarted(events, shoe, at.event_id)
    before = [e for e in events if e.device_id == shoe and e.seq in (3, 40)]
    found, _ = audit([*sent, *before])
    assert codes(found) == ["DEVICE_RESTARTED"]


def test_checkpoints_are_kept_in_the_new_chain() -> None:
    """The fault re-signs the checkpoints after the restart over the new chain."""
    events = floor()
    shoe = shoe_of(events)
    at = mid_round_card(events, shoe, 30)
    sent = restarted(events, shoe, at.event_id, device_key(secret(SEED), shoe))
    new = [e for e in sent if e.device_id == shoe and e.seq >= 1
           and sent.index(e) >= sent.index(next(x for x in sent if x.event_id == at.event_id))]
    assert new[0].seq == 1 and new[0].prev_digest is None
    cps = [e for e in new if type(e.payload) is Checkpoint]
    assert cps and all(isinstance(c.payload, Checkpoint) and c.payload.head_seq == c.seq - 1
                       for c in cps)
