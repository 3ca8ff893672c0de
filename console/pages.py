"""The console's pages: live feed, floor board, table, round, triage log."""

from __future__ import annotations

from typing import Any

from pitwatch.money import dollars

from .data import SEVERITIES, Filters
from .html import age, badge, clock, e, page
from .roundview import render_layout, render_timeline


def _select(name: str, label: str, options: list[str], current: str) -> str:
    opts = "".join(f'<option value="{e(o)}"{" selected" if o == current else ""}>{e(o)}'
                   "</option>" for o in options)
    return (f'<label>{e(label)} <select name="{e(name)}" id="f-{e(name)}">'
            f'<option value="">any</option>{opts}</select></label>')


def feed(f: Filters, tables: list[str], codes: list[str], jurisdictions: list[str]) -> str:
    form = ('<form id="filters" class="filters">'
            + _select("severity", "severity", list(SEVERITIES), f.severity)
            + _select("code", "code", codes, f.code)
            + _select("table", "table", tables, f.table)
            + _select("jurisdiction", "jurisdiction", jurisdictions, f.jurisdiction)
            + "</form>")
    body = f"""<h1>Live alert feed</h1>
<p class="lede">Violations as the rules engine raises them, newest first: pushed to this
page the moment they reach the alerts topic. Acknowledge one to record who looked at it.</p>
{form}
<p id="silent" class="silent-banner" hidden></p>
<p id="feed-note" class="note"></p><p id="feed-bad" class="note bad"></p>
<table id="feed" class="feed"><thead><tr><th>device time (UTC)</th><th>severity</th>
<th>table</th><th>seat</th><th>code and message</th><th>citation</th><th>triage</th></tr>
</thead><tbody></tbody></table>
<dialog id="ack-dialog"><form method="dialog" id="ack-form">
<h2>Acknowledge <span id="ack-code"></span></h2><p id="ack-msg"></p>
<label>who <input name="who" id="ack-who" required maxlength="64"
 autocomplete="username"></label>
<label>note <textarea name="note" id="ack-note" maxlength="1000" rows="3"></textarea></label>
<p class="buttons"><button value="cancel" formnovalidate>cancel</button>
<button value="ok" id="ack-submit">acknowledge</button></p></form></dialog>"""
    return page("Live feed", body, "/", '<meta name="pitwatch-page" content="feed">')


def floor(tables: list[dict[str, Any]], now_ms: int, clock_kind: str,
          silent_after_s: int) -> str:
    rows = []
    for t in tables:
        sil = t["silent"]
        today = " ".join(f'<span class="count sev-{s}{"" if n else " zero"}" title="{s}">'
                         f"{n}</span>" for s, n in t["today"].items())
        open_round = (f'<a href="/rounds/{e(t["open_round"])}">{e(t["open_round"])}</a>'
                      if t["open_round"] else "—")
        rows.append(
            f'<tr class="{"silent" if sil else ""}" data-table="{e(t["table_id"])}">'
            f'<td><a href="/tables/{e(t["table_id"])}">{e(t["table_id"])}</a></td>'
            f'<td>{e(t["game"])}</td><td>{e(t["jurisdiction"])}</td><td>{open_round}</td>'
            f'<td class="t">{clock(t["last_event"])}</td>'
            f'<td class="age">{e(age(t["age_ms"]))}'
            + (' <span class="sev sev-HIGH">SILENT</span>' if sil else "")
            + f"</td><td>{today}</td></tr>")
    legend = " ".join(f'<span class="count sev-{s}">{s}</span>' for s in SEVERITIES)
    which = ("the console's clock" if clock_kind == "wall"
             else "the newest event in the store (a recorded shift)")
    body = f"""<h1>Floor</h1>
<p class="lede">As of <b>{clock(now_ms)} UTC</b> ({e(which)}). A table whose last event is
older than {silent_after_s} s is silent: an alert in itself. Violations today (UTC day):
{legend}.</p>
<table class="floor"><thead><tr><th>table</th><th>game</th><th>jurisdiction</th>
<th>open round</th><th>last event</th><th>age</th><th>violations today</th></tr></thead>
<tbody>{"".join(rows) or '<tr><td colspan="7">no table in the store yet</td></tr>'}
</tbody></table>"""
    return page("Floor", body, "/floor", '<meta http-equiv="refresh" content="10">')


def table(t: dict[str, Any]) -> str:
    dealers = "".join(
        f'<tr><td>{e(d["dealer_id"])}</td><td class="n">{e(d["rounds"])}</td>'
        f'<td class="n">{e(d["violations"])}</td><td class="n">{e(dollars(d["wagered"]))}</td>'
        f'<td class="n">{e(dollars(d["paid"]))}</td>'
        f'<td class="n">{e(dollars(d["collected"]))}</td></tr>' for d in t["dealers"])
    rounds = "".join(
        f'<tr class="{"" if r["complete"] else "incomplete"}">'
        f'<td><a href="/rounds/{e(r["round_id"])}">{e(r["round_id"])}</a></td>'
        f'<td class="t">{clock(r["started_at"])}</td><td>{e(r["dealer_id"])}</td>'
        f'<td class="n">{e(dollars(r["wagered"]))}</td><td class="n">{e(dollars(r["paid"]))}</td>'
        f'<td class="n">{e(dollars(r["collected"]))}</td>'
        f'<td class="n">{e(dollars(r["returned"]))}</td>'
        f'<td class="n">{e(r["violations"]) if r["violations"] else ""}</td>'
        f'<td>{"" if r["complete"] else "incomplete"}</td></tr>' for r in t["rounds"])
    body = f"""<h1>Table {e(t["table_id"])}</h1>
<p class="lede">{e(t["jurisdiction"])} {e(t["game"])} ·
<a href="/?table={e(t["table_id"])}">its alerts in the live feed</a></p>
<h2>Dealers</h2><table class="dealers"><thead><tr><th>dealer</th><th>rounds</th>
<th>violations</th><th>wagered</th><th>paid</th><th>collected</th></tr></thead>
<tbody>{dealers}</tbody></table>
<h2>Rounds, newest first</h2><table class="rounds"><thead><tr><th>round</th>
<th>started</th><th>dealer</th><th>wagered</th><th>paid</th><th>collected</th>
<th>returned</th><th>violations</th><th></th></tr></thead><tbody>{rounds}</tbody></table>"""
    return page(f"Table {t['table_id']}", body)


def round_page(r: dict[str, Any], case_hrefs: list[str]) -> str:
    s = r["summary"]
    if s:
        facts = (f'<dl class="facts"><dt>table</dt><dd><a href="/tables/{e(s["table_id"])}">'
                 f'{e(s["table_id"])}</a> · {e(s["jurisdiction"])} {e(s["game"])}</dd>'
                 f'<dt>dealer</dt><dd>{e(s["dealer_id"])}</dd>'
                 f'<dt>pack</dt><dd>{e(s["pack"])} {e(s["pack_version"])}</dd>'
                 f'<dt>device time</dt><dd>{clock(int(s["started_at"]))} → '
                 f'{clock(int(s["ended_at"]))} UTC</dd>'
                 f'<dt>money</dt><dd>wagered {e(dollars(s["wagered"]))} · paid '
                 f'{e(dollars(s["paid"]))} · collected {e(dollars(s["collected"]))} · '
                 f'returned {e(dollars(s["returned"]))}</dd>'
                 f'<dt>state</dt><dd>{"complete" if s["complete"] else "incomplete"}, '
                 f'{len(r["violations"])} findings</dd></dl>')
    else:
        facts = (f'<p class="note">Open round (no summary yet) at table '
                 f'<a href="/tables/{e(r["table_id"])}">{e(r["table_id"])}</a>.</p>')
    case = ('<p class="case">Case files (pitwatch investigate): ' + ", ".join(
        f'<a href="{e(h)}">{e(h.split("/")[-2])}</a>' for h in case_hrefs) + "</p>"
            if case_hrefs else
            f'<p class="case note">No case file yet: <code>pitwatch investigate '
            f'{e(r["round_id"])} --out cases/{e(r["round_id"])}</code></p>')
    counts = {sev: sum(1 for v in r["violations"] if v["severity"] == sev)
              for sev in SEVERITIES}
    sums = " ".join(f"{badge(k)} {n}" for k, n in counts.items() if n)
    body = (f'<h1>Round {e(r["round_id"])}</h1>{facts}{case}'
            f'<h2>The layout at the end</h2>{render_layout(r["events"])}'
            f'<h2>As it happened {sums}</h2>'
            f'{render_timeline(r["events"], r["violations"], r["triage"])}')
    return page(f"Round {r['round_id']}", body)


def triage_log(rows: list[dict[str, Any]]) -> str:
    body_rows = "".join(
        f'<tr><td class="t">{clock(t["at"])}</td><td>{e(t["who"])}</td><td>{e(t["action"])}'
        f'</td><td><a href="/violations/{e(t["violation_id"])}">{e(t["violation_id"])}</a>'
        f'</td><td>{e(t["note"])}</td></tr>' for t in rows)
    body = f"""<h1>Triage log</h1>
<p class="lede">Every acknowledgement, newest first. The log is append-only and kept apart
from the violations, which it never changes.</p>
<table class="triage"><thead><tr><th>when (UTC)</th><th>who</th><th>action</th>
<th>violation</th><th>note</th></tr></thead><tbody>{body_rows}</tbody></table>"""
    return page("Triage log", body, "/triage")


def error(status: int, message: str) -> str:
    return page(f"{status}", f'<h1>{status}</h1><p class="error">{e(message)}</p>'
                '<p><a href="/">back to the live feed</a></p>')
