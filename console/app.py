"""The console's web application (aiohttp).

aiohttp because the streaming extra already brings it (Faust is built on it), it serves
server-sent events natively (a StreamResponse the feed writes into), and aiokafka, the
alerts topic's reader, runs on the same event loop: one process, one loop, no second
framework and no Node build.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from aiohttp import web

from pitwatch.store.base import Store

from . import pages
from .data import ConsoleData, Filters, NotFound, catalogue_codes, checked_id
from .feed import Hub, KafkaAlerts, SilentWatch, StorePoller

log = logging.getLogger("pitwatch.console")
T = TypeVar("T")
STATIC = Path(__file__).parent / "static"
SNAPSHOT = 200  # alerts a page gets when it opens
KEEPALIVE = 15.0  # seconds between comments on an idle feed (proxies close quiet streams)


@dataclass(frozen=True, slots=True)
class Settings:
    kafka: str | None = None
    alerts_topic: str = "alerts"
    clock: str = "wall"  # wall | store
    silent_after_s: int = 300
    cases: Path | None = None
    poll_every: float | None = 2.0  # None: read the store's violations once (embedded)
    silent_every: float = 5.0  # how often the feed checks for silent tables


class StoreThread:
    """The one thread that talks to the store (chDB and clickhouse-driver clients are
    not thread-safe); the event loop never blocks on a query."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.data = ConsoleData(store)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="console-store")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.store.close()


HUB = web.AppKey("hub", Hub)
DB = web.AppKey("db", StoreThread)
SETTINGS = web.AppKey("settings", Settings)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status,
                        content_type="application/json")


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")


@web.middleware
async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Bad input and unknown ids as a page (or JSON under /api) with the reason."""
    api = request.path.startswith("/api/")
    try:
        resp: web.StreamResponse = await handler(request)
        return resp
    except (ValueError, NotFound) as exc:
        status = 404 if isinstance(exc, NotFound) else 400
        return _json({"error": str(exc)}, status) if api else _html(pages.error(status,
                                                                                 str(exc)), status)
    except web.HTTPNotFound:
        msg = f"nothing at {request.path}"
        return _json({"error": msg}, 404) if api else _html(pages.error(404, msg), 404)


SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@web.middleware
async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
    """A write must come from the console's own pages (the browser's Origin), and every
    answer carries headers that keep other sites' scripts and frames out."""
    if request.method == "POST":
        origin = request.headers.get("Origin")
        if origin is not None and origin.split("://", 1)[-1] != request.host:
            return _json({"error": f"a write from another site ({origin[:80]}) refused"}, 403)
    resp: web.StreamResponse = await handler(request)
    resp.headers.update(SECURITY_HEADERS)
    return resp


# --- pages ---------------------------------------------------------------------------

async def feed_page(request: web.Request) -> web.Response:
    f = Filters.parse(dict(request.query))
    db = request.app[DB]
    tables = await db.run(db.data.tables)
    jurisdictions = sorted(set(db.data.jurisdictions.values()))
    return _html(pages.feed(f, tables, catalogue_codes(), jurisdictions))


async def floor_now(app: web.Application) -> tuple[int, list[dict[str, Any]]]:
    """The floor clock (--clock) and every table on the board."""
    db, s = app[DB], app[SETTINGS]
    now = now_ms()
    if s.clock == "store":
        latest: int | None = await db.run(db.data.latest_event_ms)
        now = latest or now
    return now, await db.run(db.data.floor, now, s.silent_after_s * 1000)


async def floor_page(request: web.Request) -> web.Response:
    s = request.app[SETTINGS]
    now, tables = await floor_now(request.app)
    return _html(pages.floor(tables, now, s.clock, s.silent_after_s))


async def table_page(request: web.Request) -> web.Response:
    db = request.app[DB]
    t = await db.run(db.data.table, request.match_info["table_id"])
    return _html(pages.table(t))


async def round_page(request: web.Request) -> web.Response:
    db, s = request.app[DB], request.app[SETTINGS]
    r = await db.run(db.data.round, request.match_info["round_id"])
    cases = [] if s.cases is None else case_folders(s.cases, r["round_id"])
    return _html(pages.round_page(r, [f"/cases/{c}/report.html" for c in cases]))


def case_folders(root: Path, round_id: str) -> list[str]:
    """The case folders of `pitwatch investigate` under root (or root itself, as ".")
    whose manifest.json lists the round and that hold a report.html."""
    found = []
    for manifest in sorted([root / "manifest.json", *root.glob("*/manifest.json")]):
        try:
            rounds = orjson.loads(manifest.read_bytes()).get("rounds", [])
        except (OSError, orjson.JSONDecodeError, AttributeError):
            continue  # not a case folder, or one being written
        if round_id in rounds and (manifest.parent / "report.html").is_file():
            found.append(manifest.parent.relative_to(root).as_posix())
    return found


async def violation_page(request: web.Request) -> web.Response:
    db = request.app[DB]
    vid = checked_id(request.match_info["violation_id"], "violation id")
    v = request.app[HUB].recent.get(vid)
    if v is None:
        v = await db.run(db.data.violation, vid)
    raise web.HTTPFound(f"/rounds/{v['round_id']}#v-{vid}")


async def triage_page(request: web.Request) -> web.Response:
    db = request.app[DB]
    return _html(pages.triage_log(await db.run(db.data.triage)))


# --- the API -------------------------------------------------------------------------

def _sse(event: str, data: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


async def feed_stream(request: web.Request) -> web.StreamResponse:
    """Server-sent events: `snapshot` (the newest alerts that pass the filters and
    their triage, and the silent tables), then `alert`, `triage`, `bad` (an undecodable
    message on the topic) and `silent` (the set of silent tables changed) as they happen."""
    f = Filters.parse(dict(request.query))
    hub, db = request.app[HUB], request.app[DB]
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache",
                                       "X-Accel-Buffering": "no"})
    q = hub.subscribe()  # before the snapshot: nothing falls between the two
    try:
        stored = await db.run(db.data.violations, f, SNAPSHOT)
        merged = {a["violation_id"]: a for a in stored}
        merged.update({k: a for k, a in hub.recent.items() if f.matches(a)})
        alerts = sorted(merged.values(), key=lambda a: (-a["detected_at"], a["violation_id"]))
        alerts = alerts[:SNAPSHOT]
        triage = await db.run(db.data.triage, [a["violation_id"] for a in alerts])
        await resp.prepare(request)
        await resp.write(_sse("snapshot", {"alerts": alerts, "triage": triage,
                                           "status": hub.status(), "silent": hub.silent}))
        while True:
            try:
                msg = await asyncio.wait_for(q.get(), KEEPALIVE)
            except TimeoutError:
                await resp.write(b": keep-alive\n\n")
                continue
            if msg["type"] == "alert" and not f.matches(msg["alert"]):
                continue
            await resp.write(_sse(msg["type"], msg))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        hub.unsubscribe(q)
    return resp


async def add_triage(request: web.Request) -> web.Response:
    """Acknowledge a violation: {violation_id, who, note}. Appends to the triage log."""
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object")
    vid = checked_id(str(body.get("violation_id", "")), "violation id")
    who = str(body.get("who", "")).strip()
    note = str(body.get("note", "")).strip()
    if not who or len(who) > 64:
        raise ValueError("who: a name of 1 to 64 characters")
    if len(note) > 1000:
        raise ValueError("note: at most 1,000 characters")
    hub, db = request.app[HUB], request.app[DB]
    if vid not in hub.recent:
        await db.run(db.data.violation, vid)  # NotFound: 404
    row = await db.run(db.data.add_triage, vid, "ACK", who, note, now_ms())
    hub.publish({"type": "triage", "triage": row})
    return _json(row, 201)


async def health(request: web.Request) -> web.Response:
    return _json({**request.app[HUB].status(), "store": type(request.app[DB].store).__name__})


# --- assembly ------------------------------------------------------------------------

async def _background(app: web.Application) -> AsyncIterator[None]:
    hub, db, s = app[HUB], app[DB], app[SETTINGS]
    tasks = []

    async def newest(since_ms: int | None) -> list[dict[str, Any]]:
        return await db.run(db.data.violations, Filters(), SNAPSHOT, since_ms)

    async def floor() -> list[dict[str, Any]]:
        return (await floor_now(app))[1]

    tasks.append(asyncio.create_task(StorePoller(hub, newest, s.poll_every).run()))
    tasks.append(asyncio.create_task(SilentWatch(hub, floor, s.silent_every).run()))
    if s.kafka:
        src = KafkaAlerts(hub, s.kafka, s.alerts_topic, db.data.jurisdictions)
        tasks.append(asyncio.create_task(src.run()))
    yield
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    db.close()


def make_app(store: Store, settings: Settings) -> web.Application:
    app = web.Application(middlewares=[guard, errors])
    app[HUB] = Hub()
    app[DB] = StoreThread(store)
    app[SETTINGS] = settings
    app.router.add_get("/", feed_page)
    app.router.add_get("/floor", floor_page)
    app.router.add_get("/tables/{table_id}", table_page)
    app.router.add_get("/rounds/{round_id}", round_page)
    app.router.add_get("/violations/{violation_id}", violation_page)
    app.router.add_get("/triage", triage_page)
    app.router.add_get("/api/feed", feed_stream)
    app.router.add_post("/api/triage", add_triage)
    app.router.add_get("/api/health", health)
    app.router.add_static("/static", STATIC)
    if settings.cases is not None:
        app.router.add_static("/cases", settings.cases)
    app.cleanup_ctx.append(_background)
    return app
