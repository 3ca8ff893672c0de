"""Engine errors: an exception a check (or the fold) raised that is not `Undecidable`.

That is a bug in the engine, not a finding about the table: it is never a violation.
The auditor counts it, logs it with the event (stdlib `logging`, logger
``pitwatch.engine``), hands it to its `on_engine_error` callback, and goes on with the
stream: the failing check says nothing about that event, the other checks still judge
it, and the event is folded into the round as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..events.model import Event

log = logging.getLogger("pitwatch.engine")

#: Where an engine error happened when it was not in a check.
FOLD = "fold"


@dataclass(frozen=True, slots=True)
class EngineError:
    table_id: str
    round_id: str
    event_id: str
    event_type: str
    device_id: str
    seq: int
    ts: int
    where: str  # "<code> <module.check>" for a check, FOLD for the round's fold
    error: str  # the exception's type and message
    pack: str
    pack_version: str

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}

    def __str__(self) -> str:
        return (f"engine error in {self.where} on {self.event_type} {self.event_id} "
                f"({self.device_id} seq {self.seq}, table {self.table_id}, round "
                f"{self.round_id or '-'}, {self.pack}@{self.pack_version}): {self.error}")


EngineErrorSink = Callable[[EngineError], None]


def engine_error(ev: Event, where: str, exc: BaseException, pack: str,
                 pack_version: str) -> EngineError:
    """The report of `exc`, raised in `where` on `ev`; logged with the event."""
    e = EngineError(ev.table_id, ev.round_id or "", ev.event_id, ev.type, ev.device_id,
                    ev.seq, ev.ts, where, f"{type(exc).__name__}: {exc}", pack, pack_version)
    log.error("%s", e, exc_info=exc, extra={"pitwatch_event": ev})
    return e
