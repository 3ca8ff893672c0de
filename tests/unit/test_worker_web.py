"""The worker's web port (processors/web.py): "Serve liveness (and readiness, which says
not ready and why) from the moment the process starts until it exits, including the
back-off." Probed over real HTTP: a worker whose broker is not there, a restart's
back-off, and the socket handed to the worker a restart execs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from pitwatch.processors import supervise
from pitwatch.processors.health import Readiness
from pitwatch.processors.metrics import Metrics, checks
from pitwatch.processors.settings import Settings
from pitwatch.processors.web import WEB_FD_ENV, WebServer

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> tuple[int, str] | None:
    """The status and text of GET `path`; None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None


def _wait(what: str, got: Callable[[], tuple[int, str] | None], deadline_s: float
          ) -> tuple[int, str]:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        answer = got()
        if answer is not None:
            return answer
        time.sleep(0.05)  # between two polls of the condition
    raise AssertionError(f"{what}: no answer within {deadline_s} s")


@pytest.fixture
def fresh_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The socket's descriptor and the restart listeners left as they were."""
    monkeypatch.delenv(WEB_FD_ENV, raising=False)
    monkeypatch.setattr(supervise, "_restart_listeners", [])
    monkeypatch.setattr(supervise, "_stop", threading.Event())
    yield


def test_a_worker_whose_broker_is_not_there_is_live_and_says_why_it_is_not_ready(
        tmp_path: Path) -> None:
    web, nobody = _free_port(), _free_port()  # no broker, no ClickHouse listens there
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PITWATCH_") or k == "PITWATCH_SERVICES"}
    p = subprocess.Popen(
        [sys.executable, "-m", "pitwatch.cli", "worker", "--kafka", f"127.0.0.1:{nobody}",
         "--clickhouse", f"127.0.0.1:{nobody}", "--no-sink", "--web-port", str(web),
         "--data-dir", str(tmp_path / "w"), "--topic-prefix", "web-test-"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait("/health/live", lambda: _get(web, "/health/live"), 30) == (200, "live\n")
        status, text = _wait("/health/ready", lambda: _get(web, "/health/ready"), 10)
        assert status == 503
        assert text.startswith("not ready: starting: not auditing yet (connecting to "
                               f"Kafka at 127.0.0.1:{nobody}")
        assert _get(web, "/health") == (status, text)
        assert p.poll() is None  # still waiting for its broker, and answering
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_the_back_off_of_a_restart_is_live_and_not_ready(fresh_env: None) -> None:
    web = WebServer("127.0.0.1", 0, "127.0.0.1:9").start()
    supervise.on_restart(web.restart)
    said: dict[str, tuple[int, str] | None] = {}

    class Replaced(Exception):
        """Where the process would be replaced (`execve`): the test stops there."""

    def back_off(seconds: float) -> None:  # probed while the restart waits
        said["live"] = _get(web.port, "/health/live")
        said["ready"] = _get(web.port, "/health/ready")
        raise Replaced

    try:
        with pytest.raises(Replaced):
            supervise.restart_self(sleep=back_off)
    finally:
        web.close()
    assert said["live"] == (200, "live\n")
    ready = said["ready"]
    assert ready is not None and ready[0] == 503
    assert ready[1].startswith("not ready: restarting: the worker restarts after a "
                               "back-off of ")


def test_the_restarted_worker_serves_on_the_socket_handed_to_it(fresh_env: None) -> None:
    first = WebServer("127.0.0.1", 0, "k").start()
    try:
        fd = int(os.environ[WEB_FD_ENV])  # what `execve` keeps for the next worker
        assert os.get_inheritable(fd)
        # the next worker, on the descriptor it was handed (a copy: this test keeps
        # the first server's)
        handed = os.dup(fd)
        os.environ[WEB_FD_ENV] = str(handed)
        first.close()
        second = WebServer("127.0.0.1", first.port, "k").start()  # bound already
        try:
            assert second.port == first.port and os.environ[WEB_FD_ENV] == str(handed)
            assert _get(second.port, "/health/live") == (200, "live\n")
        finally:
            second.close()
    finally:
        first.close()


def test_ready_once_the_app_runs_its_checks(fresh_env: None, tmp_path: Path) -> None:
    web = WebServer("127.0.0.1", 0, "k").start()
    try:
        settings = Settings(data_dir=str(tmp_path), sink=False)
        m = Metrics(None, SimpleNamespace(), settings,  # type: ignore[arg-type]
                    Readiness(checks(settings)))
        web.attach(m)
        assert _get(web.port, "/metrics") is not None
        status, text = web.health()
        assert status == 503 and "starting" in text and "kafka: not checked yet" in text
        m.readiness.report("kafka", True)
        m.readiness.report("partitions", True)
        m.loop = SimpleNamespace()  # type: ignore[assignment]  # its first checks ran
        assert _get(web.port, "/health/ready") == (200, "ok\n")
    finally:
        web.close()
