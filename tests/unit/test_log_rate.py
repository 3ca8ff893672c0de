"""Repeated log lines while a dependency is away: "while the broker is away the worker
logs one line per distinct error per interval with a count of suppressed repeats"."""

from __future__ import annotations

import logging

import pytest

from pitwatch.processors.log_rate import RepeatLimit, limit_repeats


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def logged() -> tuple[logging.Logger, _Lines, list[float]]:
    now = [0.0]
    handler = _Lines()
    handler.addFilter(RepeatLimit(30.0, clock=lambda: now[0]))
    logger = logging.getLogger("test.log_rate")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, handler, now


def test_an_outage_is_one_line_an_interval_with_the_count_held(
        logged: tuple[logging.Logger, _Lines, list[float]]) -> None:
    logger, handler, now = logged
    for i in range(150 * 60):  # a minute at 150 lines a second
        now[0] = i / 150
        logger.error("Unable connect to node with id %s: %s", 1, "ECONNREFUSED")
    assert handler.lines == [
        "Unable connect to node with id 1: ECONNREFUSED",
        "Unable connect to node with id 1: ECONNREFUSED (4499 more like this in the last "
        "30 s)",
    ]


def test_distinct_messages_and_levels_each_get_their_line(
        logged: tuple[logging.Logger, _Lines, list[float]]) -> None:
    logger, handler, _ = logged
    for _ in range(3):
        logger.error("Connection lost: %s", "x")
        logger.warning("Connection lost: %s", "x")
        logger.error("Bootstrap not ready; waiting %.2f secs", 1.5)
        logger.info("info lines are not held")
    assert handler.lines == ["Connection lost: x", "Connection lost: x",
                             "Bootstrap not ready; waiting 1.50 secs",
                             "info lines are not held"] + ["info lines are not held"] * 2


def test_arguments_that_change_do_not_make_a_message_new(
        logged: tuple[logging.Logger, _Lines, list[float]]) -> None:
    logger, handler, now = logged
    for wait in (0.09, 0.32, 1.69, 7.57):
        logger.warning("Bootstrap not ready; waiting %s secs", wait)
    now[0] = 31.0
    logger.warning("Bootstrap not ready; waiting %s secs", 29.26)
    assert handler.lines == ["Bootstrap not ready; waiting 0.09 secs",
                             "Bootstrap not ready; waiting 29.26 secs (3 more like this in "
                             "the last 31 s)"]


def test_one_record_on_two_handlers_is_decided_once() -> None:
    root = logging.getLogger("test.log_rate.two")
    a, b = _Lines(), _Lines()
    root.handlers[:] = [a, b]
    root.propagate = False
    limit = limit_repeats(root)
    assert limit_repeats(root) is limit and a.filters == [limit] == b.filters
    root.error("broker away")
    root.error("broker away")
    assert a.lines == b.lines == ["broker away"]


def test_an_escaped_message_is_escaped_once(
        logged: tuple[logging.Logger, _Lines, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A device's bytes in a held line stay escaped once (pitwatch.terminal)."""
    from pitwatch import terminal

    monkeypatch.setattr(logging, "_logRecordFactory", logging.LogRecord)
    terminal.escape_logs()
    logger, handler, now = logged
    logger.warning("dead letter: %s", "bad\x1b[2Jdevice")
    now[0] = 31.0
    logger.warning("dead letter: %s", "bad\x1b[2Jdevice")
    logger.warning("dead letter: %s", "bad\x1b[2Jdevice")
    now[0] = 62.0
    logger.warning("dead letter: %s", "bad\x1b[2Jdevice")
    once = terminal.printable("dead letter: bad\x1b[2Jdevice")
    assert "\x1b" not in once
    assert handler.lines == [once, once, f"{once} (1 more like this in the last 31 s)"]



def test_pitwatchs_own_lines_about_different_tables_each_get_their_line() -> None:
    """A snapshot dropped for one table must not hide the next table's: pitwatch's own
    lines are told apart by their text, a client's by its template."""
    handler = _Lines()
    handler.addFilter(RepeatLimit(30.0, clock=lambda: 0.0))
    own, client = logging.getLogger("pitwatch.test_own"), logging.getLogger("test.client")
    for logger in (own, client):
        logger.handlers[:] = [handler]
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
    for table in ("AC-SW-02", "AC-BJ-01", "AC-SW-02"):
        own.warning("snapshot of table %s dropped (%s)", table, "bad bytes")
        client.warning("Unable connect to node with id %s", table)
    assert handler.lines == ["snapshot of table AC-SW-02 dropped (bad bytes)",
                             "Unable connect to node with id AC-SW-02",
                             "snapshot of table AC-BJ-01 dropped (bad bytes)"]
