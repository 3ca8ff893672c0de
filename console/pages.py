"""The console's pages: live feed, floor board, table, round, triage log, search, shift,
login. Every id in a link goes through `u` (one URL path segment, any character)."""

from __future__ import annotations

import shlex
from datetime import date, datetime
from typing import Any
from urllib.parse import quote, urlencode

from pitwatch.money import dollars

from .data import SEVERITIES, Filters
from .html import age, badge, e, local, page, u
from .roundview import change_words, render_layout, render_timeline
from .sitetime import SiteTime
from .triage import DISPOSITIONS


def _select(name: str, label: str, options: list[str], current: str) -> str:
    opts = "".join(f'<option value="{e(o)}"{" selected" if o == current else ""}>{e(o)}'
                   "</option>" for o in options)
    return (f'<label>{e(label)} <select name="{e(name)}" id="f-{e(name)}">'
            f'<option value="">any</option>{opts}</select></label>')


def _dialog() -> str:
    """The triage dialog: one finding or a selection. Enter in any field submits (the
    submit button comes first in the form); Escape or "cancel" closes it unchanged."""
    actions = "".join(f'<option value="{a}">{a}</option>' for a in (
        "acknowledge", "investigate", "escalate", "close", "assign", "note", "reopen"))
    disp = "".join(f'<option value="{d}">{d.replace("_", " ")}</option>' for d in DISPOSITIONS)
    return f"""<dialog id="triage-dialog" aria-labelledby="td-title">
<form method="dialog" id="triage-form">
<h2 id="td-title"><span id="td-what"></span></h2><p id="td-msg" class="msg"></p>
<label>action <select name="action" id="td-action">{actions}</select></label>
<div id="td-close" hidden><label>disposition <select name="disposition" id="td-disposition">
{disp}</select></label>
<label id="td-amount-l">money involved, dollars <input name="amount" id="td-amount"
 inputmode="decimal" pattern="[0-9]+([.][0-9]{{1,2}})?" autocomplete="off"></label></div>
<label id="td-assignee-l" hidden>assign to <input name="assignee" id="td-assignee"
 maxlength="64" autocomplete="off"></label>
<label>note <textarea name="note" id="td-note" maxlength="2000" rows="3"></textarea></label>
<p id="td-error" class="error" role="alert"></p>
<p class="buttons"><button value="ok" id="td-submit" class="primary">record</button>
<button value="cancel" type="button" id="td-cancel">cancel</button></p></form></dialog>"""


def feed(f: Filters, tables: list[str], codes: list[str], jurisdictions: list[str],
         group_window_ms: int) -> str:
    form = ('<form id="filters" class="filters">'
            + _select("severity", "severity", list(SEVERITIES), f.severity)
            + _select("code", "code", codes, f.code)
            + _select("table", "table", tables, f.table)
            + _select("jurisdiction", "jurisdiction", jurisdictions, f.jurisdiction)
            + '<label class="check"><input type="checkbox" name="unhandled" value="1" '
            f'id="f-unhandled"{" checked" if f.unhandled else ""}> unhandled only</label>'
            + "</form>")
    body = f"""<h1>Live alert feed</h1>
<p class="lede">Violations as the rules engine raises them, newest first, pushed to this
page the moment they reach the alerts topic. Repeats of a code at a table within
{group_window_ms // 60000} min are one row with their count. Unhandled CRITICALs stay
pinned above the feed until someone handles them.</p>
<section id="pinned" class="pinned" aria-labelledby="pinned-h" hidden>
<h2 id="pinned-h">Unhandled CRITICAL <span id="pinned-count" class="count sev-CRITICAL"></span>
</h2><ul id="pinned-list"></ul></section>
{form}
<p id="feed-note" class="note" role="status"></p><p id="feed-bad" class="note bad"></p>
<div class="bulk" id="bulk" hidden><span id="bulk-n"></span>
<button type="button" id="bulk-act">act on the selection…</button>
<button type="button" id="bulk-clear">clear</button></div>
<div class="scroll"><table id="feed" class="feed" data-window="{group_window_ms}">
<caption class="sr-only">Live alerts, newest first</caption><thead><tr>
<th scope="col"><span class="sr-only">select</span></th><th scope="col">time</th>
<th scope="col">severity</th><th scope="col">table</th><th scope="col">seat</th>
<th scope="col">code and message</th><th scope="col">citation</th>
<th scope="col">triage</th></tr></thead><tbody></tbody></table></div>
{_dialog()}"""
    return page("Live feed", body, "/", '<meta name="pitwatch-page" content="feed">')


def floor(tables: list[dict[str, Any]], now_ms: int, clock_kind: str,
          silent_after_s: int) -> str:
    rows = []
    for t in tables:
        sil = t["silent"]
        today = " ".join(f'<span class="count sev-{s}{"" if n else " zero"}" title="{s}">'
                         f'<span class="sr-only">{s} </span>{n}</span>'
                         for s, n in t["today"].items())
        open_round = (f'<a href="/rounds/{u(t["open_round"])}">{e(t["open_round"])}</a>'
                      if t["open_round"] else "—")
        rows.append(
            f'<tr class="{"silent" if sil else ""}" data-table="{e(t["table_id"])}">'
            f'<td class="id"><a href="/tables/{u(t["table_id"])}">{e(t["table_id"])}</a></td>'
            f'<td>{e(t["game"])}</td><td>{e(t["jurisdiction"])}</td>'
            f'<td class="id">{open_round}</td>'
            f'<td class="t">{local(t["last_event"])}</td>'
            f'<td class="age">{e(age(t["age_ms"]))}'
            + (' <span class="sev sev-HIGH">SILENT</span>' if sil else "")
            + f"</td><td>{today}</td></tr>")
    legend = " ".join(f'<span class="count sev-{s}">{s}</span>' for s in SEVERITIES)
    which = ("when each table's last event arrived in the store, on the store's clock"
             if clock_kind == "wall"
             else "each table's last device time against the newest in the store "
                  "(a recorded shift)")
    body = f"""<h1>Floor</h1>
<p class="lede">As of <b>{local(now_ms)}</b>. Silence is measured by {e(which)}: a table
quiet for more than {silent_after_s} s is silent, an alert in itself. Violations this
gaming day ({"found by the store's clock" if clock_kind == "wall" else "device time"}):
{legend}.</p>
<div class="scroll"><table class="floor"><thead><tr><th scope="col">table</th>
<th scope="col">game</th><th scope="col">jurisdiction</th><th scope="col">open round</th>
<th scope="col">last event (device)</th><th scope="col">quiet for</th>
<th scope="col">violations this gaming day</th></tr></thead>
<tbody>{"".join(rows) or '<tr><td colspan="7">no table in the store yet</td></tr>'}
</tbody></table></div>"""
    return page("Floor", body, "/floor", '<meta http-equiv="refresh" content="10">')


def dealer_window(t: dict[str, Any]) -> str:
    """What the table page's dealer summary covers: the last day of the table's record,
    not its whole history (that is a search by table and time)."""
    w = t.get("dealers_window")
    if not w:
        return ""
    return (f'<p class="note">Rounds started in the last 24 hours of the table\'s record: '
            f'{local(w[0])} to {local(w[1])} (device time). Older rounds: '
            f'<a href="/search?{e(urlencode({"table": t["table_id"]}))}">search the '
            'table by time</a>.</p>')


def table(t: dict[str, Any], protection: str = "") -> str:
    """A table: its dealers, its latest rounds and (`protection`) its observations."""
    dealers = "".join(
        f'<tr><td class="id"><a href="/search?dealer={u(d["dealer_id"])}">'
        f'{e(d["dealer_id"])}</a></td><td class="n">{e(d["rounds"])}</td>'
        f'<td class="n">{e(d["violations"])}</td><td class="n">{e(dollars(d["wagered"]))}</td>'
        f'<td class="n">{e(dollars(d["paid"]))}</td>'
        f'<td class="n">{e(dollars(d["collected"]))}</td></tr>' for d in t["dealers"])
    rounds = "".join(
        f'<tr class="{"" if r["complete"] else "incomplete"}">'
        f'<td class="id"><a href="/rounds/{u(r["round_id"])}">{e(r["round_id"])}</a></td>'
        f'<td class="t">{local(r["started_at"])}</td><td class="id">{e(r["dealer_id"])}</td>'
        f'<td class="n">{e(dollars(r["wagered"]))}</td><td class="n">{e(dollars(r["paid"]))}</td>'
        f'<td class="n">{e(dollars(r["collected"]))}</td>'
        f'<td class="n">{e(dollars(r["returned"]))}</td>'
        f'<td class="n">{e(r["violations"]) if r["violations"] else ""}</td>'
        f'<td>{"" if r["complete"] else "incomplete"}</td></tr>' for r in t["rounds"])
    q = urlencode({"table": t["table_id"]})
    body = f"""<h1 class="id">Table {e(t["table_id"])}</h1>
<p class="lede">{e(t["jurisdiction"])} {e(t["game"])} ·
<a href="/?{e(q)}">its alerts in the live feed</a> ·
<a href="/search?{e(q)}">search its findings</a></p>
<h2>Dealers</h2>{dealer_window(t)}
<div class="scroll"><table class="dealers"><thead><tr><th>dealer</th>
<th>rounds</th><th>violations</th><th>wagered</th><th>paid</th><th>collected</th></tr>
</thead><tbody>{dealers}</tbody></table></div>
<h2>Rounds, newest first</h2><div class="scroll"><table class="rounds"><thead><tr>
<th>round</th><th>started</th><th>dealer</th><th>wagered</th><th>paid</th><th>collected</th>
<th>returned</th><th>violations</th><th></th></tr></thead><tbody>{rounds}</tbody></table>
</div>{protection}"""
    return page(f"Table {t['table_id']}", body)


def round_page(r: dict[str, Any], cases: list[str], protection: str = "") -> str:
    """A round as it happened; `cases`: the case folders (under --cases) that hold it;
    `protection`: the observations that touch it."""
    s = r["summary"]
    if s:
        facts = (f'<dl class="facts"><dt>table</dt><dd class="id"><a href="/tables/'
                 f'{u(s["table_id"])}">{e(s["table_id"])}</a> · {e(s["jurisdiction"])} '
                 f'{e(s["game"])}</dd><dt>dealer</dt><dd class="id">{e(s["dealer_id"])}</dd>'
                 f'<dt>pack</dt><dd>{e(s["pack"])} {e(s["pack_version"])}</dd>'
                 f'<dt>device time</dt><dd>{local(int(s["started_at"]))} → '
                 f'{local(int(s["ended_at"]))}</dd>'
                 f'<dt>money</dt><dd>wagered {e(dollars(s["wagered"]))} · paid '
                 f'{e(dollars(s["paid"]))} · collected {e(dollars(s["collected"]))} · '
                 f'returned {e(dollars(s["returned"]))}</dd>'
                 f'<dt>state</dt><dd>{"complete" if s["complete"] else "incomplete"}, '
                 f'{len(r["violations"])} findings</dd></dl>')
    else:
        facts = (f'<p class="note">Open round (no summary yet) at table '
                 f'<a href="/tables/{u(r["table_id"])}">{e(r["table_id"])}</a>.</p>')
    # the id after `--`: one starting with "-" is the round, not an option
    case = ('<p class="case">Case files (pitwatch investigate): ' + ", ".join(
        f'<a href="/cases/{u(c)}/report.html">{e(c)}</a>' for c in cases) + "</p>"
            if cases else
            f'<p class="case note">No case file yet: <code>pitwatch investigate --out '
            f'cases/NAME -- {e(shlex.quote(r["round_id"]))}</code></p>')
    counts = {sev: sum(1 for v in r["violations"] if v["severity"] == sev)
              for sev in SEVERITIES}
    sums = " ".join(f"{badge(k)} {n}" for k, n in counts.items() if n)
    body = (f'<h1 class="id">Round {e(r["round_id"])}</h1>{facts}{case}'
            f'<h2>The layout at the end</h2>{render_layout(r["events"])}'
            f'<h2>As it happened {sums}</h2>'
            f'{render_timeline(r["events"], r["violations"], r["triage"])}{protection}')
    return page(f"Round {r['round_id']}", body)


def triage_log(rows: list[dict[str, Any]]) -> str:
    body_rows = "".join(
        f'<tr><td class="t">{local(t["at"])}</td><td>{e(t["who"])} '
        f'<span class="sub">{e(t["role"])}</span></td><td>{e(change_words(t))}</td>'
        f'<td>{e(t["prev_status"])} → {e(t["status"])}</td>'
        f'<td class="id"><a href="/violations/{u(t["violation_id"])}">'
        f'{e(t["violation_id"][:16])}…</a></td><td>{e(t["note"])}</td></tr>' for t in rows)
    body = f"""<h1>Triage log</h1>
<p class="lede">Every change to a finding's handling, newest first: who (logged in),
when, what it was before. The log is append-only and kept apart from the violations,
which it never changes.</p>
<div class="scroll"><table class="triage"><thead><tr><th>when</th><th>who</th>
<th>change</th><th>status</th><th>violation</th><th>note</th></tr></thead>
<tbody>{body_rows}</tbody></table></div>"""
    return page("Triage log", body, "/triage")


def local_input_ms(site: SiteTime, value: str, what: str) -> int:
    """A datetime-local field (the site's local time) as UTC ms."""
    try:
        t = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"{what}: a local date and time, YYYY-MM-DDTHH:MM") from exc
    if t.tzinfo is None:
        t = t.replace(tzinfo=site.zone)
    return int(t.timestamp() * 1000)


def search(f: Filters, q: dict[str, str], got: dict[str, Any], tables: list[str],
           codes: list[str], jurisdictions: list[str], can_act: bool) -> str:
    def text(name: str, label: str, size: int = 14) -> str:
        return (f'<label>{e(label)} <input name="{name}" id="s-{name}" size="{size}" '
                f'maxlength="128" value="{e(q.get(name, ""))}"></label>')

    form = ('<form class="filters" method="get" action="/search" role="search">'
            + text("round", "round") + text("dealer", "dealer")
            + _select("table", "table", tables, f.table)
            + text("seat", "seat", 3)
            + _select("code", "code", codes, f.code)
            + _select("severity", "severity", list(SEVERITIES), f.severity)
            + _select("jurisdiction", "jurisdiction", jurisdictions, f.jurisdiction)
            + '<label>from <input type="datetime-local" name="from" '
            f'value="{e(q.get("from", ""))}"></label>'
            '<label>to <input type="datetime-local" name="to" '
            f'value="{e(q.get("to", ""))}"></label>'
            '<label class="check"><input type="checkbox" name="unhandled" value="1"'
            f'{" checked" if f.unhandled else ""}> unhandled only</label>'
            '<button class="primary">search</button></form>')
    states = got["states"]
    rows = []
    for a in got["alerts"]:
        st = states.get(a["violation_id"])
        status = st["status"] if st else "new"
        rows.append(
            f'<tr data-id="{e(a["violation_id"])}" class="sev-row-{e(a["severity"])}">'
            f'<td class="t">{local(a["detected_at"])}</td><td>{badge(a["severity"])}</td>'
            f'<td class="id"><a href="/tables/{u(a["table_id"])}">{e(a["table_id"])}</a></td>'
            f'<td class="id"><a href="/violations/{u(a["violation_id"])}">'
            f'{e(a["round_id"])}</a></td><td class="n">{e(a["seat"] or "")}</td>'
            f'<td><b>{e(a["code"])}</b><div class="msg">{e(a["message"])}</div></td>'
            f'<td><span class="st st-{e(status)}">{e(status)}</span></td></tr>')
    total, offset, limit = got["total"], got["offset"], got["limit"]
    counts = " ".join(f'{badge(s)} {n}' for s, n in got["counts"].items())
    base = {k: v for k, v in q.items() if k not in ("offset",) and v}
    nav = []
    if offset > 0:
        nav.append(f'<a href="/search?{e(urlencode({**base, "offset": max(0, offset - limit)}))}"'
                   ' rel="prev">← newer</a>')
    if offset + limit < total:
        nav.append(f'<a href="/search?{e(urlencode({**base, "offset": offset + limit}))}" '
                   'rel="next">older →</a>')
    shown = (f"{offset + 1}–{min(offset + limit, total)} of {total}" if total
             else "nothing matches")
    if not got.get("exact", True):  # counted back in time as far as its budget
        older = {k: v for k, v in base.items() if k not in ("to", "until")}
        shown = (f"{offset + 1}–{offset + len(got['alerts'])} of {total}+" if got["alerts"]
                 else "nothing matches")
        nav.append(f'<a href="/search?{e(urlencode({**older, "until": got["reached"]}))}" '
                   'rel="next">earlier than this →</a>')
        reach = (f'<p class="note">Counted among the violations detected since '
                 f'{local(got["reached"])}: a search no index selects (no round, dealer, '
                 'code or severity) reads back that far at a time. Earlier ones: the '
                 'link below, or narrow the time.</p>')
    else:
        reach = ""
    body = f"""<h1>Search findings</h1>
<p class="lede">Over the whole store, newest first (device time, shown in the site's
time with UTC beside it). Open a finding to see it in its round.</p>
{form}
<p class="counts" role="status" id="search-counts"><b>{e(shown)}</b> · {counts}</p>
{reach}
<div class="scroll"><table class="results" id="results"><thead><tr><th>time</th>
<th>severity</th><th>table</th><th>round</th><th>seat</th><th>code and message</th>
<th>status</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>
<nav class="pager" aria-label="result pages">{" ".join(nav)}</nav>"""
    return page("Search", body, "/search")


def shift(site: SiteTime, day: date, n: int, lo: int, hi: int,
          rows: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{s}</th>" for s in SEVERITIES)
    body_rows = "".join(
        f'<tr><td class="id"><a href="/tables/{u(r["table_id"])}">{e(r["table_id"])}</a></td>'
        f'<td class="id"><a href="/search?dealer={u(r["dealer_id"])}">{e(r["dealer_id"])}</a>'
        f'</td><td class="n">{r["rounds"]}</td><td class="n">{r["incomplete"]}</td>'
        + "".join(f'<td class="n">{r["findings"][s]}</td>' for s in SEVERITIES)
        + f'<td class="n">{r["unhandled"]}</td>'
        f'<td class="n">{e(dollars(r["confirmed_cents"]))}</td>'
        f'<td class="n">{e(dollars(r["wagered"]))}</td><td class="n">{e(dollars(r["paid"]))}'
        f'</td><td class="n">{e(dollars(r["collected"]))}</td></tr>' for r in rows)
    shifts = "".join(
        f'<option value="{i + 1}"{" selected" if i == n else ""}>{e(site.shift_name(i))}'
        "</option>" for i in range(len(site.shifts)))
    q = urlencode({"day": day.isoformat(), "shift": n + 1})
    body = f"""<h1>Shift summary</h1>
<form class="filters" method="get" action="/shift"><label>gaming day
<input type="date" name="day" value="{day.isoformat()}"></label>
<label>shift <select name="shift">{shifts}</select></label>
<button class="primary">show</button></form>
<p class="lede">Gaming day {day.isoformat()}, {e(site.shift_name(n))}, site time
{e(site.tz)}: rounds started from <b>{local(lo)}</b> to <b>{local(hi)}</b> (device time),
by table and dealer. Money confirmed moved wrongly is what triage closed as confirmed.
Export: <a href="/shift.csv?{e(q)}" download>CSV</a> ·
<a href="/shift.pdf?{e(q)}" download>PDF</a></p>
<div class="scroll"><table class="shift" id="shift"><thead><tr><th>table</th><th>dealer</th>
<th>rounds</th><th>incomplete</th>{head}<th>unhandled</th><th>confirmed wrong</th>
<th>wagered</th><th>paid</th><th>collected</th></tr></thead>
<tbody>{body_rows or '<tr><td colspan="13">no round in this shift</td></tr>'}</tbody>
</table></div>"""
    return page("Shift", body, "/shift")


def login(token: str, next_url: str, message: str, oidc: bool = False) -> str:
    msg = f'<p class="error" role="alert">{e(message)}</p>' if message else ""
    sso = (f'<p><a class="button primary" id="login-oidc" href="/login/oidc?next='
           f'{e(quote(next_url, safe=""))}">sign in with single sign-on</a></p>'
           if oidc else "")
    body = f"""<h1>Log in</h1>{msg}{sso}
<form method="post" action="/login" class="login">
<input type="hidden" name="csrf" value="{e(token)}">
<input type="hidden" name="next" value="{e(next_url)}">
<label>user <input name="user" id="login-user" autocomplete="username" required
 maxlength="64" autofocus></label>
<label>password <input name="password" id="login-password" type="password"
 autocomplete="current-password" required></label>
<p><button class="primary" id="login-submit">log in</button></p></form>"""
    return page("Log in", body)


def error(status: int, message: str) -> str:
    return page(f"{status}", f'<h1>{status}</h1><p class="error">{e(message)}</p>'
                '<p><a href="/">back to the live feed</a></p>')
