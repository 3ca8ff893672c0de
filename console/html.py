"""HTML the pages share: escaping, the page frame, times and badges. Pages are plain
server-rendered HTML with one small script (static/console.js); no build step."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any

NAV = (("/", "Live feed"), ("/floor", "Floor"), ("/triage", "Triage log"))


def e(value: Any) -> str:
    """Text for HTML, quotes included."""
    return escape("" if value is None else str(value), quote=True)


def clock(ms: int) -> str:
    """Device time in UTC to the millisecond, as surveillance lines it up with video."""
    t = datetime.fromtimestamp(ms / 1000, UTC)
    return f"{t:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}"


def age(ms: int) -> str:
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
    nav = "".join(f'<a href="{href}"{" class=on" if href == active else ""}>{e(name)}</a>'
                  for href, name in NAV)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · pitwatch</title>
<link rel="stylesheet" href="/static/console.css">{head}
</head><body>
<header class="top"><a class="brand" href="/">pitwatch</a><nav>{nav}</nav>
<span id="status" class="status"></span></header>
<main>{body}</main>
<script src="/static/console.js"></script>
</body></html>"""
