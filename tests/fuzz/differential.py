"""A differential fuzz of the C reader (pitwatch/events/_native.c) against fastavro, for a
time budget: `python tests/fuzz/differential.py [--seconds N] [--seed S]`.

Inputs are generated from a seeded random source and from the kept corpus
(tests/fuzz/corpus/), then mutated (bits flipped, bytes cut, added or repeated, varints
made over-long, counts made negative). The oracles:

- the event contract (schemas/avro/TableEvent.avsc): whatever `Program.build` or
  `Program.frame` accepts, fastavro reads to the same event and table_id, and
  re-encodes to the same bytes (one byte form); whatever `RangeCheck` vouches for,
  limits.check_in_python passes; `json_body` writes what orjson writes;
- random writer schemas (records, unions, arrays, enums, fixed, every primitive,
  recursive references): the same, with records built as dicts;
- container files: a mutated file is read to events and rejections, never an escaped
  error, within a bound of time;
- the API: the record clock's arithmetic at its edges, slot descriptors of other classes.

Run under AddressSanitizer and UBSan by tests/fuzz/sanitize.sh (`make test` does), with
PITWATCH_NATIVE naming the instrumented build. A divergence is written to
tests/fuzz/failures/ and the run exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import math
import os
import random
import struct
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"
FAILURES = HERE / "failures"


def _load_native() -> None:
    """Load the build PITWATCH_NATIVE names as pitwatch.events._native (the sanitizer's)."""
    path = os.environ.get("PITWATCH_NATIVE")
    if not path:
        return
    spec = importlib.util.spec_from_file_location("pitwatch.events._native", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["pitwatch.events._native"] = mod


sys.path.insert(0, str(ROOT))
_load_native()

import fastavro  # noqa: E402
import orjson  # noqa: E402

from pitwatch.events import avro, jsonl, limits, native  # noqa: E402
from pitwatch.events.files import read_avro  # noqa: E402
from pitwatch.events.model import (  # noqa: E402
    Event,
    HoleCardChecked,
    PlayerLeft,
    PlayerSeated,
    RoundEnded,
)
from pitwatch.events.schema import plain_schema  # noqa: E402
from pitwatch.store import native as store_native  # noqa: E402


class Divergence(AssertionError):
    """The C reader and fastavro disagree."""


#: inputs the C reader accepted, so that fastavro's reading was compared
COMPARED = [0]


# --- random values and schemas ------------------------------------------------------------

def rand_long(r: random.Random) -> int:
    k = r.random()
    if k < 0.5:
        return r.randint(-3, 40)
    if k < 0.8:
        return r.randint(-2**31, 2**31 - 1)
    return r.choice([-2**63, 2**63 - 1, 2**53 - 1, 2**53, r.randint(-2**63, 2**63 - 1)])


def rand_text(r: random.Random) -> str:
    alphabet = "abcT-01é\"\\\n\x00€😀"
    return "".join(r.choice(alphabet) for _ in range(r.choice([0, 1, 4, 9, 36])))


def named_types(s: Any, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every named type of a parsed schema, by full name."""
    out = {} if out is None else out
    if isinstance(s, list):
        for b in s:
            named_types(b, out)
    elif isinstance(s, dict):
        if s.get("type") in ("record", "error", "enum", "fixed"):
            out.setdefault(s["name"], s)
        for f in s.get("fields", ()):
            named_types(f["type"], out)
        for key in ("items", "values"):
            if key in s:
                named_types(s[key], out)
    return out


def rand_datum(r: random.Random, s: Any, named: dict[str, Any], depth: int = 0) -> Any:
    """A random value of a parsed schema (named types in `named` by full name)."""
    if isinstance(s, str):
        if s in named:
            return rand_datum(r, named[s], named, depth + 1)
        return {
            "null": lambda: None, "boolean": lambda: r.random() < 0.5,
            "int": lambda: r.randint(-2**31, 2**31 - 1) if r.random() < 0.3 else r.randint(0, 40),
            "long": lambda: rand_long(r),
            "float": lambda: struct.unpack("<f", struct.pack("<f", r.uniform(-1e6, 1e6)))[0],
            "double": lambda: r.choice([0.0, -0.0, math.inf, r.uniform(-1e300, 1e300)]),
            "bytes": lambda: r.randbytes(r.choice([0, 1, 32, 64])),
            "string": lambda: rand_text(r),
        }[s]()
    if isinstance(s, list):
        options = [b for b in s if depth < 6 or b == "null"] or s
        branch = r.choice(options)
        value = rand_datum(r, branch, named, depth + 1)
        name = branch if isinstance(branch, str) else branch.get("name")
        if name in named and named[name].get("type") in ("record", "error"):
            return (name, value)  # fastavro's notation for a record's branch
        return value
    kind = s["type"]
    if kind in ("record", "error", "enum", "fixed"):
        named.setdefault(s["name"], s)
    if kind in ("record", "error"):
        return {f["name"]: rand_datum(r, f["type"], named, depth + 1) for f in s["fields"]}
    if kind == "enum":
        return r.choice(s["symbols"])
    if kind == "fixed":
        return r.randbytes(s["size"])
    if kind == "array":
        n = 0 if depth > 6 else r.choice([0, 1, 2, 5])
        return [rand_datum(r, s["items"], named, depth + 1) for _ in range(n)]
    if kind == "map":
        return {rand_text(r): rand_datum(r, s["values"], named, depth + 1)
                for _ in range(r.choice([0, 1, 3]))}
    return rand_datum(r, kind, named, depth)


def rand_schema(r: random.Random) -> dict[str, Any]:
    """A random top-level record with a string table_id, of every kind of type, named
    types used again by name, a record that may hold itself."""
    count = [0]
    names: list[str] = []

    def name() -> str:
        count[0] += 1
        return f"f.N{count[0]}"

    def node(depth: int, parents: list[str]) -> Any:
        k = r.random()
        if depth > 3 or k < 0.35:
            return r.choice(["null", "boolean", "int", "long", "float", "double", "bytes",
                             "string"])
        if k < 0.45 and names:  # a type defined before (an enclosing record: in a union)
            return r.choice(names)
        if k < 0.55:
            n = name()
            names.append(n)
            return {"type": "enum", "name": n,
                    "symbols": [f"S{i}" for i in range(r.choice([1, 2, 5]))]}
        if k < 0.62:
            n = name()
            names.append(n)
            return {"type": "fixed", "name": n, "size": r.choice([1, 4, 16])}
        if k < 0.75:
            return {"type": "array", "items": node(depth + 1, parents)}
        if k < 0.88:
            branches = ["null", {"type": "array", "items": "long"}, "string", "long",
                        "boolean"]
            r.shuffle(branches)
            chosen = branches[:r.choice([1, 2, 3])]
            if parents and r.random() < 0.5 and "null" in chosen:
                chosen.append(r.choice(parents))  # a record that holds itself, or null
            return chosen
        n = name()
        fields = [{"name": f"x{i}", "type": node(depth + 1, [*parents, n])}
                  for i in range(r.choice([0, 1, 2, 4]))]
        names.append(n)
        return {"type": "record", "name": n, "fields": fields}

    top = "f.Top"
    fields = [{"name": f"a{i}", "type": node(1, [top])} for i in range(r.randint(0, 3))]
    fields.insert(r.randint(0, len(fields)), {"name": "table_id", "type": "string"})
    return {"type": "record", "name": top, "fields": fields}


# --- mutations ------------------------------------------------------------------------

def mutate(r: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(r.choice([1, 1, 2, 4])):
        k = r.random()
        at = r.randrange(len(b) + 1)
        if k < 0.3 and b:
            b[min(at, len(b) - 1)] ^= 1 << r.randrange(8)
        elif k < 0.45 and b:
            b[min(at, len(b) - 1)] = r.choice([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF])
        elif k < 0.55:
            del b[at:at + r.choice([1, 2, 8])]
        elif k < 0.65:
            b[at:at] = r.randbytes(r.choice([1, 2, 8]))
        elif k < 0.75 and b:
            i = min(at, len(b) - 1)
            if b[i] < 0x80:  # a one-byte varint made over-long
                b[i:i + 1] = bytes([b[i] | 0x80, 0])
        elif k < 0.85 and b:
            i = min(at, len(b) - 1)
            if b[i] % 2 == 0 and b[i] < 0x80:  # a count made negative, a size after it
                b[i:i + 1] = bytes([b[i] + 1 if b[i] else 1, 0x02])
        elif k < 0.95 and len(b) > 2:
            i = r.randrange(len(b) - 1)
            j = min(len(b), i + r.choice([1, 4, 16]))
            b[j:j] = b[i:j]
        else:
            del b[at:]
    return bytes(b)


# --- oracles --------------------------------------------------------------------------

def same(a: Any, b: Any) -> bool:
    """Equal values, floats by their bits, tuples as lists."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def unnamed(x: Any) -> Any:
    """fastavro's datum without the names of union branches (its (name, value) tuples:
    its arrays are lists)."""
    if isinstance(x, tuple):
        return unnamed(x[1])
    if isinstance(x, list):
        return [unnamed(v) for v in x]
    if isinstance(x, dict):
        return {k: unnamed(v) for k, v in x.items()}
    return x


def fastavro_records(schema: Any, data: bytes, count: int) -> list[tuple[Any, bytes]] | None:
    """fastavro's reading of `count` records from all of `data` (union branches
    unnamed), each held to its one byte form (re-encoded with its branches named, as
    pitwatch.events.avro does); None when it refuses or any is not in its one form."""
    bio = io.BytesIO(data)
    out, pos = [], 0
    try:
        for _ in range(count):
            d = fastavro.schemaless_reader(bio, schema, None, return_record_name=True)
            end = bio.tell()
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, schema, d)
            if buf.getvalue() != data[pos:end]:
                return None
            out.append((unnamed(d), data[pos:end]))
            pos = end
    except Exception:  # fastavro raises many kinds on bad bytes
        return None
    return out if pos == len(data) else None


def as_dicts(name: str, fields: list[str], top: bool) -> Any:
    if top:
        return lambda *values: (dict(zip(fields, values[:-1], strict=True)), values[-1])
    return lambda *values: dict(zip(fields, values, strict=True))


def check_schema(schema: Any, program: native.Program, data: bytes, count: int) -> None:
    """The oracle of a random schema's block."""
    framed = program.frame(data, count)
    built = program.build(data, count)
    if framed is None and built is None:
        return
    COMPARED[0] += 1
    ref = fastavro_records(schema, data, count)
    if ref is None:
        raise Divergence("C accepted bytes fastavro refuses or that are not in one form")
    if framed is not None:
        ends = [sum(len(raw) for _, raw in ref[:i + 1]) for i in range(count)]
        if framed != (ends, [d["table_id"] for d, _ in ref]):
            raise Divergence(f"frame {framed} != fastavro {ends}")
    if built is not None:
        for (d, raw), (bd, braw) in zip(ref, built, strict=True):
            if braw != raw or not same(bd, d):
                raise Divergence(f"build {bd!r} != fastavro {d!r}")


def check_event(program: native.Program, body: bytes) -> None:
    """The oracle of the event contract's body."""
    framed = program.frame(body, 1)
    built = program.build(body, 1)
    if framed is None and built is None:
        return
    COMPARED[0] += 1
    ref = fastavro_records(plain_schema(), body, 1)
    if ref is None:
        raise Divergence("C accepted an event fastavro refuses or that is not in one form")
    d, _ = ref[0]
    if framed is not None and framed != ([len(body)], [d["table_id"]]):
        raise Divergence(f"frame {framed} != fastavro {d['table_id']!r}")
    if built is None:
        return
    dr = fastavro.schemaless_reader(io.BytesIO(body), plain_schema(), None,
                                    return_record_name=True)
    try:
        want = avro.from_datum(dr, body)
    except avro.DecodeError:
        want = None
    ev = built[0]
    in_range = limits._in_range(ev)
    try:
        limits.check_in_python(ev)
        python_in_range = True
    except limits.OutOfRange:
        python_in_range = False
    if in_range and not python_in_range:
        raise Divergence(f"RangeCheck vouched for {ev!r}")
    if want is not None and (want != ev or want.raw != ev.raw):
        raise Divergence(f"build {ev!r} != from_datum {want!r}")
    line = native.json_body(ev)
    if line is not None and line != orjson.dumps(jsonl.to_json(ev)):
        raise Divergence(f"json_body {line!r}")


def check_container(data: bytes) -> None:
    """A mutated container is read to events and rejections, in bounded time."""
    t = time.monotonic()
    list(read_avro(io.BytesIO(data), "fuzz", lambda _: None))
    if time.monotonic() - t > 10:
        raise Divergence(f"a container of {len(data)} bytes took more than 10 s")


def check_api(r: random.Random) -> None:
    """The record clock at its edges and slot descriptors of other classes: under the
    sanitizers, no overflow and no read outside an object."""
    clock = store_native.record_clock(4, r.choice([1, 2, 1024, 2**62]))
    if clock is None:
        return
    edges = [-2**63, -1, 0, 1, 2**62, 2**63 - 1]
    clock.total, clock.extra = r.choice(edges[2:]), r.choice(edges[2:])
    clock.last = {"d": r.choice(edges)}
    ev = Event(f"e{r.random()}", "T", "d", r.choice(edges[2:]) or 1, 0, None, None,
               RoundEnded())
    with contextlib.suppress(OverflowError):
        clock.position(ev)

    class Owner:
        __slots__ = ("event_id", "w", "x", "y", "z")

    class Small:
        __slots__ = ()

    Small.event_id = Owner.__dict__[r.choice(["event_id", "z"])]  # type: ignore[attr-defined]
    with contextlib.suppress(TypeError):  # Python's lookup gives the class its version tag
        _ = Small().event_id  # type: ignore[attr-defined]
    try:
        clock.position(Small())
    except (TypeError, AttributeError):
        pass
    else:
        raise Divergence("a foreign slot descriptor was read")


# --- the loop -------------------------------------------------------------------------

def corpus_events() -> list[bytes]:
    return [p.read_bytes() for p in sorted((CORPUS / "events").glob("*.bin"))]


def corpus_schemas() -> list[tuple[Any, bytes, int]]:
    out = []
    for p in sorted((CORPUS / "schemas").glob("*.json")):
        d = json.loads(p.read_text())
        out.append((d["schema"], bytes.fromhex(d["data"]), d["count"]))
    return out


def corpus_containers() -> list[bytes]:
    return [p.read_bytes() for p in sorted((CORPUS / "containers").glob("*.avro"))]


def run(seconds: float, seed: int) -> dict[str, int]:
    r = random.Random(seed)
    program = avro._current_program()
    assert program is not None, "no C reader built"
    plain = plain_schema()
    events, schemas, containers = corpus_events(), corpus_schemas(), corpus_containers()
    counts = {"events": 0, "schemas": 0, "containers": 0, "api": 0}
    deadline = time.monotonic() + seconds
    FAILURES.mkdir(exist_ok=True)
    while time.monotonic() < deadline:
        k = r.random()
        what, payload = "", b""
        try:
            if k < 0.45:
                what = "events"
                if events and r.random() < 0.5:
                    body = r.choice(events)
                else:
                    buf = io.BytesIO()
                    fastavro.schemaless_writer(buf, plain, rand_datum(r, plain, named_types(plain)))
                    body = buf.getvalue()
                payload = body if r.random() < 0.2 else mutate(r, body)
                check_event(program, payload)
            elif k < 0.9:
                what = "schemas"
                if schemas and r.random() < 0.3:
                    raw_schema, data, count = r.choice(schemas)
                    schema = fastavro.parse_schema(raw_schema)
                else:
                    raw_schema = rand_schema(r)
                    schema = fastavro.parse_schema(raw_schema)
                    count = r.choice([1, 2, 3])
                    parts = []
                    for _ in range(count):
                        buf = io.BytesIO()
                        datum = rand_datum(r, schema, named_types(schema))
                        fastavro.schemaless_writer(buf, schema, datum)
                        parts.append(buf.getvalue())
                    data = b"".join(parts)
                p = native.Program.of(schema, as_dicts)
                if p is None:
                    continue
                data = data if r.random() < 0.3 else mutate(r, data)
                payload = json.dumps({"schema": raw_schema, "data": data.hex(),
                                      "count": count}).encode()
                check_schema(schema, p, data, count)
            elif k < 0.97 and containers:
                what = "containers"
                payload = mutate(r, r.choice(containers))
                check_container(payload)
            else:
                what = "api"
                check_api(r)
        except Divergence as e:
            out = FAILURES / f"{what}-{seed}-{sum(counts.values())}.bin"
            out.write_bytes(payload)
            print(f"DIVERGENCE ({what}): {e}\n  input kept in {out}", file=sys.stderr)
            raise SystemExit(1) from e
        counts[what] += 1
    return counts


def make_corpus(seed: int) -> None:
    """Write the kept corpus: one body of each payload type, a few schemas with their
    records, two small container files."""
    from pitwatch.producers.simulate import Floor

    r = random.Random(seed)
    (CORPUS / "events").mkdir(parents=True, exist_ok=True)
    (CORPUS / "schemas").mkdir(parents=True, exist_ok=True)
    (CORPUS / "containers").mkdir(parents=True, exist_ok=True)
    seen: dict[str, bytes] = {}
    evs = list(Floor(1, 3, seed=seed).events())
    for ev in evs:
        seen.setdefault(ev.type, avro.encode(ev))
    peek = next(ev for ev in evs if ev.type == "HoleCardInserted")  # no floor table peeks
    seen.setdefault("HoleCardChecked", avro.encode(Event(
        peek.event_id, peek.table_id, peek.device_id, peek.seq, peek.ts, peek.round_id,
        peek.prev_digest, HoleCardChecked(False))))
    for seat_event in (PlayerSeated(3, "LOYAL-000172", "RATED"), PlayerLeft(3)):  # v6
        seen.setdefault(type(seat_event).__name__, avro.encode(Event(
            peek.event_id, peek.table_id, peek.device_id, peek.seq, peek.ts, None,
            peek.prev_digest, seat_event)))
    for name, body in seen.items():
        (CORPUS / "events" / f"{name}.bin").write_bytes(body)
    for i in range(6):
        raw_schema = rand_schema(r)
        schema = fastavro.parse_schema(raw_schema)
        if native.Program.of(schema, as_dicts) is None:
            continue
        parts = []
        for _ in range(2):
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, schema, rand_datum(r, schema, named_types(schema)))
            parts.append(buf.getvalue())
        (CORPUS / "schemas" / f"schema-{i}.json").write_text(json.dumps(
            {"schema": raw_schema, "data": b"".join(parts).hex(), "count": 2}, indent=1) + "\n")
    for codec in ("null", "deflate"):
        buf = io.BytesIO()
        avro.write_container(buf, evs[:12], codec=codec, sync_marker=b"pitwatch-fuzzing")
        (CORPUS / "containers" / f"floor-{codec}.avro").write_bytes(buf.getvalue())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--make-corpus", action="store_true")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    if args.make_corpus:
        make_corpus(seed)
        return
    t = time.monotonic()
    counts = run(args.seconds, seed)
    print(f"fuzz: seed {seed}, {sum(counts.values()):,} inputs in "
          f"{time.monotonic() - t:.0f} s ({', '.join(f'{k} {v:,}' for k, v in counts.items())};"
          f" {COMPARED[0]:,} accepted by C and compared), C reader "
          f"{os.environ.get('PITWATCH_NATIVE') or 'as installed'}: no divergence")


if __name__ == "__main__":
    main()
