"""A set of event files put in the order of their record, or refused.

Files are named as a gateway names them (`events-1.jsonl` … `events-12.jsonl`), and
neither names nor the order they are given in say which continues which: the record
does. Each device's `seq` rises through its record, so a first pass reads, of each
file, only each device's stretches (first and last seq, first `prev_digest`, last
event's digest), and the files are read in the order those stretches fix
(`docs/events.md § A set of files`).

Why a file order and not a merge of each table's events. The engine audits each table
on its own, so a table's events need only come in its record order; a merge by table
would read every file at once (or a file once for each of its tables) and hold what
one table's file cannot hand over yet. A file order keeps every reader as it is: the
audit, `audit --jobs N` (its workers number the input's records in one order), and
`produce` read the files one after another, once each, streaming. The orders of all
tables must then agree on one file order; files that put two tables in opposite
orders (each holding one table's later part and another's earlier part) are refused
with the two tables named. Files cut from one stream by time, as a gateway rotates
its logs, always agree.

Rules, per device of a table (its stretches in every file, by seq):
- stretches of different files must not overlap: one may end on the seq the next
  begins with (a second, conflicting copy of that seq, which the audit judges), no
  more. Files that hold the same events in the same order are one copy sent twice:
  they are read one after the other and the second changes nothing;
- a device whose record starts again (a stretch at seq 1 with no `prev_digest`: a
  restarted device) has several chains; a stretch of it orders files only where its
  `prev_digest` names the last event of a stretch in another file;
- every two files that hold events of one table must be ordered by one of its
  devices, directly or through files between them: if not, nothing in the record says
  how their events interleave.
A missing stretch (a gap between two files) is no conflict: the files are ordered and
the audit reports the gap.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise, zip_longest
from pathlib import Path
from typing import TypeVar

import orjson

from ..terminal import printable
from . import limits
from .avro import DecodeError, digest, read_container_blocks
from .files import AVRO_SUFFIXES, read_files
from .jsonl import InvalidEvent, loads
from .model import Event

#: (table_id, device_id)
Key = tuple[str, str]
T = TypeVar("T")


class FileOrderError(ValueError):
    """Files whose order the record cannot fix; the message names them, the table,
    device and seq where they collide, and what to do."""


#: What to do with files the record cannot order (the end of every refusal).
ADVICE = ("nothing was audited. Remove the file that repeats or contradicts the other's "
          "events, or, if they are one stream cut in pieces, give the stream as one file "
          "in the order it was written (a single file is read in its own order); "
          "docs/events.md § A set of files")


@dataclass(slots=True)
class Stretch:
    """A device's events in one file while its seq rises by 1 (or repeats): first and
    last seq, the first event's `prev_digest` and the last event's digest (None: not
    known)."""

    first: int
    last: int
    first_prev: bytes | None
    last_digest: bytes | None = None

    @property
    def starts_chain(self) -> bool:
        return self.first == 1 and self.first_prev is None


@dataclass(slots=True)
class FileRecord:
    """What the first pass learns of a file: each device's stretches, in file order."""

    path: Path
    stretches: dict[Key, list[Stretch]] = field(default_factory=dict)

    @property
    def tables(self) -> set[str]:
        return {t for t, _ in self.stretches}


def in_record_order(files: list[Path]) -> list[Path]:
    """`files` (as `files.expand` lists them) in the order their record fixes; raises
    FileOrderError, before anything is audited, where it cannot."""
    unique = list(dict.fromkeys(files))  # a path named twice is one file
    if len(unique) <= 1:
        return unique
    return order([survey(p) for p in unique])


# --- the first pass ---------------------------------------------------------------------


def survey(path: Path) -> FileRecord:
    """Each device's stretches in the file. Records the file readers refuse are left out
    here as well (the audit reports them when it reads the file)."""
    rec = FileRecord(path)
    if path.suffix in AVRO_SUFFIXES:
        _survey(rec, (((e.table_id, e.device_id), e.seq, e.prev_digest, e)
                      for e in _avro_events(path) if 1 <= e.seq <= limits.MAX_SEQ), digest)
    else:
        _survey(rec, _jsonl_envelopes(path), _line_digest)
    return rec


#: Stretches kept of a device in a file; past them, its events widen the last one (its
#: first and last become the lowest and highest seq met), so a stream whose seq jumps
#: to and fro holds the first pass's memory to this, and overlaps the wider stretch.
MAX_STRETCHES = 64


def _survey(rec: FileRecord, items: Iterable[tuple[Key, int, bytes | None, T]],
            digest_of: Callable[[T], bytes | None]) -> None:
    """Stretches from (key, seq, prev_digest, what the last event's digest is read
    from), in file order."""
    last: dict[Key, T] = {}
    stretches = rec.stretches
    for key, seq, prev, item in items:
        pieces = stretches.get(key)
        if pieces is None:
            stretches[key] = [Stretch(seq, seq, prev)]
        elif 0 <= seq - pieces[-1].last <= 1:
            pieces[-1].last = seq
        elif len(pieces) < MAX_STRETCHES:
            pieces[-1].last_digest = digest_of(last[key])
            pieces.append(Stretch(seq, seq, prev))
        else:
            wide = pieces[-1]
            wide.first, wide.last = min(wide.first, seq), max(wide.last, seq)
        last[key] = item
    for key, item in last.items():
        stretches[key][-1].last_digest = digest_of(item)


def _avro_events(path: Path) -> Iterator[Event]:
    """The file's records as the first pass needs them: built in C where a block allows
    (their ranges are the audit's read's to judge: only seq is held to its range here),
    else as the audit reads them; a damaged file up to its damage (the audit reports
    it)."""
    with open(path, "rb") as f:
        try:
            for block in read_container_blocks(f):
                built = block.events()
                if built is not None:
                    yield from built
                    continue
                for rec in block.records():
                    try:
                        yield block.judged(rec)
                    except DecodeError as e:
                        if e.event is not None:  # refused, yet in its device's record
                            yield e.event
                    except KeyError:
                        continue
        except Exception:  # the rest of the file cannot be framed
            return


def _jsonl_envelopes(path: Path) -> Iterator[tuple[Key, int, bytes | None, bytes]]:
    """The envelope of each line only (orjson, no event built: a fifth of a full read),
    with the line, read whole only where it ends a stretch (for its digest)."""
    with open(path, "rb") as f:
        for line in f:
            env = _envelope(line)
            if env is not None:
                yield (*env, line)


def _envelope(line: bytes) -> tuple[Key, int, bytes | None] | None:
    """(table, device), seq and prev_digest of a JSON line; None where the envelope
    is not one the reader takes."""
    if len(line) > limits.MAX_MESSAGE_BYTES:
        return None
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(d, dict):
        return None
    table, device, seq, prev = (d.get("table_id"), d.get("device_id"), d.get("seq"),
                                d.get("prev_digest"))
    if not (isinstance(table, str) and isinstance(device, str) and type(seq) is int
            and 1 <= seq <= limits.MAX_SEQ):
        return None
    if prev is None:
        return (table, device), seq, None
    try:
        return (table, device), seq, bytes.fromhex(prev) if isinstance(prev, str) else None
    except ValueError:
        return None


def _line_digest(line: bytes) -> bytes | None:
    try:
        return digest(loads(line))
    except InvalidEvent as e:  # one refused for its payload alone keeps its place
        return None if e.event is None else digest(e.event)


# --- the order --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Why:
    """Why file `a` comes before file `b`: a device's stretch in `a` ends where its
    stretch in `b` begins (or before)."""

    table: str
    device: str
    a_last: int
    b_first: int


class _Groups:
    """Files, copies (the same events in the same order) gathered into one group, which
    is ordered as one file and read as its files in name order. Groups are numbered in
    the natural name order of their first files: the order of ties."""

    def __init__(self, records: list[FileRecord]) -> None:
        self.members: list[list[FileRecord]] = []
        by_summary: dict[bytes, list[int]] = {}
        for rec in sorted(records, key=lambda r: natural(r.path)):
            summary = orjson.dumps(sorted((list(k), [[s.first, s.last, _hex(s.first_prev),
                                                      _hex(s.last_digest)] for s in v])
                                          for k, v in rec.stretches.items()))
            for g in by_summary.get(summary, []) if rec.stretches else []:
                if _same_events(self.members[g][0].path, rec.path):
                    self.members[g].append(rec)
                    break
            else:
                by_summary.setdefault(summary, []).append(len(self.members))
                self.members.append([rec])

    def name(self, g: int) -> str:
        return shown(self.members[g][0].path)

    def stretches(self, g: int) -> dict[Key, list[Stretch]]:
        return self.members[g][0].stretches


def order(records: list[FileRecord]) -> list[Path]:
    """The files of `records` in the order their record fixes (ties, files no table
    links, in natural name order); FileOrderError where it cannot be fixed."""
    groups = _Groups(records)
    pieces: dict[Key, list[tuple[int, Stretch]]] = {}
    for g in range(len(groups.members)):
        for key, stretches in groups.stretches(g).items():
            pieces.setdefault(key, []).extend((g, s) for s in stretches)
    devices: dict[str, list[str]] = {}
    for table, device in sorted(pieces):
        devices.setdefault(table, []).append(device)
    edges: dict[tuple[int, int], _Why] = {}
    for table, names in devices.items():
        for a, b, why in _table_order(groups, table, {d: pieces[(table, d)] for d in names}):
            edges.setdefault((a, b), why)
    seq = _topological(range(len(groups.members)), edges)
    if seq is None:
        raise FileOrderError(_cycle_message(groups, edges))
    return [r.path for g in seq for r in groups.members[g]]


def _table_order(groups: _Groups, table: str,
                 devices: dict[str, list[tuple[int, Stretch]]]
                 ) -> list[tuple[int, int, _Why]]:
    """The table's files in the one order its devices fix: consecutive pairs, each with
    why. Refuses overlaps, interleaved stretches, and files no device orders."""
    edges: dict[tuple[int, int], _Why] = {}
    for device, pieces in devices.items():
        if sum(s.starts_chain for _, s in pieces) > 1:
            found = _chained(groups, table, device, pieces)
        else:
            found = _by_seq(groups, table, device, pieces)
        for a, b, why in found:
            edges.setdefault((a, b), why)
    members = sorted({g for pieces in devices.values() for g, _ in pieces})
    chain = _topological(members, edges)
    if chain is None:
        raise FileOrderError(_cycle_message(groups, edges))
    for a, b in pairwise(chain):
        if (a, b) not in edges:  # then no path from a to b: nothing orders the two
            raise FileOrderError(
                f"cannot order {groups.name(a)} and {groups.name(b)} by their record: "
                f"both hold table {shown(table)}, and no device of it has events in both "
                f"(or in files between them), so nothing says how their events "
                f"interleave; {ADVICE}")
    return [(a, b, edges[(a, b)]) for a, b in pairwise(chain)]


def _by_seq(groups: _Groups, table: str, device: str, pieces: list[tuple[int, Stretch]]
            ) -> Iterator[tuple[int, int, _Why]]:
    """A device of one chain: its stretches by seq must form one block per file, each
    ending at or before the seq the next begins with."""
    blocks: list[tuple[int, int, int]] = []  # (group, first, last)
    seen: set[int] = set()
    for g, s in sorted(pieces, key=lambda p: (p[1].first, p[1].last, p[0])):
        if blocks and blocks[-1][0] == g:
            bg, lo, hi = blocks[-1]
            blocks[-1] = (bg, lo, max(hi, s.last))
            continue
        if blocks:
            pg, lo, hi = blocks[-1]
            if s.first < hi or s.first == hi == lo == s.last:
                raise FileOrderError(
                    f"{groups.name(pg)} and {groups.name(g)} overlap: both hold table "
                    f"{shown(table)} device {shown(device)} seq {s.first} "
                    f"({groups.name(pg)}: seq {_span(groups, pg, table, device)}; "
                    f"{groups.name(g)}: seq {_span(groups, g, table, device)}); {ADVICE}")
            if g in seen:
                raise FileOrderError(
                    f"{groups.name(g)} holds two stretches of table {shown(table)} device "
                    f"{shown(device)} and {groups.name(pg)} holds seq {lo}–{hi} between "
                    f"them ({groups.name(g)}: seq {_span(groups, g, table, device)}); "
                    f"{ADVICE}")
            yield pg, g, _Why(table, device, hi, s.first)
        seen.add(g)
        blocks.append((g, s.first, s.last))


def _chained(groups: _Groups, table: str, device: str, pieces: list[tuple[int, Stretch]]
             ) -> Iterator[tuple[int, int, _Why]]:
    """A device that started its record again: seqs repeat across its chains, so only
    the digest chain links its stretches (one whose prev_digest is the last digest of a
    stretch in another file continues it). Two files that continue one stretch collide."""
    ends: dict[bytes, tuple[int, Stretch]] = {}
    for g, s in pieces:
        if s.last_digest is not None:
            ends.setdefault(s.last_digest, (g, s))
    taken: dict[bytes, int] = {}
    for g, s in pieces:
        if s.first_prev is None or s.first_prev not in ends:
            continue
        pg, ps = ends[s.first_prev]
        if pg == g or s.first != ps.last + 1:
            continue
        other = taken.setdefault(s.first_prev, g)
        if other != g:
            raise FileOrderError(
                f"{groups.name(other)} and {groups.name(g)} overlap: both continue table "
                f"{shown(table)} device {shown(device)} after seq {ps.last} of "
                f"{groups.name(pg)}; {ADVICE}")
        yield pg, g, _Why(table, device, ps.last, s.first)


def _span(groups: _Groups, g: int, table: str, device: str) -> str:
    return ", ".join(f"{s.first}–{s.last}" if s.first != s.last else str(s.first)
                     for s in groups.stretches(g)[(table, device)])


def _topological(nodes: Iterable[int], edges: dict[tuple[int, int], _Why]
                 ) -> list[int] | None:
    """Nodes in an order every edge keeps, ties the lower node first; None on a cycle."""
    nodes = list(nodes)
    after: dict[int, list[int]] = {v: [] for v in nodes}
    before = dict.fromkeys(nodes, 0)
    for a, b in edges:
        if a in after and b in before:
            after[a].append(b)
            before[b] += 1
    ready = [v for v in nodes if before[v] == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        out.append(v)
        for w in after[v]:
            before[w] -= 1
            if before[w] == 0:
                heapq.heappush(ready, w)
    return out if len(out) == len(nodes) else None


def _cycle_message(groups: _Groups, edges: dict[tuple[int, int], _Why]) -> str:
    """The files of a cycle of `edges`, each step with the device that makes it."""
    after: dict[int, list[int]] = {}
    for a, b in edges:
        after.setdefault(a, []).append(b)
    cycle = _a_cycle(after)
    steps = []
    for a, b in pairwise(cycle):
        w = edges[(a, b)]
        steps.append(f"{groups.name(a)} before {groups.name(b)} (table {shown(w.table)} "
                     f"device {shown(w.device)}: seq {w.a_last}, then seq {w.b_first})")
    return ("cannot order the files by their record, their stretches contradict each "
            f"other: {'; '.join(steps)}; {ADVICE}")


def _a_cycle(after: dict[int, list[int]]) -> list[int]:
    """A cycle of the graph, its first node repeated at its end (a depth-first walk
    without recursion: a graph of many files)."""
    state: dict[int, int] = {}  # 1: on the walk's path, 2: done
    for root in sorted(after):
        if root in state:
            continue
        path = [root]
        todo = [iter(after.get(root, []))]
        state[root] = 1
        while todo:
            for w in todo[-1]:
                if state.get(w) == 1:
                    return [*path[path.index(w):], w]
                if w not in state:
                    state[w] = 1
                    path.append(w)
                    todo.append(iter(after.get(w, [])))
                    break
            else:
                state[path.pop()] = 2
                todo.pop()
    return []


# --- helpers ----------------------------------------------------------------------------


def _same_events(a: Path, b: Path) -> bool:
    """Whether two files hold the same events in the same order (a copy sent again, in
    the same or another encoding); records either refuses are left out of both."""
    left = read_files([a], lambda r: None)
    right = read_files([b], lambda r: None)
    return all(x == y for x, y in zip_longest(left, right))


def natural(path: Path) -> tuple[tuple[int, int | str], ...]:
    """A sort key that puts `events-2` before `events-10`."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in re.split(r"(\d+)", str(path)) if part)


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def shown(x: object) -> str:
    """A name from a file or a device as text safe to print (`terminal.printable`)."""
    return printable(str(x))
