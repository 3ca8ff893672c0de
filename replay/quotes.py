"""The paragraph a citation names, quoted from the regulation texts the packs cite
(`docs/regulations/`, kept verbatim), so a finding can be read beside the rule it breaks.

A citation names a section and paragraphs: `N.J.A.C. 13:69F-2A.8(a)2–3`,
`58 Pa. Code § 672a.8(b)`, `N.J.A.C. 13:69F-2.25(d)–(f)`, `NZ Gazette 1996 No 7,
Blackjack 9.3, 9.4`. A citation of a posted rule or of pitwatch's own record rules
quotes nothing (`quote` returns no paragraphs), and the report says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_NJ = re.compile(r"N\.J\.A\.C\. 13:69F-(\d+A?\.\d+)(.*)")
_PA = re.compile(r"58 Pa\. Code § (672a\.\d+)(.*)")
_NZ = re.compile(r"NZ Gazette 1996 No 7, Blackjack ([0-9., –]+)")
_LETTERS = re.compile(r"\(([a-z])\)(?:(\d+)(?:–(\d+))?)?(?:–\(([a-z])\))?")
_NUMBERED = re.compile(r"(\d+)\.(\d+)(?:–(\d+)\.(\d+))?")


@dataclass(frozen=True, slots=True)
class Quote:
    source: str  # the regulation text's file name, under docs/regulations/
    ref: str  # the paragraph, as the text numbers it
    text: str


def regulations_dir() -> Path:
    """docs/regulations of the source tree, or the copy an installed wheel carries."""
    here = Path(__file__).resolve().parent
    for d in (here.parent / "docs" / "regulations",
              here.parent / "pitwatch" / "_regulations"):
        if d.is_dir():
            return d
    raise FileNotFoundError("the regulation texts (docs/regulations) are not installed")


@cache
def _paragraphs(name: str) -> list[str]:
    text = (regulations_dir() / name).read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def _file(prefix: str) -> str | None:
    found = sorted(p.name for p in regulations_dir().glob(prefix + "-*.txt"))
    return found[0] if found else None


def _lettered(name: str, tail: str) -> list[Quote]:
    lines = _paragraphs(name)
    out: list[Quote] = []
    refs = re.sub(r" \((?![a-z]\)).*$", "", tail)  # a trailing remark is not a reference
    for m in _LETTERS.finditer(refs):
        first, sub_from, sub_to, last = m.group(1), m.group(2), m.group(3), m.group(4)
        letters = [chr(c) for c in range(ord(first), ord(last or first) + 1)]
        for letter in letters:
            start = next((i for i, ln in enumerate(lines) if ln.startswith(f"({letter}) ")),
                         None)
            if start is None:
                continue
            if sub_from is None:
                out.append(Quote(name, f"({letter})", lines[start]))
                continue
            for n in range(int(sub_from), int(sub_to or sub_from) + 1):
                for ln in lines[start + 1:]:
                    if re.match(r"\([a-z]\) ", ln):
                        break
                    if ln.startswith(f"{n}. "):
                        out.append(Quote(name, f"({letter}){n}", ln))
    return out


def _numbered(name: str, refs: str) -> list[Quote]:
    lines = _paragraphs(name)
    wanted: list[str] = []
    for m in _NUMBERED.finditer(refs):
        major, lo = m.group(1), int(m.group(2))
        hi = int(m.group(4)) if m.group(4) else lo
        wanted += [f"{major}.{k}" for k in range(lo, hi + 1)]
    out = []
    for ref in wanted:
        ln = next((ln for ln in lines if ln.startswith(ref + " ")), None)
        if ln is not None:
            out.append(Quote(name, ref, ln))
    return out


def quote(citation: str) -> list[Quote]:
    """The paragraphs `citation` names, verbatim; none for a posted or record rule."""
    if citation.startswith(("Posted", "pitwatch")):
        return []
    if m := _NJ.match(citation):
        name = _file(f"nj-13-69F-{m.group(1)}")
        return _lettered(name, m.group(2)) if name else []
    if m := _PA.match(citation):
        name = _file(f"pa-58-{m.group(1)}")
        return _lettered(name, m.group(2)) if name else []
    if m := _NZ.match(citation):
        name = _file("nz-gazette-1996")
        return _numbered(name, m.group(1)) if name else []
    return []
