"""The worker's web port: /health/live, /health/ready (= /health) and /metrics
(processors/metrics.py), served by a thread of the worker's own from the moment
`pitwatch worker` starts until the process exits: while Faust waits for Kafka at its
start, while the event loop is busy or blocked, and through a restart's back-off.

A restart (`supervise.restart_self`) replaces the process with `execve`, which keeps
the listening socket: its descriptor is named in WEB_FD_ENV and the new worker serves
on it from its start, so a probe that connects meanwhile waits in the socket's queue
and is answered, never refused.

/health/ready says not ready, and why, until the app audits: "restarting" during a
back-off, "starting" until the app's first readiness checks ran (the worker connects
to Kafka and Faust recovers its tables first), then what the checks say
(`Metrics.health`). /metrics answers 503 until the app is built.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .metrics import Metrics

log = logging.getLogger("pitwatch.worker")

#: the listening socket's descriptor, handed from a worker to the one its restart execs
WEB_FD_ENV = "PITWATCH_WEB_FD"


class WebServer:
    """The health and metrics endpoints on `bind`:`port`, in a daemon thread."""

    def __init__(self, bind: str, port: int, kafka: str) -> None:
        self.kafka = kafka
        #: the app's metrics, once it is built (`attach`)
        self.metrics: Metrics | None = None
        #: what a restart under way says (None: not restarting)
        self.restarting: str | None = None
        self._http = _Server(_listening(bind, port), self)
        self.port: int = self._http.server_address[1]
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.1,),
                                        name="pitwatch-web", daemon=True)

    def start(self) -> WebServer:
        self._thread.start()
        return self

    def attach(self, metrics: Metrics) -> None:
        """The app's metrics and readiness, served from now on."""
        self.metrics = metrics

    def restart(self, said: str) -> None:
        """A restart waits out its back-off: not ready, and why, until the process is
        replaced (the socket goes on to the next worker)."""
        self.restarting = said

    def health(self) -> tuple[int, str]:
        """The status and text of /health/ready."""
        if self.restarting is not None:
            return 503, f"not ready: restarting: {self.restarting}\n"
        m = self.metrics
        starting = (f"starting: not auditing yet (connecting to Kafka at {self.kafka}, "
                    "then recovering the tables' state)")
        if m is None:
            return 503, f"not ready: {starting}\n"
        if not m.started:
            return 503, f"not ready: {'; '.join([starting, *m.readiness.reasons()])}\n"
        return m.health()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def _listening(bind: str, port: int) -> socket.socket:
    """The socket handed on by the worker this one replaced (WEB_FD_ENV), else a new one
    bound to `bind`:`port`; left open across `execve` for the next worker."""
    inherited = os.environ.get(WEB_FD_ENV)
    sock: socket.socket | None = None
    if inherited is not None:
        try:
            sock = socket.socket(fileno=int(inherited))
            if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                raise OSError("not a listening socket")
            if port and sock.getsockname()[1] != port:
                raise OSError(f"listening on port {sock.getsockname()[1]}, not {port}")
        except (OSError, ValueError) as e:
            log.warning("%s=%s is not this worker's socket (%s); binding anew", WEB_FD_ENV,
                        inherited, e)
            if sock is not None:
                sock.detach()  # whatever that descriptor is, it is not ours to close
            sock = None
    if sock is None:
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind, port))
        sock.listen(64)
    sock.set_inheritable(True)
    os.environ[WEB_FD_ENV] = str(sock.fileno())
    return sock


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sock: socket.socket, web: WebServer) -> None:
        self.address_family = sock.family
        super().__init__(sock.getsockname()[:2], _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.server_address = sock.getsockname()[:2]
        self.web = web


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        web = self.server.web
        path = self.path.split("?", 1)[0]
        if path == "/health/live":
            self._send(200, b"live\n", "text/plain; charset=utf-8")
        elif path in ("/health", "/health/ready"):
            status, text = web.health()
            self._send(status, text.encode(), "text/plain; charset=utf-8")
        elif path == "/metrics" and web.metrics is not None:
            body, content_type = web.metrics.scrape(self.headers.get("Accept", ""))
            self._send(200, body, content_type)
        elif path == "/metrics":
            self._send(503, b"starting: no metrics yet\n", "text/plain; charset=utf-8")
        else:
            self._send(404, b"not found: /health/live, /health/ready, /metrics\n",
                       "text/plain; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Probes every few seconds: not logged."""
