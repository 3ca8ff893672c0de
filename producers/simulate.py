"""`pitwatch simulate`: a floor of tables dealing real rounds, with injected faults.

The library side is `Floor` (a generator of events plus the ground truth of the faults
it injected, for runs too long to hold) and `simulate_floor` (both as lists). The
command writes DIR/events.jsonl (and DIR/events.avro with --avro), DIR/truth.jsonl and
DIR/keys.json (the devices' public keys: every device signs its chain).
The same arguments always give byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from pitwatch.events.avro import write_container
from pitwatch.events.jsonl import dumps
from pitwatch.events.keys import KEYS_FILE, DeviceKey, KeyRegistry, public_bytes
from pitwatch.events.model import Event

from .devices import device_key, key_id
from .floor import TableConfig, floor_tables
from .table import TableRun, secret

#: Runs of at least this many table-rounds show a progress bar (on a terminal).
PROGRESS_FROM = 2_000


class Floor:
    """A floor's tables and their rounds, dealt lazily.

    `events()` yields the tables' opening events, then round 1 of every table, round 2
    of every table, and so on. `truth` fills up as the events are generated: one record
    `{"code", "table_id", "round_id", "event_id"}` per injected fault.
    """

    def __init__(self, tables: int, rounds: int, seed: int, inject: float = 0.0, *,
                 jurisdiction: str | None = None, game: str | None = None,
                 sign: bool = True, contract: bool = False, heartbeat_ms: int = 0) -> None:
        if rounds < 1:
            raise ValueError(f"--rounds must be at least 1, not {rounds}")
        if not 0.0 <= inject <= 1.0:
            raise ValueError(f"--inject is a share of rounds, 0 to 1, not {inject}")
        self.configs: list[TableConfig] = floor_tables(tables, jurisdiction=jurisdiction,
                                                       game=game, contract=contract)
        self.rounds = rounds
        self.seed = seed
        self.inject = inject
        self.truth: list[dict[str, Any]] = []
        self.event_count = 0
        self.rounds_done = 0
        self.sign = sign
        self._runs = [TableRun(cfg, seed, rounds, inject, self.truth, sign)
                      for cfg in self.configs]
        for run in self._runs:  # the order signers' heartbeats through pauses (0: none)
            run.devices.heartbeat_ms = heartbeat_ms

    def registry(self) -> KeyRegistry | None:
        """The public keys of the floor's devices (None for an unsigned floor)."""
        if not self.sign:
            return None
        return floor_registry(self.seed, (d.device_id for run in self._runs
                                          for d in run.devices.devices.values()))


    def events(self, on_round: Callable[[], None] | None = None) -> Iterator[Event]:
        """The floor's events in order. `on_round()` is called after each table-round."""
        n = 0
        for run in self._runs:
            batch = run.opening()
            n += len(batch)
            yield from batch
        for k in range(1, self.rounds + 1):
            for run in self._runs:
                batch = run.play(k)
                n += len(batch)
                self.rounds_done += 1
                self.event_count = n
                yield from batch
                if on_round is not None:
                    on_round()
        for run in self._runs:  # each table's shift ends, signed
            batch = run.close()
            n += len(batch)
            yield from batch
        self.event_count = n

    def faults_by_code(self) -> Counter[str]:
        return Counter(t["code"] for t in self.truth)

    def tables_by_game(self) -> Counter[str]:
        return Counter(f"{c.jurisdiction} {c.game}" for c in self.configs)


def floor_registry(seed: int, device_ids: Iterable[str]) -> KeyRegistry:
    """The key registry of the simulated devices named, for the floor of `seed`."""
    return KeyRegistry({d: [DeviceKey(key_id(d), public_bytes(device_key(secret(seed), d)))]
                        for d in sorted(set(device_ids))})


def simulate_floor(tables: int, rounds: int, seed: int, inject: float = 0.0,
                   jurisdiction: str | None = None, game: str | None = None
                   ) -> tuple[list[Event], list[dict[str, Any]]]:
    """All events of a floor and the truth of its injected faults."""
    floor = Floor(tables, rounds, seed, inject, jurisdiction=jurisdiction, game=game)
    events = list(floor.events())
    return events, floor.truth


def write_floor(floor: Floor, out: Path, *, avro: bool = False, progress: bool = False
                ) -> int:
    """Write DIR/events.jsonl (and events.avro), then DIR/truth.jsonl; the event count."""
    out.mkdir(parents=True, exist_ok=True)
    bar: Any = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(floor.configs) * floor.rounds, unit=" rounds", file=sys.stderr,
                   desc="simulate", mininterval=0.5)
    tick = None if bar is None else (lambda: bar.update(1))
    try:
        with open(out / "events.jsonl", "wb") as jf:
            events = _tee_jsonl(floor.events(tick), jf)
            if avro:
                with open(out / "events.avro", "wb") as af:
                    write_avro(af, events, floor.seed)
            else:
                for _ in events:
                    pass
    finally:
        if bar is not None:
            bar.close()
    with open(out / "truth.jsonl", "wb") as tf:
        for rec in floor.truth:
            tf.write(orjson.dumps(rec) + b"\n")
    keys = floor.registry()
    if keys is not None:
        keys.write(out / KEYS_FILE)
    return floor.event_count


def write_avro(out: IO[bytes], events: Iterator[Event], seed: int) -> None:
    """The floor's Avro container file; the same seed gives the same bytes (the sync
    marker comes from the seed, not from os.urandom)."""
    marker = hashlib.sha256(f"pitwatch-simulate/{seed}/avro-sync".encode()).digest()[:16]
    write_container(out, events, sync_marker=marker)


def _tee_jsonl(events: Iterator[Event], out: IO[bytes]) -> Iterator[Event]:
    write = out.write
    for ev in events:
        write(dumps(ev) + b"\n")
        yield ev


class _Simulate:
    name = "simulate"
    help = "simulate a casino floor dealing blackjack, with injected faults"
    description = """\
Deal real rounds at a floor of tables: New Jersey blackjack and Blackjack Switch,
Pennsylvania Free Bet Blackjack, New Zealand blackjack (docs/procedure.md). Each
table's devices (console, shoe, card reader, wager sensors) emit the events of
docs/events.md with contiguous seq and the prev_digest chain, and sign them with
Ed25519 checkpoints (keys made from the seed; the public ones in DIR/keys.json, for
`pitwatch audit --keys DIR/keys.json`; --unsigned for none).

With --inject RATE, that share of rounds breaks exactly one rule, chosen among those
the round can break; DIR/truth.jsonl names each fault's code, round and the event the
audit should see it on. Among the faults is a forgery (SIGNATURE_INVALID): at a
table's last round an amount is changed and the device's chain recomputed after it,
so every digest is right and only the signatures tell. The same arguments always give
the same bytes.

examples:
  pitwatch simulate --tables 12 --rounds 150 --seed 7 --out floor/
  pitwatch simulate --tables 4 --rounds 500 --seed 1 --inject 0.1 --out faults/
  pitwatch simulate --tables 3 --rounds 100 --seed 2 --jurisdiction NZ --avro --out nz/"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--tables", type=int, default=12, help="tables on the floor (default 12)")
        p.add_argument("--rounds", type=int, default=150,
                       help="rounds each table deals (default 150)")
        p.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
        p.add_argument("--inject", type=float, default=0.0, metavar="RATE",
                       help="share of rounds that carry one fault, 0 to 1 (default 0)")
        p.add_argument("--jurisdiction", choices=("NJ", "PA", "NZ"),
                       help="only tables of this jurisdiction")
        p.add_argument("--game", choices=("BLACKJACK", "BLACKJACK_SWITCH", "FREE_BET_BLACKJACK"),
                       help="only tables of this game")
        p.add_argument("--avro", action="store_true",
                       help="also write DIR/events.avro (Avro container file)")
        p.add_argument("--out", required=True, type=Path, metavar="DIR",
                       help="output directory")
        p.add_argument("--contract", action="store_true",
                       help="also the faults the contract's later versions let a record "
                       "show: a NJ blackjack table that peeks at the hole card (insurance "
                       "after the peek, losing insurance up after it), one posting the "
                       "streak wager beside the bonus wager (13:69F-2.25(h)), one the bonus "
                       "wager at four decks (2.2(a)4), and an event each table's decoder "
                       "refuses (a negative wager); each at least once a table when --inject "
                       "is above 0. Without it every floor is dealt as before, byte for byte")
        p.add_argument("--unsigned", action="store_true",
                       help="devices do not sign (no checkpoints, no DIR/keys.json)")
        p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
        p.add_argument("--synthetic", action="store_true",
                       help="a synthetic floor (producers/synthetic.py): each kind of table "
                       "dealt once, then played again by every table of its kind, its "
                       "second shoe over and over, at 100k+ events/s; unsigned, JSON Lines")

    def run(self, args: argparse.Namespace) -> int:
        if args.synthetic:
            from .synthetic import SyntheticFloor

            if args.avro or args.contract:
                print("pitwatch simulate: --synthetic writes JSON Lines only, of the floor "
                      "as dealt without --contract (no --avro, no --contract)", file=sys.stderr)
                return 2
            syn = SyntheticFloor(args.tables, args.rounds, args.seed, args.inject,
                                 jurisdiction=args.jurisdiction, game=args.game)
            n = syn.write(args.out)
            if not args.quiet:
                print(f"synthetic floor: {len(syn.configs)} tables x {args.rounds} rounds "
                      f"(seed {args.seed}, {len(syn.kinds)} kinds dealt): {n:,} events, "
                      f"{len(syn.truth):,} injected faults; wrote events.jsonl, truth.jsonl "
                      f"to {args.out}")
            return 0
        floor = Floor(args.tables, args.rounds, args.seed, args.inject,
                      jurisdiction=args.jurisdiction, game=args.game,
                      sign=not args.unsigned, contract=args.contract)
        long_run = len(floor.configs) * floor.rounds >= PROGRESS_FROM
        progress = long_run and not args.quiet and sys.stderr.isatty()
        n = write_floor(floor, args.out, avro=args.avro, progress=progress)
        if not args.quiet:
            print(summary(floor, n, args.out, args.avro))
        return 0


def summary(floor: Floor, events: int, out: Path, avro: bool) -> str:
    lines = [f"simulated {len(floor.configs)} tables x {floor.rounds} rounds "
             f"(seed {floor.seed}): {floor.rounds_done:,} rounds, {events:,} events"]
    for game, n in sorted(floor.tables_by_game().items()):
        lines.append(f"  {n:3d} tables  {game}")
    faults = floor.faults_by_code()
    if faults:
        lines.append(f"injected {sum(faults.values()):,} faults (rate {floor.inject:g}):")
        for code, n in sorted(faults.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:5d}  {code}")
    else:
        lines.append("no faults injected")
    files = "events.jsonl" + (", events.avro" if avro else "") + ", truth.jsonl" \
        + (f", {KEYS_FILE}" if floor.sign else "")
    lines.append(f"wrote {files} to {out}")
    return "\n".join(lines)


command = _Simulate()


def main(argv: list[str] | None = None) -> int:
    """`python -c 'from pitwatch.producers.simulate import main; main()'`: the command alone,
    without the rest of the `pitwatch` CLI."""
    parser = argparse.ArgumentParser(prog="pitwatch simulate", description=command.description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    command.configure(parser)
    return command.run(parser.parse_args(argv))
