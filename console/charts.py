"""Charts drawn on the server as inline SVG: no script, no library, nothing loaded from
anywhere. Every text in a chart (ids, labels, a point's tooltip) goes through `e`; the
numbers are the chart's own, formatted here.

- `bet_chart`: a seat session's bet against the Hi-Lo true count before each round, the
  rounds that carry the weight drawn apart, and the mean bet at each whole true count.
- `hold_chart`: a dealer's (or a table's) cumulative house result against its
  expectation, with the band of `Z_THRESHOLD` standard deviations around it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pitwatch.money import dollars
from pitwatch.protect.hold import Z_THRESHOLD

from .html import e
from .protection import BetPoint, HoldPoint

W, H = 720, 320
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 46, 48


def _n(x: float) -> str:
    return f"{x:.1f}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About n round ticks covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out, t = [], first
    while t <= hi + step * 1e-9:
        out.append(round(t, 10))
        t += step
    return out


class _Frame:
    """The plot area and its scales."""

    def __init__(self, x0: float, x1: float, y0: float, y1: float) -> None:
        self.x0, self.x1 = x0, x1 if x1 > x0 else x0 + 1
        self.y0, self.y1 = y0, y1 if y1 > y0 else y0 + 1

    def x(self, v: float) -> float:
        return LEFT + (v - self.x0) / (self.x1 - self.x0) * (W - LEFT - RIGHT)

    def y(self, v: float) -> float:
        return H - BOTTOM - (v - self.y0) / (self.y1 - self.y0) * (H - TOP - BOTTOM)


def _svg(chart_id: str, title: str, desc: str, body: str) -> str:
    return (f'<svg class="chart" id="{e(chart_id)}" viewBox="0 0 {W} {H}" role="img" '
            f'aria-labelledby="{e(chart_id)}-t {e(chart_id)}-d" '
            f'xmlns="http://www.w3.org/2000/svg">'
            f'<title id="{e(chart_id)}-t">{e(title)}</title>'
            f'<desc id="{e(chart_id)}-d">{e(desc)}</desc>'
            f'<text class="chart-title" x="{LEFT}" y="20">{e(title)}</text>{body}</svg>')


def _empty(chart_id: str, title: str, why: str) -> str:
    """A chart with nothing to draw: its title, and why in its description and its body."""
    return _svg(chart_id, title, why, f'<text class="empty" x="{W / 2:.0f}" y="{H / 2:.0f}" '
                f'text-anchor="middle">{e(why)}</text>')


def _axes(f: _Frame, xs: list[float], ys: list[float], x_label: str, y_label: str,
          x_text: object = None, y_text: object = None) -> str:
    out = [f'<line class="axis" x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" '
           f'y2="{H - BOTTOM}"/>', f'<line class="axis" x1="{LEFT}" y1="{TOP}" '
           f'x2="{LEFT}" y2="{H - BOTTOM}"/>']
    for t in xs:
        label = x_text(t) if callable(x_text) else f"{t:g}"
        out.append(f'<line class="tick" x1="{_n(f.x(t))}" y1="{H - BOTTOM}" '
                   f'x2="{_n(f.x(t))}" y2="{H - BOTTOM + 5}"/><text class="tick-label" '
                   f'x="{_n(f.x(t))}" y="{H - BOTTOM + 18}" text-anchor="middle">'
                   f"{e(label)}</text>")
    for t in ys:
        label = y_text(t) if callable(y_text) else f"{t:g}"
        out.append(f'<line class="grid" x1="{LEFT}" y1="{_n(f.y(t))}" x2="{W - RIGHT}" '
                   f'y2="{_n(f.y(t))}"/><text class="tick-label" x="{LEFT - 6}" '
                   f'y="{_n(f.y(t) + 4)}" text-anchor="end">{e(label)}</text>')
    out.append(f'<text class="axis-label" x="{(LEFT + W - RIGHT) / 2:.1f}" y="{H - 8}" '
               f'text-anchor="middle">{e(x_label)}</text>')
    out.append(f'<text class="axis-label" x="14" y="{(TOP + H - BOTTOM) / 2:.1f}" '
               f'transform="rotate(-90 14 {(TOP + H - BOTTOM) / 2:.1f})" '
               f'text-anchor="middle">{e(y_label)}</text>')
    return "".join(out)


def bet_chart(points: Sequence[BetPoint], weight: Sequence[str], session_id: str) -> str:
    """The session's bet (dollars) against the true count before each round."""
    title = f"Bet against true count: seat session {session_id}"
    if not points:
        return _empty("bet-chart", title, "no round of the session has a known true count")
    heavy = set(weight)
    lo = min(-4.0, math.floor(min(p.true_count for p in points)))
    hi = max(4.0, math.ceil(max(p.true_count for p in points)))
    top = max(p.bet for p in points) / 100
    f = _Frame(lo, hi, 0.0, top * 1.08)
    body = [_axes(f, _ticks(lo, hi, 8), _ticks(0.0, top * 1.08, 5),
                  "Hi-Lo true count before the round", "bet, dollars",
                  y_text=lambda t: dollars(round(t * 100)))]
    body.append(f'<line class="zero" x1="{_n(f.x(0))}" y1="{TOP}" x2="{_n(f.x(0))}" '
                f'y2="{H - BOTTOM}"/>')
    for p in points:
        cls = "pt weight" if p.round_id in heavy else "pt"
        body.append(f'<circle class="{cls}" cx="{_n(f.x(p.true_count))}" '
                    f'cy="{_n(f.y(p.bet / 100))}" r="{4 if p.round_id in heavy else 3}">'
                    f"<title>{e(p.round_id)}: true count {p.true_count:+.2f}, bet "
                    f"{e(dollars(p.bet))}</title></circle>")
    means: dict[int, list[int]] = {}
    for p in points:
        means.setdefault(round(p.true_count), []).append(p.bet)
    line = " ".join(f"{_n(f.x(tc))},{_n(f.y(sum(b) / len(b) / 100))}"
                    for tc, b in sorted(means.items()))
    body.append(f'<polyline class="mean" points="{line}"/>')
    desc = (f"{len(points)} rounds; each dot a round, larger dots the "
            f"{len(heavy & {p.round_id for p in points})} rounds that carry the weight; "
            "the line the mean bet at each whole true count")
    return _svg("bet-chart", title, desc, "".join(body))


def hold_chart(points: Sequence[HoldPoint], subject: str, when: object = None) -> str:
    """Cumulative house result (dollars) against its expectation over the rounds in
    time order, with the band of Z_THRESHOLD standard deviations; `when(ms)` labels the
    first and last round's time."""
    title = f"Hold against theoretical: {subject}"
    if not points:
        return _empty("hold-chart", title, "no blackjack round with a main wager")
    n = len(points)
    lo = min(min(p.low, p.actual) for p in points) / 100
    hi = max(max(p.high, p.actual) for p in points) / 100
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    pad = (hi - lo) * 0.05 or 1.0
    f = _Frame(0, max(n, 2), lo - pad, hi + pad)
    xs = _ticks(1, n, 6) if n > 1 else [1.0]
    body = [_axes(f, [x for x in xs if x >= 1], _ticks(lo - pad, hi + pad, 5),
                  "rounds in time order", "house result, dollars",
                  x_text=lambda t: f"{int(t)}",
                  y_text=lambda t: dollars(round(t * 100)))]
    upper = [f"{_n(f.x(i + 1))},{_n(f.y(p.high / 100))}" for i, p in enumerate(points)]
    lower = [f"{_n(f.x(i + 1))},{_n(f.y(p.low / 100))}" for i, p in enumerate(points)]
    body.append(f'<polygon class="band" points="{" ".join(upper + lower[::-1])}"/>')
    body.append('<polyline class="expected" points="' + " ".join(
        f"{_n(f.x(i + 1))},{_n(f.y(p.expected / 100))}" for i, p in enumerate(points)) + '"/>')
    body.append('<polyline class="actual" points="' + " ".join(
        f"{_n(f.x(i + 1))},{_n(f.y(p.actual / 100))}" for i, p in enumerate(points)) + '"/>')
    last = points[-1]
    label = "" if when is None or not callable(when) else (
        f"{when(points[0].at_ms)} to {when(last.at_ms)}")
    body.append(f'<text class="legend" x="{LEFT}" y="34">{e(label)}</text>')
    desc = (f"{n} rounds: house result {dollars(last.actual)} against "
            f"{dollars(round(last.expected))} expected, band "
            f"{dollars(round(last.low))} to {dollars(round(last.high))} "
            f"({Z_THRESHOLD:g} standard deviations)")
    return _svg("hold-chart", title, desc, "".join(body))
