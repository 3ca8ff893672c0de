"""bench/protection.py runs end to end (--quick: a smoke test, not a measurement)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "protection.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_protection", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_protection"] = module
    spec.loader.exec_module(module)
    return module


def test_quick_bench_prints_every_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main(["--quick", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("[PASS]") + out.count("[FAIL]") == 4
    assert "counter-8 (counter table, 300 rounds)" in out
    assert "holecard (hole table, 100 rounds)" in out
    assert "95% CI 34.24-100.00% over 2 tables" in out  # by table, not by session


def test_a_share_over_correlated_sessions_is_as_wide_as_its_tables_allow() -> None:
    """"Sessions at one table share its shoe, its dealer and (flashing) its flashed
    rounds, so they are correlated: each share's 95% interval is taken over tables"."""
    clustered = _bench().clustered
    # the four sessions of a table flagged together: no more known than from the tables
    together = [(4, 4)] * 50 + [(4, 0)] * 50
    lo, hi, deff = clustered(together)
    assert deff == pytest.approx(4.0, rel=0.05)
    tables_lo, tables_hi, _ = clustered([(1, 1)] * 50 + [(1, 0)] * 50)
    assert (lo, hi) == pytest.approx((tables_lo, tables_hi), abs=0.01)
    # flags spread one a table: as good as independent sessions
    spread = [(4, 1)] * 100
    assert clustered(spread)[2] == pytest.approx(1.0)
    # none flagged: as if each table's sessions were one
    assert clustered([(7, 0)] * 10)[2] == 7.0
