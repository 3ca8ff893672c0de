"""History in batches (issue 42): a floor cut anywhere, audited batch by batch into one
store, gives exactly what one audit of the whole gives: the same violation ids and
rounds. A round open at the end of a batch is not a verdict; the next batch continues
each table from the state the store holds; `--final` closes the books; a batch audited
again reports its findings as already in the store, and nothing new."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest

from pitwatch.audit.run import AuditReport, audit_events
from pitwatch.engine.auditor import Auditor
from pitwatch.events.avro import digest
from pitwatch.events.jsonl import to_json
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Event
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.simulate import Floor
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.history import resume_state

SEED = 5  # faults of many kinds: lost events, conflicting copies, incomplete rounds
PAUSE_MS = 20 * 60 * 1000  # past the round time-out (15 min)


def _paused(events: list[Event], table_id: str, after: int) -> list[Event]:
    """The table's events from index `after` on, PAUSE_MS later, each device's chain
    made again over the new times (the checkpoints then vouch for nothing: the same
    findings in every audit of it)."""
    last: dict[str, Event] = {}
    out = []
    for i, ev in enumerate(events):
        if ev.table_id == table_id and i >= after:
            prev = last.get(ev.device_id)
            ev = replace(ev, ts=ev.ts + PAUSE_MS,
                         prev_digest=ev.prev_digest if prev is None else digest(prev))
        if ev.table_id == table_id:
            last[ev.device_id] = ev
        out.append(ev)
    return out


def _interleaved(events: list[Event], rng: random.Random) -> list[Event]:
    """The tables deal at the same time: their events interleaved at random, each
    table's in its own order."""
    queues: dict[str, list[Event]] = {}
    for ev in events:
        queues.setdefault(ev.table_id, []).append(ev)
    for q in queues.values():
        q.reverse()
    out = []
    while queues:
        t = rng.choice(sorted(queues))
        out.append(queues[t].pop())
        if not queues[t]:
            del queues[t]
    return out


@pytest.fixture(scope="module")
def floor() -> tuple[list[Event], KeyRegistry, int]:
    """A signed floor of 4 tables with injected faults, interleaved; one table pauses
    past the round time-out after an incomplete round. The index where it resumes too."""
    f = Floor(4, 14, SEED, 0.25)
    events = list(f.events())
    keys = f.registry()
    assert keys is not None
    lost = next(t for t in f.truth if t["code"] == "ROUND_INCOMPLETE")
    end = max(i for i, e in enumerate(events) if e.round_id == lost["round_id"])
    events = _interleaved(_paused(events, lost["table_id"], end + 1), random.Random(SEED))
    resumes = next(i for i, e in enumerate(events)
                   if e.table_id == lost["table_id"] and e.round_id is not None
                   and e.round_id > lost["round_id"])
    return events, keys, resumes


def _cuts(events: list[Event], resumes: int) -> dict[str, int]:
    """A cut of each kind, as the index of the first event after it."""
    n = len(events)
    seen: dict[str, Event] = {}  # each table's event before
    dev: dict[str, Event] = {}  # each device's event before
    found: dict[str, int] = {"time-out": resumes}
    for i, ev in enumerate(events):
        before, mine = seen.get(ev.table_id), dev.get(ev.device_id)
        if i > n // 5 and "mid-round" not in found and before is not None \
                and before.round_id == ev.round_id and ev.type == "CardDealt" \
                and before.type == "CardDealt":
            found["mid-round"] = i
        if i > 2 * n // 5 and "between rounds" not in found and before is not None \
                and before.round_id != ev.round_id and ev.type == "RoundStarted":
            found["between rounds"] = i
        if i > 3 * n // 5 and "mid-shoe" not in found and ev.type == "WagerPlaced" \
                and before is not None and before.type == "RoundStarted":
            found["mid-shoe"] = i
        if i > 4 * n // 5 and "chained" not in found and mine is not None \
                and events[i - 1] is mine and ev.type != "Checkpoint" \
                and mine.type != "Checkpoint":
            found["chained"] = i  # the device's two events side by side, unsigned yet
        seen[ev.table_id], dev[ev.device_id] = ev, ev
    assert len(found) == 5, found
    return found


def _batches(events: list[Event], cuts: list[int]) -> list[list[Event]]:
    edges = [0, *sorted(set(cuts)), len(events)]
    return [events[a:b] for a, b in pairwise(edges)]


@contextmanager
def _store(path: Path) -> Iterator[EmbeddedStore]:
    """A store of its own (chDB holds one store a process at a time)."""
    s = EmbeddedStore(path)
    s.setup()
    try:
        yield s
    finally:
        s.close()


def _rows(store: EmbeddedStore) -> dict[str, list[dict[str, Any]]]:
    """What an audit leaves in the store: violations and rounds, whole rows, and each
    event's position in the order of record."""
    rows = {t: store.query(f"SELECT * FROM {t} FINAL ORDER BY {k}")
            for t, k in (("violations", "violation_id"), ("rounds", "round_id"))}
    rows["events"] = store.query("SELECT event_id, pos FROM events FINAL ORDER BY event_id")
    return rows


@dataclass
class Whole:
    """One audit of the whole floor into a store: its report and rows, with the books
    closed at the end (`final`) and left open (`open`)."""

    final: AuditReport
    final_rows: dict[str, list[dict[str, Any]]]
    open: AuditReport
    open_rows: dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def whole(floor: tuple[list[Event], KeyRegistry, int],
          tmp_path_factory: pytest.TempPathFactory) -> Whole:
    events, keys, _ = floor
    d = tmp_path_factory.mktemp("whole")
    with _store(d / "final") as s:
        final = audit_events(events, store=s, keys=keys, finish=True)
        final_rows = _rows(s)
    with _store(d / "open") as s:
        left = audit_events(events, store=s, keys=keys, finish=False)
        open_rows = _rows(s)
    return Whole(final, final_rows, left, open_rows)


def test_a_floor_cut_anywhere_gives_the_single_audits_ids_and_rounds(
        floor: tuple[list[Event], KeyRegistry, int], whole: Whole, tmp_path: Path) -> None:
    events, keys, resumes = floor
    one = whole.final
    assert {"ROUND_INCOMPLETE", "EVENTS_LOST", "SEQUENCE_CONFLICT"} <= set(one.by_code)
    # the pause is judged by the time-out rule: the table's clock passed it
    assert any(v.code == "ROUND_INCOMPLETE" and "clock passed" in v.message
               for v in one.violations)
    cuts = _cuts(events, resumes)
    rng = random.Random(42)
    plans = {"every kind": list(cuts.values()),
             "3 random": rng.sample(range(1, len(events)), 3),
             "9 random": rng.sample(range(1, len(events)), 9)}
    for name, plan in plans.items():
        batches = _batches(events, plan)
        with _store(tmp_path / name.replace(" ", "-")) as store:
            reps = [audit_events(b, store=store, keys=keys, finish=k == len(batches) - 1)
                    for k, b in enumerate(batches)]
            assert _rows(store) == whole.final_rows, name
        assert sum(r.rounds for r in reps) == one.rounds
        assert reps[-1].open_rounds == []


def test_open_rounds_stay_open_until_the_next_batch_or_final(
        floor: tuple[list[Event], KeyRegistry, int], whole: Whole, tmp_path: Path) -> None:
    """'A round still open is recorded as open, not judged incomplete. It is judged when
    its table's next events arrive'; `--final` closes the books."""
    events, keys, resumes = floor
    batches = _batches(events, sorted(_cuts(events, resumes).values()))
    alone = audit_events(batches[0], keys=keys)  # no store: the end of input judges
    assert any("input ended before RoundEnded" in v.message for v in alone.violations)
    assert any("the input ended after it" in v.message for v in alone.violations)
    with _store(tmp_path / "batches") as store:
        first = audit_events(batches[0], store=store, keys=keys, finish=False)
        # the cut is mid-round: left open, with no verdict on it or on the unsigned tail
        assert first.open_rounds and all(o.since > 0 for o in first.open_rounds)
        assert [v for v in first.violations if "input ended" in v.message] == []
        reps = [first] + [audit_events(b, store=store, keys=keys, finish=False)
                          for b in batches[1:]]
        assert _rows(store) == whole.open_rows
        assert reps[-1].open_rounds == whole.open.open_rounds
        # the books closed with no new input: as one audit whose input ends there
        closing = audit_events((), store=store, keys=keys, finish=True)
        assert closing.open_rounds == []
        assert closing.incomplete == len(whole.open.open_rounds)
        assert _rows(store) == whole.final_rows


def test_the_same_batch_again_reports_nothing_new(
        floor: tuple[list[Event], KeyRegistry, int], whole: Whole, tmp_path: Path) -> None:
    events, keys, resumes = floor
    batches = _batches(events, sorted(_cuts(events, resumes).values()))
    with _store(tmp_path / "again") as store:
        reps = [audit_events(b, store=store, keys=keys, finish=False) for b in batches[:3]]
        before = _rows(store)
        for k in (2, 0, 1):  # the last batch again, then earlier ones
            again = audit_events(batches[k], store=store, keys=keys, finish=False)
            assert sum(again.by_code.values()) == 0
            assert again.known == reps[k].by_code
            assert {v.violation_id for v in again.violations} == again.known_ids
            assert _rows(store) == before
            assert again.open_rounds == reps[2].open_rounds
        # and the history goes on from where the store stands
        for b in batches[3:]:
            audit_events(b, store=store, keys=keys, finish=b is batches[-1])
        assert _rows(store) == whole.final_rows


def test_a_batchs_events_sent_again_inside_the_next_keep_their_places(
        floor: tuple[list[Event], KeyRegistry, int], tmp_path: Path) -> None:
    """A gateway sends the end of yesterday's log again inside today's: each of those
    events is a redelivery, and keeps its position, as in one audit of both."""
    events, keys, _ = floor
    cut = len(events) // 2
    first, second = events[:cut], events[cut:cut + 40] + events[cut - 5:cut] + events[cut + 40:]
    with _store(tmp_path / "one") as store:
        audit_events(first + second, store=store, keys=keys)
        want = _rows(store)
    with _store(tmp_path / "two") as store:
        audit_events(first, store=store, keys=keys, finish=False)
        audit_events(second, store=store, keys=keys)
        assert _rows(store) == want


def test_final_with_an_earlier_batch_again_closes_the_books_where_the_store_stands(
        floor: tuple[list[Event], KeyRegistry, int], tmp_path: Path) -> None:
    """`--final` closes the store's books, not the re-run's: a batch audited again
    behind the store's latest state leaves its verdicts to where the store stands."""
    events, keys, resumes = floor
    cuts = sorted(_cuts(events, resumes).values())
    batches = _batches(events, cuts[:2])
    with _store(tmp_path / "s") as store:
        for b in batches[:2]:
            audit_events(b, store=store, keys=keys, finish=False)
        again = audit_events(batches[0], store=store, keys=keys, finish=True)
        assert again.open_rounds == []
        ids = {r["violation_id"] for r in store.query(
            "SELECT violation_id FROM violations FINAL")}
    upto = audit_events(events[:cuts[1]], keys=keys)  # one audit whose input ends there
    assert ids == {v.violation_id for v in upto.violations}
    # new: only what the books' closing found
    assert set(again.by_code) <= {"ROUND_INCOMPLETE", "SIGNATURE_INVALID"}


def test_a_state_the_stored_events_contradict_is_not_trusted(
        floor: tuple[list[Event], KeyRegistry, int], tmp_path: Path) -> None:
    events, keys, _ = floor
    with _store(tmp_path / "s") as store:
        audit_events(events[:600], store=store, keys=keys, finish=False)
        table_id = events[0].table_id
        auditor = Auditor(select, lambda v: None, lambda s: None, keys=keys,
                          released=released_writers())
        assert resume_state(store, auditor.table(table_id), table_id) is not None
        row = store.query("SELECT * FROM audit_states FINAL WHERE table_id = {t:String} "
                          "ORDER BY pos DESC LIMIT 1", {"t": table_id})[0]
        clock = json.loads(row["clock"])
        clock[next(iter(clock))] += 1  # a device one event further than the stored events
        store.insert("audit_states", [{**row, "clock": json.dumps(clock), "closed": 1}])
        fresh = Auditor(select, lambda v: None, lambda s: None, keys=keys,
                        released=released_writers())
        assert resume_state(store, fresh.table(table_id), table_id) is None
        assert fresh.table(table_id).devices == {}  # untouched: the caller replays history
        # books it cannot close from such a state are named, not closed in silence
        store.insert("audit_states", [{**row, "pos": int(row["pos"]) + 1,
                                       "clock": json.dumps(clock)}])
        closing = audit_events((), store=store, keys=keys, finish=True)
        assert closing.unclosed == [table_id]


# --- the command ------------------------------------------------------------------


def pitwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command, at a site in Tokyo (every run: the store's partitions by month
    follow the time zone of the process that inserts)."""
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TZ": "Asia/Tokyo"})


def test_the_command_in_batches_with_jobs_1_and_2(
        floor: tuple[list[Event], KeyRegistry, int], tmp_path: Path) -> None:
    events, keys, resumes = floor
    cuts = _cuts(events, resumes)
    batches = _batches(events, [cuts["mid-round"], cuts["chained"]])
    for k, b in enumerate(batches):
        (tmp_path / f"b{k}.jsonl").write_bytes(
            b"".join(orjson.dumps(to_json(e)) + b"\n" for e in b))
    (tmp_path / "keys.json").write_text(json.dumps(keys.to_json()))
    (tmp_path / "all.jsonl").write_bytes(
        b"".join(orjson.dumps(to_json(e)) + b"\n" for e in events))
    common = ("--keys", "keys.json", "--quiet", "--fail-on", "LOW")
    whole = pitwatch("audit", "all.jsonl", "--data", "whole", "--final", "--format",
                     "jsonl", *common, cwd=tmp_path)
    assert whole.returncode == 1, whole.stderr
    runs = {}
    for jobs in ("1", "2"):
        data = f"j{jobs}"
        out = []
        for k in range(len(batches)):
            r = pitwatch("audit", f"b{k}.jsonl", "--data", data, "--jobs", jobs,
                         "--format", "jsonl", *common, cwd=tmp_path)
            assert r.returncode in (0, 1), r.stderr
            out.append((r.returncode, r.stdout, r.stderr.replace(data, "D")))
        # the first batch ends mid-round: the summary says since when, UTC and local
        assert "rounds left open in the store: " in out[0][2]
        assert " UTC (local " in out[0][2] and " JST) by its devices' clock" in out[0][2]
        closing = pitwatch("audit", "--final", "--data", data, "--jobs", jobs, "--format",
                           "jsonl", *common, cwd=tmp_path)
        out.append((closing.returncode, closing.stdout, closing.stderr.replace(data, "D")))
        assert "the store's books closed" in closing.stderr
        again = pitwatch("audit", "b1.jsonl", "--data", data, "--jobs", jobs, "--format",
                         "jsonl", *common, cwd=tmp_path)
        # a re-run: every finding known, nothing new, so --fail-on does not fail it
        assert again.returncode == 0, again.stderr
        lines = [json.loads(x) for x in again.stdout.splitlines()]
        assert lines and all(x["already_stored"] for x in lines)
        assert "violations: 0 new; " in again.stderr
        assert f"{len(lines)} already in the store" in again.stderr
        out.append((again.returncode, again.stdout, again.stderr.replace(data, "D")))
        runs[jobs] = out
    assert runs["1"] == runs["2"]
    first_time = {json.loads(x)["violation_id"] for _, o, _ in runs["1"][:-1]
                  for x in o.splitlines()}
    assert first_time == {json.loads(x)["violation_id"] for x in whole.stdout.splitlines()}
    rows = {}
    for d in ("whole", "j1", "j2"):
        store = EmbeddedStore(tmp_path / d)
        try:
            rows[d] = _rows(store)
        finally:
            store.close()
    assert rows["j1"] == rows["whole"] and rows["j2"] == rows["whole"]
