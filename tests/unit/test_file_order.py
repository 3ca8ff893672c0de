"""A set of event files is read in the order its record fixes, or refused before any
finding (docs/events.md § A set of files; issue 41).

The floor is the issue's: 8 tables with injected faults, written as one file, then
split in order into `events-1` … `events-12` (JSON Lines, Avro containers, or both).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from pitwatch.audit.parallel import audit_parallel
from pitwatch.audit.run import audit_events, audit_paths
from pitwatch.events.avro import digest
from pitwatch.events.files import expand, read_files, write_avro, write_jsonl
from pitwatch.events.model import Event
from pitwatch.events.order import (
    MAX_STRETCHES,
    FileOrderError,
    in_record_order,
    natural,
    survey,
)
from pitwatch.producers.simulate import simulate_floor

PARTS = 12


@cache
def floor() -> tuple[Event, ...]:
    events, _ = simulate_floor(8, 20, 11, 0.15)
    return tuple(events)


def cut(events: tuple[Event, ...] | list[Event], n: int = PARTS) -> list[list[Event]]:
    k = len(events)
    return [list(events[i * k // n:(i + 1) * k // n]) for i in range(n)]


def write(d: Path, pieces: list[list[Event]], kinds: str = "j") -> list[Path]:
    """events-1 … events-N; kinds: 'j' JSON Lines, 'a' Avro, 'm' both, alternating."""
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, evs in enumerate(pieces, 1):
        avro = kinds == "a" or (kinds == "m" and i % 2 == 0)
        p = d / f"events-{i}.{'avro' if avro else 'jsonl'}"
        (write_avro if avro else write_jsonl)(p, evs)
        out.append(p)
    return out


def ids(paths: list[Path] | list[str], jobs: int = 1) -> list[str]:
    rep = audit_parallel(paths, jobs) if jobs > 1 else audit_paths(paths)
    return [v.violation_id for v in rep.violations]


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The single file's findings."""
    p = tmp_path_factory.mktemp("whole") / "events.jsonl"
    write_jsonl(p, floor())
    found = ids([p])
    assert len(found) > 20  # the faults were found, so an order that breaks them shows
    return found


@pytest.mark.parametrize("kinds", ["j", "a", "m"])
def test_split_floor_in_any_order_gives_the_single_files_findings(
        tmp_path: Path, whole: list[str], kinds: str) -> None:
    """"Several are read in the order their record fixes, never by their names or the
    order they are given in": name order (which puts 10, 11 and 12 before 2), reversed,
    shuffled, and the directory, each give exactly the single file's findings, in its
    order, for JSON Lines, Avro containers and both mixed."""
    files = write(tmp_path / "parts", cut(floor()), kinds)
    by_name = sorted(files, key=str)
    assert by_name[1].stem == "events-10"
    as_named = audit_events(read_files(by_name, print))  # read as named, unordered
    assert [v.violation_id for v in as_named.violations] != whole
    shuffled = files[:]
    random.Random(41).shuffle(shuffled)
    orders = (by_name, files[::-1], shuffled, [tmp_path / "parts"]) if kinds == "j" \
        else (shuffled,)
    for given in orders:
        assert in_record_order(expand(given)) == files
        assert ids(given) == whole


def test_audit_jobs_reads_the_same_order(tmp_path: Path, whole: list[str]) -> None:
    """`audit --jobs 2` orders the files as one process does."""
    files = write(tmp_path / "parts", cut(floor()), "m")
    assert ids(files[::-1], jobs=2) == whole


def test_a_glob_on_the_command_line_is_ordered_too(tmp_path: Path, whole: list[str]) -> None:
    write(tmp_path / "parts", cut(floor()))
    one = cli(tmp_path, "audit", *sorted(str(p) for p in (tmp_path / "parts").iterdir()),
              "--no-store", "--format", "jsonl")
    assert one.returncode == 0, one.stderr
    assert [line.split('"violation_id":"')[1].split('"')[0]
            for line in one.stdout.splitlines()] == whole


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def console_overlap(tmp_path: Path, kinds: str) -> tuple[list[Path], Path]:
    """events-3 … events-5, and a file holding the end of 3 and the start of 4."""
    pieces = cut(floor())
    files = write(tmp_path / "set", pieces[2:5], kinds)
    extra = tmp_path / "set" / f"resent.{'avro' if kinds == 'a' else 'jsonl'}"
    (write_avro if kinds == "a" else write_jsonl)(extra, pieces[2][-60:] + pieces[3][:60])
    return files, extra


@pytest.mark.parametrize("kinds", ["j", "a"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_overlapping_files_are_refused_with_the_files_device_and_seq(
        tmp_path: Path, kinds: str, jobs: str) -> None:
    """"Stretches of one device in different files do not overlap"; "A set that breaks a
    rule above is refused before anything is audited (exit status 2): the message names
    the files, the table, the device and the seq where they collide"."""
    files, extra = console_overlap(tmp_path, kinds)
    r = cli(tmp_path, "audit", str(tmp_path / "set"), "--no-store", "--format", "jsonl",
            "--jobs", jobs)
    assert r.returncode == 2
    assert r.stdout == ""  # no finding
    msg = r.stderr
    assert "overlap" in msg and str(extra) in msg
    m = re.search(r"table (\S+) device (\S+) seq (\d+) ", msg)
    assert m is not None, msg
    where = (m[1], m[2], int(m[3]))
    held = [f for f in [*files, extra] if str(f) in msg]
    assert len(held) == 2 and extra in held
    for f in held:  # both files named hold the seq named
        assert where in {(e.table_id, e.device_id, e.seq) for e in read_files([f], print)}
    assert "nothing was audited" in msg and "one file in the order it was written" in msg
    assert "Traceback" not in msg


def test_a_file_holding_two_stretches_around_another_is_refused(tmp_path: Path) -> None:
    """"A file does not hold two stretches of a device with another file's stretch
    between them"."""
    pieces = cut(floor())
    d = tmp_path / "set"
    write(d, [pieces[5] + pieces[7]])  # events-1: 6 and 8 glued
    write_jsonl(d / "middle.jsonl", pieces[6])
    with pytest.raises(FileOrderError, match=r"events-1\.jsonl holds two stretches of table "
                       r".* and .*middle\.jsonl holds seq \d+–\d+ between them"):
        in_record_order(expand([d]))


def test_a_missing_stretch_is_no_ordering_error(tmp_path: Path, whole: list[str]) -> None:
    """"A stretch missing between two files is no ordering error: the files are ordered,
    and the audit reports the gap (EVENTS_LOST)"."""
    files = write(tmp_path / "parts", cut(floor()))
    del files[6]
    (tmp_path / "parts" / "events-7.jsonl").unlink()
    assert in_record_order(expand(files[::-1])) == files
    rep = audit_paths(files[::-1])
    lost = {v.table_id for v in rep.violations if v.code == "EVENTS_LOST"}
    assert lost == {e.table_id for e in cut(floor())[6]}


def test_a_copy_sent_again_is_read_after_the_first_and_changes_nothing(
        tmp_path: Path, whole: list[str]) -> None:
    """"Files that hold the same events in the same order (a copy sent again, in the same
    or another encoding) are read one after the other: the second copy changes
    nothing"."""
    pieces = cut(floor())
    files = write(tmp_path / "parts", pieces)
    copy = tmp_path / "parts" / "again-4.avro"
    write_avro(copy, pieces[3])
    got = in_record_order(expand([tmp_path / "parts"]))
    assert got[:3] + got[5:] == files[:3] + files[4:]
    assert set(got[3:5]) == {files[3], copy}  # the copies in name order
    assert ids(got[::-1]) == whole


def test_a_copy_that_differs_inside_is_refused(tmp_path: Path) -> None:
    """A file with the same stretches as another but other events inside is no copy:
    the two overlap."""
    pieces = cut(floor())
    write(tmp_path / "set", pieces[3:5])
    mid = len(pieces[3]) // 2
    changed = [*pieces[3][:mid], replace(pieces[3][mid], ts=pieces[3][mid].ts + 1, raw=None),
               *pieces[3][mid + 1:]]
    write_jsonl(tmp_path / "set" / "events-1b.jsonl", changed)
    with pytest.raises(FileOrderError, match="overlap"):
        in_record_order(expand([tmp_path / "set"]))


def test_files_of_different_tables_need_no_order(tmp_path: Path, whole: list[str]) -> None:
    """"Files of different tables need no order between them": a file a table, given in
    any order, gives the same findings (each table's in its record order)."""
    d = tmp_path / "tables"
    d.mkdir()
    tables = sorted({e.table_id for e in floor()})
    for t in tables:
        write_jsonl(d / f"{t}.jsonl", [e for e in floor() if e.table_id == t])
    found = ids(sorted(d.iterdir(), reverse=True))
    assert sorted(found) == sorted(whole)


def test_tables_that_disagree_are_refused(tmp_path: Path) -> None:
    """"The tables agree: no two files put one table in one order and another table in
    the other"."""
    a_table, b_table = sorted({e.table_id for e in floor()})[:2]
    one = [e for e in floor() if e.table_id == a_table]
    two = [e for e in floor() if e.table_id == b_table]
    d = tmp_path / "set"
    d.mkdir()
    write_jsonl(d / "x.jsonl", one[len(one) // 2:] + two[:len(two) // 2])
    write_jsonl(d / "y.jsonl", one[:len(one) // 2] + two[len(two) // 2:])
    with pytest.raises(FileOrderError, match=rf"contradict.*x\.jsonl before .*y\.jsonl "
                       rf"\(table {b_table} .*y\.jsonl before .*x\.jsonl \(table {a_table}"):
        in_record_order(expand([d]))


def test_files_no_device_links_are_refused(tmp_path: Path) -> None:
    """"Every two files that hold events of one table are ordered by a device of that
    table with events in both, or through files between them"."""
    table = floor()[0].table_id
    evs = [e for e in floor() if e.table_id == table]
    devices = sorted({e.device_id for e in evs})
    d = tmp_path / "set"
    d.mkdir()
    write_jsonl(d / "first.jsonl", [e for e in evs if e.device_id == devices[0]])
    write_jsonl(d / "second.jsonl", [e for e in evs if e.device_id == devices[1]])
    with pytest.raises(FileOrderError, match=rf"cannot order .*first\.jsonl and .*second"
                       rf"\.jsonl by their record: both hold table {table}"):
        in_record_order(expand([d]))


def restarted(events: tuple[Event, ...], at: int) -> list[Event]:
    """The floor with the first table's shoe restarting before its event `at`: seq 1
    again, prev_digest null, a new chain."""
    device = next(e.device_id for e in events if e.device_id.endswith("shoe"))
    out: list[Event] = []
    seq, prev = 0, None
    for i, e in enumerate(events):
        if e.device_id == device and i >= at:
            seq += 1
            e = replace(e, seq=seq, prev_digest=prev, raw=None)
            prev = digest(e)
        out.append(e)
    return out


@pytest.mark.parametrize("at", [6 / PARTS, 6.5 / PARTS])
def test_a_restarted_device_orders_files_by_its_chain(tmp_path: Path, at: float) -> None:
    """"A device that started its record again (seq 1, `prev_digest` null: a restart)
    orders files by its digest chain", here with the restart at a file's start and in
    the middle of one; the new chain's seqs are below the old one's."""
    evs = restarted(floor(), int(len(floor()) * at))
    p = tmp_path / "whole.jsonl"
    write_jsonl(p, evs)
    rep = audit_paths([p])
    assert "DEVICE_RESTARTED" in rep.by_code
    single = [v.violation_id for v in rep.violations]
    files = write(tmp_path / "parts", cut(evs), "m")
    shuffled = files[:]
    random.Random(44).shuffle(shuffled)
    assert in_record_order(expand(shuffled)) == files
    assert ids(shuffled) == single


def test_a_path_named_twice_is_read_once(tmp_path: Path) -> None:
    files = write(tmp_path / "parts", cut(floor(), 2))
    assert in_record_order([files[1], files[0], files[1]]) == files


def test_natural_order_reads_numbers_as_numbers() -> None:
    names = [Path(f"d/events-{i}.jsonl") for i in (10, 2, 1, 11)]
    assert [p.stem for p in sorted(names, key=natural)] == [
        "events-1", "events-2", "events-10", "events-11"]


def test_device_bytes_in_the_message_are_escaped(tmp_path: Path) -> None:
    """A device's id reaches the terminal with its control characters escaped."""
    evs = [replace(e, device_id="shoe\x1b[2J", raw=None) if e.device_id.endswith("shoe")
           else e for e in floor()[:300]]
    d = tmp_path / "set"
    write(d, [evs[:300], [e for e in evs[200:300] if e.device_id.startswith("shoe")]])
    with pytest.raises(FileOrderError) as err:
        in_record_order(expand([d]))
    assert "\x1b" not in str(err.value) and "shoe\\x1b[2J" in str(err.value)


def test_a_seq_jumping_to_and_fro_holds_the_first_pass_to_its_bound(tmp_path: Path) -> None:
    """A device whose seq jumps back and forth keeps at most MAX_STRETCHES stretches of a
    file; the last widens over the rest, so another file inside its seqs still overlaps."""
    device = next(e.device_id for e in floor() if e.device_id.endswith("console"))
    evs = [e for e in floor() if e.device_id == device]
    table = evs[0].table_id
    assert len(evs) > 2 * MAX_STRETCHES
    jumping = [e for pair in zip(evs[: len(evs) // 2], evs[len(evs) // 2:], strict=False)
               for e in pair]
    write_jsonl(tmp_path / "jumping.jsonl", jumping)
    rec = survey(tmp_path / "jumping.jsonl")
    assert len(rec.stretches[(table, device)]) == MAX_STRETCHES
    write_jsonl(tmp_path / "inside.jsonl", evs[-3:])
    with pytest.raises(FileOrderError, match="overlap"):
        in_record_order([tmp_path / "jumping.jsonl", tmp_path / "inside.jsonl"])
