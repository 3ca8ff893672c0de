"""The `pitwatch` command.

The core's own commands (audit, query) are built in. The stages add theirs (simulate,
demo, produce, worker, replay) through the `pitwatch.commands` entry point group, so the
core finds them at run time without importing the stages.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from typing import Protocol


class Command(Protocol):
    """A subcommand: its name, one line of help, its arguments and what it does."""

    name: str
    help: str
    description: str

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


EPILOG = """\
start here:
  pitwatch demo                      simulate a shift with faults, audit it, show the worst
  pitwatch simulate --tables 12 --rounds 150 --seed 7 --out floor/
  pitwatch audit floor/ --format table

The embedded store (chDB) lives in --data (default ./pitwatch-data); `pitwatch query`
answers SQL on it. The streaming pipeline: see README.md, "Streaming".
"""


def builtin_commands() -> list[Command]:
    from .audit.cli import AUDIT, QUERY

    return [AUDIT, QUERY]


def stage_commands() -> list[Command]:
    found: list[Command] = []
    for ep in entry_points(group="pitwatch.commands"):
        try:
            found.append(ep.load())
        except ImportError as e:  # a stage whose optional dependencies are not installed
            print(f"pitwatch: command {ep.name!r} unavailable: {e}", file=sys.stderr)
    return found


def build_parser(commands: list[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pitwatch",
        description="Audit casino table-game rounds against the jurisdiction's rules, "
        "embedded or on Kafka, Faust and ClickHouse.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    order = ["demo", "simulate", "audit", "query", "replay", "produce", "worker"]
    for cmd in sorted(commands, key=lambda c: (order.index(c.name) if c.name in order else 99)):
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.description,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.configure(p)
        p.set_defaults(_run=cmd.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(builtin_commands() + stage_commands())
    args = parser.parse_args(argv)
    try:
        code: int = args._run(args)
    except KeyboardInterrupt:
        return 130
    except (FileNotFoundError, ValueError) as e:
        print(f"pitwatch {args.command}: {e}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
