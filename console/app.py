"""The console's web application (aiohttp).

aiohttp because the streaming extra already brings it (Faust is built on it), it serves
server-sent events natively (a StreamResponse the feed writes into), and aiokafka, the
alerts topic's reader, runs on the same event loop: one process, one loop, no second
framework and no Node build.

When the store does not answer, a page is the last copy of its data the console holds,
marked "as of" (or a 503 page saying none is held), never a 500; an action is refused
with a message saying it was not recorded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import orjson
from aiohttp import web

from pitwatch.events.limits import MAX_ID, MAX_SEAT
from pitwatch.store.base import Store, StoreError
from pitwatch.topics import ALERTS_TOPIC, EVENTS_TOPIC

from . import pages
from .accounts import Accounts
from .auth import (
    AUTH,
    COOKIE,
    IDLE_S,
    SESSION_KEY,
    AuthConfig,
    cookie_session,
    may,
    peek_session,
    session_of,
)
from .auth import routes as auth_routes
from .data import ConsoleData, Filters, NotFound, catalogue_codes, checked_id
from .feed import Hub, KafkaAlerts, SilentWatch, StorePoller, StoreProbe, Webhook
from .html import CONTEXT, PageContext
from .html import context as page_context
from .oidc import Oidc, OidcConfig
from .protection import PAGE as PROTECTION_PAGE
from .protection import ProtectionData, round_seat, seat_session
from .protection import dealer_view as dealer_view_of
from .protection_pages import (
    dealer_page,
    protection_list,
    protection_section,
    round_seats,
    seat_sessions_page,
    seated_section,
    session_page,
)
from .sessions import SharedSessions
from .sitetime import SiteTime
from .triage import Change, Refused, refusal

log = logging.getLogger("pitwatch.console")
T = TypeVar("T")
STATIC = Path(__file__).parent / "static"
SNAPSHOT = 200  # alerts a page gets when it opens
KEEPALIVE = 15.0  # seconds between comments on an idle feed (proxies close quiet streams)
STATUS_EVERY = 3.0  # seconds between status events on an open feed
SESSION_EVERY = 10.0  # seconds between checks that an open feed's session still holds
QUERY_TIMEOUT = 8.0  # a page's question to the store
MAX_BULK = 500  # findings one action may change


@dataclass(frozen=True, slots=True)
class Settings:
    kafka: str | None = None
    alerts_topic: str = ALERTS_TOPIC
    worker_group: str = "pitwatch"  # whose lag on events_topic the status shows
    events_topic: str = EVENTS_TOPIC
    clock: str = "wall"  # wall (arrival in the store) | store (a recorded shift)
    silent_after_s: int = 300
    cases: Path | None = None
    poll_every: float | None = 2.0  # None: read the store's violations once (embedded)
    silent_every: float = 5.0  # how often the feed checks for silent tables
    probe_every: float = 1.0  # how often the store is asked whether it answers
    site: SiteTime = field(default_factory=SiteTime)
    users: Path = Path("pitwatch-users.json")
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
    sso_header: str = ""
    sso_proxies: tuple[str, ...] = ()
    sso_role_header: str = ""
    secure_cookies: bool = False
    webhook: str = ""  # URL CRITICALs are posted to
    public_url: str = ""  # how the webhook's links name this console
    group_window_ms: int = 600_000  # repeats of a code at a table within this are one row
    oidc: OidcConfig | None = None  # OpenID Connect sign-in (console/oidc.py)


class StoreDown(Exception):
    """The store does not answer (the probe says so, or a query could not reach it or
    timed out)."""


class QueryFailed(Exception):
    """The store answered, refusing this one question (a value out of its range, a
    statement it cannot run): the request's error, not an outage."""


def is_outage(e: BaseException) -> bool:
    """Whether a query's failure says the store cannot be reached (a connection refused,
    reset or timed out, a server's outage code), not that this question failed."""
    if isinstance(e, StoreError) and e.outage:
        return True
    for err in (e, e.__cause__):
        if isinstance(err, OSError | EOFError | TimeoutError):
            return True
        if err is not None and type(err).__module__.startswith("clickhouse_driver"):
            from pitwatch.store.server import is_outage as driver_outage

            return driver_outage(err)
    return False


class StoreThread:
    """The one thread that talks to the store (chDB and clickhouse-driver clients are
    not thread-safe); the event loop never blocks on a query. While the probe says the
    store is down, a question fails at once (StoreDown) instead of queueing behind a
    dead connection."""

    def __init__(self, store: Store, hub: Hub) -> None:
        self.store = store
        self.hub = hub
        self.data = ConsoleData(store)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="console-store")

    async def raw(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self.hub.store_ok is False:
            raise StoreDown(self.hub.store_error or "the store does not answer")
        try:
            return await asyncio.wait_for(self.raw(fn, *args), QUERY_TIMEOUT)
        except (NotFound, ValueError, Refused):
            raise
        except TimeoutError as e:
            self.hub.set_store(False, f"no answer in {QUERY_TIMEOUT:g} s", now_ms())
            raise StoreDown(f"no answer in {QUERY_TIMEOUT:g} s") from e
        except Exception as e:
            if not is_outage(e):
                log.warning("console: the store refused a question: %s: %s",
                            type(e).__name__, str(e)[:300])
                raise QueryFailed(str(e)[:300]) from e
            self.hub.set_store(False, f"{type(e).__name__}: {e}"[:300], now_ms())
            raise StoreDown(f"{type(e).__name__}: {e}"[:300]) from e

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.store.close()


HUB = web.AppKey("hub", Hub)
DB = web.AppKey("db", StoreThread)
SETTINGS = web.AppKey("settings", Settings)
HELD_MAX = 256  # questions whose last answer is held (a search each): the least recent go


class Held:
    """The last answer to each page's question, for outages: the HELD_MAX asked most
    recently (a least-recently-used cache, so distinct searches cannot grow it)."""

    def __init__(self, cap: int | None = None) -> None:
        self.cap = HELD_MAX if cap is None else cap
        self._items: OrderedDict[tuple[str, str], tuple[int, Any]] = OrderedDict()

    def get(self, key: tuple[str, str]) -> tuple[int, Any] | None:
        got = self._items.get(key)
        if got is not None:
            self._items.move_to_end(key)
        return got

    def put(self, key: tuple[str, str], value: tuple[int, Any]) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.cap:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


HELD = web.AppKey("held", Held)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status,
                        content_type="application/json")


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")


async def held(request: web.Request, fn: Callable[..., T], *args: Any) -> T:
    """A page's data from the store, kept; when the store does not answer, the copy
    kept last, and the page is marked as of then (StoreDown when none is kept)."""
    db = request.app[DB]
    return await held_by(request, (getattr(fn, "__name__", repr(fn)), repr(args)),
                         lambda: db.run(fn, *args))


async def held_by(request: web.Request, key: tuple[str, str],
                  make: Callable[[], Awaitable[T]]) -> T:
    """`held` for a page whose data takes several questions (`make`), kept by `key`."""
    try:
        got = await make()
    except StoreDown as e:
        kept = request.app[HELD].get(key)
        if kept is None:
            raise
        at, value = kept
        CONTEXT.set(replace(page_context(), as_of=at, store_error=str(e)[:120]))
        return value  # type: ignore[no-any-return]
    request.app[HELD].put(key, (now_ms(), got))
    return got


@web.middleware
async def frame(request: web.Request, handler: Any) -> web.StreamResponse:
    """The page frame's context for this request: who, the CSRF token, the site."""
    s = request.get(SESSION_KEY)
    CONTEXT.set(PageContext(s.user if s else "", s.role if s else "", s.csrf if s else "",
                            request.app[SETTINGS].site))
    resp: web.StreamResponse = await handler(request)
    return resp


@web.middleware
async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Bad input, unknown ids, refusals and an absent store as a page (or JSON under
    /api) with the reason; never a bare 500."""
    api = request.path.startswith("/api/")
    try:
        resp: web.StreamResponse = await handler(request)
        return resp
    except (web.HTTPRedirection, web.HTTPSuccessful):
        raise
    except StoreDown as exc:
        msg = (f"The store does not answer ({exc}). Nothing was changed: try again when "
               "the banner clears." if request.method == "POST" else
               f"The store does not answer ({exc}), and this console holds no earlier copy "
               "of this page. It will show again when the store answers.")
        return _json({"error": msg, "store": "down"}, 503) if api else _html(
            pages.error(503, msg), 503)
    except Refused as exc:
        return _json({"error": str(exc)}, exc.status) if api else _html(
            pages.error(exc.status, str(exc)), exc.status)
    except QueryFailed as exc:
        msg = (f"The store could not answer this request ({exc})"
               + (": nothing was changed." if request.method == "POST" else "."))
        return _json({"error": msg}, 500) if api else _html(pages.error(500, msg), 500)
    except (ValueError, NotFound) as exc:
        status = 404 if isinstance(exc, NotFound) else 400
        return _json({"error": str(exc)}, status) if api else _html(pages.error(status,
                                                                                 str(exc)), status)
    except web.HTTPException as exc:
        msg = f"nothing at {request.path}" if exc.status == 404 else exc.reason
        return _json({"error": msg}, exc.status) if api else _html(
            pages.error(exc.status, msg), exc.status)
    except Exception as exc:  # a fault of the console's own: logged, and said plainly
        log.exception("console: %s %s failed", request.method, request.path)
        msg = f"the console failed on this request ({type(exc).__name__}); it is logged"
        return _json({"error": msg}, 500) if api else _html(pages.error(500, msg), 500)


SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    # same-origin, not no-referrer: under no-referrer a browser sends a form's POST with
    # Origin "null", which the guard must refuse
    "Referrer-Policy": "same-origin",
}
#: a case report (pitwatch investigate) is a document of its own: its inline styles
#: apply, and nothing in it runs or loads
CASE_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
            "frame-ancestors 'none'; form-action 'none'; sandbox")


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
    if request.path.startswith("/cases/"):
        resp.headers["Content-Security-Policy"] = CASE_CSP
    return resp


# --- pages ---------------------------------------------------------------------------

async def feed_page(request: web.Request) -> web.Response:
    f = Filters.parse(dict(request.query))
    db = request.app[DB]
    try:
        tables = await held(request, db.data.tables)
    except StoreDown as e:  # the live feed works without the store: only its table list
        tables = []         # is missing
        CONTEXT.set(replace(page_context(), as_of=now_ms(), store_error=str(e)[:120]))
    jurisdictions = sorted(set(db.data.jurisdictions.values()))
    return _html(pages.feed(f, tables, catalogue_codes(), jurisdictions,
                            request.app[SETTINGS].group_window_ms))


async def floor_now(app: web.Application, request: web.Request | None = None
                    ) -> tuple[int, list[dict[str, Any]]]:
    """The floor's clock and every table on the board: live, the store's clock against
    each table's newest arrival; a recorded shift (--clock store), its newest event."""
    db, s = app[DB], app[SETTINGS]

    async def ask(fn: Callable[..., T], *args: Any) -> T:
        return await (held(request, fn, *args) if request else db.run(fn, *args))

    if s.clock == "store":
        latest: int | None = await ask(db.data.latest_event_ms)
        now = latest or now_ms()
        clock = "store"
    else:
        now = await ask(db.data.store_now_ms)
        clock = "arrival"
    day_start = s.site.day_bounds(s.site.gaming_day(now))[0]
    return now, await ask(db.data.floor, now, s.silent_after_s * 1000, day_start, clock)


async def floor_page(request: web.Request) -> web.Response:
    s = request.app[SETTINGS]
    now, tables = await floor_now(request.app, request)
    return _html(pages.floor(tables, now, s.clock, s.silent_after_s))


async def table_page(request: web.Request) -> web.Response:
    t = await held(request, request.app[DB].data.table,
                   checked_id(request.match_info["table_id"], "table id"))
    obs = await held(request, _protection(request).table_observations, t["table_id"])
    return _html(pages.table(t, protection_section(
        obs, [d["dealer_id"] for d in t["dealers"]])))


async def round_page(request: web.Request) -> web.Response:
    s = request.app[SETTINGS]
    r = await held(request, request.app[DB].data.round,
                   checked_id(request.match_info["round_id"], "round id"))
    cases = [] if s.cases is None else case_folders(s.cases, r["round_id"])
    dealer = (r["summary"] or {}).get("dealer_id") or next(
        (ev.get("dealer_id") for ev in r["events"] if ev.get("type") == "RoundStarted"), "")
    obs = await held(request, _protection(request).round_observations, r["table_id"],
                     r["round_id"], dealer or "")
    # the seats link to round_seat_view: the fold that finds their sessions runs only
    # when one is followed, so this page stays a read through sort keys
    return _html(pages.round_page(r, cases, protection_section(
        obs, [dealer] if dealer else [],
        seated_section(r["round_id"], round_seats(r["events"])))))


async def round_seat_view(request: web.Request) -> web.Response:
    """A seat's session in a round, found when asked: 303 to its page when there is
    one whose id is known, else a page that says why not. A round or seat that is not
    one (a seat outside 1..MAX_SEAT, an id the contract does not allow): 404."""
    rid, seat = request.match_info["round_id"], request.match_info["seat"]
    if not (seat.isascii() and seat.isdigit() and len(seat) <= 2
            and 1 <= int(seat) <= MAX_SEAT) or not 1 <= len(rid) <= MAX_ID:
        raise NotFound("no such seat of a round")
    db = request.app[DB]
    got = await held_by(request, ("round_seat", f"{rid}\x1f{seat}"), lambda: round_seat(
        db.run, asyncio.to_thread, _protection(request), rid, int(seat)))
    if got.sessions is not None and len(got.sessions) == 1 and got.sessions[0].session_id:
        raise web.HTTPSeeOther("/sessions/" + quote(got.sessions[0].session_id, safe=""))
    return _html(seat_sessions_page(got))


def _protection(request: web.Request) -> ProtectionData:
    return ProtectionData(request.app[DB].store)


async def protection_page(request: web.Request) -> web.Response:
    offset, _ = _page_args(request.query)
    got = await held(request, _protection(request).protection_list, offset,
                     PROTECTION_PAGE)
    return _html(protection_list(got))


async def session_view(request: web.Request) -> web.Response:
    sid = checked_id(request.match_info["session_id"], "seat session id")
    db = request.app[DB]
    s = await held_by(request, ("seat_session", sid), lambda: seat_session(
        db.run, asyncio.to_thread, _protection(request), sid))
    return _html(session_page(s))


async def dealer_view(request: web.Request) -> web.Response:
    d_id = checked_id(request.match_info["dealer_id"], "dealer id")
    db = request.app[DB]
    d = await held_by(request, ("dealer_view", d_id), lambda: dealer_view_of(
        db.run, asyncio.to_thread, _protection(request), d_id))
    return _html(dealer_page(d))


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
    vid = checked_id(request.match_info["violation_id"], "violation id")
    v = request.app[HUB].recent.get(vid)
    if v is None:
        v = await held(request, request.app[DB].data.violation, vid)
    raise web.HTTPFound(f"/rounds/{quote(v['round_id'], safe='')}#v-{quote(vid, safe='')}")


async def triage_page(request: web.Request) -> web.Response:
    return _html(pages.triage_log(await held(request, request.app[DB].data.triage)))


MAX_OFFSET = 1_000_000  # a search's page starts no further in


def _page_args(q: Any) -> tuple[int, int]:
    try:
        offset = min(MAX_OFFSET, max(0, int(q.get("offset", "0"))))
        limit = min(200, max(1, int(q.get("limit", "50"))))
    except ValueError as exc:
        raise ValueError("offset and limit: whole numbers") from exc
    return offset, limit


def search_filters(request: web.Request) -> Filters:
    """The search form's fields: times are the site's local time (datetime-local)."""
    site = request.app[SETTINGS].site
    q = dict(request.query)
    for field_, key in (("from", "since"), ("to", "until")):
        if q.get(field_):
            q[key] = str(pages.local_input_ms(site, q[field_], field_))
    return Filters.parse(q)


async def search_page(request: web.Request) -> web.Response:
    f = search_filters(request)
    offset, limit = _page_args(request.query)
    db = request.app[DB]
    got = await held(request, db.data.search, f, offset, limit)
    tables = await held(request, db.data.tables)
    return _html(pages.search(f, dict(request.query), got, tables, catalogue_codes(),
                              sorted(set(db.data.jurisdictions.values())),
                              may(request, "acknowledge")))


async def shift_page(request: web.Request) -> web.Response:
    day, n, lo, hi = _shift_of(request)
    rows = await held(request, request.app[DB].data.shift, lo, hi)
    return _html(pages.shift(request.app[SETTINGS].site, day, n, lo, hi, rows))


def _shift_of(request: web.Request) -> tuple[Any, int, int, int]:
    from datetime import date

    site = request.app[SETTINGS].site
    if "day" in request.query:
        try:
            day = date.fromisoformat(request.query["day"])
        except ValueError as exc:
            raise ValueError("day: a date, YYYY-MM-DD") from exc
        try:
            n = int(request.query.get("shift", "1")) - 1
        except ValueError as exc:
            raise ValueError("shift: a number") from exc
    else:
        day, n = site.shift_of(now_ms())
    lo, hi = site.shift_bounds(day, n)
    return day, n, lo, hi


async def shift_csv(request: web.Request) -> web.Response:
    from .shift import csv_bytes

    day, n, lo, hi = _shift_of(request)
    rows = await request.app[DB].run(request.app[DB].data.shift, lo, hi)
    site = request.app[SETTINGS].site
    name = f"pitwatch-shift-{day.isoformat()}-{n + 1}.csv"
    return web.Response(body=csv_bytes(site, day, n, lo, hi, rows), content_type="text/csv",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})


async def shift_pdf(request: web.Request) -> web.Response:
    from .shift import pdf_bytes

    day, n, lo, hi = _shift_of(request)
    rows = await request.app[DB].run(request.app[DB].data.shift, lo, hi)
    site = request.app[SETTINGS].site
    name = f"pitwatch-shift-{day.isoformat()}-{n + 1}.pdf"
    body = await asyncio.get_running_loop().run_in_executor(
        None, pdf_bytes, site, day, n, lo, hi, rows, session_of(request).user)
    return web.Response(body=body, content_type="application/pdf",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})


# --- the API -------------------------------------------------------------------------

def _sse(event: str, data: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


async def feed_stream(request: web.Request) -> web.StreamResponse:
    """Server-sent events: `snapshot` (the newest alerts that pass the filters, their
    triage states, the unhandled CRITICALs, the silent tables and the status), then
    `alert`, `triage`, `bad` (an undecodable message on the topic), `silent` (the set
    of silent tables changed) and `status` (every STATUS_EVERY s and on a change). The
    stream ends when its session does (a logout at any console process, checked every
    SESSION_EVERY s)."""
    f = Filters.parse(dict(request.query))
    session, token = session_of(request), request.cookies.get(COOKIE, "")
    hub, db = request.app[HUB], request.app[DB]
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache",
                                       "X-Accel-Buffering": "no"})
    q = hub.subscribe()  # before the snapshot: nothing falls between the two
    try:
        try:
            stored = await db.run(db.data.violations, f, SNAPSHOT)
            pinned = await db.run(db.data.pinned)
        except StoreDown:
            stored, pinned = [], {"total": None, "alerts": []}
        merged = {a["violation_id"]: a for a in stored}
        merged.update({k: a for k, a in hub.recent.items() if f.matches(a)})
        alerts = sorted(merged.values(), key=lambda a: (-a["detected_at"], a["violation_id"]))
        alerts = alerts[:SNAPSHOT]
        ids = [a["violation_id"] for a in alerts + pinned["alerts"]]
        try:
            states = await db.run(db.data.states, ids)
        except StoreDown:
            states = {}
        await resp.prepare(request)
        await resp.write(_sse("snapshot", {"alerts": alerts, "states": states,
                                           "pinned": pinned, "status": hub.status(),
                                           "silent": hub.silent, "at": now_ms()}))
        loop = asyncio.get_running_loop()
        next_status = loop.time() + STATUS_EVERY
        next_session = loop.time() + SESSION_EVERY
        while True:
            try:
                msg = await asyncio.wait_for(q.get(), max(0.05, next_status - loop.time()))
            except TimeoutError:
                if session.via != "sso" and loop.time() >= next_session:
                    if await cookie_session(request.app[AUTH], token) is None:
                        break  # logged out: the page's reconnect meets the login
                    next_session = loop.time() + SESSION_EVERY
                await resp.write(_sse("status", {"status": hub.status(), "at": now_ms()}))
                next_status = loop.time() + STATUS_EVERY
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
    """A triage change to one finding or a selection: {violation_ids: [...] (or
    violation_id), action, note, assignee, disposition, amount}. Each is checked against
    the user's role and the finding's state and appended; the answer lists what was
    done and what was refused, and why."""
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object")
    ids = body.get("violation_ids", [body.get("violation_id", "")])
    if not isinstance(ids, list) or not ids or len(ids) > MAX_BULK:
        raise ValueError(f"violation_ids: a list of 1 to {MAX_BULK} ids")
    ids = list(dict.fromkeys(checked_id(v, "violation id") for v in ids))
    change = Change.parse(body)
    s = session_of(request)
    if not may(request, change.action):
        raise refusal(s.role, change.action)
    hub, db = request.app[HUB], request.app[DB]
    done: list[dict[str, Any]] = []
    refused: list[dict[str, str]] = []
    for vid in ids:
        try:
            known = hub.recent.get(vid)
            if known is None:
                await db.run(db.data.violation, vid)  # NotFound: refused below
            row = await db.run(db.data.apply, vid, change, s.user, s.role, now_ms(),
                               None if known is None else known["table_id"])
        except (Refused, NotFound) as exc:
            refused.append({"violation_id": vid, "error": str(exc)})
            continue
        except StoreDown as exc:  # nothing after this one was tried: say which
            rest = ids[ids.index(vid):]
            return _json({"error": f"The store does not answer ({exc}). Recorded: "
                          f"{len(done)}; NOT recorded: {len(rest)}. Try those again when "
                          "the banner clears.", "done": done, "not_recorded": rest,
                          "refused": refused, "store": "down"}, 503)
        except QueryFailed as exc:  # the store answered, refusing: no outage either
            rest = ids[ids.index(vid):]
            return _json({"error": f"The store could not record this ({exc}). Recorded: "
                          f"{len(done)}; NOT recorded: {len(rest)}.", "done": done,
                          "not_recorded": rest, "refused": refused}, 500)
        hub.publish({"type": "triage", "triage": row})
        done.append(row)
    status = 201 if done else (409 if refused else 400)
    if len(ids) == 1 and refused:
        status = 404 if "no violation" in refused[0]["error"] else status
        return _json({"error": refused[0]["error"], "refused": refused}, status)
    return _json({"done": done, "refused": refused}, status)


async def search_api(request: web.Request) -> web.Response:
    f = search_filters(request)
    offset, limit = _page_args(request.query)
    db = request.app[DB]
    return _json(await db.run(db.data.search, f, offset, limit))


async def status_api(request: web.Request) -> web.Response:
    """What every page's banner shows: sources, silent tables, unhandled CRITICALs."""
    hub, db = request.app[HUB], request.app[DB]
    try:
        pinned: dict[str, Any] | None = await db.run(db.data.pinned, 5)
        # CRITICALs the topic brought that the store has not (yet): pinned as well
        assert pinned is not None
        known = {a["violation_id"] for a in pinned["alerts"]}
        live = [a for a in hub.recent.values()
                if a["severity"] == "CRITICAL" and a["violation_id"] not in known]
        if live:
            handled = await db.run(db.data.states, [a["violation_id"] for a in live])
            live = [a for a in live if a["violation_id"] not in handled]
            stored = await db.run(db.data.stored_ids, [a["violation_id"] for a in live])
            pinned = {"total": pinned["total"] + sum(
                1 for a in live if a["violation_id"] not in stored),
                "alerts": sorted([*pinned["alerts"], *live],
                                 key=lambda a: -a["detected_at"])[:5]}
    except StoreDown:
        pinned = None
    return _json({**hub.status(), "pinned": pinned, "at": now_ms()})


async def health(request: web.Request) -> web.Response:
    """For monitors: 200 when the store answers and (with --kafka) the broker does;
    503 otherwise, with which is down. Without a session only that (ok, the store up,
    down or unknown, Kafka's state word); with one, the whole status (silent tables,
    error texts, lag)."""
    hub = request.app[HUB]
    st = hub.status()
    kafka_ok = st["kafka"] in ("off", "live")
    ok = st["store"] != "down" and kafka_ok
    if await peek_session(request) is None:
        return _json({"ok": ok, "store": st["store"],
                      "kafka": str(st["kafka"]).split(":", 1)[0].strip()},
                     200 if ok else 503)
    return _json({**st, "ok": ok, "store_kind": type(request.app[DB].store).__name__},
                 200 if ok else 503)


async def no_icon(_request: web.Request) -> web.Response:
    """No icon: and no login page for the browser's own request of one."""
    return web.Response(status=204)


# --- assembly ------------------------------------------------------------------------

async def _background(app: web.Application) -> AsyncIterator[None]:
    hub, db, s = app[HUB], app[DB], app[SETTINGS]
    tasks = []

    async def floor() -> list[dict[str, Any]]:
        return (await floor_now(app))[1]

    tasks.append(asyncio.create_task(StoreProbe(hub, lambda: db.raw(db.data.store_now_ms),
                                                now_ms, s.probe_every).run()))
    tasks.append(asyncio.create_task(StorePoller(
        hub, lambda since, after: db.run(db.data.poll, since, after), s.poll_every).run()))
    tasks.append(asyncio.create_task(SilentWatch(hub, floor, s.silent_every).run()))
    if s.kafka:
        src = KafkaAlerts(hub, s.kafka, s.alerts_topic, db.data.jurisdictions,
                          s.worker_group, s.events_topic)
        tasks.append(asyncio.create_task(src.run()))
    if s.webhook:
        tasks.append(asyncio.create_task(Webhook(hub, s.webhook, s.public_url).run()))
    yield
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    db.close()


def make_app(store: Store, settings: Settings) -> web.Application:
    from .auth import gate

    app = web.Application(middlewares=[guard, gate, frame, errors])
    app[HUB] = Hub()
    app[DB] = StoreThread(store, app[HUB])
    app[SETTINGS] = settings
    app[HELD] = Held()
    app[AUTH] = AuthConfig(Accounts(settings.users), settings.allowed_hosts,
                           settings.sso_header, settings.sso_proxies,
                           settings.sso_role_header, settings.secure_cookies)
    shared = app[AUTH].shared = SharedSessions(app[DB].run, store, IDLE_S)
    app[AUTH].oidc = (Oidc(settings.oidc, shared.first_use)
                      if settings.oidc is not None else None)
    auth_routes(app)
    app.router.add_get("/", feed_page)
    app.router.add_get("/floor", floor_page)
    app.router.add_get("/tables/{table_id:.+}", table_page)
    # before /rounds/{round_id:.+}, which would take it: a round id's "/" comes as %2F
    app.router.add_get("/rounds/{round_id}/seats/{seat}/session", round_seat_view)
    app.router.add_get("/rounds/{round_id:.+}", round_page)
    app.router.add_get("/protection", protection_page)
    app.router.add_get("/sessions/{session_id:.+}", session_view)
    app.router.add_get("/dealers/{dealer_id:.+}", dealer_view)
    app.router.add_get("/violations/{violation_id:.+}", violation_page)
    app.router.add_get("/triage", triage_page)
    app.router.add_get("/search", search_page)
    app.router.add_get("/shift", shift_page)
    app.router.add_get("/shift.csv", shift_csv)
    app.router.add_get("/shift.pdf", shift_pdf)
    app.router.add_get("/api/feed", feed_stream)
    app.router.add_post("/api/triage", add_triage)
    app.router.add_get("/api/search", search_api)
    app.router.add_get("/api/status", status_api)
    app.router.add_get("/api/health", health)
    app.router.add_static("/static", STATIC)
    app.router.add_get("/favicon.ico", no_icon)
    if settings.cases is not None:
        app.router.add_static("/cases", settings.cases)
    app.cleanup_ctx.append(_background)
    return app
