"""Restarts: the back-off between a worker's (or the sink's) restarts in a row."""

from __future__ import annotations

import pytest

from pitwatch.processors import supervise


def test_restarts_in_a_row_wait_on_a_known_schedule_up_to_the_cap() -> None:
    """"the worker's self-restart (`execv`) gets an exponential back-off with a cap and
    jitter-free determinism (deterministic schedule)\""""
    b = supervise.Backoff(1.0, 60.0, 300.0)
    waits, in_a_row = [], 0
    for _ in range(9):
        n, wait = b.next(in_a_row, ran_s=2.0)  # each died two seconds after its start
        waits.append(wait)
        in_a_row = n + 1
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]
    assert b.next(in_a_row, ran_s=299.0) == (9, 60.0)  # still a crash loop
    assert b.next(in_a_row, ran_s=300.0) == (0, 1.0)  # it ran well: a new row
    assert b.next(10_000, ran_s=0.0) == (10_000, 60.0)  # no overflow past the cap


def test_the_count_in_a_row_passes_from_one_process_to_the_next() -> None:
    env = {supervise.RESTARTS_ENV: "3"}
    assert supervise.restart_plan(env, ran_s=5.0) == (3, 8.0)
    assert supervise.restart_plan({}, ran_s=5.0) == (0, 1.0)
    assert supervise.restart_plan({supervise.RESTARTS_ENV: "x"}, ran_s=5.0) == (0, 1.0)
    assert supervise.restart_plan(env, ran_s=1000.0) == (0, 1.0)


def test_a_restart_waits_its_back_off_says_so_and_hands_the_count_on(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    execs: list[tuple[str, list[str], dict[str, str]]] = []
    slept: list[float] = []
    monkeypatch.setattr(supervise.os, "execve", lambda p, a, e: execs.append((p, a, e)))
    monkeypatch.setattr(supervise.os, "environ", {supervise.RESTARTS_ENV: "2"})
    monkeypatch.setattr(supervise, "_STARTED", 0.0)
    monkeypatch.setattr(supervise.time, "monotonic", lambda: 10.0)
    monkeypatch.setattr(supervise, "_sink", None)
    monkeypatch.setattr(supervise, "_stop", supervise.threading.Event())
    with caplog.at_level("ERROR", logger="pitwatch.worker"):
        supervise.restart_self(sleep=slept.append)
    assert slept == [4.0]
    assert "restarting the worker in 4.0 s (restart 3 in a row" in caplog.text
    assert execs[0][2][supervise.RESTARTS_ENV] == "3"
    assert execs[0][1][1:3] == ["-m", "pitwatch.cli"]


def test_the_sink_restarts_with_the_same_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [supervise.SINK_BACKOFF.next(n, 1.0)[1] for n in range(7)] == \
        [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert supervise.SINK_BACKOFF.next(6, 61.0) == (0, 0.5)
