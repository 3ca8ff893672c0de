"""Clean rounds raise nothing: a floor of the four games dealt with no fault injected
(`pitwatch simulate --inject 0`), every event through the rules engine, and the count of
violations and engine errors printed (both must be 0). The time of the audit is printed
beside the time of dealing the same rounds, measured in the same run.

    .venv/bin/python bench/clean_rounds.py [--rounds 100000] [--tables 40] [--seed 11]

`--rounds` counts table-rounds across the floor (tables x rounds per table), the four
games in turn (NJ blackjack, NJ Blackjack Switch, PA Free Bet, NZ blackjack).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.errors import EngineError
from pitwatch.engine.violation import Violation
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.simulate import Floor


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=100_000,
                    help="table-rounds in all (default 100,000)")
    ap.add_argument("--tables", type=int, default=40, help="tables on the floor (default 40)")
    ap.add_argument("--seed", type=int, default=11, help="the floor's seed (default 11)")
    args = ap.parse_args(argv)
    per_table = max(1, -(-args.rounds // args.tables))

    violations: list[Violation] = []
    errors: list[EngineError] = []
    rounds: Counter[str] = Counter()

    def on_round(r: RoundSummary) -> None:
        rounds[f"{r.jurisdiction} {r.game}"] += 1

    auditor = Auditor(select, violations.append, on_round, errors.append,
                      released=released_writers())
    clock = time.perf_counter
    dealt = audited = 0.0
    count = 0
    stream = iter(Floor(args.tables, per_table, args.seed).events())
    while True:  # streamed: the floor is never held in memory whole
        t0 = clock()
        ev = next(stream, None)
        t1 = clock()
        if ev is None:
            break
        auditor.feed(ev)
        dealt += t1 - t0
        audited += clock() - t1
        count += 1
    auditor.finish()

    print(f"{sum(rounds.values()):,} clean rounds ({count:,} events) on "
          f"{args.tables} tables, seed {args.seed}:")
    for game, n in sorted(rounds.items()):
        print(f"  {game:<28} {n:>9,} rounds")
    print(f"violations: {len(violations)}")
    for code, n in Counter(v.code for v in violations).most_common():
        example = next(v for v in violations if v.code == code)
        print(f"  {code:<34} {n:>6}  e.g. {example.round_id}: {example.message}")
    print(f"engine errors: {len(errors)}")
    print(f"audit {audited:.1f} s, dealing {dealt:.1f} s: the audit takes "
          f"{audited / dealt:.2f}x the time of dealing the same rounds")
    return 0 if not violations and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
