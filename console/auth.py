"""Who is at the console: sessions, login and logout, the Host header, CSRF.

- A request whose Host is not one the console was told it is served as is refused
  (421): a page of another site that resolved its name to this address (DNS
  rebinding) reads nothing.
- Pages need a session (a random token in an HttpOnly, SameSite=Strict cookie), kept
  in the store (console/sessions.py: its SHA-256 only) so every console process over
  the same store honours it and a logout at any of them ends it at all; the
  login page and /static do not, nor /api/health (for monitors: without a session it
  says only ok, the store up or down and Kafka's state word; the whole status, with
  silent tables, error texts and lag, needs a session).
- Every POST carries the session's CSRF token (header X-CSRF-Token or form field
  `csrf`); the login form a token of its own cookie (double submit).
- OpenID Connect (console/oidc.py): with `oidc` set, the login page offers the
  issuer's sign-in; the id_token's user and mapped role make a session as a password
  login does.
- Single sign-on: with `sso_header` set, a request from one of `sso_proxies` (the
  reverse proxy that authenticated the user) is that header's user; its role is the
  accounts file's for that name, else the `sso_role_header`'s, else viewer.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from aiohttp import web
from yarl import URL

from .accounts import Accounts
from .oidc import STATE_COOKIE, Oidc, OidcError
from .sessions import SharedSessions, csrf_of
from .triage import MAY, ROLES

log = logging.getLogger("pitwatch.console")
COOKIE = "pitwatch_session"
LOGIN_COOKIE = "pitwatch_login"
IDLE_S = 12 * 3600  # a session unused this long ends: a shift and then some
PUBLIC = ("/login", "/login/oidc", "/login/oidc/callback", "/static/", "/api/health",
          "/favicon.ico")
LOCKOUT_AFTER = 5  # wrong passwords for a name before it waits
LOCKOUT_S = 30.0
FAILS_FORGET_S = 15 * 60.0  # wrong passwords this long ago no longer count
MAX_FAILURES = 10_000  # names with wrong passwords remembered, the oldest forgotten first
MAX_SSO_SESSIONS = 10_000  # single sign-on sessions (made again from the header at will)
PRUNE_EVERY_S = 60.0
VERIFY_AT_ONCE = 2  # argon2id checks running at one time (each ~50 ms of a CPU, 64 MiB)


@dataclass(slots=True)
class Session:
    user: str
    role: str
    csrf: str
    seen: float
    via: str = "password"  # password | oidc (both kept in the store) | sso (a header's)


@dataclass
class AuthConfig:
    accounts: Accounts
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
    sso_header: str = ""
    sso_proxies: tuple[str, ...] = ()
    sso_role_header: str = ""
    secure_cookies: bool = False
    #: this process's sessions by token: a cache of the store's (`shared`), and what
    #: it goes on with while the store does not answer; single sign-on's alone
    sessions: dict[str, Session] = field(default_factory=dict)
    shared: SharedSessions | None = None
    oidc: Oidc | None = None  # OpenID Connect sign-in, when configured
    #: name -> (wrong passwords in a row, locked until, the last one's time)
    failures: dict[str, tuple[int, float, float]] = field(default_factory=dict)
    pruned_at: float = 0.0
    verifying: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(VERIFY_AT_ONCE))


def prune(cfg: AuthConfig, now: float, force: bool = False) -> None:
    """Forget ended sessions and old wrong passwords, so neither grows without limit:
    at most once a PRUNE_EVERY_S unless forced, and whenever a cap is passed."""
    sso = sum(1 for s in cfg.sessions.values() if s.via == "sso")
    if (not force and now - cfg.pruned_at < PRUNE_EVERY_S and sso <= MAX_SSO_SESSIONS
            and len(cfg.failures) <= MAX_FAILURES):
        return
    cfg.pruned_at = now
    for token, old in list(cfg.sessions.items()):
        if now - old.seen > IDLE_S:
            del cfg.sessions[token]
    for name, (_, until, last) in list(cfg.failures.items()):
        if until <= now and now - last > FAILS_FORGET_S:
            del cfg.failures[name]
    over = sum(1 for s in cfg.sessions.values() if s.via == "sso") - MAX_SSO_SESSIONS
    if over > 0:  # the least recently seen first: the next request makes one again
        for token, _s in sorted(((t, s) for t, s in cfg.sessions.items() if s.via == "sso"),
                                key=lambda ts: ts[1].seen)[:over]:
            del cfg.sessions[token]
    over = len(cfg.failures) - MAX_FAILURES
    if over > 0:
        for name in sorted(cfg.failures, key=lambda n: cfg.failures[n][2])[:over]:
            del cfg.failures[name]


AUTH = web.AppKey("auth", AuthConfig)
SESSION_KEY = web.RequestKey("pitwatch_session", Session)
NEW_COOKIE = web.RequestKey("pitwatch_new_session", str)


def session_of(request: web.Request) -> Session:
    return request[SESSION_KEY]


def may(request: web.Request, action: str) -> bool:
    return action in MAY.get(session_of(request).role, frozenset())


def _hostname(host: str) -> str:
    return (urlsplit("//" + host).hostname or "").lower()


def _refuse(request: web.Request, status: int, msg: str) -> web.Response:
    if request.path.startswith("/api/"):
        return web.json_response({"error": msg}, status=status)
    from .html import e, page

    return web.Response(text=page(str(status), f'<h1>{status}</h1><p class="error">'
                                  f"{e(msg)}</p>"), status=status, content_type="text/html")


def _sso(request: web.Request, cfg: AuthConfig) -> Session | None:
    if not cfg.sso_header or request.remote not in cfg.sso_proxies:
        return None
    user = request.headers.get(cfg.sso_header, "").strip()
    if not user or len(user) > 64:
        return None
    acct = cfg.accounts.get(user)
    role = acct.role if acct else request.headers.get(cfg.sso_role_header or "\0", "")
    role = role if role in ROLES else "viewer"
    token = request.cookies.get(COOKIE, "")
    s = cfg.sessions.get(token)
    if s is None or s.user != user or s.role != role:
        prune(cfg, time.monotonic())  # a client without the cookie makes one a request
        token = secrets.token_urlsafe(32)
        s = cfg.sessions[token] = Session(user, role, secrets.token_urlsafe(32),
                                          time.monotonic(), "sso")
        request[NEW_COOKIE] = token
    return s


async def peek_session(request: web.Request) -> Session | None:
    """The request's session on a public path, where the gate does not ask for one:
    its cookie's (live, its account still there) or single sign-on's. Makes none."""
    if SESSION_KEY in request:
        return request[SESSION_KEY]
    cfg = request.app[AUTH]
    if cfg.sso_header and request.remote in cfg.sso_proxies:
        user = request.headers.get(cfg.sso_header, "").strip()
        if user and len(user) <= 64:
            acct = cfg.accounts.get(user)
            return Session(user, acct.role if acct else "viewer", "", time.monotonic(), "sso")
    return await cookie_session(cfg, request.cookies.get(COOKIE, ""))


async def cookie_session(cfg: AuthConfig, token: str) -> Session | None:
    """The live session of a cookie's token: the store's newest row for it (another
    process's login is honoured, a logout anywhere holds), or, while the store does not
    answer, the one this process verified itself. A password session whose account was
    removed has ended; its role is the accounts file's now."""
    if not token or len(token) > 128:
        return None
    s = cfg.sessions.get(token)
    if cfg.shared is not None and (s is None or s.via != "sso"):
        try:
            row = await cfg.shared.check(token)
        except Exception as e:  # the store does not answer: this process's
            log.debug("console: session check without the store: %s", str(e)[:200])
        else:
            if row is None:
                cfg.sessions.pop(token, None)
                return None
            if s is None or s.user != row.user or s.via != row.via:
                prune(cfg, time.monotonic())
                s = cfg.sessions[token] = Session(row.user, row.role, csrf_of(token),
                                                  time.monotonic(), row.via)
            s.seen = time.monotonic()  # the store's expiry is the one that holds
    if s is not None and (time.monotonic() - s.seen > IDLE_S
                          or (s.via == "password" and cfg.accounts.get(s.user) is None)):
        cfg.sessions.pop(token, None)
        return None  # expired, or the account was removed
    if s is not None and s.via == "password":
        acct = cfg.accounts.get(s.user)
        if acct is not None:
            s.role = acct.role  # a role changed by `pitwatch users add` holds at once
    return s


@web.middleware
async def gate(request: web.Request, handler: Any) -> web.StreamResponse:
    cfg = request.app[AUTH]
    host = _hostname(request.host)
    if host not in cfg.allowed_hosts:
        return _refuse(request, 421, f"this console is not served as {host[:80]!r}; "
                       "add it with serve --allow-host")
    if any(request.path == p or (p.endswith("/") and request.path.startswith(p))
           for p in PUBLIC):
        resp: web.StreamResponse = await handler(request)
        return resp
    s = _sso(request, cfg)
    if s is None:
        s = await cookie_session(cfg, request.cookies.get(COOKIE, ""))
    if s is None:
        if request.path.startswith("/api/"):
            return web.json_response({"error": "log in first", "login": "/login"},
                                     status=401)
        nxt = request.path_qs if request.method == "GET" else "/"
        raise web.HTTPFound("/login?next=" + quote(nxt, safe=""))
    s.seen = time.monotonic()
    if request.method == "POST":
        got = request.headers.get("X-CSRF-Token", "")
        if not got and request.content_type == "application/x-www-form-urlencoded":
            got = str((await request.post()).get("csrf", ""))
        if not hmac.compare_digest(got.encode(), s.csrf.encode()):
            return _refuse(request, 403, "this action did not come from the console's own "
                           "page (CSRF token missing or wrong): reload the page")
    request[SESSION_KEY] = s
    resp = await handler(request)
    if NEW_COOKIE in request:
        _set_cookie(resp, cfg, COOKIE, request[NEW_COOKIE])
    return resp


def _set_cookie(resp: web.StreamResponse, cfg: AuthConfig, name: str, value: str) -> None:
    resp.set_cookie(name, value, httponly=True, samesite="Strict", path="/",
                    secure=cfg.secure_cookies)


def _safe_next(value: str) -> str:
    """Only a path of this console (no scheme, no //host): never an open redirect.

    No space or control character either (yarl drops a tab or newline, so
    `/<TAB>/evil.com` would leave as `//evil.com`), and the value is checked again
    as yarl writes it into the Location header."""
    if (not value.startswith("/") or value.startswith("//") or "\\" in value
            or any(ord(c) < 0x21 or ord(c) == 0x7F for c in value)):
        return "/"
    try:
        url = URL(value)
    except ValueError:
        return "/"
    if str(url).startswith("//") or url.host or url.scheme:
        return "/"
    return value


async def login_page(request: web.Request) -> web.Response:
    from .pages import login

    # the token already set stays: a second login page (another tab, the browser's own
    # requests) must not void the form shown first
    token = request.cookies.get(LOGIN_COOKIE, "")
    if not 24 <= len(token) <= 64:
        token = secrets.token_urlsafe(24)
    resp = web.Response(text=login(token, _safe_next(request.query.get("next", "/")), "",
                                   oidc=request.app[AUTH].oidc is not None),
                        content_type="text/html")
    _set_cookie(resp, request.app[AUTH], LOGIN_COOKIE, token)
    return resp


async def login_post(request: web.Request) -> web.Response:
    from .pages import login

    cfg = request.app[AUTH]
    form = await request.post()
    nxt = _safe_next(str(form.get("next", "/")))
    token = request.cookies.get(LOGIN_COOKIE, "")
    if not token or not hmac.compare_digest(str(form.get("csrf", "")).encode(),
                                            token.encode()):
        return web.Response(text=login(secrets.token_urlsafe(24), nxt, "The login form "
                                       "expired: try again."), status=403,
                            content_type="text/html")
    name = str(form.get("user", ""))[:64]
    password = str(form.get("password", ""))[:1024]

    def locked() -> web.Response | None:
        until = cfg.failures.get(name, (0, 0.0, 0.0))[1]
        if until <= time.monotonic():
            return None
        msg = ("Too many wrong passwords for this name: wait "
               f"{int(until - time.monotonic()) + 1} s.")
        return web.Response(text=login(token, nxt, msg), status=429, content_type="text/html")

    if (refused := locked()) is not None:
        return refused
    # argon2id is ~50 ms of a CPU: off the event loop, and only a few at once
    async with cfg.verifying:
        if (refused := locked()) is not None:  # locked by the ones that waited before
            return refused
        acct = await asyncio.get_running_loop().run_in_executor(
            None, cfg.accounts.verify, name, password)
    now = time.monotonic()
    prune(cfg, now)  # ended sessions and old wrong passwords leave memory here
    if acct is None:
        # read after the check: wrong passwords sent at once all count
        fails, _, last = cfg.failures.get(name, (0, 0.0, now))
        fails = 0 if now - last > FAILS_FORGET_S else fails
        fails += 1
        cfg.failures[name] = ((0, now + LOCKOUT_S, now) if fails >= LOCKOUT_AFTER
                              else (fails, 0.0, now))
        return web.Response(text=login(token, nxt, "Wrong user name or password."),
                            status=401, content_type="text/html")
    cfg.failures.pop(name, None)
    sid = await new_session(cfg, acct.name, acct.role, "password")
    resp = web.HTTPFound(nxt)
    _set_cookie(resp, cfg, COOKIE, sid)
    resp.del_cookie(LOGIN_COOKIE, path="/")
    raise resp


async def new_session(cfg: AuthConfig, user: str, role: str, via: str) -> str:
    """A new session for the user, recorded in the store (when the console keeps it
    there; while the store does not answer, when it answers again, this process
    honouring it meanwhile) and in this process; its token, for the cookie."""
    sid = secrets.token_urlsafe(32)
    if cfg.shared is not None and not await cfg.shared.open(sid, user, role, via):
        log.warning("console: a login kept until the store answers to record it")
    prune(cfg, time.monotonic())
    cfg.sessions[sid] = Session(user, role, csrf_of(sid), time.monotonic(), via)
    return sid


async def oidc_start(request: web.Request) -> web.Response:
    """Off to the issuer's sign-in, the state in a cookie of its own (SameSite=Lax: the
    issuer's redirect back is a navigation from another site)."""
    from .pages import login

    cfg = request.app[AUTH]
    if cfg.oidc is None:
        raise web.HTTPNotFound()
    try:
        nxt = _safe_next(request.query.get("next", "/"))
        url, state = await cfg.oidc.start(nxt if len(nxt) <= 2000 else "/")
    except OidcError as e:
        return web.Response(text=login("", "/", f"Single sign-on is not available: {e}",
                                       oidc=True), status=502, content_type="text/html")
    resp = web.HTTPFound(url)
    resp.set_cookie(STATE_COOKIE, state, httponly=True, samesite="Lax",
                    path="/login/oidc/callback", secure=cfg.secure_cookies,
                    max_age=600)
    raise resp


async def oidc_callback(request: web.Request) -> web.Response:
    """The issuer's answer: the state taken once, the code traded, the id_token checked
    (console/oidc.py); then a session. The page that sets its cookie moves on by itself
    (a meta refresh): a redirect would still be part of the issuer's cross-site
    navigation, and the SameSite=Strict session cookie would not go with it."""
    from .html import e
    from .pages import login

    cfg = request.app[AUTH]
    if cfg.oidc is None:
        raise web.HTTPNotFound()

    def refused(msg: str, status: int) -> web.Response:
        resp = web.Response(text=login("", "/", f"Single sign-on refused: {msg}",
                                       oidc=True), status=status, content_type="text/html")
        resp.del_cookie(STATE_COOKIE, path="/login/oidc/callback")
        return resp

    q = request.query
    try:
        pending = await cfg.oidc.take(q.get("state", "")[:128],
                                      request.cookies.get(STATE_COOKIE, "")[:4096])
    except OidcError as err:
        return refused(str(err), 400)
    if "iss" in q and q["iss"] != cfg.oidc.cfg.issuer:  # RFC 9207: another issuer's answer
        return refused("the answer is from another issuer", 403)
    if "error" in q:
        return refused(f"the issuer says {q.get('error', '')[:60]!r}", 403)
    code = q.get("code", "")
    if not code or len(code) > 2048:
        return refused("the issuer sent no code", 400)
    try:
        user, role = await cfg.oidc.finish(code, pending)
    except OidcError as err:
        log.warning("console: single sign-on refused: %s", err)
        return refused(str(err), 403)
    sid = await new_session(cfg, user, role, "oidc")
    nxt = _safe_next(pending.next_url)  # the cookie's: checked again as it is used
    from .html import page

    resp = web.Response(text=page("Signed in", f'<h1>Signed in</h1><p>as {e(user)} '
                                  f'({e(role)}). <a href="{e(nxt)}">Continue</a></p>',
                                  head=f'<meta http-equiv="refresh" content="0;url='
                                  f'{e(nxt)}">'), content_type="text/html")
    _set_cookie(resp, cfg, COOKIE, sid)
    resp.del_cookie(STATE_COOKIE, path="/login/oidc/callback")
    return resp


async def logout(request: web.Request) -> web.Response:
    cfg = request.app[AUTH]
    token = request.cookies.get(COOKIE, "")
    s = cfg.sessions.pop(token, None)
    if cfg.shared is not None and s is not None and s.via != "sso":
        # revoked in the store: every console process refuses the cookie from now on
        # (while the store does not answer, this process does, and writes it later)
        await cfg.shared.close(token, s.user, s.role, s.via)
    resp = web.HTTPFound("/login")
    resp.del_cookie(COOKIE, path="/")
    raise resp


def routes(app: web.Application) -> None:
    app.router.add_get("/login", login_page)
    app.router.add_post("/login", login_post)
    app.router.add_post("/logout", logout)
    app.router.add_get("/login/oidc", oidc_start)
    app.router.add_get("/login/oidc/callback", oidc_callback)
