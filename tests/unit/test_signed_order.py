"""Ends and order are signed, and so is the meaning of the signed bytes (issue 35, items
4 and 5; docs/events.md, "Signed checkpoints"):

- "A signed end-of-shift (or heartbeat) record proves where a table's record ends. A
  missing one is a finding."
- "The table-level order across devices is signed: for example, the console's
  checkpoint covers the other devices' heads."
- "The signed checkpoint binds the SHA-256 of the writer schema."

The forger holds no device key: they delete, move and relabel signed events."""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path

import fastavro
import pytest

from pitwatch.audit.run import audit_events
from pitwatch.engine.violation import Violation
from pitwatch.events import schema
from pitwatch.events.avro import decode_single, digest, encode, encode_single
from pitwatch.events.keys import KeyRegistry, sign_checkpoint
from pitwatch.events.model import CardDealt, Checkpoint, Event, PayoutMade
from pitwatch.events.schema import released_writers
from pitwatch.producers.devices import device_key
from pitwatch.producers.simulate import Floor
from pitwatch.producers.table import secret

SEED = 11


@cache
def floor() -> tuple[tuple[Event, ...], KeyRegistry]:
    f = Floor(1, 12, seed=SEED, jurisdiction="NJ", game="BLACKJACK")
    events = tuple(f.events())
    keys = f.registry()
    assert keys is not None
    return events, keys


def found(events: list[Event], keys: KeyRegistry | None) -> list[Violation]:
    return audit_events(events, keys=keys).violations


def signature_findings(events: list[Event], keys: KeyRegistry) -> list[Violation]:
    return [v for v in found(events, keys) if v.code == "SIGNATURE_INVALID"]


def test_the_simulated_floor_signs_its_order_and_its_end() -> None:
    events, keys = floor()
    last = events[-1]
    assert type(last.payload) is Checkpoint and last.device_id.endswith("-console")
    assert last.payload.end and last.payload.order is not None
    assert all(type(e.payload) is not Checkpoint or e.payload.schema_sha256 is not None
               for e in events)
    assert signature_findings(list(events), keys) == []


# --- truncation -----------------------------------------------------------------------


def test_a_record_cut_at_a_checkpoint_boundary_is_caught() -> None:
    """"A signed end ... proves where a table's record ends. A missing one is a
    finding": the table's last round removed, cut where every device had signed (each
    chain whole and signed): one HIGH finding, the record's missing end."""
    events, keys = floor()
    evs = list(events)
    cut = next(i for i, e in enumerate(evs) if e.round_id == "AC-BJ-01-000012")
    kept = evs[:cut]
    assert all(type(e.payload) is Checkpoint for e in kept[-3:])  # a signed boundary
    sig = signature_findings(kept, keys)
    assert len(sig) == 1 and sig[0].severity == "HIGH"
    assert "no signed end" in sig[0].message and sig[0].event_id == kept[-1].event_id
    # the whole record, end included: nothing
    assert signature_findings(evs, keys) == []


def test_a_record_cut_before_its_end_alone_is_caught() -> None:
    """Only the end-of-shift checkpoint removed: the record is cut at its last boundary."""
    events, keys = floor()
    sig = signature_findings(list(events[:-1]), keys)
    assert len(sig) == 1 and "no signed end" in sig[0].message


def test_a_store_batch_that_ends_is_not_the_end_of_the_record() -> None:
    """An audit whose input goes on later (finish not called: a store's batch) says
    nothing of the end; the processing-time rule and finish() do."""
    from pitwatch.engine.auditor import Auditor
    from pitwatch.packs.registry import select

    events, keys = floor()
    cut = next(i for i, e in enumerate(events) if e.round_id == "AC-BJ-01-000012")
    out: list[Violation] = []
    a = Auditor(select, out.append, lambda s: None, keys=keys, released=released_writers())
    for ev in events[:cut]:
        a.feed(ev)
    assert out == []
    t = a.table("AC-BJ-01")
    assert t.expire_unsigned(60_000) and len(out) == 1 and "no signed end" in out[0].message
    assert not t.expire_unsigned(60_000)  # said once
    a.finish()
    assert len(out) == 1


# --- interleaving ---------------------------------------------------------------------


def _dealer_card_and_payout(evs: list[Event]) -> tuple[int, int]:
    """A dealer card (the shoe's) and a PayoutMade (the rfid's) after it in its round,
    with no event of either device between them: moving one across the other leaves
    each device's own chain as it was."""
    for i, e in enumerate(evs):
        p = e.payload
        if type(p) is not CardDealt or p.to != "DEALER":
            continue
        for j in range(i + 1, len(evs)):
            f = evs[j]
            if f.round_id != e.round_id or f.device_id == e.device_id:
                break
            if type(f.payload) is PayoutMade:
                if not any(evs[k].device_id == f.device_id for k in range(i + 1, j)):
                    return i, j
                break
    raise AssertionError("no round with a dealer card and a payout after it")


@pytest.mark.parametrize("way", ["payout earlier", "card later"])
def test_moving_an_event_across_another_devices_chain_is_caught(way: str) -> None:
    """"The table-level order across devices is signed": the rfid's PayoutMade moved
    before the shoe's last dealer card (or the card after the payout). Each device's
    own chain is untouched, so each of its signatures verifies; the console's signed
    order does not: HIGH, on the console's checkpoint of that round."""
    events, keys = floor()
    evs = list(events)
    card, pay = _dealer_card_and_payout(evs)
    moved = evs[:]
    if way == "payout earlier":
        moved.insert(card, moved.pop(pay))
    else:
        moved.insert(pay, moved.pop(card))
    sig = signature_findings(moved, keys)
    assert len(sig) == 1 and sig[0].severity == "HIGH"
    assert "order across devices" in sig[0].message
    assert sig[0].round_id == evs[card].round_id
    assert "-console" in sig[0].message
    # without the signed order (no registry), nothing tells the two orders apart
    assert not any(v.code == "SIGNATURE_INVALID" for v in found(moved, None))


def test_a_break_in_the_record_suspends_the_order_check() -> None:
    """A record that is not continuous is one finding: events of one device lost before
    the console signs the round show as EVENTS_LOST, and the order that no longer
    matches (the lost events are in it) is not reported as well."""
    events, keys = floor()
    evs = list(events)
    i = next(k for k, e in enumerate(evs) if e.round_id == "AC-BJ-01-000006"
             and e.device_id.endswith("-shoe") and type(e.payload) is CardDealt)
    del evs[i]
    codes = [v.code for v in found(evs, keys) if v.code in ("EVENTS_LOST",
                                                              "SIGNATURE_INVALID")]
    assert codes == ["EVENTS_LOST"]


# --- the meaning of the signed bytes ------------------------------------------------------


def _swapped_current() -> dict[str, object]:
    """The current schema with WagerCollected and WagerReturned swapped in the union:
    the same bytes, the other meaning (tests/data/make_hostile.py's swapped_union, on
    the current version)."""
    s = copy.deepcopy(schema.raw_schema())
    types = s["fields"][-1]["type"]
    i = next(k for k, t in enumerate(types) if t["name"] == "WagerCollected")
    j = next(k for k, t in enumerate(types) if t["name"] == "WagerReturned")
    types[i], types[j] = types[j], types[i]
    return s


@pytest.fixture
def swap_released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[bytes]:
    """A deployment that released the swapped schema (PITWATCH_RELEASED_SCHEMAS): what
    the container header check cannot refuse. Yields its single-object header."""
    d = tmp_path / "released" / "v99"
    d.mkdir(parents=True)
    s = _swapped_current()
    (d / "TableEvent.avsc").write_text(json.dumps(s))
    monkeypatch.setenv(schema.RELEASED_ENV, str(tmp_path / "released"))
    schema.writer_schemas.cache_clear()
    header = schema.SINGLE_OBJECT_MAGIC + struct.pack(
        "<Q", schema.fingerprint(fastavro.parse_schema(schema.strip_logical(s))))
    yield header
    schema.writer_schemas.cache_clear()


def test_signed_bytes_relabelled_under_another_schema_carry_no_valid_checkpoint(
        swap_released: bytes) -> None:
    """"The signed checkpoint binds the SHA-256 of the writer schema": the floor's bytes,
    unchanged, sent under a released schema that swaps two payloads' meaning. Every
    digest holds, so only the checkpoints' bound schema tells: each checkpoint of a
    device whose events were relabelled is SIGNATURE_INVALID, and the money's meaning
    is never vouched for."""
    events, keys = floor()
    relabelled = [decode_single(swap_released + encode(e)) for e in events]
    assert any(type(e.payload).__name__ == "WagerReturned" for e in relabelled)
    sig = signature_findings(relabelled, keys)
    assert sig and all(v.severity == "HIGH" for v in sig)
    assert all("binds schema" in v.message for v in sig)
    # the same bytes under the schema they were signed under verify
    assert signature_findings([decode_single(encode_single(e)) for e in events], keys) == []


def test_the_forged_containers_carry_no_checkpoint_at_all() -> None:
    """E's forged containers (tests/data/hostile) are refused whole: no record of theirs,
    checkpoint or not, reaches the audit."""
    from pitwatch.events.files import read_files
    from tests.data import make_hostile

    hostile = Path(make_hostile.__file__).parent / "hostile"
    rejected: list[object] = []
    for name in ("swapped_union.avro", "enum_order.avro", "renamed_fields.avro",
                 "crc_forged.avro"):
        assert list(read_files([hostile / name], rejected.append)) == []
    assert len(rejected) == 4


def test_a_checkpoint_in_the_old_form_under_the_sealing_version_binds_nothing() -> None:
    """A version 3 writer signs sealed: a checkpoint of the version 2 form read from
    version 3 bytes (re-signed by its own device, even) is SIGNATURE_INVALID."""
    events, keys = floor()
    evs = _unsealed(events)
    raw = [decode_single(encode_single(e)) for e in evs]
    sig = signature_findings(raw, keys)
    assert sig and all("binds no schema" in v.message for v in sig)


# --- old streams ----------------------------------------------------------------------


def _unsealed(events: tuple[Event, ...]) -> list[Event]:
    """The floor as the version 2 simulator signed it: each checkpoint in the version 2
    form, signed by its device over (table, device, head) alone, the chains re-linked
    (a version 2 checkpoint's bytes are the same under versions 2 and 3)."""
    out: list[Event] = []
    prev: dict[str, bytes] = {}
    for ev in events:
        p = ev.payload
        head = prev.get(ev.device_id)
        if type(p) is Checkpoint:
            assert head is not None
            key = device_key(secret(SEED), ev.device_id)
            p = Checkpoint(ev.seq - 1, head, p.key_id,
                           sign_checkpoint(key, ev.table_id, ev.device_id, ev.seq - 1, head))
        new = replace(ev, prev_digest=head, payload=p, raw=None)
        prev[ev.device_id] = digest(new)
        out.append(new)
    return out


def test_a_version_2_signed_stream_verifies_as_before() -> None:
    """Old signed streams: version 2 messages (and JSON Lines) with version 2
    checkpoints verify as they did; they sign no order and no end, so neither is
    required of them (the rules judge only the order each chain fixes)."""
    events, keys = floor()
    evs = _unsealed(events)
    crc = next(w.crc for w in schema.writer_schemas().values()
               if w.source.endswith("v2/TableEvent.avsc"))
    messages = [decode_single(schema.SINGLE_OBJECT_MAGIC + crc + encode(e)) for e in evs]
    assert all(e.writer == crc for e in messages)
    assert signature_findings(messages, keys) == []
    assert signature_findings(evs, keys) == []
    # cut mid-way, a version 2 stream shows only what it showed before: the devices'
    # unsigned tails, never a missing end
    cut = signature_findings(messages[:-40], keys)
    assert cut and all("truncated chain" in v.message for v in cut)
    sealed_codes = sorted(v.code for v in found(list(events), keys))
    assert sorted(v.code for v in found(messages, keys)) == sealed_codes


def test_the_order_state_stays_small() -> None:
    """A table's order state holds the device ids since its signer's last order (a
    round's), and at most FIRST_WINDOW of them while no order was signed (a table whose
    devices sign none), whatever the stream: the snapshot stays small."""
    from pitwatch.engine.signed_order import FIRST_WINDOW, TableOrder
    from pitwatch.events.keys import order_digest

    o = TableOrder()
    for n in range(3 * FIRST_WINDOW):
        o.note("T-shoe", f"e{n}", n, None, n + 1)
    assert len(o.log) <= FIRST_WINDOW and o.window("T-console") is None  # unknown now
    o.signed_here("T-console")
    assert o.log == []
    for n in range(5):
        o.note("T-rfid" if n % 2 else "T-shoe", f"f{n}", n, "r", n + 1)
    assert o.matches("T-console", order_digest(["T-shoe", "T-rfid"] * 2 + ["T-shoe"])) \
        == (True, 5)
    o.signed_here("T-console")
    assert len(o.log) == 0 and len(o.to_json()["log"]) == 0


@pytest.mark.parametrize("where", ["mid-round", "between rounds"])
def test_a_restored_auditor_judges_the_order_as_one_that_never_stopped(where: str) -> None:
    """The streaming worker snapshots a table's state and restores it elsewhere: the
    order since the console's last signed one travels in the snapshot, so a moved event
    is caught the same, with the same violation id."""
    from pitwatch.engine.auditor import Auditor
    from pitwatch.packs.registry import select

    events, keys = floor()
    evs = list(events)
    card, pay = _dealer_card_and_payout(evs)
    moved = evs[:]
    moved.insert(card, moved.pop(pay))
    if where == "mid-round":
        at = card + 1
    else:
        at = next(i for i in range(card, 0, -1) if type(moved[i].payload) is Checkpoint
                  and moved[i].round_id is None) + 1
    whole = [v.violation_id for v in signature_findings(moved, keys)]
    out: list[Violation] = []
    a = Auditor(select, out.append, lambda s: None, keys=keys, released=released_writers())
    for ev in moved[:at]:
        a.feed(ev)
    state = a.table("AC-BJ-01").export_state()
    b = Auditor(select, out.append, lambda s: None, keys=keys, released=released_writers())
    b.table("AC-BJ-01").import_state(json.loads(json.dumps(state)))
    for ev in moved[at:]:
        b.feed(ev)
    b.finish()
    assert [v.violation_id for v in out if v.code == "SIGNATURE_INVALID"] == whole
    assert len(whole) == 1


@pytest.mark.parametrize("restore", [False, True])
def test_a_restore_between_events_and_their_checkpoint_keeps_their_writer_schema(
        swap_released: bytes, restore: bool) -> None:
    """A device's event written under schema A (a released one), then its checkpoint,
    written under schema B and binding B: SIGNATURE_INVALID, the event's bytes mean what
    A says. The writer schemas of a device's events since its checkpoint travel in the
    snapshot, so a worker restored between the event and the checkpoint finds the same."""
    from pitwatch.engine.auditor import TableAuditor
    from pitwatch.packs.registry import select

    events, keys = floor()
    msgs = [decode_single(encode_single(e)) for e in events]
    at = next(i for i, e in enumerate(events) if type(e.payload) is Checkpoint
              and e.device_id.endswith("-shoe") and i > 100)
    j = max(i for i in range(at) if events[i].device_id == events[at].device_id)
    assert type(events[j].payload) is CardDealt  # its meaning is A's and B's alike
    msgs[j] = decode_single(swap_released + encode(events[j]))  # under A
    assert msgs[j].writer == swap_released[2:] and msgs[at].writer is None
    out: list[Violation] = []
    a = TableAuditor(events[0].table_id, select, out.append, lambda _: None, keys=keys,
                     released=released_writers())
    for i, ev in enumerate(msgs[:at + 1]):
        if restore and i == at:
            state = json.loads(json.dumps(a.export_state()))
            under_a = schema.writer_schemas()[swap_released[2:]].sha256.hex()
            assert under_a in state["writers"][events[at].device_id]
            older = {k: v for k, v in state.items() if k != "writers"}  # before it: none
            TableAuditor(events[0].table_id, select, out.append, lambda _: None,
                         keys=keys, released=released_writers()).import_state(older)
            a = TableAuditor(events[0].table_id, select, out.append, lambda _: None,
                             keys=keys, released=released_writers())
            a.import_state(state)
        a.feed(ev)
    sig = [v for v in out if v.code == "SIGNATURE_INVALID"]
    assert [v.event_id for v in sig] == [events[at].event_id]
    assert "binds schema" in sig[0].message and "its events are under" in sig[0].message
