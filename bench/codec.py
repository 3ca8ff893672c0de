"""Codec rates: pitwatch's codec (fastavro underneath) against the avro package, on the
same simulated events, in one run. Every side runs on the same events the same number
of times (best of --repeat). Prints events/s for each and the ratio.

    .venv/bin/python bench/codec.py [--events 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import time
from collections.abc import Callable
from typing import Any

import avro.io
import avro.schema
import fastavro

from pitwatch.events import avro as codec
from pitwatch.events import jsonl
from pitwatch.events.schema import plain_schema, raw_schema, strip_logical
from pitwatch.producers.simulate import Floor


def rate(n: int, fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per side; the best counts")
    args = ap.parse_args()
    floor = Floor(tables=12, rounds=10_000, seed=1)
    events = []
    for ev in floor.events():
        events.append(ev)
        if len(events) == args.events:
            break
    n = len(events)
    datums = [codec.to_datum(ev) for ev in events]
    bodies = [codec.encode(ev) for ev in events]
    lines = [jsonl.dumps(ev) for ev in events]

    ref_schema = avro.schema.parse(json.dumps(strip_logical(raw_schema())))
    ref_writer = avro.io.DatumWriter(ref_schema)
    ref_reader = avro.io.DatumReader(ref_schema)
    # the avro package takes a union branch as a plain dict and finds it by shape
    ref_datums = [{**d, "payload": d["payload"][1]} for d in datums]

    def ref_encode() -> None:
        for d in ref_datums:
            buf = io.BytesIO()
            ref_writer.write_data(ref_schema, d, avro.io.BinaryEncoder(buf))

    def ref_decode() -> None:
        for b in bodies:
            ref_reader.read(avro.io.BinaryDecoder(io.BytesIO(b)))

    ps = plain_schema()

    def fa_decode_bare() -> None:
        for b in bodies:
            fastavro.schemaless_reader(io.BytesIO(b), ps, None, return_record_name=True)

    def our_encode() -> None:
        for ev in events:
            codec.encode(ev)

    def our_decode() -> None:
        for b in bodies:
            codec.decode(b)

    def container_rw() -> None:
        buf = io.BytesIO()
        codec.write_container(buf, events)
        buf.seek(0)
        for _ in codec.read_container(buf):
            pass

    def json_decode() -> None:
        for line in lines:
            jsonl.loads(line)

    k = args.repeat
    r_ref_enc = rate(n, ref_encode, k)
    r_ref_dec = rate(n, ref_decode, k)
    r_fa_dec = rate(n, fa_decode_bare, k)
    r_enc = rate(n, our_encode, k)
    r_dec = rate(n, our_decode, k)
    r_cont = rate(n, container_rw, k)
    r_json = rate(n, json_decode, k)
    print(f"codec on {n:,} simulated events, every side best of {k}")
    print(f"  {'':40} {'events/s':>12}  {'vs avro pkg':>11}")
    rows = [
        ("avro package: encode (baseline)", r_ref_enc, r_ref_enc),
        ("avro package: decode (baseline)", r_ref_dec, r_ref_dec),
        ("pitwatch encode -> bytes (fastavro)", r_enc, r_ref_enc),
        ("pitwatch decode -> typed Event", r_dec, r_ref_dec),
        ("fastavro bare decode -> dict", r_fa_dec, r_ref_dec),
        ("container write+read -> typed Event", r_cont, r_ref_dec),
        ("JSON Lines decode -> typed Event", r_json, r_ref_dec),
    ]
    for name, v, base in rows:
        print(f"  {name:40} {v:12,.0f}  {v / base:10.1f}x")


if __name__ == "__main__":
    main()
