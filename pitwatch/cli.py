"""The `pitwatch` command.

The core's own commands (audit, query) are built in. The stages add theirs (simulate,
demo, produce, worker, replay) through the `pitwatch.commands` entry point group, so the
core finds them at run time without importing the stages.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import entry_points
from typing import Protocol

from .connect import apply_connection_flags
from .store.base import StoreError
from .terminal import escape_logs, printable


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
  pitwatch investigate ROUND_ID --out case/   a case folder: report (HTML, PDF), evidence

The embedded store (chDB) lives in --data (default ./pitwatch-data); `pitwatch query`
answers SQL on it. The streaming pipeline: see README.md, "Streaming".
"""


def builtin_commands() -> list[Command]:
    from .audit.cli import AUDIT, QUERY
    from .protect.cli import PROTECT

    return [AUDIT, QUERY, PROTECT]


#: The optional extra (pyproject.toml) that installs each optional module.
EXTRAS = {"faust": "stream", "kafka": "stream", "aiokafka": "stream",
          "clickhouse_driver": "stream", "rocksdict": "rocksdb", "reportlab": "investigate",
          "aiohttp": "console", "argon2": "console"}


def missing_extra(e: ImportError) -> str:
    """What to install for a missing optional module, in one line."""
    top = (e.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return str(e)
    return f"needs {top}, in the optional extra {extra!r}: pip install 'pitwatch[{extra}]'"


def stage_commands(name: str | None = None) -> list[Command]:
    """The stages' commands: the one `name`d only, when a stage has it (the others are
    not imported); else all of them."""
    eps = entry_points(group="pitwatch.commands")
    named = eps.select(name=name) if name else ()
    found: list[Command] = []
    for ep in named or eps:
        try:
            found.append(ep.load())
        except ImportError as e:  # a stage whose optional dependencies are not installed
            print(f"pitwatch: command {ep.name!r} unavailable: {missing_extra(e)}",
                  file=sys.stderr)
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
    order = ["demo", "simulate", "audit", "protect", "query", "replay", "investigate", "verify",
             "reaudit", "produce", "worker"]
    for cmd in sorted(commands, key=lambda c: (order.index(c.name) if c.name in order else 99)):
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.description,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.configure(p)
        p.set_defaults(_run=cmd.run)
    return parser


def _quiet_stdout() -> None:
    """The reader went away (`| head`): say nothing more, and let the interpreter's own
    flush at exit find nowhere to complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def commands_for(argv: list[str]) -> list[Command]:
    """The commands the parser needs: the one named first, when it is a command (so
    `pitwatch audit` imports no stage); every command for help or a name not known."""
    builtin = builtin_commands()
    name = argv[0] if argv else None
    if any(c.name == name for c in builtin):
        return builtin
    return builtin + stage_commands(name)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(commands_for(argv))
    args = parser.parse_args(argv)
    escape_logs()
    try:
        apply_connection_flags(args)
        code: int = args._run(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except ImportError as e:
        print(f"pitwatch {args.command}: {missing_extra(e)}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, StoreError) as e:
        print(printable(f"pitwatch {args.command}: {first_line(str(e))}"), file=sys.stderr)
        return 2
    return code


def first_line(message: str) -> str:
    """An error in one line: a store's message can run to a stack of its own."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    return lines[0] if lines else message


if __name__ == "__main__":
    sys.exit(main())
