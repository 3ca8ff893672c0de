"""What signed device records cost the audit: the same simulated floor dealt unsigned
and signed (Ed25519 checkpoints), audited in process without a store, each the best of
the same number of runs in this run:

  unsigned       the unsigned floor, no key registry (the baseline)
  signed, no keys the signed floor, checkpoints carried but not judged
  signed, keys   the signed floor verified against its key registry

It prints the ratios against the baseline and the cost per event of the floor's own
events (checkpoints not counted), and how many checkpoints were verified.

    .venv/bin/python bench/signatures.py [--tables 20] [--rounds 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import decode_single, encode_single
from pitwatch.events.keys import KeyRegistry
from pitwatch.events.model import Checkpoint, Event
from pitwatch.producers.simulate import Floor


def best(repeat: int, runs: list[Callable[[], object]]) -> list[float]:
    """The best time of each run over `repeat` rounds, the runs interleaved (so a busy
    machine slows them alike)."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for i, run in enumerate(runs):
            t = time.perf_counter()
            run()
            times[i].append(time.perf_counter() - t)
    return [min(ts) for ts in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    # as read from a file or a topic: each event with its canonical bytes
    plain: list[Event] = [decode_single(encode_single(e)) for e in
                          Floor(args.tables, args.rounds, 1, sign=False).events()]
    floor = Floor(args.tables, args.rounds, 1)
    signed: list[Event] = [decode_single(encode_single(e)) for e in floor.events()]
    keys: KeyRegistry | None = floor.registry()
    assert keys is not None
    checkpoints = sum(isinstance(e.payload, Checkpoint) for e in signed)
    rep = audit_events(signed, keys=keys)
    assert rep.violations == [], "a clean signed floor raised something"

    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    pub, msg = key.public_key(), b"pitwatch" * 16
    sig = key.sign(msg)

    def verify_only() -> None:
        for _ in range(checkpoints):
            pub.verify(sig, msg)

    base, carried, verified, bare = best(args.repeat, [
        lambda: audit_events(plain, keep_violations=False),
        lambda: audit_events(signed, keep_violations=False),
        lambda: audit_events(signed, keep_violations=False, keys=keys), verify_only])
    n = len(plain)
    print(f"{n:,} events, {checkpoints:,} checkpoints ({checkpoints / n:.1%} more events), "
          f"best of {args.repeat}")
    for name, t in (("unsigned", base), ("signed, no keys", carried),
                    ("signed, keys", verified)):
        print(f"  {name:16} {t:7.3f} s  {n / t:10,.0f} events/s  x{t / base:.3f}")
    print(f"verification: {(verified - base) / n * 1e6:.2f} us per event "
          f"({(verified - carried) / checkpoints * 1e6:.0f} us per checkpoint over carrying it;"
          f" a bare Ed25519 verify here: {bare / checkpoints * 1e6:.0f} us, "
          f"{bare / (verified - carried):.0%} of that)")


if __name__ == "__main__":
    main()
