"""Health and Prometheus metrics on the worker's web port (`--web-port`):

    GET /health    200 "ok" while the worker audits; each loss of events it noticed
                   follows as a line "lost: ..." (still 200: the audit goes on, the
                   tables were told); 503 "refusing: ..." with the reason and the steps
                   when it has stopped auditing (the topic's partitions changed)
    GET /metrics   Prometheus text: lag per partition (against the last stable offset),
                   events and alerts (totals and per second), dead letters, engine
                   errors, snapshots, open rounds, events lost, refusal, partitions,
                   sink batch age
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pitwatch.engine.errors import EngineError

    from .settings import Settings
    from .state import TableStates


def sink_heartbeat_file(settings: Settings) -> Path:
    """Where the sink writes the time of its last batch landed in ClickHouse."""
    return Path(settings.data_dir) / "sink-last-batch"


class Metrics:
    def __init__(self, app: Any, states: TableStates, settings: Settings) -> None:
        self.app = app
        self.states = states
        self.settings = settings
        self.started = time.monotonic()
        self.events = 0
        self.alerts = 0
        self.dead_letters = 0
        self.engine_errors = 0
        #: offsets deleted before the audit read them, and each loss's line
        self.lost_offsets = 0
        self.loss_count = 0
        self.losses: list[str] = []
        #: why the worker stopped auditing (None while it audits)
        self.refusal: str | None = None
        #: the events topic's partition count, as Kafka last said
        self.partitions: int | None = None
        self._last: tuple[float, int, int] = (self.started, 0, 0)

    def engine_error(self, _e: EngineError) -> None:
        """An auditor's engine error (logged by the engine): counted."""
        self.engine_errors += 1

    def lost(self, where: str, offsets: int) -> None:
        """A loss of events, noticed: counted and kept for /health."""
        self.lost_offsets += offsets
        self.loss_count += 1
        self.losses.append(where)
        del self.losses[:-20]  # the latest: /health stays short

    def health(self) -> tuple[int, str]:
        """The status and text of /health."""
        if self.refusal is not None:
            return 503, f"refusing: {self.refusal}\n"
        return 200, "ok\n" + "".join(f"lost: {w}\n" for w in self.losses)

    def _rates(self) -> tuple[float, float]:
        now = time.monotonic()
        t0, e0, a0 = self._last
        dt = max(now - t0, 1e-9)
        self._last = (now, self.events, self.alerts)
        return (self.events - e0) / dt, (self.alerts - a0) / dt

    def sink_batch_age(self) -> float | None:
        try:
            return max(time.time() - float(sink_heartbeat_file(self.settings).read_text()), 0.0)
        except (OSError, ValueError):
            return None

    def render(self, next_to_read: Callable[[Any], int]) -> str:
        """The metrics; `next_to_read(tp)`: the offset the audit reads next on a
        partition (after its last read, else the group's committed offset; -1 when
        unknown)."""
        from faust.types import TP

        ev_rate, al_rate = self._rates()
        lines = [
            "# HELP pitwatch_events_total Messages read from the events topic.",
            "# TYPE pitwatch_events_total counter",
            f"pitwatch_events_total {self.events}",
            "# HELP pitwatch_events_per_second Events read per second since the last scrape.",
            "# TYPE pitwatch_events_per_second gauge",
            f"pitwatch_events_per_second {ev_rate:.3f}",
            "# HELP pitwatch_alerts_total Violations sent to the alerts topic.",
            "# TYPE pitwatch_alerts_total counter",
            f"pitwatch_alerts_total {self.alerts}",
            "# HELP pitwatch_alerts_per_second Alerts sent per second since the last scrape.",
            "# TYPE pitwatch_alerts_per_second gauge",
            f"pitwatch_alerts_per_second {al_rate:.3f}",
            "# HELP pitwatch_dead_letters_total Messages sent to the dead-letter topic.",
            "# TYPE pitwatch_dead_letters_total counter",
            f"pitwatch_dead_letters_total {self.dead_letters}",
            "# HELP pitwatch_engine_errors_total Exceptions in the engine's checks or fold "
            "(bugs in pitwatch, not findings; each logged with its event).",
            "# TYPE pitwatch_engine_errors_total counter",
            f"pitwatch_engine_errors_total {self.engine_errors}",
            "# HELP pitwatch_snapshots_total Table snapshots written.",
            "# TYPE pitwatch_snapshots_total counter",
            f"pitwatch_snapshots_total {self.states.snapshots}",
            "# HELP pitwatch_open_rounds Rounds open in this worker's tables.",
            "# TYPE pitwatch_open_rounds gauge",
            f"pitwatch_open_rounds {self.states.open_rounds()}",
            "# HELP pitwatch_events_lost_total Offsets of the events topic Kafka deleted "
            "before the audit read them.",
            "# TYPE pitwatch_events_lost_total counter",
            f"pitwatch_events_lost_total {self.lost_offsets}",
            "# HELP pitwatch_losses_total Stretches of lost events noticed.",
            "# TYPE pitwatch_losses_total counter",
            f"pitwatch_losses_total {self.loss_count}",
            "# HELP pitwatch_refusing 1 when the worker has stopped auditing (see /health).",
            "# TYPE pitwatch_refusing gauge",
            f"pitwatch_refusing {int(self.refusal is not None)}",
            "# HELP pitwatch_events_partitions The events topic's partitions, as Kafka "
            "last said.",
            "# TYPE pitwatch_events_partitions gauge",
            *([] if self.partitions is None
              else [f"pitwatch_events_partitions {self.partitions}"]),
            "# HELP pitwatch_lag Committed messages not yet read, per partition of the "
            "events topic.",
            "# TYPE pitwatch_lag gauge",
        ]
        try:
            assigned = sorted((tp.topic, tp.partition) for tp in self.app.consumer.assignment()
                              if tp.topic == self.settings.events_topic)
        except Exception:  # not started yet
            assigned = []
        for topic, partition in assigned:
            try:
                hw = self.app.consumer.highwater(TP(topic, partition))
            except Exception:  # revoked, or not fetched yet
                continue
            nxt = max(next_to_read(TP(topic, partition)), 0)
            if hw is not None:
                lines.append(f'pitwatch_lag{{topic="{topic}",partition="{partition}"}} '
                             f"{max(hw - nxt, 0)}")
        age = self.sink_batch_age()
        lines += ["# HELP pitwatch_sink_batch_age_seconds Seconds since the sink last "
                  "landed a batch in ClickHouse.",
                  "# TYPE pitwatch_sink_batch_age_seconds gauge"]
        if age is not None:
            lines.append(f"pitwatch_sink_batch_age_seconds {age:.3f}")
        return "\n".join(lines) + "\n"

    def install(self, next_to_read: Callable[[Any], int]) -> None:
        if self.settings.web_port <= 0:
            return

        async def metrics(web: Any, request: Any) -> Any:
            return web.text(self.render(next_to_read),
                            content_type="text/plain; version=0.0.4")

        async def health(web: Any, request: Any) -> Any:
            status, text = self.health()
            return web.text(text, status=status)

        self.app.page("/metrics")(metrics)
        self.app.page("/health")(health)
