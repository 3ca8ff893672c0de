"""Repeated log lines, rate-limited: while a dependency is away (Kafka, ClickHouse)
its clients log the same failure many times a second. A `RepeatLimit` on the log's
handlers lets the first line of each distinct message through, holds its repeats for
`interval_s`, and then lets the next one through with the count of those it held.

A client's message (Kafka's, Faust's, the ClickHouse driver's) is distinct by its
logger, its level and its template (`record.msg`, before the arguments are put in):
"Unable connect to node %s: %s" is one message whatever node or error it names, so a
client cycling through brokers or back-off times still logs one line an interval.
pitwatch's own lines (loggers `pitwatch.*`) are distinct by their text: each names the
table, device or event it is about, and the snapshot dropped for one table must not
hide the next table's. Lines below WARNING are not held."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

#: the loggers whose lines are told apart by their text, not their template
OWN = "pitwatch"
#: the seconds over which repeats of one message are held
INTERVAL_S = 30.0
#: distinct messages remembered; past it the oldest are forgotten (a bound on memory)
MAX_KEYS = 1000


class RepeatLimit(logging.Filter):
    def __init__(self, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.clock = clock
        #: (logger, level, template) -> (when its last line went through, repeats held)
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        decided = getattr(record, "_repeat_limit", None)
        if decided is not None:  # one record, several handlers: one decision
            return bool(decided)
        passed = self._decide(record)
        record._repeat_limit = passed
        return passed

    def _decide(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        own = record.name == OWN or record.name.startswith(OWN + ".")
        key = (record.name, record.levelno,
               logging.LogRecord.getMessage(record) if own else str(record.msg))
        now = self.clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen[0] < self.interval_s:
            self._seen[key] = (seen[0], seen[1] + 1)
            return False
        if seen is not None and seen[1]:
            # the arguments are put in first, by LogRecord's own method (a record class
            # that escapes its message, pitwatch.terminal's, escapes it once, when the
            # line is written): the count is text, never a placeholder
            record.msg = (f"{logging.LogRecord.getMessage(record)} ({seen[1]} more like "
                          f"this in the last {now - seen[0]:.0f} s)")
            record.args = None
        self._seen.pop(key, None)
        self._seen[key] = (now, 0)
        if len(self._seen) > MAX_KEYS:
            del self._seen[next(iter(self._seen))]
        return True


def limit_repeats(logger: logging.Logger, interval_s: float = INTERVAL_S) -> RepeatLimit:
    """One `RepeatLimit` on each handler of `logger` (the root logger's, after Faust has
    set its own up): returns it."""
    limit = next((f for h in logger.handlers for f in h.filters
                  if isinstance(f, RepeatLimit)), None) or RepeatLimit(interval_s)
    for handler in logger.handlers:
        if limit not in handler.filters:
            handler.addFilter(limit)
    return limit
