"""pytest with pitwatch.events._native loaded from the build PITWATCH_NATIVE names (the
sanitizer's, tests/fuzz/sanitize.sh): `python tests/fuzz/run_tests.py PYTEST_ARGS...`."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest


def main() -> int:
    path = os.environ["PITWATCH_NATIVE"]
    spec = importlib.util.spec_from_file_location("pitwatch.events._native", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["pitwatch.events._native"] = mod
    from pitwatch.events import native

    assert native._native is mod, "pitwatch.events.native imported before the build"
    return int(pytest.main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
