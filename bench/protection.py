"""Game protection: each detector's power and false-positive rate at its shipped
threshold, over simulated seat sessions (producers/players.py), against issue 37's
targets.

    nice .venv/bin/python bench/protection.py [--tables 2000] [--seed 37] [--jobs 2] [--quick]

- Counter tables (`--tables`, 300 rounds each): seat 1 a Hi-Lo counter with a 1-8 ramp,
  seat 4 the same with 30% camouflage, seat 7 a 1-4 ramp; no one else. One session of
  each counter per table: two counters without camouflage at one table would bet the
  same on every round (their bets are the shared count's), one session twice.
- Flashing tables (`--hole-tables`, 100 rounds each, the dealer flashing the hole card
  on `--flash` of the rounds): seats 1, 3, 5, 7 hole-card players, seats 2, 4, 6 honest.
- Honest floor (`--honest-tables`, 300 rounds each, seven honest seats, a new dealer
  every 40 rounds): the hold's |z| > 3 share by table and by dealer, and the honest
  sessions "over a shift".

Sessions at one table share its shoe, its dealer and (flashing) its flashed rounds, so
they are correlated: each share's 95% interval is taken over tables (the sessions of a
table one cluster: `clustered`), not over sessions as if independent.
- Dealer error rates (`--floors` floors of 50 dealers dealing 300 rounds at the floor's
  rate of 1 per 100, and one dealer at 3x or 5x): a model of the error counts, not
  dealt rounds.

The counts are seat sessions; each flag is the detector's shipped threshold. `--quick`
runs 2 tables of each kind (a smoke test, not a measurement).

Each table's events carry their device's Avro bytes (`events(keep_raw=True)`), so the
audit hashes them without encoding each event again; what it judges is the same.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import re
import sys
import time
from collections import Counter

from pitwatch.producers.players import DealerProfile, SimTable, events, make_player
from pitwatch.protect.counting import detect_count_betting
from pitwatch.protect.dealer_errors import dealer_tests, flagged
from pitwatch.protect.hold import Z_THRESHOLD, HoldTally, detect_hold, hold_tallies
from pitwatch.protect.holecard import detect_hole_card_play
from pitwatch.protect.observation import DEALER, SHIFT, TABLE
from pitwatch.protect.rounds import RoundView, rounds_by_table
from pitwatch.protect.sessions import infer_sessions
from pitwatch.protect.stats import normal_two_sided

COUNTER_SEATS = {1: "counter-8", 4: "counter-8-camo", 7: "counter-4"}
HOLE_SEATS = {1: "holecard", 2: "flat", 3: "holecard", 4: "random", 5: "holecard",
              6: "paroli", 7: "holecard"}
#: a counter at each camouflage level (a share of bets drawn at random within the ramp)
CAMO_SEATS = {1: "counter-8-camo0", 2: "counter-8-camo5", 3: "counter-8-camo10",
              4: "counter-8-camo15", 5: "counter-8-camo20", 6: "counter-8-camo30",
              7: "counter-8-camo50"}
HONEST_SEATS = {1: "flat", 2: "random", 3: "paroli", 4: "martingale", 5: "flat",
                6: "random", 7: "martingale"}
DETECTORS = (("count", detect_count_betting), ("hole", detect_hole_card_play))


#: what a table's sessions of one label count: sessions, then flagged by each of these
COUNTED = ("count", "hole", "any")


class Tally:
    """Sessions per profile and label, and how many each detector flagged; and the same
    by table (`tables`: each table's label -> (sessions, flagged by each of `COUNTED`),
    in table order), for intervals that allow for the sessions of a table being
    correlated."""

    def __init__(self) -> None:
        self.sessions: Counter[str] = Counter()
        self.flags: Counter[tuple[str, str]] = Counter()
        self.tables: list[dict[str, tuple[int, ...]]] = []

    def session(self, label: str, hits: set[str]) -> None:
        self.sessions[label] += 1
        for name in hits:
            self.flags[(label, name)] += 1
        if hits:
            self.flags[(label, "any")] += 1

    def table(self, sessions: list[tuple[str, set[str]]]) -> None:
        """One table's sessions (label, detectors that flagged it), each counted."""
        per: dict[str, list[set[str]]] = {}
        for label, hits in sessions:
            self.session(label, hits)
            per.setdefault(label, []).append(hits)
        self.tables.append({
            label: (len(all_hits), *(sum(1 for h in all_hits if (h if name == "any"
                                                                  else name in h))
                                     for name in COUNTED))
            for label, all_hits in per.items()})

    def merge(self, other: Tally) -> None:
        self.sessions.update(other.sessions)
        self.flags.update(other.flags)
        self.tables.extend(other.tables)

    def by_table(self, labels: list[str], name: str) -> list[tuple[int, int]]:
        """Each table's (sessions, flagged by `name`) of `labels` together, for every
        table with a session of one of them."""
        at = 1 + COUNTED.index(name)
        out: list[tuple[int, int]] = []
        for table in self.tables:
            rows = [table[lb] for lb in labels if lb in table]
            if rows:
                out.append((sum(r[0] for r in rows), sum(r[at] for r in rows)))
        return out

    def share(self, label: str, name: str) -> float:
        n = self.sessions[label]
        return self.flags[(label, name)] / n if n else 0.0


KINDS = {"counter": (0, COUNTER_SEATS), "hole": (1, HOLE_SEATS), "honest": (2, HONEST_SEATS),
         "camo": (3, CAMO_SEATS)}
#: tables a worker deals at a time: the chunks, and so the merge's order, do not depend
#: on the number of workers
CHUNK = 10


def deal(kind: str, start: int, stop: int, rounds: int, seed: int, flash: float = 0.0,
         hold: bool = False) -> tuple[Tally, list[HoldTally]]:
    """Tables start..stop-1 of a kind dealt, audited and judged: each seat session's
    flags, and (with `hold`) the tables' hold tallies."""
    tally = Tally()
    floor: dict[str, list[RoundView]] = {}
    base, seats = KINDS[kind]
    for i in range(start, stop):
        index = base * 1_000_000 + i
        players = {s: make_player(p, seed, s, index) for s, p in seats.items()}
        table = SimTable(index, seed, players, flash=flash)
        # the table's events, audited: the detectors read the engine's fold of them
        rounds_read = rounds_by_table(events(table, rounds, seed, keep_raw=True)
                                      )[table.cfg.table_id]
        tally.table([(f"{seats[session.seat]} ({kind} table, {rounds} rounds)",
                      {name for name, detect in DETECTORS if detect(session) is not None})
                     for session in infer_sessions(rounds_read)])
        if hold:
            floor[table.cfg.table_id] = rounds_read
    return tally, hold_tallies(floor) if hold else []


def _deal(job: tuple[str, int, int, int, int, float, bool]) -> tuple[Tally, list[HoldTally]]:
    return deal(*job)


def deal_all(jobs: list[tuple[str, int, int, int, int, float, bool]], workers: int
             ) -> tuple[Tally, list[HoldTally]]:
    """Every job (a chunk of tables) dealt on `workers` processes, merged in job order:
    the same figures for any number of workers."""
    tally = Tally()
    holds: dict[tuple[str, str], HoldTally] = {}
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            done = list(pool.imap(_deal, jobs))
    else:
        done = [_deal(j) for j in jobs]
    for t, hs in done:
        tally.merge(t)
        for h in hs:
            got = holds.get((h.scope, h.subject))
            if got is None:
                holds[(h.scope, h.subject)] = h
            else:
                got.merge(h)
    order = {TABLE: 0, DEALER: 1, SHIFT: 2}
    return tally, sorted(holds.values(), key=lambda h: (order.get(h.scope, 2), h.subject))


def chunks(kind: str, tables: int, rounds: int, seed: int, flash: float = 0.0,
           hold: bool = False) -> list[tuple[str, int, int, int, int, float, bool]]:
    return [(kind, a, min(tables, a + CHUNK), rounds, seed, flash, hold)
            for a in range(0, tables, CHUNK)]


def natural(label: str) -> tuple[tuple[int, str], ...]:
    """A label's sort key with its numbers compared as numbers (camo5 before camo10)."""
    return tuple((int(x), "") if x.isdigit() else (-1, x) for x in re.split(r"(\d+)", label))


def wilson(k: float, n: float) -> tuple[float, float]:
    """A 95% interval for a share k/n (Wilson)."""
    if n == 0:
        return 0.0, 1.0
    z = 1.96
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def clustered(rows: list[tuple[int, int]]) -> tuple[float, float, float]:
    """A 95% interval for the share sum(k)/sum(n) of sessions flagged, the sessions of a
    table (a row (n, k)) one cluster, and the design effect: Wilson's interval at the
    effective sample size n / deff, where deff is the ratio of the between-table
    (ratio-estimator) variance to the binomial one. At a share of 0 or 1 there is no
    spread to measure, and deff is taken as the most sessions a table holds (as if a
    table's sessions were one)."""
    n = sum(r[0] for r in rows)
    k = sum(r[1] for r in rows)
    m = len(rows)
    if n == 0:
        return 0.0, 1.0, 1.0
    p = k / n
    if 0 < k < n and m > 1:
        var = m / (m - 1) * sum((ki - p * ni) ** 2 for ni, ki in rows) / (n * n)
        deff = max(1.0, var / (p * (1 - p) / n))
    else:
        deff = float(max(r[0] for r in rows))
    lo, hi = wilson(p * n / deff, n / deff)
    return lo, hi, deff


def dealer_bench(floors: int, seed: int, factor: float) -> tuple[int, int, int, int]:
    """(raised dealers flagged, raised dealers, honest dealers flagged, honest dealers)."""
    rng = random.Random(f"pitwatch-bench/dealers/{seed}/{factor}")
    rate, n = 0.01, 300
    hit = false = honest = 0
    for f in range(floors):
        dealers = [DealerProfile(f"F{f}-D{d:02d}", rate) for d in range(50)]
        dealers.append(DealerProfile(f"F{f}-RAISED", rate * factor))
        dealt = {d.dealer_id: (n, tuple(f"{d.dealer_id}-{k}" for k in d.error_rounds(n, rng)))
                 for d in dealers}
        for t in dealer_tests(dealt):
            if t.dealer_id.endswith("RAISED"):
                hit += flagged(t)
            else:
                honest += 1
                false += flagged(t)
    return hit, floors, false, honest


def child_cpu() -> float:
    """CPU seconds of this process's finished children (the worker processes)."""
    t = os.times()
    return t.children_user + t.children_system


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=2000,
                    help="counter tables, one session of each counter (default 2,000)")
    ap.add_argument("--hole-tables", type=int, default=500,
                    help="flashing tables, four hole-card players each (default 500)")
    ap.add_argument("--honest-tables", type=int, default=500,
                    help="honest floor tables for the hold and the honest sessions over a "
                         "shift (default 500)")
    ap.add_argument("--floors", type=int, default=2000,
                    help="simulated floors for the dealer error rate (default 2,000)")
    ap.add_argument("--camo-tables", type=int, default=0,
                    help="tables of seven 1-8 counters, camouflaging 0%%-50%% of bets, for "
                         "the count detector's power by camouflage (default none)")
    ap.add_argument("--flash", type=float, default=0.3,
                    help="share of rounds a flashing dealer exposes the hole card (0.3)")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--jobs", type=int, default=2,
                    help="worker processes (default 2); the figures do not depend on it")
    ap.add_argument("--quick", action="store_true", help="2 tables of each kind (a smoke test)")
    args = ap.parse_args(argv)
    if args.quick:
        args.tables, args.hole_tables, args.honest_tables, args.floors = 2, 2, 2, 50
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    jobs = (chunks("counter", args.tables, 300, args.seed)
            + chunks("hole", args.hole_tables, 100, args.seed, flash=args.flash)
            + chunks("honest", args.honest_tables, 300, args.seed, hold=True)
            + chunks("camo", args.camo_tables, 300, args.seed))
    tally, tallies = deal_all(jobs, args.jobs)
    t1 = time.perf_counter()

    print(f"seat sessions by profile, flagged at the shipped thresholds "
          f"(seed {args.seed}, flashing dealers expose {args.flash:.0%} of rounds):")
    print(f"  {'profile':<46} {'sessions':>8} {'count':>7} {'hole':>7} {'any':>7}")
    for label in sorted(tally.sessions, key=natural):
        print(f"  {label:<46} {tally.sessions[label]:>8,} "
              + " ".join(f"{100 * tally.share(label, k):>6.2f}%" for k in ("count", "hole", "any")))
    honest_labels = [lb for lb in tally.sessions
                     if lb.split(" ")[0] in ("flat", "random", "paroli", "martingale")]
    hn = sum(tally.sessions[lb] for lb in honest_labels)
    hk = sum(tally.flags[(lb, "any")] for lb in honest_labels)
    shift = [lb for lb in honest_labels if "300 rounds" in lb]
    sn = sum(tally.sessions[lb] for lb in shift)
    sk = sum(tally.flags[(lb, "any")] for lb in shift)

    def interval(labels: list[str], name: str) -> str:
        rows = tally.by_table(labels, name)
        lo, hi, deff = clustered(rows)
        return (f"95% CI {100 * lo:.2f}-{100 * hi:.2f}% over {len(rows):,} tables, "
                f"design effect {deff:.2f}")

    flagged_hold = detect_hold(tallies)
    nominal = normal_two_sided(Z_THRESHOLD)
    tables = [t for t in tallies if t.scope == TABLE]
    dealers = [t for t in tallies if t.scope == DEALER]
    ft = sum(1 for o in flagged_hold if o.scope == TABLE)
    fd = sum(1 for o in flagged_hold if o.scope == DEALER)
    shifts = [t for t in tallies if t.scope == SHIFT]
    zz = [t.z for t in tables + dealers]
    print(f"hold against theoretical on the honest floor ({len(tables)} tables, "
          f"{len(dealers)} dealers of 40 rounds): |z| > {Z_THRESHOLD:g} for {ft} tables "
          f"({100 * ft / max(1, len(tables)):.2f}%) and {fd} dealers "
          f"({100 * fd / max(1, len(dealers)):.2f}%), nominal {100 * nominal:.2f}%; "
          f"z mean {sum(zz) / len(zz):+.3f}, sd {math.sqrt(sum(z * z for z in zz) / len(zz)):.3f}")

    print("hold by shift (every honest table's rounds started in it, UTC shifts): "
          + ", ".join(f"{t.subject} z {t.z:+.2f} over {t.hands:,} hands" for t in shifts))

    lines = []
    for factor in (3.0, 5.0):
        hit, n, false, honest = dealer_bench(args.floors, args.seed, factor)
        lines.append((factor, hit, n, false, honest))
        print(f"dealer error rate, 300 rounds at {factor:g}x the floor's 1 per 100: "
              f"{hit}/{n} flagged ({100 * hit / n:.1f}%); honest dealers flagged "
              f"{false}/{honest} ({100 * false / honest:.3f}%)")

    def target(name: str, ok: bool, got: str) -> bool:
        print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {got}")
        return ok

    print("targets (issue 37):")
    c8 = next(lb for lb in tally.sessions if lb.startswith("counter-8 "))
    hc = next(lb for lb in tally.sessions if lb.startswith("holecard"))
    p8, ph = tally.share(c8, "count"), tally.share(hc, "hole")
    share = (ft + fd) / max(1, len(tables) + len(dealers))
    results = [
        target("counters with a 1-8 ramp detected in >= 95% of 300-round sessions",
               p8 >= 0.95, f"{100 * p8:.1f}% of {tally.sessions[c8]:,} "
               f"({interval([c8], 'count')})"),
        target("hole-card players detected in >= 95% of 100-round sessions at a flashing "
               "table", ph >= 0.95, f"{100 * ph:.1f}% of {tally.sessions[hc]:,} "
               f"({interval([hc], 'hole')})"),
        target("<= 1% of honest seat sessions over a shift flagged by any detector",
               sn > 0 and sk / sn <= 0.01,
               f"{100 * sk / max(1, sn):.3f}% of {sn:,} 300-round sessions "
               f"({interval(shift, 'any')}); {100 * hk / max(1, hn):.3f}% of all "
               f"{hn:,} honest sessions ({interval(honest_labels, 'any')})"),
        target("hold |z| > 3 share on honest floors within 2x nominal",
               share <= 2 * nominal,
               f"{100 * share:.3f}% of {len(tables) + len(dealers):,} tables and dealers "
               f"(nominal {100 * nominal:.3f}%)"),
    ]
    print(f"dealt and judged in {t1 - t0:.0f} s on {args.jobs} worker(s) "
          f"(CPU {time.process_time() - cpu0 + child_cpu():.0f} s)")
    return 0 if all(results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
