"""Health and Prometheus metrics on the worker's web port (`--web-port`, served by
processors/web.py from the process's start to its exit):

    GET /health/live   200 "live" while the process answers (a liveness probe: restart
                       it when this fails)
    GET /health/ready  200 "ok" while the worker can audit (processors/health.py: Kafka
                       answers, it holds partitions, with the sink ClickHouse answers and
                       the sink process runs); 503 "not ready: ..." naming each check
                       that fails; 503 "refusing: ..." with the reason and the steps when
                       it has stopped auditing (the topic's partitions changed). Each
                       loss of events it noticed follows as a line "lost: ..." (the
                       audit goes on, the tables were told)
    GET /health        the same as /health/ready
    GET /metrics       Prometheus (prometheus_client, text or OpenMetrics as the scraper
                       asks): counters of events, alerts, dead letters, engine errors,
                       snapshots, offsets lost and losses (rates are the dashboards'
                       job: `rate(pitwatch_events_total[1m])`); gauges of open rounds,
                       refusal, partitions, each readiness check (`pitwatch_up{check}`),
                       the sink's batch age, and the lag per partition; histograms
                       of the seconds from an event's arrival to its alerts
                       acknowledged (`pitwatch_alert_seconds`) and of the sink's
                       inserts per table (`pitwatch_sink_insert_seconds`)

`pitwatch_alert_seconds` starts when the fetch that held the event reached the worker
(one clock, the worker's; the wait in the topic before that is `pitwatch_lag`) and ends
when Kafka acknowledged the alert; violations of the processing-time rule, which no
event raises, are not in it. The sink runs in a process of its own: it rewrites its
metrics to a file in DATA_DIR after each batch (`SinkMetrics`), read at each scrape.

`pitwatch_lag{topic,partition}` is the committed messages not read yet, against each
partition's last stable offset as the broker says it at the scrape. When the broker
does not answer, the lag is unknown and its series are absent (never 0): alert on
`pitwatch_up{check="kafka"} == 0` beside `pitwatch_lag`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from .health import ASK_S, PROBE_S, Probe, Readiness

if TYPE_CHECKING:
    from pitwatch.engine.errors import EngineError

    from .settings import Settings
    from .state import TableStates

#: the offset the audit reads next on a partition (after its last read, else the
#: group's committed offset; -1 when unknown)
NextToRead = Callable[[Any], int]
#: the last stable offset of each partition held, by (topic, partition)
Ends = dict[tuple[str, int], int]


def sink_heartbeat_file(settings: Settings) -> Path:
    """Where the sink writes the time of its last batch landed in ClickHouse."""
    return Path(settings.data_dir) / "sink-last-batch"


#: histogram buckets for seconds-scale alerts and inserts: 10 ms to 5 min
SECONDS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   120.0, 300.0)


def sink_metrics_file(settings: Settings) -> Path:
    """Where the sink writes its metrics (Prometheus text) after each batch."""
    return Path(settings.data_dir) / "sink-metrics.prom"


class SinkMetrics:
    """The sink process's metrics, rewritten to `sink_metrics_file` after each batch
    for the worker's /metrics to read (a restarted sink starts them from 0, as a
    restarted process's counters do)."""

    def __init__(self, settings: Settings) -> None:
        self.file = sink_metrics_file(settings)
        self.registry = CollectorRegistry()
        self.insert_seconds = Histogram(
            "pitwatch_sink_insert_seconds", "Seconds a landed insert into ClickHouse took, "
            "per table (the outages it waited out are not in it).", ["table"],
            buckets=SECONDS_BUCKETS, registry=self.registry)

    def publish(self) -> None:
        """The metrics to the file, replaced whole (a scrape never reads half)."""
        tmp = self.file.with_name(self.file.name + ".tmp")
        tmp.write_bytes(generate_latest(self.registry))
        tmp.replace(self.file)


def sink_families(settings: Settings) -> list[Metric]:
    """The sink's metrics as it last wrote them (none before its first batch)."""
    try:
        text = sink_metrics_file(settings).read_text(encoding="utf-8")
    except OSError:
        return []
    return [f for f in text_string_to_metric_families(text)
            if not f.name.endswith("_created")]


def checks(settings: Settings) -> list[str]:
    """The readiness checks of a worker with these settings."""
    return ["kafka", "partitions", *(["clickhouse", "sink"] if settings.sink else [])]


class Metrics:
    def __init__(self, app: Any, states: TableStates, settings: Settings,
                 readiness: Readiness | None = None) -> None:
        self.app = app
        self.states = states
        self.settings = settings
        self.readiness = readiness or Readiness(checks(settings))
        #: counted where they happen (plain integers: the audit's loop adds to them
        #: per event), read at each scrape
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
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))
        self.alert_seconds = Histogram(
            "pitwatch_alert_seconds", "Seconds from an event's arrival at the worker (the "
            "fetch that held it) to Kafka acknowledging the alert it raised.",
            buckets=SECONDS_BUCKETS, registry=self.registry)
        #: what the scrape under way measures the lag with (one scrape at a time)
        self._scrape: tuple[NextToRead, Ends | None] = (lambda tp: -1, None)
        self._render = threading.Lock()
        #: the app's event loop, from its first round of readiness checks on (None:
        #: the app has not started: Faust connects to Kafka and recovers its tables)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._probe: Probe | None = None
        self._next_to_read: NextToRead = lambda tp: -1

    @property
    def started(self) -> bool:
        """The app runs its timers: its readiness checks have begun."""
        return self.loop is not None

    def alert_acknowledged(self, arrived: float) -> None:
        """Kafka acknowledged an alert of an event that arrived at `arrived`
        (time.monotonic)."""
        self.alert_seconds.observe(time.monotonic() - arrived)

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
        """The status and text of /health/ready (and /health)."""
        if self.refusal is not None:
            return 503, f"refusing: {self.refusal}\n"
        lost = "".join(f"lost: {w}\n" for w in self.losses)
        reasons = self.readiness.reasons()
        if reasons:
            return 503, f"not ready: {'; '.join(reasons)}\n{lost}"
        return 200, f"ok\n{lost}"

    def sink_batch_age(self) -> float | None:
        try:
            return max(time.time() - float(sink_heartbeat_file(self.settings).read_text()), 0.0)
        except (OSError, ValueError):
            return None

    def lag(self, next_to_read: NextToRead, ends: Ends | None) -> dict[tuple[str, int], int]:
        """Messages not read yet per partition held; empty when unknown (`ends` None:
        the broker did not answer)."""
        if ends is None:
            return {}
        from faust.types import TP

        return {(topic, partition): max(end - max(next_to_read(TP(topic, partition)), 0), 0)
                for (topic, partition), end in sorted(ends.items())}

    def render(self, next_to_read: NextToRead, ends: Ends | None,
               accept: str = "") -> tuple[bytes, str]:
        """The metrics as the scraper's Accept header asks, and their content type;
        `ends`: each held partition's last stable offset, None when unknown."""
        encoder, content_type = choose_encoder(accept)
        with self._render:
            self._scrape = (next_to_read, ends)
            return encoder(self.registry), content_type

    def scrape(self, accept: str = "") -> tuple[bytes, str]:
        """/metrics, from the web server's thread: the lag against the broker's end
        offsets asked now on the app's loop (unknown when the broker, or the loop, does
        not answer within ASK_S: a restart's back-off blocks the loop)."""
        ends: Ends | None = None
        loop, probe = self.loop, self._probe
        if loop is not None and probe is not None:
            asked = asyncio.run_coroutine_threadsafe(probe.kafka(), loop)
            try:
                ends = asked.result(ASK_S + 1)
            except Exception:  # no answer in time: the lag is unknown
                asked.cancel()
        return self.render(self._next_to_read, ends, accept)

    def install(self, next_to_read: NextToRead) -> None:
        """The readiness checks on a timer (the first marks the app started); the web
        server (processors/web.py) serves them."""
        from .catch_up import PartitionReader
        from .supervise import sink_alive

        reader = PartitionReader(self.settings.kafka)
        probe = Probe(self.app, self.settings, self.readiness, reader, sink_alive)
        self._probe, self._next_to_read = probe, next_to_read

        async def checks() -> None:
            await probe.run()
            self.loop = asyncio.get_running_loop()

        self.app.timer(interval=PROBE_S)(checks)

        async def close(sender: Any, /, *args: Any, **kwargs: Any) -> None:
            await reader.stop()  # its consumer closed, not left to the garbage collector

        self.app.on_before_shutdown.connect(close)


class _Collector:
    """The worker's metrics, read from `Metrics` at each scrape."""

    def __init__(self, m: Metrics) -> None:
        self.m = m

    def collect(self) -> Iterator[Metric]:
        m = self.m
        yield CounterMetricFamily("pitwatch_events", "Messages read from the events topic.",
                                  value=m.events)
        yield CounterMetricFamily("pitwatch_alerts", "Violations sent to the alerts topic.",
                                  value=m.alerts)
        yield CounterMetricFamily("pitwatch_dead_letters",
                                  "Messages sent to the dead-letter topic.",
                                  value=m.dead_letters)
        yield CounterMetricFamily("pitwatch_engine_errors",
                                  "Exceptions in the engine's checks or fold (bugs in "
                                  "pitwatch, not findings; each logged with its event).",
                                  value=m.engine_errors)
        yield CounterMetricFamily("pitwatch_snapshots", "Table snapshots written.",
                                  value=getattr(m.states, "snapshots", 0))
        yield CounterMetricFamily("pitwatch_events_lost",
                                  "Offsets of the events topic Kafka deleted before the "
                                  "audit read them.", value=m.lost_offsets)
        yield CounterMetricFamily("pitwatch_losses", "Stretches of lost events noticed.",
                                  value=m.loss_count)
        open_rounds = getattr(m.states, "open_rounds", None)
        if open_rounds is not None:
            yield GaugeMetricFamily("pitwatch_open_rounds",
                                    "Rounds open in this worker's tables.",
                                    value=open_rounds())
        yield GaugeMetricFamily("pitwatch_refusing",
                                "1 when the worker has stopped auditing (see /health).",
                                value=int(m.refusal is not None))
        if m.partitions is not None:
            yield GaugeMetricFamily("pitwatch_events_partitions",
                                    "The events topic's partitions, as Kafka last said.",
                                    value=m.partitions)
        up = GaugeMetricFamily("pitwatch_up", "1 while a readiness check passes (kafka, "
                               "partitions, clickhouse, sink; see /health/ready).",
                               labels=["check"])
        for name in m.readiness.names:
            up.add_metric([name], int(m.readiness.ok(name)))
        yield up
        lag = GaugeMetricFamily("pitwatch_lag", "Committed messages not yet read, per "
                                "partition of the events topic; absent while the broker "
                                "does not answer (unknown, never 0).",
                                labels=["topic", "partition"])
        for (topic, partition), n in m.lag(*m._scrape).items():
            lag.add_metric([topic, str(partition)], n)
        yield lag
        age = m.sink_batch_age()
        batch_age = GaugeMetricFamily("pitwatch_sink_batch_age_seconds",
                                      "Seconds since the sink last landed a batch in "
                                      "ClickHouse.")
        if age is not None:
            batch_age.add_metric([], age)
        yield batch_age
        yield from sink_families(m.settings)

