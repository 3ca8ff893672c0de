"""WCAG 2.1 AA contrast of the console's colours (console.css), computed as WCAG defines
it: every text colour on the background it is drawn on is at least 4.5:1."""

from __future__ import annotations

import re
from pathlib import Path

CSS = (Path(__file__).parents[2] / "console" / "static" / "console.css").read_text()


def _vars() -> dict[str, str]:
    root = CSS.split(":root {", 1)[1].split("}", 1)[0]
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", root))


def _luminance(hex_: str) -> float:
    c = [int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(fg: str, bg: str) -> float:
    hi, lo = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _rule(selector: str) -> str:
    m = re.search(re.escape(selector) + r"\s*\{([^}]*)\}", CSS)
    assert m, selector
    return m.group(1)


def _colour(decl: str, prop: str, v: dict[str, str]) -> str:
    m = re.search(rf"(?<![-\w]){prop}:\s*(var\(--([\w-]+)\)|#[0-9a-fA-F]{{6}}\b|"
                  r"#[0-9a-fA-F]{3}\b)", decl)
    assert m, (prop, decl)
    if m.group(2):
        return v[m.group(2)]
    hex_ = m.group(1)
    return hex_ if len(hex_) == 7 else "#" + "".join(c * 2 for c in hex_[1:])


def test_badges_chips_and_text_meet_wcag_aa() -> None:
    """WCAG 2.1 AA contrast"""
    v = _vars()
    dark_text = _colour(_rule(".sev"), "color", v)  # the badges' text unless told otherwise
    pairs = {
        "CRITICAL badge": (_colour(_rule(".sev-CRITICAL"), "color", v),
                           _colour(_rule(".sev-CRITICAL"), "background", v)),
        "HIGH badge": (dark_text, _colour(_rule(".sev-HIGH"), "background", v)),
        "MEDIUM badge": (dark_text, _colour(_rule(".sev-MEDIUM"), "background", v)),
        "LOW badge": (dark_text, _colour(_rule(".sev-LOW"), "background", v)),
        "zero chip": (_colour(_rule(".count.zero"), "color", v), v["panel"]),
        "dim text on the page": (v["dim"], v["bg"]),
        "dim text on a panel": (v["dim"], v["panel"]),
        "links on a panel": (v["link"], v["panel"]),
        "text on a panel": (v["text"], v["panel"]),
    }
    low = {name: round(contrast(fg, bg), 2) for name, (fg, bg) in pairs.items()
           if contrast(fg, bg) < 4.5}
    assert low == {}
    assert "opacity" not in _rule(".count.zero")  # a faded chip fails whatever its colour


def test_the_contrast_formula() -> None:
    assert round(contrast("#ffffff", "#000000"), 1) == 21.0
    assert round(contrast("#ffffff", "#e5484d"), 2) == 3.91  # a red badge below AA
