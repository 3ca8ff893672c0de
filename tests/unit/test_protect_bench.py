"""bench/protection.py runs end to end (--quick: a smoke test, not a measurement)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "protection.py"


def test_quick_bench_prints_every_target(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_protection", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_protection"] = module
    spec.loader.exec_module(module)
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("[PASS]") + out.count("[FAIL]") == 4
    assert "counter-8 (counter table, 300 rounds)" in out
    assert "holecard (hole table, 100 rounds)" in out
