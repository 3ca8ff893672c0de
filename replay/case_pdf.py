"""report.pdf, made with ReportLab (pure Python, no system libraries, maintained since
2000): the same case as report.html, for filing. `invariant=1` keeps ReportLab's own
dates and ids out of the file, so the same case gives the same bytes except the one
marked field, "generated (UTC)" on the first page. Cards are drawn with their suit
symbols from ZapfDingbats, one of the fonts every PDF reader has."""

from __future__ import annotations

from html import escape
from io import BytesIO
from typing import Any

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4, landscape
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import (
    KeepTogether,
    PageBreak,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

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

_SS = getSampleStyleSheet()
BODY = ParagraphStyle("body", parent=_SS["BodyText"], fontSize=8.5, leading=10.5)
SMALL = ParagraphStyle("small", parent=BODY, fontSize=7.5, leading=9)
MONO = ParagraphStyle("mono", parent=SMALL, fontName="Courier", fontSize=6.5, leading=8.5)
QUOTE = ParagraphStyle("quote", parent=BODY, fontName="Helvetica-Oblique", leftIndent=10,
                       textColor=colors.HexColor("#333333"), backColor=colors.HexColor(
                           "#f4f4f4"), borderPadding=3, spaceBefore=2, spaceAfter=4)
H1 = ParagraphStyle("h1", parent=_SS["Heading1"], fontSize=16, spaceAfter=6)
H2 = ParagraphStyle("h2", parent=_SS["Heading2"], fontSize=12.5, spaceBefore=10)
H3 = ParagraphStyle("h3", parent=_SS["Heading3"], fontSize=10, spaceBefore=6, spaceAfter=2)
SEVERITY_COLOURS = {"CRITICAL": "#aa0000", "HIGH": "#d35400", "MEDIUM": "#9a7d0a",
                    "LOW": "#1f618d"}
GRID = TableStyle([
    ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#bbbbbb")),
    ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#eeeeee")),
    ("VALIGN", (0, 0), (-1, -1), "TOP"),
    ("LEFTPADDING", (0, 0), (-1, -1), 3), ("RIGHTPADDING", (0, 0), (-1, -1), 3),
    ("TOPPADDING", (0, 0), (-1, -1), 1.5), ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
])


def _p(text: str, style: ParagraphStyle = BODY) -> Paragraph:
    return Paragraph(text, style)


def _e(text: object) -> str:
    return escape(str(text), quote=False)


def _card(p: CardDealt) -> str:
    colour = "#cc0000" if p.suit in RED_SUITS else "#000000"
    suit = SUIT_SYMBOLS.get(p.suit, p.suit)
    down = "" if p.face_up else " (face down)"
    return (f'<b>{_e(p.rank)}<font name="ZapfDingbats" color="{colour}">{suit}</font></b>'
            f"{down}")


def _detail(st: Step) -> str:
    p = st.event.payload
    if isinstance(p, CardDealt):
        who = describe(st.event).rsplit(" to ", 1)[1]
        return f"{_card(p)} to {_e(who)}"
    return _e(describe(st.event))


def _sev(severity: str) -> str:
    return (f'<font color="{SEVERITY_COLOURS.get(severity, "#000000")}"><b>'
            f"{_e(severity)}</b></font>")


def _finding(f: Finding, rb: Rebuilt) -> list[Any]:
    v = f.violation
    money = money_involved(v, [st.event for st in rb.steps], rb.state)
    out: list[Any] = [_p(f"{_sev(v.severity)} <b>{_e(v.code)}</b>: {_e(v.message)}<br/>"
                         + ("" if money is None else f"money involved: <b>{_e(money)}</b><br/>")
                         + f"cites <b>{_e(v.citation)}</b>; event {_e(v.event_id)}; "
                         f"{_e(f.status)}" + ("" if not v.evidence else
                                              "<br/>with the events " + _e(", ".join(v.evidence))))]
    q = f.quote
    kind = None if q is None else quote_kind(q)
    if q is not None and kind != "regulation":  # pitwatch's words, never set as a quote
        out += [_p(f"<b>{_e(kind)}</b>, {_e(label)}:<br/>{_e(text).replace(chr(10), '<br/>')}",
                   SMALL) for label, text in q.paragraphs]
    elif q is not None:
        out += [_p(f"“{_e(text).replace(chr(10), '<br/>')}” "
                   f"<font size=6.5>({_e(q.source)}, {_e(label)})</font>", QUOTE)
                for label, text in q.paragraphs]
    else:
        out.append(_p("<i>No regulation paragraph to quote: the table's posted rule or "
                      "pitwatch's record rule, as cited.</i>", SMALL))
    return out


def _round(case: Case, rb: Rebuilt, width: float) -> list[Any]:
    s = rb.summary
    findings = case.findings(rb)
    at: dict[str, list[Finding]] = {}
    for f in findings:
        at.setdefault(f.violation.event_id, []).append(f)
    flow: list[Any] = [_p(f"Round {_e(rb.round_id)}", H2)]
    facts = [["table", rb.table_id], ["judged by", rb.pack or "no pack"]]
    if s is not None:
        facts += [["dealer", s.dealer_id], ["seats", ", ".join(map(str, s.seats)) or "none"],
                  ["device time (UTC)", f"{device_time(s.started)} to {device_time(s.ended)}"],
                  ["state", "complete" if s.complete else "INCOMPLETE (no RoundEnded)"],
                  ["money", f"wagered {dollars(s.wagered)}, paid {dollars(s.paid)}, "
                   f"collected {dollars(s.collected)}, returned {dollars(s.returned)}"]]
    facts.append(["decisions", decisions([st.event for st in rb.steps])])
    facts.append(["replay", "rebuilt findings match the stored ones" if rb.matches_store
                  else "rebuilt findings DIFFER from the stored ones"])
    if rb.rules is not None:
        facts.append(["posted rules in force", "; ".join(rules_lines(rb.rules, rb.game))])
    ft = Table([[_p(_e(k), SMALL), _p(_e(v), SMALL)] for k, v in facts],
               colWidths=[38 * mm, width - 38 * mm])
    ft.setStyle(TableStyle([("VALIGN", (0, 0), (-1, -1), "TOP"),
                            ("TOPPADDING", (0, 0), (-1, -1), 0.5),
                            ("BOTTOMPADDING", (0, 0), (-1, -1), 0.5)]))
    flow += [ft, _p("Timeline", H3)]
    rows: list[list[Any]] = [[_p("<b>device time (UTC)</b>", SMALL), _p("<b>event id</b>", SMALL),
                              _p("<b>device / seq</b>", SMALL), _p("<b>event</b>", SMALL)]]
    spans: list[tuple[str, tuple[int, int], tuple[int, int]]] = []
    hit_rows: list[int] = []
    for st in rb.steps:
        ev = st.event
        rows.append([_p(device_time(ev.ts), MONO), _p(_e(ev.event_id), MONO),
                     _p(f"{_e(ev.device_id)} #{ev.seq}", SMALL),
                     _p(f"<b>{_e(ev.type)}</b> {_detail(st)}", SMALL)])
        for f in at.get(ev.event_id, []):
            rows.append([_finding(f, rb), "", "", ""])
            n = len(rows) - 1
            spans.append(("SPAN", (0, n), (-1, n)))
            hit_rows.append(n)
    cols = [37 * mm, 56 * mm, 40 * mm]
    t = Table(rows, colWidths=[*cols, width - sum(cols)], repeatRows=1)
    style = TableStyle(GRID.getCommands() + spans)
    for n in hit_rows:
        style.add("BACKGROUND", (0, n), (-1, n), colors.HexColor("#fff3f0"))
    t.setStyle(style)
    flow.append(t)
    elsewhere = [f for f in findings
                 if f.violation.event_id not in {st.event.event_id for st in rb.steps}]
    if elsewhere:
        flow.append(_p("Findings raised after the round's own events", H3))
        for f in elsewhere:
            flow += _finding(f, rb)
    chain_rows = [[_p("<b>device</b>", SMALL), _p("<b>digest chain verdict</b>", SMALL)]]
    for c in rb.chains.values():
        colour = ("#aa0000" if c.breaks or c.uncovered else
                  "#006600" if c.signs else "#9a5b00")
        ids = ("" if not c.uncovered_ids else
               "<br/>events no signature covers: " + _e(", ".join(c.uncovered_ids)))
        chain_rows.append([_p(_e(c.device_id), SMALL),
                           _p(f'<font color="{colour}"><b>{_e(c.verdict)}</b></font>{ids}',
                              SMALL)])
    ct = Table(chain_rows, colWidths=[50 * mm, width - 50 * mm])
    ct.setStyle(GRID)
    flow.append(KeepTogether([_p("Digest chains", H3), ct]))
    return flow


def _observations(case: Case, width: float) -> list[Any]:
    """The game-protection observations that touch the rounds (observations.json), in
    the words of `case_observations`, as report.html lists them."""
    flow: list[Any] = [_p(_e(obs_words.TITLE), H2), _p(_e(obs_words.NOTE), SMALL)]
    if not case.observations:
        return [*flow, _p(_e(obs_words.NONE))]
    rows: list[list[Any]] = [[_p(f"<b>{_e(h)}</b>", SMALL) for h in obs_words.HEADERS]]
    for o in case.observations:
        rows.append([_p(_e(c), MONO if i in obs_words.ID_CELLS else SMALL)
                     for i, c in enumerate(obs_words.observation_cells(o))])
    cols = [40 * mm, 38 * mm, 24 * mm, 24 * mm, 44 * mm, 40 * mm]
    t = Table(rows, colWidths=[*cols, width - sum(cols)], repeatRows=1)
    t.setStyle(GRID)
    return [*flow, t]


def _numbered(title: str) -> type[Canvas]:
    """A canvas that holds its pages until the end, to put "page N of M" and the
    case's title in each footer."""

    class Numbered(Canvas):  # type: ignore[misc]  # ReportLab ships no types
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._held: list[dict[str, Any]] = []

        def showPage(self) -> None:
            self._held.append(dict(self.__dict__))
            self._startPage()

        def save(self) -> None:
            total = len(self._held)
            for n, page in enumerate(self._held, 1):
                self.__dict__.update(page)
                self.saveState()
                self.setFont("Helvetica", 7)
                self.drawString(12 * mm, 7 * mm, title[:150])
                self.drawRightString(landscape(A4)[0] - 12 * mm, 7 * mm,
                                     f"page {n} of {total}")
                self.restoreState()
                super().showPage()
            super().save()

    return Numbered


def render_pdf(case: Case) -> bytes:
    buf = BytesIO()
    number = case.provenance.case_number
    title = (f"pitwatch case {number}: " if number else "pitwatch case: ") + \
        case.selection.describe()
    doc = SimpleDocTemplate(buf, pagesize=landscape(A4), invariant=1, title=title,
                            author="pitwatch", subject="case report", creator="pitwatch",
                            leftMargin=12 * mm, rightMargin=12 * mm, topMargin=12 * mm,
                            bottomMargin=14 * mm)
    width = doc.width

    findings = case.all_findings
    packs = ", ".join(f"{p['name']} {p['version']}" for p in case.packs()) or "none"
    # green only where signatures prove it: an unsigned digest chain can be re-chained
    chain_colour = ("#aa0000" if "BROKEN" in case.chain_verdict else
                    "#006600" if case.signatures_hold else "#9a5b00")
    sig_colour = {True: "#006600", False: "#aa0000", None: "#9a5b00"}[case.signatures_hold]
    commit = software_commit()
    pv = case.provenance
    facts = [
        ("case number", _e(pv.case_number or "none given")),
        ("made by", f"{_e(pv.operator)} on {_e(pv.host)}: {_e(pv.command_line)}"),
        ("selection", _e(case.selection.describe())), ("rounds", str(len(case.rounds))),
        ("findings", str(len(findings))), ("rule packs", _e(packs)),
        ("store", _e(case.store)), ("software", f"pitwatch {_e(software_version())}"
                                 + ("" if commit is None else f", commit {commit}")),
        ("generated (UTC)", iso_time(case.generated_ms)),
        ("replay", _e(case.replay_verdict)),
        ("digest chains", f'<font color="{chain_colour}"><b>{_e(case.chain_verdict)}'
                          "</b></font>"),
        ("signatures", f'<font color="{sig_colour}"><b>'
                       f"{_e(case.signature_verdict)}</b></font>"),
    ]
    head = Table([[_p(k, SMALL), _p(v, SMALL)] for k, v in facts],
                 colWidths=[38 * mm, width - 38 * mm])
    head.setStyle(TableStyle([("VALIGN", (0, 0), (-1, -1), "TOP")]))
    flow: list[Any] = [_p("pitwatch case report", H1), head, Spacer(1, 4), _p("Findings", H2)]
    if findings:
        rows: list[list[Any]] = [[_p(f"<b>{h}</b>", SMALL) for h in
                                  ("severity", "code", "round", "seat", "citation")]]
        for f in findings:
            v = f.violation
            rows.append([_p(_sev(v.severity), SMALL), _p(_e(v.code), SMALL),
                         _p(_e(v.round_id), SMALL),
                         _p("" if v.seat is None else f"{v.seat}/{v.hand}", SMALL),
                         _p(_e(v.citation), SMALL)])
        t = Table(rows, colWidths=[22 * mm, 62 * mm, 40 * mm, 14 * mm, width - 138 * mm],
                  repeatRows=1)
        t.setStyle(GRID)
        flow.append(t)
    else:
        flow.append(_p("No finding in the selected rounds."))
    flow += _observations(case, width)
    for rb in case.rounds:
        flow.append(PageBreak())
        flow += _round(case, rb, width)
    doc.build(flow, canvasmaker=_numbered(title))
    return buf.getvalue()
