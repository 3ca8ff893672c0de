"""A shift's summary as files: CSV (every cell through pitwatch.spreadsheet, so an id a
device chose is never a formula) and PDF (reportlab, the investigate extra's)."""

from __future__ import annotations

import csv
import io
from datetime import date
from typing import Any

from pitwatch.money import dollars
from pitwatch.spreadsheet import csv_row

from .data import SEVERITIES
from .sitetime import SiteTime

COLUMNS = ("table_id", "dealer_id", "jurisdiction", "rounds", "incomplete_rounds",
           *(s.lower() for s in SEVERITIES), "unhandled", "confirmed_wrong_cents",
           "wagered_cents", "paid_cents", "collected_cents")


def _cells(r: dict[str, Any]) -> list[Any]:
    return [r["table_id"], r["dealer_id"], r["jurisdiction"], r["rounds"], r["incomplete"],
            *(r["findings"][s] for s in SEVERITIES), r["unhandled"], r["confirmed_cents"],
            r["wagered"], r["paid"], r["collected"]]


def csv_bytes(site: SiteTime, day: date, n: int, lo: int, hi: int,
              rows: list[dict[str, Any]]) -> bytes:
    """A header comment line naming the shift, the columns, a row per table and dealer."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(csv_row([f"# pitwatch shift summary: gaming day {day.isoformat()}, "
                        f"{site.shift_name(n)}, {site.tz}; device time "
                        f"{site.show(lo)} to {site.show(hi)}"]))
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow(csv_row(_cells(r)))
    return out.getvalue().encode("utf-8")


def pdf_bytes(site: SiteTime, day: date, n: int, lo: int, hi: int,
              rows: list[dict[str, Any]], who: str) -> bytes:
    try:
        from reportlab.lib import colors
        from reportlab.lib.pagesizes import A4, landscape
        from reportlab.lib.styles import getSampleStyleSheet
        from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle
    except ImportError as exc:
        raise ValueError("the PDF needs reportlab: pip install 'pitwatch[investigate]' "
                         "(the CSV needs nothing)") from exc
    from xml.sax.saxutils import escape

    styles = getSampleStyleSheet()
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=landscape(A4), title="pitwatch shift summary",
                            author=who, invariant=True)
    head = ["table", "dealer", "rounds", "incomplete", *SEVERITIES, "unhandled",
            "confirmed wrong", "wagered", "paid", "collected"]
    cell = styles["BodyText"]
    data: list[list[Any]] = [head]
    for r in rows:
        data.append([Paragraph(escape(r["table_id"]), cell),
                     Paragraph(escape(r["dealer_id"]), cell), r["rounds"], r["incomplete"],
                     *(r["findings"][s] for s in SEVERITIES), r["unhandled"],
                     dollars(r["confirmed_cents"]), dollars(r["wagered"]),
                     dollars(r["paid"]), dollars(r["collected"])])
    t = Table(data, repeatRows=1)
    t.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
                           ("BACKGROUND", (0, 0), (-1, 0), colors.lightgrey),
                           ("FONTSIZE", (0, 0), (-1, -1), 8),
                           ("VALIGN", (0, 0), (-1, -1), "TOP")]))
    story = [Paragraph(f"Shift summary: gaming day {day.isoformat()}, "
                       f"{escape(site.shift_name(n))} ({escape(site.tz)})", styles["Title"]),
             Paragraph(escape(f"Rounds started {site.show(lo)} to {site.show(hi)} "
                              f"(device time). Exported by {who}."), styles["Normal"]),
             t if rows else Paragraph("No round in this shift.", styles["Normal"])]
    doc.build(story)
    return buf.getvalue()
