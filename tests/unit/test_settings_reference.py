"""docs/settings.md is what the settings' tables write, and names every PITWATCH_*
variable the code reads exactly once (issue 38: "One table of settings (name, flag,
environment variable, type, default, help) generates the flags, reads the environment,
and writes the reference in the docs"); and the worker's flags read the environment
typed, a bad value refused naming its variable."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from pitwatch.processors.settings import (
    SETTINGS,
    SettingError,
    Settings,
    add_flags,
    settings_from_args,
)

from .test_settings_documented import NAME, asked_at_run_time, constants_read

ROOT = Path(__file__).resolve().parents[2]
__all__ = ["asked_at_run_time"]  # the fixture, shared


def reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "settings_reference", ROOT / "scripts" / "settings_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_what_the_tables_write() -> None:
    """docs/settings.md differs: run `.venv/bin/python scripts/settings_reference.py
    --write` and commit it."""
    committed = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert committed == reference().markdown()


def test_the_reference_names_every_variable_read_once(asked_at_run_time: set[str]) -> None:
    """Every PITWATCH_* name the core and the stages read is in docs/settings.md, once;
    and it names nothing else."""
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    counts = Counter(m.group() for m in re.finditer(r"PITWATCH_[A-Z0-9_]*[A-Z0-9]", text)
                     if NAME.fullmatch(m.group()))
    read = constants_read() | asked_at_run_time
    assert sorted(set(counts) ^ read) == []
    assert {n: c for n, c in counts.items() if c != 1} == {}


def parse(env: dict[str, str], *argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_flags(p, env)
    return p.parse_args(list(argv))


def test_a_variable_sets_its_flags_default_typed_and_a_flag_wins() -> None:
    args = parse({"PITWATCH_ROUND_TIMEOUT": "30", "PITWATCH_WEB_PORT": "0",
                  "PITWATCH_CLICKHOUSE": "a:1,[::1]:2"}, "--web-port", "7000")
    settings = settings_from_args(args)
    assert settings.round_timeout_s == 30.0 and isinstance(settings.round_timeout_s, float)
    assert settings.web_port == 7000
    assert (settings.clickhouse_host, settings.clickhouse_port) == ("a", 1)
    assert settings.clickhouse_alt_hosts == (("::1", 2),)


def test_a_bad_variable_is_refused_naming_it_unless_its_flag_is_given() -> None:
    env = {"PITWATCH_WEB_PORT": "66x"}
    with pytest.raises(SettingError, match=r"PITWATCH_WEB_PORT='66x': not a whole number"):
        settings_from_args(parse(env))
    assert settings_from_args(parse(env, "--web-port", "1")).web_port == 1
    with pytest.raises(SettingError, match=r"PITWATCH_CLICKHOUSE='a:b'"):
        settings_from_args(parse({"PITWATCH_CLICKHOUSE": "a:b"}))


def test_a_bad_flag_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse({}, "--round-timeout", "soon")
    assert "argument --round-timeout: 'soon': not a number" in capsys.readouterr().err


def test_a_switch_is_the_command_lines_alone() -> None:
    """`pitwatch worker --help`: "Every flag but --no-sink and --require-signatures can
    also be set in the environment"."""
    assert [s.flag for s in SETTINGS if s.env is None] == ["--no-sink",
                                                           "--require-signatures"]
    args = parse({"PITWATCH_NO_SINK": "1", "PITWATCH_REQUIRE_SIGNATURES": "1"})
    settings = settings_from_args(args)
    assert settings.sink and not settings.require_signatures
    assert not settings_from_args(parse({}, "--no-sink")).sink


def test_the_defaults_are_the_tables_and_the_topics_carry_the_prefix() -> None:
    settings = settings_from_args(parse({"PITWATCH_TOPIC_PREFIX": "t-"}))
    assert settings == Settings(topic_prefix="t-").with_prefix("t-")
    assert settings.events_topic.startswith("t-")
