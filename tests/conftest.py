"""Every test fails on an engine error (an exception from a check or the fold other than
`Undecidable`, see pitwatch/engine/errors.py), unless it asks for the `engine_errors`
fixture, which hands it the errors logged so far to assert on."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pitwatch.engine.errors import log as engine_log


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def _engine_error_capture(request: pytest.FixtureRequest) -> Iterator[list[logging.LogRecord]]:
    capture = _Capture()
    engine_log.addHandler(capture)
    try:
        yield capture.records
    finally:
        engine_log.removeHandler(capture)
    if capture.records and "engine_errors" not in request.fixturenames:
        pytest.fail("engine error(s) during the test: "
                    + "; ".join(r.getMessage() for r in capture.records), pytrace=False)


@pytest.fixture
def engine_errors(_engine_error_capture: list[logging.LogRecord]) -> list[logging.LogRecord]:
    """The engine errors logged during the test (the test then decides what they mean)."""
    return _engine_error_capture
