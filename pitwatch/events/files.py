"""Reading event files: JSON Lines, Avro container files, or directories of them.

Reading never stops at a bad record: each one becomes a `Rejected` with its source,
line (or record number) and reason, handed to the caller's `reject` callback to be
kept aside (a dead-letter file), and reading goes on. An event refused only for its
payload's ranges, its envelope clean, is its device's record's all the same: it is
given in its place, marked `refused` (the auditor takes it as refused and the caller
sets it aside as the record refused it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .avro import DecodeError, read_container_blocks, write_container
from .jsonl import InvalidEvent, dumps, loads
from .keys import KEYS_FILE
from .model import Event

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
AVRO_SUFFIXES = (".avro",)


@dataclass(frozen=True, slots=True)
class Rejected:
    source: str
    line: int  # 1-based line of a JSON Lines file, or record number in an Avro file
    reason: str
    raw: str

    def to_json(self) -> str:
        return json.dumps({"source": self.source, "line": self.line, "reason": self.reason,
                           "raw": self.raw})


Reject = Callable[[Rejected], None]


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, and the event files inside directories named, in a stable order:
    the paths', not the record's (`order.in_record_order` puts them in that)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*")
                              if f.suffix in JSONL_SUFFIXES + AVRO_SUFFIXES
                              and f.name not in ("truth.jsonl", "rejects.jsonl", KEYS_FILE)))
        elif p.exists():
            out.append(p)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    return out


def read_jsonl(src: IO[bytes], name: str, reject: Reject) -> Iterator[Event]:
    for lineno, line in enumerate(src, 1):
        if not line.strip():
            continue
        try:
            yield loads(line)
        except InvalidEvent as e:
            if e.event is not None:
                yield e.event
                continue
            reject(Rejected(name, lineno, str(e), line.decode("utf-8", "replace").rstrip("\n")))


def read_avro(src: IO[bytes], name: str, reject: Reject) -> Iterator[Event]:
    n = 0
    try:
        for block in read_container_blocks(src):
            for rec in block.read():
                n += 1
                try:
                    yield block.judged(rec)
                except DecodeError as e:
                    if e.event is not None:
                        yield e.event
                        continue
                    reject(Rejected(name, n, f"record {n}: {e}", block.shown(rec)))
                except KeyError as e:
                    reject(Rejected(name, n, f"record {n}: {e}", block.shown(rec)))
    except Exception as e:  # a corrupt block: the rest of the file cannot be framed
        reject(Rejected(name, n + 1, f"corrupt Avro container after record {n}: {e}", ""))


def read_files(paths: Iterable[Path], reject: Reject) -> Iterator[Event]:
    for path in paths:
        with open(path, "rb") as f:
            if path.suffix in AVRO_SUFFIXES:
                yield from read_avro(f, str(path), reject)
            else:
                yield from read_jsonl(f, str(path), reject)


def write_jsonl(path: Path, events: Iterable[Event]) -> int:
    n = 0
    with open(path, "wb") as f:
        for ev in events:
            f.write(dumps(ev) + b"\n")
            n += 1
    return n


def write_avro(path: Path, events: Iterable[Event]) -> int:
    with open(path, "wb") as f:
        return write_container(f, events)
