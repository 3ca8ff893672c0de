"""The frozen-worker check: a gap between ticks longer than the session means the
process was stopped (SIGSTOP, a paused VM) and its partitions have moved on."""

from __future__ import annotations

import pytest

from processors import supervise


def test_a_gap_longer_than_the_session_is_a_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(supervise.time, "monotonic", lambda: now[0])
    f = supervise.Frozen(10.0)
    now[0] = 500.0
    assert f.tick() is None  # the first tick: a slow start-up is no freeze
    now[0] += 1.0
    assert f.tick() is None
    now[0] += 10.0
    assert f.tick() is None  # exactly the session: not yet
    now[0] += 10.5
    assert f.tick() == 10.5


def test_a_partition_with_messages_waiting_and_no_reads_is_stalled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(supervise.time, "monotonic", lambda: now[0])
    s = supervise.Stalled(20.0)
    assert s.check("p0", 99, 100) is None  # caught up: nothing to read
    assert s.check("p0", 99, 150) is None  # messages waiting: the clock starts
    now[0] = 15.0
    assert s.check("p0", 120, 150) is None  # it moved: the clock starts again
    now[0] = 35.0
    assert s.check("p0", 120, 150) is None  # 20 s: not over
    now[0] = 36.0
    assert s.check("p0", 120, 150) == 21.0
    assert s.check("p0", 149, 150) is None  # caught up again
