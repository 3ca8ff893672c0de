"""HTML the pages share: escaping, URLs of ids, the page frame, times and badges. Pages
are plain server-rendered HTML with one small script (static/console.js); no build step.

The frame knows who is looking and what the console knows of its sources through
`CONTEXT`, set for each request (by the `frame` middleware, console/app.py): the user
and role, the CSRF token the script sends with every action, the site's clock, and "as
of" when the page is the last copy held while the store does not answer."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from .sitetime import SiteTime
from .triage import MAY

NAV = (("/", "Live feed"), ("/floor", "Floor"), ("/search", "Search"), ("/shift", "Shift"),
       ("/triage", "Triage log"), ("/protection", "Protection"))


@dataclass(frozen=True, slots=True)
class PageContext:
    user: str = ""
    role: str = ""
    csrf: str = ""
    site: SiteTime = field(default_factory=SiteTime)
    as_of: int | None = None  # ms: the page is the last copy held (the store is away)
    store_error: str = ""


CONTEXT: ContextVar[PageContext | None] = ContextVar("pitwatch_page", default=None)


def context() -> PageContext:
    """This request's page context (an anonymous one outside a request)."""
    return CONTEXT.get() or PageContext()


def e(value: Any) -> str:
    """Text for HTML, quotes included."""
    return escape("" if value is None else str(value), quote=True)


def u(value: Any) -> str:
    """An id as one URL path segment (every character of any id survives: `/`, `?`,
    `#`, spaces, `%`), ready for an HTML attribute."""
    return e(quote(str(value), safe=""))


def clock(ms: int) -> str:
    """Device time in UTC to the millisecond, as surveillance lines it up with video."""
    t = datetime.fromtimestamp(ms / 1000, UTC)
    return f"{t:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}"


def local(ms: int) -> str:
    """The site's local time with UTC beside it (HTML)."""
    return e(context().site.show(ms))


def age(ms: int | None) -> str:
    if ms is None:
        return "not recorded"
    s = ms // 1000
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 172_800:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} days"


def badge(severity: str) -> str:
    return f'<span class="sev sev-{e(severity)}">{e(severity)}</span>'


def page(title: str, body: str, active: str = "", head: str = "") -> str:
    ctx = context()
    nav = "".join(f'<a href="{href}"{" class=on aria-current=page" if href == active else ""}>'
                  f"{e(name)}</a>" for href, name in NAV) if ctx.user else ""
    who = (f'<span class="who">{e(ctx.user)} <span class="role">{e(ctx.role)}</span></span>'
           '<button type="button" id="mute" class="mute" aria-pressed="false" '
           'title="the audible alarm, for you on this browser">alarm sound: on</button>'
           f'<form method="post" action="/logout" class="logout"><input type="hidden" '
           f'name="csrf" value="{e(ctx.csrf)}"><button>log out</button></form>'
           if ctx.user else "")
    stale = (f'<p class="stale" role="status">The store does not answer ({e(ctx.store_error)}): '
             f"this page is the last copy held, as of <b>{local(ctx.as_of)}</b>.</p>"
             if ctx.as_of is not None else "")
    meta = (f'<meta name="pitwatch-user" content="{e(ctx.user)}">'
            f'<meta name="pitwatch-role" content="{e(ctx.role)}">'
            f'<meta name="pitwatch-csrf" content="{e(ctx.csrf)}">'
            f'<meta name="pitwatch-tz" content="{e(ctx.site.tz)}">'
            f'<meta name="pitwatch-may" content="{e(" ".join(sorted(MAY.get(ctx.role, ()))))}">'
            if ctx.user else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · pitwatch</title>
<link rel="stylesheet" href="/static/console.css">{meta}{head}
</head><body>
<a class="skip" href="#main">skip to content</a>
<header class="top"><a class="brand" href="/">pitwatch</a><nav aria-label="pages">{nav}</nav>
<span id="status" class="status" role="status"></span>{who}</header>
<div id="banner" class="banner" role="alert" hidden></div>
<div id="announce" class="sr-only" aria-live="polite"></div>
<audio id="alarm" src="/static/alarm.wav" preload="auto"></audio>
<main id="main">{stale}{body}</main>
<script src="/static/console.js"></script>
</body></html>"""
