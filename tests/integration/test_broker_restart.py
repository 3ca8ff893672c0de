"""The Kafka broker SIGKILLed and restarted mid-stream (issue 8, "Done when"): the
producer retries through the outage, the worker and its sink reconnect, and ClickHouse
and the alerts topic hold exactly the embedded audit's answer. The broker is started
again whatever happens, so the tests after this one find it running."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from pitwatch.address import host_port
from pitwatch.events.model import Event
from pitwatch.producers.kafka_out import Pacing, make_producer, send_events

from .conftest import KAFKA, ROOT, Expected, Pipeline, wait_until
from .test_streaming import _assert_alerts, _assert_same

Floor = Callable[..., tuple[list[Event], Expected]]


def _broker_pid() -> int:
    """The broker's PID from deploy/kafka.sh's PID file (under PITWATCH_RUN), checked
    to be a live Kafka (a stale file names nobody, or somebody else)."""
    run = Path(os.environ.get("PITWATCH_RUN", ROOT / ".run"))
    pid = int((run / "kafka" / "kafka.pid").read_text().strip())
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    assert b"kafka.Kafka" in cmdline, f"pid {pid} is not the broker: {cmdline[:200]!r}"
    return pid


def _gone(pid: int) -> bool:
    """The broker's process is dead and its port no longer answers: its main thread
    turns zombie before its other threads have let go of the sockets."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
    except FileNotFoundError:
        state = "gone"
    if state not in ("Z", "gone"):
        return False
    try:
        with socket.create_connection(host_port(KAFKA.split(",")[0]), timeout=1):
            return False
    except OSError:
        return True


def test_broker_killed_and_restarted_mid_stream(pipeline: Pipeline, floor: Floor) -> None:
    events, exp = floor(seed=25)
    pipeline.start_worker()
    third = len(events) // 3
    pipeline.produce(events[:third])
    wait_until("the worker and sink busy: the first events in ClickHouse",
               lambda: pipeline.count("events") > 0, 180)

    # the rest goes out paced, from another thread, so that the broker dies while the
    # producer has records in flight and still to send: it must retry through it
    sent = threading.Event()
    failed: list[BaseException] = []

    def produce_rest() -> None:
        producer = make_producer(KAFKA)
        try:
            send_events(producer, pipeline.events_topic, events[third:],
                        Pacing(rate=400), on_sent=lambda n: sent.set())
        except BaseException as e:  # reported by the test thread
            failed.append(e)
        finally:
            producer.close()  # type: ignore[attr-defined]

    producing = threading.Thread(target=produce_rest, name="produce-rest")
    producing.start()
    try:
        wait_until("a thousand more events sent", sent.is_set, 120)
        pid = _broker_pid()
        os.kill(pid, signal.SIGKILL)
        wait_until("the broker gone", lambda: _gone(pid), 60)
    finally:  # the broker runs again for whatever comes after, whatever happened
        subprocess.run([str(ROOT / "deploy/kafka.sh"), "start"], check=True)
    producing.join(timeout=600)
    assert not producing.is_alive(), "the producer did not finish within 10 minutes"
    assert not failed, f"the producer gave up: {failed[0]!r}"

    _assert_same(pipeline, exp, pipeline.wait_for(exp, timeout=360))
    _assert_alerts(pipeline, exp)
    assert "exited with code" not in pipeline.logs()  # the sink was never lost
