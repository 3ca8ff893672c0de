"""The PITWATCH_* settings the docs name are the ones the code reads (issue 38: "The
documented settings equal the settings read").

Documented: README.md, docs/*.md, deploy/README.md and every command's --help. A name
mentioned anywhere else in the code's own text (a docstring, a comment, a message) must
be read too. Read: a name the core or a stage looks up in the environment (a string
constant equal to the name, or a name built at run time, recorded as it is asked for),
a name the deploy and CI scripts expand, or a test's own switch."""

from __future__ import annotations

import argparse
import ast
import contextlib
import itertools
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the core and the stages: what a user runs
PACKAGES = ("pitwatch", "processors", "producers", "replay", "console")
#: a name, or a family of them written with braces (PITWATCH_KAFKA_{USER,PASSWORD})
MENTION = re.compile(r"PITWATCH_[A-Z0-9_]*(?:\{[A-Z0-9_,]+\}[A-Z0-9_]*)*")
NAME = re.compile(r"PITWATCH_[A-Z0-9_]*[A-Z0-9]")
#: a shell or compose expansion: $PITWATCH_X, ${PITWATCH_X:-default}
SHELL_READ = re.compile(r"(?<!\$)\$\{?(PITWATCH_[A-Z0-9_]*[A-Z0-9])")
#: a name a script builds and reads indirectly: "PITWATCH_KAFKA_${role}_USER"
SHELL_TEMPLATE = re.compile(r"PITWATCH_[A-Z0-9_]*\$\{?[A-Za-z_]+\}?[A-Z0-9_]*[A-Z0-9]")
#: a test's own switch: os.environ.get("PITWATCH_X"), os.getenv("PITWATCH_X")
TEST_READ = re.compile(r"(?:environ\.get|getenv)\(\s*[\"'](PITWATCH_[A-Z0-9_]*[A-Z0-9])")
#: the worker's description: which flags the environment does not set
WORKER_RULE = re.compile(r"Every flag but (.+?) can also be set in the environment as\s+"
                         r"PITWATCH_<FLAG>", re.S)


def mentioned(text: str) -> set[str]:
    """The names `text` mentions, families expanded; a bare prefix (PITWATCH_<FLAG>,
    PITWATCH_KAFKA_*) names no setting."""
    out: set[str] = set()
    for m in MENTION.finditer(text):
        parts = re.split(r"\{([A-Z0-9_,]+)\}", m.group())
        choices = [p.split(",") if i % 2 else [p] for i, p in enumerate(parts)]
        out.update(n for n in map("".join, itertools.product(*choices)) if NAME.fullmatch(n))
    return out


def package_sources() -> Iterator[Path]:
    for pkg in PACKAGES:
        yield from sorted((ROOT / pkg).rglob("*.py"))


def constants_read() -> set[str]:
    """Every string constant of the core and the stages that is a whole name."""
    out: set[str] = set()
    for path in package_sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and NAME.fullmatch(node.value):
                out.add(node.value)
    return out


class Asked(Mapping[str, str]):
    """The environment, remembering every PITWATCH_* name looked up in it."""

    def __init__(self, real: Mapping[str, str], **given: str) -> None:
        self.real = {k: v for k, v in real.items() if not k.startswith("PITWATCH_")}
        self.real.update(given)
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        if key.startswith("PITWATCH_"):
            self.asked.add(key)
        return self.real[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.real)

    def __len__(self) -> int:
        return len(self.real)


def every_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    from pitwatch.cli import build_parser, builtin_commands, stage_commands

    parser = build_parser(builtin_commands() + stage_commands())
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, dict(subs.choices)


@pytest.fixture(scope="module")
def asked_at_run_time() -> set[str]:
    """The names built at run time: each command's flags' defaults (the worker's come
    from PITWATCH_<FLAG>) and the connections' settings, as they are looked up."""
    from pitwatch.connect import ClickHouseAuth, ConnectionConfigError, KafkaAuth

    every_parser()  # imported once before, so that no import runs with `Asked`
    env = Asked(os.environ)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "environ", env)
        every_parser()
    # with users set, so that each connection asks for everything it may read
    users = Asked(os.environ, PITWATCH_SINK_KAFKA_USER="s")
    for ask in (KafkaAuth.sink_from_env, ClickHouseAuth.from_env):
        with contextlib.suppress(ConnectionConfigError):  # no passwords given
            ask(users)
    return env.asked | users.asked


@pytest.fixture(scope="module")
def help_text() -> str:
    parser, subs = every_parser()
    return "\n".join([parser.format_help()] + [p.format_help() for p in subs.values()])


def docs_text() -> str:
    paths = [ROOT / "README.md", ROOT / "deploy" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(p.read_text(encoding="utf-8") for p in paths)


def worker_flag_names() -> tuple[dict[str, str], set[str]]:
    """The worker's flags and the PITWATCH_<FLAG> each names, and the flags its
    description says the environment does not set."""
    _, subs = every_parser()
    worker = subs["worker"]
    flags = {s: "PITWATCH_" + s.lstrip("-").upper().replace("-", "_")
             for a in worker._actions for s in a.option_strings
             if s.startswith("--") and s != "--help"}
    rule = WORKER_RULE.search(worker.description or "")
    assert rule, "the worker's description says how its flags are set from the environment"
    return flags, set(re.findall(r"--[a-z-]+", rule.group(1)))


def read_by_scripts() -> set[str]:
    """The names the deploy and CI scripts expand (compose's $$ is the container's own
    shell, not a setting)."""
    ops = [ROOT / "deploy" / "docker-compose.yml", ROOT / "Makefile", ROOT / ".ci" / "run",
           *sorted((ROOT / "deploy").glob("*.sh")), *sorted((ROOT / "scripts").glob("*"))]
    scripts = "\n".join(p.read_text(encoding="utf-8") for p in ops if p.is_file())
    return set(SHELL_READ.findall(scripts))


@pytest.fixture(scope="module")
def read(asked_at_run_time: set[str]) -> set[str]:
    """Every name some part of the project reads."""
    tests = {n for p in sorted((ROOT / "tests").rglob("*.py"))
             for n in TEST_READ.findall(p.read_text(encoding="utf-8"))}
    return constants_read() | asked_at_run_time | read_by_scripts() | tests


@pytest.fixture(scope="module")
def built_by_scripts() -> list[re.Pattern[str]]:
    """The names the scripts build from a variable, as patterns."""
    ops = [*sorted((ROOT / "deploy").glob("*.sh")), *sorted((ROOT / "scripts").glob("*"))]
    templates = {t for p in ops if p.is_file()
                 for t in SHELL_TEMPLATE.findall(p.read_text(encoding="utf-8"))}
    return [re.compile(re.sub(r"\\\$\\\{?[A-Za-z_]+\\\}?", "[A-Z0-9]+", re.escape(t)))
            for t in sorted(templates)]


@pytest.fixture(scope="module")
def documented(help_text: str) -> set[str]:
    flags, not_set = worker_flag_names()
    by_rule = {name for flag, name in flags.items() if flag not in not_set}
    return mentioned(docs_text()) | mentioned(help_text) | by_rule


def test_every_documented_name_is_read(documented: set[str], read: set[str],
                                       built_by_scripts: list[re.Pattern[str]]) -> None:
    """A setting the docs or a --help name that nothing reads would be set for nothing."""
    unread = [n for n in sorted(documented - read)
              if not any(t.fullmatch(n) for t in built_by_scripts)]
    assert unread == []


def test_every_name_the_code_mentions_is_read(read: set[str]) -> None:
    """A docstring, comment or message naming a setting names one that is read (one
    that said PITWATCH_ROUND_TIMEOUT_S, which nothing read, sent a reader astray)."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in package_sources())
    assert sorted(mentioned(text) - read) == []


def test_every_name_the_code_reads_is_documented(documented: set[str],
                                                 asked_at_run_time: set[str]) -> None:
    """A setting the core or a stage reads is in the docs or a --help."""
    code = constants_read() | asked_at_run_time
    assert sorted(code - documented) == []


def test_every_name_the_scripts_read_is_documented(documented: set[str]) -> None:
    """A setting of the deploy and CI scripts is in the docs (deploy/README.md's table)."""
    assert sorted(read_by_scripts() - documented) == []


def test_the_worker_reads_each_flag_its_help_says_the_environment_sets(
        asked_at_run_time: set[str]) -> None:
    """`pitwatch worker --help`: "Every flag but ... can also be set in the environment
    as PITWATCH_<FLAG>"; and the flags it names as the exceptions are not read."""
    flags, not_set = worker_flag_names()
    code = constants_read() | asked_at_run_time
    assert sorted(f for f, n in flags.items() if f not in not_set and n not in code) == []
    assert sorted(f for f in not_set if flags.get(f) in code) == []
    assert not_set <= set(flags)


def test_mentioned_expands_families_and_skips_prefixes() -> None:
    assert mentioned("PITWATCH_A_{B,C}_D and PITWATCH_<FLAG>, PITWATCH_KAFKA_*") == {
        "PITWATCH_A_B_D", "PITWATCH_A_C_D"}
