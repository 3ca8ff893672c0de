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
