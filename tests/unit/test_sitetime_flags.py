"""The site's time is taken the same way by every command that uses it: `pitwatch serve`
and `pitwatch protect` both take --tz, --gaming-day-start and --shifts
(pitwatch.sitetime: `add_site_flags`, `site_from_flags`), with SiteTime's defaults, and
refuse one they cannot use with a reason naming it, before they open anything."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import time
from pathlib import Path

import pytest

from pitwatch.cli import main
from pitwatch.console.serve import command as serve
from pitwatch.protect.cli import PROTECT
from pitwatch.sitetime import SiteTime, add_site_flags, site_from_flags

FLAGS = ("--tz", "--gaming-day-start", "--shifts")


def _parser(configure: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    configure(p)
    return p


def test_both_commands_take_the_same_site_flags_with_sitetimes_defaults() -> None:
    """serve and protect: the same three flags, their defaults SiteTime(); the same
    values give the same site."""
    given = ["--tz", "America/New_York", "--gaming-day-start", "07:00",
             "--shifts", "15:00,07:00,23:00"]
    for configure in (serve.configure, PROTECT.configure):
        p = _parser(configure)
        assert site_from_flags(p.parse_args([])) == SiteTime()
        site = site_from_flags(p.parse_args(given))
        assert site == SiteTime.make("America/New_York", "07:00", "15:00,07:00,23:00")
        assert site.shifts == (time(7), time(15), time(23))
        helps = {a.option_strings[0]: a.help for a in p._actions
                 if a.option_strings and a.option_strings[0] in FLAGS}
        assert list(helps) == list(FLAGS) and all(helps.values())


@pytest.mark.parametrize(("flags", "reason"), [
    (["--tz", "Mars/Base"], "unknown time zone 'Mars/Base'"),
    (["--gaming-day-start", "6am"], "the gaming day's start: expected HH:MM"),
    (["--shifts", "06:00,2pm"], "the shifts: expected HH:MM"),
    (["--shifts", "07:00"], "the first shift must start with the gaming day"),
])
def test_a_site_it_cannot_use_is_an_error_naming_the_part(flags: list[str],
                                                          reason: str) -> None:
    p = argparse.ArgumentParser()
    add_site_flags(p, "a test")
    with pytest.raises(ValueError, match=reason):
        site_from_flags(p.parse_args(flags))


def test_serve_refuses_a_bad_site_before_it_opens_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A wrong --tz is exit 2 and its reason; the store directory is not made."""
    data = tmp_path / "data"
    assert main(["serve", "--data", str(data), "--tz", "Mars/Base"]) == 2
    assert "pitwatch serve: unknown time zone 'Mars/Base'" in capsys.readouterr().err
    assert not data.exists()
