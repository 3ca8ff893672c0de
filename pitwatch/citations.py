"""The paragraph a citation points at, quoted from `docs/regulations/`.

A violation's citation names a section and paragraph labels, e.g.
`N.J.A.C. 13:69F-2.8(a)1–2`, `58 Pa. Code § 672a.8(c) (odds of … as posted)`,
`NZ Gazette 1996 No 7, Blackjack 9.2–9.3` or `Posted limits of the table,
docs/regulations/posted-rules.txt (a)`. `quote(citation)` finds the file of that section
(by its name: `nj-13-69F-2.8-….txt`, `pa-58-672a.8-….txt`, `nz-gazette-1996-….txt`, or
the file the citation names) and returns the text of each labelled paragraph, in
citation order. A citation of a
posted rule or of the record (no regulation file) quotes nothing: `None`.

Files hold one paragraph a line or wrapped lines; a paragraph runs from its label to
the next label of its level, a blank line followed by text that is no sub-paragraph, or
the page furniture the copied texts carry (disclaimers, page numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_FILE = re.compile(r"docs/regulations/([\w.-]+\.txt)")
_NJ = re.compile(r"13:69F-(\d+A?\.\d+)")
_PA = re.compile(r"§\s*(672a\.\d+)")
_NZ = re.compile(r"Gazette 1996")
_LETTER = re.compile(r"\(([a-z]{1,2})\)(?:(\d+)(?:\s*[–-]\s*(\d+))?)?")
_LETTER_RANGE = re.compile(r"\s*[–-]\s*\(([a-z])\)")
_NUMBER = re.compile(r"(\d+\.\d+)(?:\s*[–-]\s*(\d+\.\d+))?")
_SEP = re.compile(r"[\s,]*(?:and\s+)?")
_FOOTER = re.compile(r"^(Disclaimer|Cross References|No part of|This material|This site|"
                     r"Next Page|PDF embedding|View this page|\d+$)")


@dataclass(frozen=True, slots=True)
class Quote:
    """The quoted paragraphs of one citation: `source` is the file, repo-relative."""

    citation: str
    source: str
    paragraphs: tuple[tuple[str, str], ...]  # (label as cited, text)


def regulations_dir() -> Path:
    """`docs/regulations/` of a source checkout, or the copy packed into the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "docs" / "regulations", here / "_regulations"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no docs/regulations beside {here}")


_DOC = re.compile(r"(docs/[\w.-]+\.md) § ([^(]+)")
DOC_QUOTE_CHARS = 1500  # a section of pitwatch's own docs is quoted up to this much


def quote(citation: str, regulations: Path | None = None) -> Quote | None:
    """The cited paragraphs, or None when the citation names no regulation file here or
    none of its paragraphs is found. A rule of pitwatch's own record cites a section of
    its docs (`docs/events.md § The record`): that section is quoted, its heading as
    the label, cut at a paragraph after DOC_QUOTE_CHARS."""
    if m := _DOC.search(citation):
        return _doc_section(citation, m.group(1), m.group(2).strip().rstrip(","),
                            (regulations or regulations_dir()).parent.parent)
    found = _section(citation)
    if found is None:
        return None
    key, tail = found
    files = _files(regulations or regulations_dir())
    path = files.get(key)
    if path is None:
        return None
    numbered = key.startswith("nz")
    paras = _paragraphs(path.read_text(encoding="utf-8"), numbered)
    out: list[tuple[str, str]] = []
    for top, subs in _grouped(_number_labels(tail) if numbered else _letter_labels(tail)):
        text = _text(paras, top, subs)
        if text:
            label = top if numbered else f"({top})"
            if subs:
                label += subs[0] if len(subs) == 1 else f"{subs[0]}–{subs[-1]}"
            out.append((label, text))
    if not out:
        return None
    return Quote(citation, f"docs/regulations/{path.name}", tuple(out))


def _doc_section(citation: str, doc: str, heading: str, root: Path) -> Quote | None:
    """The markdown section whose heading starts with `heading`, to the next heading.
    The file is looked for in the checkout (root) or in the copy a wheel packs."""
    path = next((p for p in (root / doc, Path(__file__).parent / "_docs" / Path(doc).name)
                 if p.is_file()), None)
    if path is None:
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)$", line)
        if m and m.group(2).startswith(heading):
            body: list[str] = []
            for nxt in lines[i + 1:]:
                h = re.match(r"^(#+)\s", nxt)
                if h and len(h.group(1)) <= len(m.group(1)):
                    break
                body.append(nxt)
            text = _unwrap(body)
            if len(text) > DOC_QUOTE_CHARS:
                cut = text.rfind("\n", 0, DOC_QUOTE_CHARS)
                text = text[:cut if cut > 0 else DOC_QUOTE_CHARS].rstrip() + "\n…"
            return Quote(citation, doc, ((m.group(2), text),))
    return None


def _unwrap(lines: list[str]) -> str:
    """Markdown lines as one line per paragraph, list item or table row."""
    out: list[str] = []
    fresh = True
    for raw in lines:
        line = raw.strip()
        if not line:
            fresh = True
            continue
        if fresh or re.match(r"^([-*|]|\d+\.)\s?", line):
            out.append(line)
        else:
            out[-1] += " " + line
        fresh = False
    return "\n".join(out)


def _section(citation: str) -> tuple[str, str] | None:
    """(file key, the citation after the section) or None. A citation may name its
    file itself (`…, docs/regulations/posted-rules.txt (d)2`)."""
    if m := _FILE.search(citation):
        return "file:" + m.group(1), citation[m.end():]
    for rx, prefix in ((_NJ, "13:69F-"), (_PA, "")):
        m = rx.search(citation)
        if m:
            return prefix + m.group(1), citation[m.end():]
    m = _NZ.search(citation)
    if m:
        return "nz-gazette-1996", citation[m.end():]
    return None


@cache
def _files(root: Path) -> dict[str, Path]:
    """Section key -> file, from the file names."""
    out: dict[str, Path] = {}
    for f in sorted(root.glob("*.txt")):
        out["file:" + f.name] = f
        if m := re.match(r"nj-13-69F-(\d+A?\.\d+)-", f.name):
            out[f"13:69F-{m.group(1)}"] = f
        elif m := re.match(r"pa-58-(672a\.\d+)-", f.name):
            out[m.group(1)] = f
        elif f.name.startswith("nz-gazette-1996-"):
            out["nz-gazette-1996"] = f
    return out


def _letter_labels(tail: str) -> list[tuple[str, str | None]]:
    """`(a)1–2, (h)` -> [(a,1), (a,2), (h,None)]; stops at the first comment."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    while True:
        pos = _SEP.match(tail, pos).end()  # type: ignore[union-attr]
        m = _LETTER.match(tail, pos)
        if not m:
            return out
        letter, first, last = m.groups()
        pos = m.end()
        if first is None:
            rng = _LETTER_RANGE.match(tail, pos)
            if rng and len(letter) == 1:
                out.extend((chr(c), None) for c in range(ord(letter), ord(rng.group(1)) + 1))
                pos = rng.end()
            else:
                out.append((letter, None))
        else:
            out.extend((letter, str(n)) for n in range(int(first), int(last or first) + 1))


def _number_labels(tail: str) -> list[tuple[str, str | None]]:
    """`9.2–9.3` -> [(9.2,None), (9.3,None)]; `9.3, 9.4` likewise."""
    out: list[tuple[str, str | None]] = []
    for m in _NUMBER.finditer(tail):
        first, last = m.groups()
        major, minor = first.split(".")
        end = int(last.split(".")[1]) if last and last.split(".")[0] == major else int(minor)
        out.extend((f"{major}.{n}", None) for n in range(int(minor), end + 1))
    return out


_Paras = dict[str, tuple[list[str], dict[str, list[str]]]]


def _paragraphs(text: str, numbered: bool) -> _Paras:
    """label -> (its own lines, sub-label -> lines). The first occurrence of a label
    wins (copied pages repeat text after their furniture)."""
    top_rx = re.compile(r"^(\d+\.\d+)\s" if numbered else r"^\(([a-z]{1,2})\)\s")
    sub_rx = re.compile(r"^\(([a-z])\)\s" if numbered else r"^\(?(\d+)[.)]\s")
    paras: _Paras = {}
    current: list[str] | None = None  # the lines being filled
    subs: dict[str, list[str]] = {}
    after_blank = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            after_blank = True
            continue
        if m := top_rx.match(line):
            if m.group(1) in paras:
                current = None
                continue
            current, subs = [line], {}
            paras[m.group(1)] = (current, subs)
        elif current is not None and (m := sub_rx.match(line)):
            current = subs.setdefault(m.group(1), [])
            current.append(line)
        elif current is not None and (line.startswith("|") or not after_blank) \
                and not _FOOTER.match(line):
            current.append(line)
        else:
            current = None
        after_blank = False
    return paras


def _grouped(labels: list[tuple[str, str | None]]) -> list[tuple[str, list[str]]]:
    """Consecutive sub-paragraphs of one paragraph together: (a)1, (a)2 -> (a), [1, 2]."""
    out: list[tuple[str, list[str]]] = []
    for top, sub in labels:
        if out and out[-1][0] == top and sub is not None and out[-1][1]:
            out[-1][1].append(sub)
        else:
            out.append((top, [] if sub is None else [sub]))
    return out


def _text(paras: _Paras, top: str, subs: list[str]) -> str:
    """The paragraph with all its sub-paragraphs, or its first lines and the cited ones."""
    if top not in paras:
        return ""
    own, all_subs = paras[top]
    picked = list(all_subs.values()) if not subs else [all_subs[s] for s in subs
                                                         if s in all_subs]
    if subs and not picked:
        return ""
    return "\n".join([_join(own), *(_join(s) for s in picked)])


def _join(lines: list[str]) -> str:
    """Wrapped lines joined by spaces; table rows keep their own lines."""
    out = lines[0]
    for ln in lines[1:]:
        out += ("\n" if ln.startswith("|") else " ") + ln
    return out
