"""Signed device records (docs/events.md, "Signed checkpoints"): "A device in the key
registry signs its chain: a Checkpoint at least every `checkpoint_every` events and
after its last event of every round ... Any other case is SIGNATURE_INVALID (HIGH)."

A forger here knows everything but the device's private key: the algorithm, the
canonical form, the chain, the checkpoint message. They recompute digests and sign
with a key of their own."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pitwatch.audit.run import AuditReport, audit_events
from pitwatch.events.avro import decode_single, digest, encode_single
from pitwatch.events.jsonl import dumps, loads
from pitwatch.events.keys import (
    DOMAIN,
    DeviceKey,
    KeyRegistry,
    KeyRegistryError,
    checkpoint_message,
    public_bytes,
    sign_checkpoint,
)
from pitwatch.events.model import (
    Checkpoint,
    Event,
    PayoutMade,
    RoundStarted,
    ShoeLoaded,
    WagerPlaced,
)
from pitwatch.events.schema import released_writers
from pitwatch.packs.base import RECORD_CITATIONS
from pitwatch.producers.devices import device_key
from pitwatch.producers.simulate import Floor

SECRET = "pitwatch-simulate/11"  # the simulator's keys for seed 11 (TableRun)
DEVICE = "AC-BJ-01-rfid"


@cache
def floor() -> tuple[tuple[Event, ...], KeyRegistry]:
    f = Floor(1, 12, seed=11, jurisdiction="NJ", game="BLACKJACK")
    events = tuple(f.events())
    keys = f.registry()
    assert keys is not None
    return events, keys


def audit(events: list[Event], keys: KeyRegistry | None) -> AuditReport:
    return audit_events(events, keys=keys)


def codes(rep: AuditReport) -> Counter[str]:
    return Counter(v.code for v in rep.violations)


def rechain(events: list[Event], device: str,
            sign: Callable[[int], tuple[str, Ed25519PrivateKey]] | None) -> list[Event]:
    """The forger's (or an honest device's) tool: renumber `device`'s events 1, 2, ...,
    recompute every prev_digest and every checkpoint's head; with `sign`, sign each
    checkpoint with the key it names for the head's seq (else keep the old signature)."""
    out: list[Event] = []
    seq, prev = 0, None
    for ev in events:
        if ev.device_id != device:
            out.append(ev)
            continue
        p = ev.payload
        if isinstance(p, Checkpoint):
            assert prev is not None
            key_id, sig = p.key_id, p.signature
            if sign is not None:
                key_id, key = sign(seq)
                sig = sign_checkpoint(key, ev.table_id, device, seq, prev)
            p = Checkpoint(seq, prev, key_id, sig)
        seq += 1
        new = replace(ev, seq=seq, prev_digest=prev, payload=p, raw=None)
        prev = digest(new)
        out.append(new)
    return out


def raise_a_wager(events: tuple[Event, ...], last_round: bool = False) -> list[Event]:
    """The forger's change: one WagerPlaced of DEVICE raised by $5.00 (in the last round
    with `last_round`), the chain left as it was."""
    evs = list(events)
    i = next(k for k, e in enumerate(evs) if isinstance(e.payload, WagerPlaced)
             and e.device_id == DEVICE
             and (not last_round or (e.round_id is not None and e.round_id.endswith("12"))))
    p = evs[i].payload
    assert isinstance(p, WagerPlaced)
    evs[i] = replace(evs[i], payload=WagerPlaced(p.seat, p.hand, p.kind, p.amount + 500),
                     raw=None)
    return evs


def test_a_clean_signed_floor_raises_nothing() -> None:
    events, keys = floor()
    assert any(isinstance(e.payload, Checkpoint) for e in events)
    rep = audit(list(events), keys)
    assert rep.violations == []
    assert rep.signing_devices == 4


def test_checkpoints_never_enter_a_round() -> None:
    events, keys = floor()
    with_keys, without = audit(list(events), keys), audit(list(events), None)
    assert with_keys.rounds == without.rounds == 12
    assert with_keys.incomplete == 0
    assert without.violations == [] and without.signing_devices is None


def test_a_forged_amount_with_the_chain_recomputed_is_caught() -> None:
    """The forger raises a wager and recomputes every digest after it: the record rules
    see a whole chain; the signature over the changed head does not verify."""
    events, keys = floor()
    evs = raise_a_wager(events, last_round=True)
    forged = rechain(evs, DEVICE, None)
    rep = audit(forged, keys)
    sig = [v for v in rep.violations if v.code == "SIGNATURE_INVALID"]
    assert sig and all(v.severity == "HIGH" for v in sig)
    assert "not valid" in sig[0].message
    assert "DIGEST_MISMATCH" not in codes(rep)
    assert sig[0].citation == RECORD_CITATIONS["SIGNATURE_INVALID"][1]
    # without the registry the same forgery passes: the digests alone prove nothing
    assert "SIGNATURE_INVALID" not in codes(audit(forged, None))


def test_a_forger_signing_with_their_own_key_is_caught() -> None:
    events, keys = floor()
    mine = Ed25519PrivateKey.generate()
    evs = raise_a_wager(events)
    rep = audit(rechain(evs, DEVICE, lambda seq: (f"{DEVICE}/1", mine)), keys)
    assert codes(rep)["SIGNATURE_INVALID"] >= 1


def test_a_rewritten_chain_is_a_high_digest_mismatch() -> None:
    """An event altered without recomputing the chain: DIGEST_MISMATCH, HIGH for a
    device that signs (the signed head after it vouches for the original), LOW for one
    that does not."""
    events, keys = floor()
    evs = raise_a_wager(events)
    signed = [v for v in audit(evs, keys).violations if v.code == "DIGEST_MISMATCH"]
    assert [v.severity for v in signed] == ["HIGH"]
    unsigned = [v for v in audit(evs, None).violations if v.code == "DIGEST_MISMATCH"]
    assert [v.severity for v in unsigned] == ["LOW"]


def test_a_truncated_chain_is_caught_at_the_end_of_input() -> None:
    """The last events of a device, after its last checkpoint, protected by nothing:
    cut the input at the device's final checkpoint (and the table's signed end after
    it) and the input ends with them unsigned: one finding, the record's missing end,
    naming them."""
    events, keys = floor()
    evs = list(events)
    last = max(k for k, e in enumerate(evs)
               if e.device_id == DEVICE and isinstance(e.payload, Checkpoint))
    del evs[last:]
    rep = audit(evs, keys)
    sig = [v for v in rep.violations if v.code == "SIGNATURE_INVALID"]
    assert len(sig) == 1 and "truncated" in sig[0].message
    assert sig[0].event_id == evs[last - 1].event_id or sig[0].round_id


def test_a_round_closed_without_its_checkpoint_is_caught() -> None:
    events, keys = floor()
    evs = list(events)
    k = next(k for k, e in enumerate(evs) if e.device_id == "AC-BJ-01-console"
             and isinstance(e.payload, Checkpoint) and e.round_id is not None)
    rid = evs[k].round_id
    del evs[k]
    evs = rechain(evs, "AC-BJ-01-console",
                  lambda seq: ("AC-BJ-01-console/1", device_key(SECRET, "AC-BJ-01-console")))
    sig = [v for v in audit(evs, keys).violations if v.code == "SIGNATURE_INVALID"]
    assert len(sig) == 1 and sig[0].round_id == rid
    assert "moved on" in sig[0].message


def test_more_than_n_events_without_a_checkpoint_is_caught() -> None:
    events, keys = floor()
    strict = KeyRegistry(keys.devices, checkpoint_every=3)
    sig = [v for v in audit(list(events), strict).violations if v.code == "SIGNATURE_INVALID"]
    assert sig and all("more than 3 events" in v.message for v in sig)
    assert audit(list(events), KeyRegistry(keys.devices, checkpoint_every=32)).violations == []


def test_a_key_rotation_mid_stream_is_accepted() -> None:
    """Key 1 signs up to seq 40, key 2 from 41: the device's checkpoints re-signed
    accordingly verify; key 1 used after its end does not."""
    events, keys = floor()
    old, new = device_key(SECRET, DEVICE), Ed25519PrivateKey.generate()
    rotated = KeyRegistry({**keys.devices, DEVICE: [
        DeviceKey(f"{DEVICE}/1", public_bytes(old), 1, 40),
        DeviceKey(f"{DEVICE}/2", public_bytes(new), 41, None)]})
    evs = rechain(list(events), DEVICE,
                  lambda seq: (f"{DEVICE}/1", old) if seq <= 40 else (f"{DEVICE}/2", new))
    assert audit(evs, rotated).violations == []
    stale = rechain(list(events), DEVICE, lambda seq: (f"{DEVICE}/1", old))
    sig = [v for v in audit(stale, rotated).violations if v.code == "SIGNATURE_INVALID"]
    assert sig and "not seq" in sig[0].message


def test_an_unknown_key_id_is_caught() -> None:
    events, keys = floor()
    evs = rechain(list(events), DEVICE, lambda seq: (f"{DEVICE}/9", device_key(SECRET, DEVICE)))
    sig = [v for v in audit(evs, keys).violations if v.code == "SIGNATURE_INVALID"]
    assert sig and "is not one of" in sig[0].message


def test_a_checkpoint_that_names_another_head_is_caught() -> None:
    events, keys = floor()
    evs = list(events)
    k = next(k for k, e in enumerate(evs) if isinstance(e.payload, Checkpoint))
    p = evs[k].payload
    assert isinstance(p, Checkpoint)
    evs[k] = replace(evs[k], payload=replace(p, head_seq=p.head_seq - 1), raw=None)
    sig = [v for v in audit(evs, keys).violations if v.code == "SIGNATURE_INVALID"]
    assert sig and "the chain's head is" in sig[0].message


def test_the_signed_message_is_fixed_and_domain_separated() -> None:
    msg = checkpoint_message("T", "D", 7, b"\x01" * 32)
    assert msg == DOMAIN + b"\x00\x00\x00\x01T\x00\x00\x00\x01D" + (7).to_bytes(8, "big") \
        + b"\x01" * 32
    # table and device cannot trade characters between them
    assert checkpoint_message("TD", "", 7, b"") != checkpoint_message("T", "D", 7, b"")


def test_checkpoints_round_trip_in_avro_and_json() -> None:
    events, _ = floor()
    cp = next(e for e in events if isinstance(e.payload, Checkpoint))
    assert decode_single(encode_single(cp)) == cp
    assert loads(dumps(cp)) == cp


def test_the_registry_file_round_trips_and_refuses_nonsense(tmp_path: Path) -> None:
    _, keys = floor()
    keys.write(tmp_path / "keys.json")
    again = KeyRegistry.load(tmp_path / "keys.json")
    assert again.devices == keys.devices and again.checkpoint_every == keys.checkpoint_every
    (tmp_path / "bad.json").write_text('{"version": 1, "devices": {"d": [{"key_id": "k", '
                                       '"public_key": "AAAA"}]}}')
    with pytest.raises(KeyRegistryError, match="d key 1"):
        KeyRegistry.load(tmp_path / "bad.json")
    with pytest.raises(KeyRegistryError, match="cannot read"):
        KeyRegistry.load(tmp_path / "absent.json")


def test_the_simulator_forgery_fault_is_found_exactly() -> None:
    """--inject's forgery: an amount changed, the chain recomputed, found on each
    checkpoint whose signature no longer matches, and nothing else."""
    f = Floor(4, 3, seed=5, inject=1.0, jurisdiction="NJ", game="BLACKJACK")
    evs = list(f.events())
    truth = [t for t in f.truth if t["code"] == "SIGNATURE_INVALID"]
    assert truth
    rep = audit_events(evs, keys=f.registry())
    assert {(t["code"], t["event_id"]) for t in f.truth} \
        == {(v.code, v.event_id) for v in rep.violations}


def test_the_commands_sign_verify_and_say_so(tmp_path: Path) -> None:
    """`pitwatch simulate` writes DIR/keys.json; `pitwatch audit DIR --keys` verifies
    against it and says so, as it does with keys.json beside the floor; with no registry
    the summary says signatures NOT CHECKED;
    a registry that cannot be read is bad input (exit 2)."""
    def pitwatch(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    out = tmp_path / "floor"
    r = pitwatch("simulate", "--tables", "2", "--rounds", "5", "--seed", "3", "--quiet",
                 "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert KeyRegistry.load(out / "keys.json").signs("AC-BJ-01-rfid")
    signed = pitwatch("audit", str(out), "--no-store", "--keys", str(out / "keys.json"))
    assert signed.returncode == 0, signed.stderr
    assert "signatures: verified; 8 device(s)" in signed.stdout
    assert "rejected" not in signed.stdout  # keys.json is not read as events
    beside = pitwatch("audit", str(out), "--no-store")  # keys.json beside: checked
    assert "signatures: verified; 8 device(s)" in beside.stdout
    (out / "keys.json").rename(tmp_path / "keys.json")
    plain = pitwatch("audit", str(out), "--no-store")
    assert "signatures NOT CHECKED: no key registry" in plain.stdout
    (tmp_path / "bad.json").write_text("{")
    bad = pitwatch("audit", str(out), "--no-store", "--keys", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "not JSON" in bad.stderr


def signature_ids(evs: list[Event], keys: KeyRegistry, stop_at: int | None) -> list[str]:
    """The SIGNATURE_INVALID ids of one table's auditor, snapshotted before event
    `stop_at` and restored into a new auditor (as a worker restarts) when given."""
    from pitwatch.engine.auditor import TableAuditor
    from pitwatch.engine.violation import Violation
    from pitwatch.packs.registry import select

    found: list[Violation] = []
    a = TableAuditor("AC-BJ-01", select, found.append, lambda _: None, keys=keys,
                     released=released_writers())
    for i, ev in enumerate(evs):
        if i == stop_at:
            state = a.export_state()
            a = TableAuditor("AC-BJ-01", select, found.append, lambda _: None, keys=keys,
                             released=released_writers())
            a.import_state(state)
        a.feed(ev)
    a.finish()
    return sorted(v.violation_id for v in found if v.code == "SIGNATURE_INVALID")


@pytest.mark.parametrize("cut", [57, 300, 611])
def test_a_snapshot_keeps_what_is_unsigned(cut: int) -> None:
    """The worker's snapshot carries each device's unsigned run: an auditor restored
    mid-stream finds the same missing checkpoint as one that never stopped."""
    events, keys = floor()
    evs = [e for e in events if not (e.device_id == DEVICE
                                     and isinstance(e.payload, Checkpoint))]
    evs = rechain(evs, DEVICE, None)
    whole = signature_ids(evs, keys, None)
    assert len(whole) >= 12  # each round of the rfid device, and its truncated end
    assert signature_ids(evs, keys, cut) == whole


def test_the_worker_finds_a_truncated_chain_by_processing_time() -> None:
    """Streaming has no end of input: once the partition is caught up and nothing came
    for the time-out, the worker reports the truncated chain with the violation id the
    file audit gives at its end."""
    import asyncio
    import time
    from typing import Any

    from pitwatch.events.avro import encode_single
    from pitwatch.packs.registry import select
    from pitwatch.processors.state import TableStates

    events, keys = floor()
    evs = list(events)
    last = max(k for k, e in enumerate(evs)
               if e.device_id == DEVICE and isinstance(e.payload, Checkpoint))
    del evs[last:]  # the device's last checkpoint and the table's signed end after it
    log = [(i, e.table_id.encode(), encode_single(e)) for i, e in enumerate(evs)]
    states = TableStates({}, select, 15 * 60 * 1000, keys)

    async def catch_up(topic: str, partition: int, a: int, b: int) -> list[Any]:
        return [m for m in log if a <= m[0] < b]

    async def go() -> list[str]:
        for i, ev in enumerate(evs):
            out = await states.process(ev, "t", 0, i, catch_up)
            assert out.violations == []
        assert states.expire_idle(lambda t, p: True, 3600).violations == []  # not idle yet
        states.tables["AC-BJ-01"].arrived = time.monotonic() - 3601
        assert states.expire_idle(lambda t, p: False, 3600).violations == []  # behind
        return [v.violation_id for v in states.expire_idle(lambda t, p: True, 3600).violations]

    streamed = asyncio.run(go())
    filed = [v.violation_id for v in audit(evs, keys).violations]
    assert streamed == filed and len(filed) == 1


def test_audit_jobs_verifies_as_one_process_does(tmp_path: Path) -> None:
    """`--jobs N`: each process verifies its tables' checkpoints with the registry."""
    from pitwatch.audit.parallel import audit_parallel
    from pitwatch.audit.run import audit_paths
    from pitwatch.producers.simulate import write_floor

    f = Floor(4, 3, seed=5, inject=1.0, jurisdiction="NJ", game="BLACKJACK")
    write_floor(f, tmp_path)
    keys = KeyRegistry.load(tmp_path / "keys.json")
    one = audit_paths([tmp_path], keys=keys)
    two = audit_parallel([tmp_path], 2, keys=keys)
    assert one.by_code["SIGNATURE_INVALID"] >= 1
    assert [v.violation_id for v in two.violations] == [v.violation_id for v in one.violations]
    assert two.signing_devices == one.signing_devices == 16


def _stranger(events: tuple[Event, ...], device: str) -> list[Event]:
    """Every payout of DEVICE in rounds 3 and 5 sent again as if from `device`, a device
    of its own with a chain of its own, and before round 6 two shoes loaded by it: a
    forger who invents a device."""
    shoe = next(e for e in events if isinstance(e.payload, ShoeLoaded))
    out: list[Event] = []
    seq, prev = 0, None

    def fake(ev: Event) -> Event:
        nonlocal seq, prev
        seq += 1
        f = replace(ev, device_id=device, seq=seq, prev_digest=prev,
                    event_id=f"{device}-{seq}", raw=None)
        prev = digest(f)
        return f

    for ev in events:
        if isinstance(ev.payload, RoundStarted) and ev.round_id == "AC-BJ-01-000006":
            out += [fake(replace(shoe, ts=ev.ts)), fake(replace(shoe, ts=ev.ts))]
        out.append(ev)
        if ev.device_id == DEVICE and isinstance(ev.payload, PayoutMade) \
                and ev.round_id is not None and ev.round_id[-2:] in ("03", "05"):
            out.append(fake(ev))
    assert seq > 4  # more than one a round, and two between rounds
    return out


def test_a_device_the_registry_does_not_name_is_caught_once_a_round() -> None:
    """docs/events.md: "With a registry, every device must be in it. A device it does
    not name is a stranger ...: its first event in each round ... is SIGNATURE_INVALID
    (HIGH)." Without a registry nothing is required of it."""
    events, keys = floor()
    evs = _stranger(events, "AC-BJ-01-console2")
    sig = [v for v in audit(evs, keys).violations if v.code == "SIGNATURE_INVALID"]
    assert [(v.round_id, v.severity) for v in sig] == [
        ("AC-BJ-01-000003", "HIGH"), ("AC-BJ-01-000005", "HIGH"), ("", "HIGH")]
    assert "AC-BJ-01-console2 is not in the key registry" in sig[0].message
    assert "SIGNATURE_INVALID" not in codes(audit(evs, None))


def test_a_device_the_site_lets_send_unsigned_is_no_stranger() -> None:
    """docs/events.md: "A site whose devices cannot all sign yet lists those, on
    purpose, in the registry's `"unsigned_devices": [...]`; they need not sign.\""""
    events, keys = floor()
    evs = _stranger(events, "AC-BJ-01-console2")
    lenient = KeyRegistry(keys.devices, unsigned_devices=frozenset({"AC-BJ-01-console2"}))
    assert "SIGNATURE_INVALID" not in codes(audit(evs, lenient))
    back = KeyRegistry.from_json(lenient.to_json())
    assert back.unsigned_devices == {"AC-BJ-01-console2"} and not back.signs(
        "AC-BJ-01-console2")
    with pytest.raises(KeyRegistryError, match="both signing and unsigned"):
        KeyRegistry.from_json({**keys.to_json(), "unsigned_devices": [DEVICE]})
    with pytest.raises(KeyRegistryError, match="not a list of device ids"):
        KeyRegistry.from_json({**keys.to_json(), "unsigned_devices": "AC-BJ-01-shoe"})


def test_a_restored_auditor_reports_a_stranger_as_one_that_never_stopped() -> None:
    """Restored before any of a stranger's events (mid-round: the open round is folded
    again; between rounds: the device's record remembers the round it was reported
    in), the auditor reports it exactly as one that never stopped: once a round."""
    events, keys = floor()
    evs = _stranger(events, "AC-BJ-01-console2")
    whole = signature_ids(evs, keys, None)
    assert len(whole) == 3
    for i, e in enumerate(evs):
        if e.device_id == "AC-BJ-01-console2":
            assert signature_ids(evs, keys, i) == whole, i
