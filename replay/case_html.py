"""report.html: one self-contained page (its style inline, nothing fetched) a regulator
can open anywhere. The same case gives the same bytes, except the one element marked
`data-field="generated-at"`."""

from __future__ import annotations

from html import escape

from pitwatch.events.model import CardDealt
from pitwatch.money import dollars

from . import case_observations as obs_words
from .case import Case, Finding, iso_time, software_commit, software_version
from .present import (
    RED_SUITS,
    SUIT_SYMBOLS,
    decisions,
    describe,
    device_time,
    money_involved,
    quote_kind,
    rules_lines,
)
from .rebuild import Rebuilt, Step

STYLE = """
body{font:14px/1.45 system-ui,Helvetica,Arial,sans-serif;margin:2em auto;max-width:72em;
color:#111;padding:0 1em}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;border-bottom:2px solid #333;
margin-top:2em}h3{font-size:1em;margin:1.2em 0 .3em}
table{border-collapse:collapse;width:100%;margin:.4em 0}
td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2}.mono{font-family:ui-monospace,Menlo,Consolas,monospace;
font-size:12px}
.card{display:inline-block;border:1px solid #999;border-radius:3px;padding:0 3px;
background:#fff;font-weight:bold}.red{color:#c00}.down{background:#ddd}
tr.hit td{background:#fff3f0}.finding{border-left:4px solid #c00;padding:.3em .8em;
margin:.3em 0;background:#fffafa}
.CRITICAL{color:#fff;background:#a00}.HIGH{color:#fff;background:#d35400}
.MEDIUM{background:#f4d03f}.LOW{background:#d6eaf8}
.sev{padding:0 4px;border-radius:3px;font-weight:bold;font-size:12px}
blockquote{margin:.3em 0 .3em 1em;padding:.2em .8em;border-left:3px solid #888;
background:#f7f7f7;font-style:italic}
.ok{color:#060;font-weight:bold}.bad{color:#a00;font-weight:bold}
.warn{color:#9a5b00;font-weight:bold}
.facts td:first-child{width:12em;color:#555}
.summary{margin:.3em 0 .3em 1em;padding:.2em .8em;border-left:3px dashed #888}
"""


def _card_html(ev_payload: CardDealt) -> str:
    suit = SUIT_SYMBOLS.get(ev_payload.suit, ev_payload.suit)
    cls = "card" + (" red" if ev_payload.suit in RED_SUITS else "") + \
        ("" if ev_payload.face_up else " down")
    return f'<span class="{cls}">{escape(ev_payload.rank)}{suit}</span>'


def _detail(st: Step) -> str:
    p = st.event.payload
    if isinstance(p, CardDealt):
        rest = describe(st.event).split(" ", 1)[1]  # "(face down) to …" / "to …"
        return _card_html(p) + " " + escape(rest)
    return escape(describe(st.event))


def _quotes(f: Finding) -> str:
    q = f.quote
    if q is None:
        return ('<p><em>No regulation paragraph to quote: this rule is the table\'s posted '
                'rule or pitwatch\'s record rule, as the citation says.</em></p>')
    kind = quote_kind(q)
    if kind != "regulation":  # pitwatch's words: never set as a quotation of the text
        return "".join(f'<div class="summary"><b>{escape(kind)}</b>, {escape(label)}:<br>'
                       f'{escape(text).replace(chr(10), "<br>")}</div>'
                       for label, text in q.paragraphs)
    return "".join(f'<blockquote>{escape(text).replace(chr(10), "<br>")}<br><small>— '
                   f'{escape(q.source)}, {escape(label)}</small></blockquote>'
                   for label, text in q.paragraphs)


def _finding(f: Finding, rb: Rebuilt) -> str:
    v = f.violation
    money = money_involved(v, [st.event for st in rb.steps], rb.state)
    return (f'<div class="finding"><span class="sev {escape(v.severity)}">'
            f'{escape(v.severity)}</span> <b>{escape(v.code)}</b> — {escape(v.message)}'
            + ("" if money is None else f"<br>money involved: <b>{escape(money)}</b>")
            + f'<br>cites <b>{escape(v.citation)}</b>; event <span class="mono">'
            f'{escape(v.event_id)}</span>; {escape(f.status)}{_evidence(v.evidence)}'
            f'{_quotes(f)}</div>')


def _evidence(ids: tuple[str, ...]) -> str:
    if not ids:
        return ""
    return '<br>with the events <span class="mono">' + ", ".join(map(escape, ids)) + "</span>"


def _round(case: Case, rb: Rebuilt) -> str:
    s = rb.summary
    findings = case.findings(rb)
    at: dict[str, list[Finding]] = {}
    for f in findings:
        at.setdefault(f.violation.event_id, []).append(f)
    step_ids = {st.event.event_id for st in rb.steps}
    h = [f'<h2 id="{escape(rb.round_id)}">Round {escape(rb.round_id)}</h2>']
    facts = [("table", rb.table_id), ("judged by", rb.pack or "no pack")]
    if s is not None:
        facts += [("dealer", s.dealer_id),
                  ("seats", ", ".join(map(str, s.seats)) or "none"),
                  ("started (device time, UTC)", device_time(s.started)),
                  ("ended (device time, UTC)", device_time(s.ended)),
                  ("state", "complete" if s.complete else "INCOMPLETE (no RoundEnded)"),
                  ("money", f"wagered {dollars(s.wagered)}, paid {dollars(s.paid)}, "
                   f"collected {dollars(s.collected)}, returned {dollars(s.returned)}")]
    facts.append(("decisions", decisions([st.event for st in rb.steps])))
    facts.append(("replay", "rebuilt findings match the stored ones" if rb.matches_store
                  else "rebuilt findings DIFFER from the stored ones"))
    h.append('<table class="facts">' + "".join(
        f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in facts) + "</table>")
    if rb.rules is not None:
        h.append("<h3>Posted rules in force</h3><ul>" + "".join(
            f"<li>{escape(x)}</li>" for x in rules_lines(rb.rules, rb.game)) + "</ul>")
    h.append("<h3>Timeline</h3><table><tr><th>device time (UTC)</th><th>event id</th>"
             "<th>device</th><th>seq</th><th>event</th><th>what it says</th></tr>")
    for st in rb.steps:
        ev = st.event
        hits = at.get(ev.event_id, [])
        h.append(f'<tr{" class=hit" if hits else ""}><td class="mono">'
                 f'{device_time(ev.ts)}</td><td class="mono">{escape(ev.event_id)}</td>'
                 f'<td>{escape(ev.device_id)}</td><td>{ev.seq}</td><td>{escape(ev.type)}'
                 f'</td><td>{_detail(st)}</td></tr>')
        for f in hits:
            h.append(f'<tr class="hit"><td colspan="6">{_finding(f, rb)}</td></tr>')
    h.append("</table>")
    elsewhere = [f for f in findings if f.violation.event_id not in step_ids]
    if elsewhere:
        h.append("<h3>Findings raised after the round's own events</h3>")
        h += [_finding(f, rb) for f in elsewhere]
    h.append("<h3>Digest chains</h3><table><tr><th>device</th><th>verdict</th></tr>")
    for c in rb.chains.values():
        cls = "bad" if c.breaks or c.uncovered else "ok" if c.signs else "warn"
        ids = ("" if not c.uncovered_ids else "<br>events no signature covers: "
               '<span class="mono">' + ", ".join(map(escape, c.uncovered_ids)) + "</span>")
        h.append(f'<tr><td>{escape(c.device_id)}</td><td class="{cls}">'
                 f'{escape(c.verdict)}{ids}</td></tr>')
    h.append("</table>")
    return "\n".join(h)


def _commit() -> str:
    commit = software_commit()
    return "" if commit is None else f", commit {commit}"


def _observations(case: Case) -> list[str]:
    """The game-protection observations that touch the rounds (observations.json), in
    the words of `case_observations`: evidence to weigh, not findings."""
    h = [f"<h2>{escape(obs_words.TITLE)}</h2>", f"<p>{escape(obs_words.NOTE)}</p>"]
    if not case.observations:
        return [*h, f"<p>{escape(obs_words.NONE)}</p>"]
    h.append("<table><tr>" + "".join(f"<th>{escape(x)}</th>" for x in obs_words.HEADERS)
             + "</tr>")
    for o in case.observations:
        h.append("<tr>" + "".join(
            f'<td class="mono">{escape(c)}</td>' if i in obs_words.ID_CELLS
            else f"<td>{escape(c)}</td>"
            for i, c in enumerate(obs_words.observation_cells(o))) + "</tr>")
    h.append("</table>")
    return h


def render_html(case: Case) -> bytes:
    findings = case.all_findings
    packs = ", ".join(f"{p['name']} {p['version']}" for p in case.packs()) or "none"
    # green only where signatures prove it: an unsigned digest chain can be re-chained
    chain_class = ("bad" if "BROKEN" in case.chain_verdict else
                   "ok" if case.signatures_hold else "warn")
    pv = case.provenance
    sig_class = {True: "ok", False: "bad", None: "warn"}[case.signatures_hold]
    head = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>pitwatch case: {escape(case.selection.describe())}</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>pitwatch case report</h1>",
        '<table class="facts">',
        f"<tr><td>case number</td><td>{escape(pv.case_number or 'none given')}</td></tr>",
        f"<tr><td>made by</td><td>{escape(pv.operator)} on {escape(pv.host)}: "
        f'<span class="mono">{escape(pv.command_line)}</span></td></tr>',
        f"<tr><td>selection</td><td>{escape(case.selection.describe())}</td></tr>",
        f"<tr><td>rounds</td><td>{len(case.rounds)}</td></tr>",
        f"<tr><td>findings</td><td>{len(findings)}</td></tr>",
        f"<tr><td>rule packs</td><td>{escape(packs)}</td></tr>",
        f"<tr><td>store</td><td class=mono>{escape(case.store)}</td></tr>",
        f"<tr><td>software</td><td>pitwatch {escape(software_version())}"
        f"{_commit()}</td></tr>",
        f'<tr><td>generated (UTC)</td><td data-field="generated-at">'
        f"{iso_time(case.generated_ms)}</td></tr>",
        f"<tr><td>replay</td><td>{escape(case.replay_verdict)}</td></tr>",
        f'<tr><td>digest chains</td><td class="{chain_class}">'
        f"{escape(case.chain_verdict)}</td></tr>",
        f'<tr><td>signatures</td><td class="{sig_class}">'
        f"{escape(case.signature_verdict)}</td></tr>",
        "</table>",
        "<h2>Findings</h2>",
    ]
    if findings:
        head.append("<table><tr><th>severity</th><th>code</th><th>round</th><th>seat</th>"
                    "<th>citation</th></tr>")
        for f in findings:
            v = f.violation
            seat = "" if v.seat is None else f"{v.seat}/{v.hand}"
            head.append(f'<tr><td><span class="sev {escape(v.severity)}">'
                        f'{escape(v.severity)}</span></td><td>{escape(v.code)}</td>'
                        f'<td><a href="#{escape(v.round_id)}">{escape(v.round_id)}</a></td>'
                        f"<td>{seat}</td><td>{escape(v.citation)}</td></tr>")
        head.append("</table>")
    else:
        head.append("<p>No finding in the selected rounds.</p>")
    head += _observations(case)
    body = [_round(case, rb) for rb in case.rounds]
    return ("\n".join(head + body + ["</body></html>"]) + "\n").encode()
