"""Hostile input against the real pipeline (issue 12, "Done when"): a pickle written to
the worker's changelog topic runs nothing, and thousands of hostile messages on the
events topic land in dead-letters with their reasons while the good events around them
are audited as the embedded audit does, within a stated memory bound. Every wait is on
a condition with a deadline."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import orjson

from pitwatch.events.avro import encode_single, single_object_header
from pitwatch.events.model import Event, WagerPlaced

from .conftest import KAFKA, Expected, Pipeline, committed, end_offsets, read_topic, wait_until
from .test_streaming import _assert_alerts, _assert_same

Floor = Callable[..., tuple[list[Event], Expected]]

#: The memory bound README's Security section states: the peak resident set (VmHWM) of
#: the worker and of each process it started (the sink) while it audits a floor with
#: thousands of hostile messages among its events, a few of them 1 MB (measured: about
#: 90 MiB each for the worker and the sink on CPython 3.11).
MAX_RSS_MIB = 256


class _Marker:
    """Unpickling this creates `path` (a stand-in for any code a pickle can run)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.path), "w")


def _payload(path: Path) -> bytes:
    return pickle.dumps(_Marker(path))


def _partitions(p: Pipeline) -> dict[bytes, int]:
    """Each table's partition of the events topic (its changelog partition too)."""
    return {m.key: m.partition for m in read_topic(p.events_topic)}


def _all_read(p: Pipeline) -> bool:
    ends = end_offsets([p.events_topic])
    audit = committed(p.id)
    return all(audit.get(tp, 0) >= o for tp, o in ends.items())


def test_a_pickle_on_the_changelog_runs_nothing(pipeline: Pipeline, floor: Floor,
                                                tmp_path: Path) -> None:
    """A pickle whose unpickling would create a file is written as every table's latest
    snapshot on the changelog topic, then the worker restarts (it restores every table
    from the changelog): each snapshot is dropped (logged), the tables are folded again
    from their partitions, the answer is the embedded audit's, and the file never
    appears."""
    probe = tmp_path / "probe"
    pickle.loads(_payload(probe))  # the payload is live: unpickled, it makes its file
    assert probe.exists()
    marker = tmp_path / "ran"
    events, exp = floor(tables=4, rounds=12, seed=31, inject=0.1)
    half = len(events) // 2
    first = pipeline.start_worker("a")
    pipeline.produce(events[:half])
    changelog = f"{pipeline.id}-{pipeline.prefix}open-rounds-changelog"
    tables = {e.table_id.encode() for e in events[:half]}
    wait_until("every event read and every table snapshotted", lambda: _all_read(pipeline)
               and {m.key for m in read_topic(changelog)} >= tables, 180)
    pipeline.kill(first, signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(first.pid, signal.SIGKILL)  # its sink too
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=KAFKA, acks="all")
    try:
        for key, partition in _partitions(pipeline).items():
            producer.send(changelog, key=key, value=_payload(marker), partition=partition)
        producer.flush()
    finally:
        producer.close()
    latest = {m.key: m.value for m in read_topic(changelog)}
    assert all(latest[t] == _payload(marker) for t in tables)  # what a restore reads
    pipeline.start_worker("b")
    pipeline.produce(events[half:])
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)
    assert not marker.exists()
    logs = sorted(tmp_path.glob("worker-b*.log"))[0].read_text(errors="replace")
    for t in tables:
        assert f"snapshot of table {t.decode()} dropped" in logs, logs[-3000:]


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _hostile(events: list[Event], i: int) -> tuple[bytes, bytes | None, str]:
    """The i-th hostile message, keyed like the good events around it, and a phrase its
    dead letter's reason must hold. Each value is distinct (but tombstones)."""
    ev = events[i % len(events)]
    key = ev.table_id.encode()
    n = i // 12  # the variant of its kind
    bad = replace(ev, event_id=f"{ev.event_id}-x{i}", raw=None)
    wager = next(e for e in events if isinstance(e.payload, WagerPlaced))
    started = next(e for e in events if type(e.payload).__name__ == "RoundStarted")
    seats = encode_single(replace(started, event_id=f"rs-{i}", raw=None))
    kind = i % 12
    if kind == 0:  # garbage bytes
        return key, hashlib.sha512(b"%d" % i).digest() * 3, "no C3 01 marker"
    if kind == 1:  # an unknown writer schema
        return key, b"\xc3\x01" + hashlib.sha256(b"%d" % i).digest(), "unknown schema"
    if kind == 2:  # the current header, a body that is not an event
        return key, single_object_header() + b"\xff" * (n % 50 + 1), "not a TableEvent body"
    if kind == 3:  # a tombstone
        return key, None, "tombstone"
    if kind == 4:  # a seat the contract has not
        return key, encode_single(replace(wager, event_id=f"w-{i}", raw=None, payload=replace(
            wager.payload, seat=33 + n % 200))), "seat"
    if kind == 5:  # an amount over 10^12 cents, or negative
        amount = 10**12 + 1 + n if n % 2 else -1 - n
        return key, encode_single(replace(wager, event_id=f"a-{i}", raw=None, payload=replace(
            wager.payload, amount=amount))), "amount"
    if kind == 6:  # a seq of 0, negative or past 2^53
        seq = (0, -1 - n, 2**53 + n)[n % 3]
        return key, encode_single(replace(bad, seq=seq)), "seq"
    if kind == 7:  # a ts before 1970 or after 2106
        ts = -1 - n if n % 2 else 4_294_967_296_000 + n
        return key, encode_single(replace(bad, ts=ts)), "ts"
    if kind == 8:  # an event under another table's key
        other = next(e.table_id for e in events if e.table_id != ev.table_id)
        return other.encode(), encode_single(bad), "is not the event's table_id"
    if kind == 9:  # overlong identifiers
        return key, encode_single(replace(bad, round_id="R" * (129 + n))), "round_id"
    if kind == 10:  # an array claiming 2^40 items (seats), followed by a few
        return key, seats[:-4] + _zigzag(2**40) + b"\x02" * (n % 100), "not a TableEvent body"
    # deeply nested JSON, where Avro is expected
    return key, b"[" * (1000 + n) + b"]" * (1000 + n), "no C3 01 marker"


def _rss_mib(pid: int) -> dict[int, float]:
    """Peak resident set (VmHWM) of `pid` and of every process in its group, in MiB."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            pgid = int(stat.rsplit(")", 1)[1].split()[2])
            if int(d.name) != pid and pgid != pid:
                continue
            status = (d / "status").read_text()
        except (OSError, ValueError, IndexError):
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                out[int(d.name)] = int(line.split()[1]) / 1024
    return out


def test_hostile_messages_are_dead_letters_and_memory_stays_bounded(
        pipeline: Pipeline, floor: Floor) -> None:
    """3,600 hostile messages of twelve kinds (garbage, unknown schemas, broken bodies,
    tombstones, seats, amounts, seqs and ts outside the contract's ranges, wrong keys,
    overlong ids, an array claiming 2^40 items, deeply nested JSON) and three events
    with a 1 MB device id, among a floor's events: each is a dead letter with its
    reason, nothing else is, the audit is the embedded audit's, the worker never stops,
    and no process of the worker peaks over MAX_RSS_MIB."""
    events, exp = floor(tables=6, rounds=20, seed=32, inject=0.1)
    hostile = [_hostile(events, i) for i in range(3600)]
    for j in range(3):  # a 1 MB device id
        ev = events[j * 7]
        hostile.append((ev.table_id.encode(), encode_single(
            replace(ev, device_id="D" * 1_000_000 + str(j), raw=None)), "1,000,"))
    messages: list[tuple[bytes, bytes | None]] = []
    for n, ev in enumerate(events):  # the hostile ones spread evenly among the good
        messages.append((ev.table_id.encode(), encode_single(ev)))
        messages.extend(h[:2] for h in hostile[n * len(hostile) // len(events):
                                               (n + 1) * len(hostile) // len(events)])
    worker = pipeline.start_worker()
    pipeline.produce_messages(messages)  # type: ignore[arg-type]
    _assert_same(pipeline, exp, pipeline.wait_for(exp))
    _assert_alerts(pipeline, exp)

    def sha(v: bytes | None) -> str:
        return hashlib.sha256(v or b"").hexdigest()

    want = {sha(v): phrase for _, v, phrase in hostile}
    wait_until("every hostile message in dead-letters", lambda: len(
        read_topic(pipeline.prefix + "dead-letters")) >= len(hostile), 180)
    dead = [orjson.loads(m.value) for m in read_topic(pipeline.prefix + "dead-letters")]
    assert Counter(d["value_sha256"] for d in dead) == Counter(sha(v) for _, v, _ in hostile)
    wrong = [(want[d["value_sha256"]], d["reason"]) for d in dead
             if want[d["value_sha256"]] not in d["reason"]]
    assert not wrong, wrong[:10]
    assert all(d["topic"] == pipeline.events_topic for d in dead)
    assert len({(d["partition"], d["offset"]) for d in dead}) == len(hostile)
    big = [d for d in dead if d["value_len"] > 1_000_000]
    assert len(big) == 3 and all(d["truncated"] for d in big)
    assert worker.poll() is None and "exited with code" not in pipeline.logs()
    rss = _rss_mib(worker.pid)
    assert worker.pid in rss and len(rss) >= 2, rss  # the worker and its sink
    assert max(rss.values()) < MAX_RSS_MIB, rss
    print(f"peak RSS (MiB) of the worker and its processes: {rss}")
