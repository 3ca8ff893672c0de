"""The contract in the repo: every citation of every rule of every pack resolves to a
file in docs/ and a paragraph (or heading) that exists in it; no citation names a file
outside the repository; every code a pack can raise is in docs/violations.md with its
severity. How a citation is written: docs/violations.md, "How a citation is written".
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Final

import pytest

from pitwatch.audit.run import audit_paths
from pitwatch.packs.registry import all_packs

ROOT: Final = Path(__file__).resolve().parents[2]
DOCS: Final = ROOT / "docs"
REGULATIONS: Final = DOCS / "regulations"

_PARS: Final = r"\([a-z]\)(?:\d+(?:–\d+)?)?(?:(?:–|, )\([a-z]\)(?:\d+(?:–\d+)?)?)*"
REFERENCE: Final = re.compile(
    rf"N\.J\.A\.C\. 13:69F-(?P<nj>\d+[A-Z]?\.\d+)(?P<nj_par>{_PARS})?"
    rf"|(?:58 Pa\. Code )?§ (?P<pa>672a\.\d+)(?P<pa_par>{_PARS})?"
    r"|NZ Gazette 1996 No 7, Blackjack (?P<nz>\d+\.\d+(?:(?:–|, )\d+\.\d+)*)"
    rf"|(?P<doc>docs/[\w./-]+\.(?:txt|md))(?: (?P<doc_par>{_PARS})| § (?P<heading>[^;()]+))?")
#: anything that looks like a path: a name, a slash, more
PATH_LIKE: Final = re.compile(r"(?<![\w./-])/?[A-Za-z_.][\w.-]*/[\w./-]*")


class Unresolved(AssertionError):
    pass


@cache
def _lines(path: Path) -> tuple[str, ...]:
    return tuple(path.read_text(encoding="utf-8").splitlines())


def _one_file(pattern: str) -> Path:
    found = sorted(REGULATIONS.glob(pattern))
    if len(found) != 1:
        raise Unresolved(f"no single file docs/regulations/{pattern} ({len(found)} found)")
    return found[0]


def _letters(first: str, last: str) -> list[str]:
    return [chr(i) for i in range(ord(first), ord(last) + 1)]


def _paragraphs(spec: str) -> list[tuple[str, list[int]]]:
    """`(a)1–2, (d)–(f)` -> [("a", [1, 2]), ("d", []), ("e", []), ("f", [])]."""
    out: list[tuple[str, list[int]]] = []
    for part in spec.split(", "):
        ends = re.findall(r"\(([a-z])\)(\d+(?:–\d+)?)?", part)
        if len(ends) == 2:  # (d)–(f)
            out.extend((x, []) for x in _letters(ends[0][0], ends[1][0]))
            continue
        (letter, items), = ends
        numbers = [int(n) for n in items.split("–")] if items else []
        if len(numbers) == 2:
            numbers = list(range(numbers[0], numbers[1] + 1))
        out.append((letter, numbers))
    return out


def _check_paragraphs(path: Path, spec: str) -> None:
    """Each `(x)` starts a line of the file; each item `N` of it starts a line `N.`
    between that line and the next paragraph."""
    lines = _lines(path)
    for letter, items in _paragraphs(spec):
        starts = [i for i, line in enumerate(lines) if line.startswith(f"({letter}) ")]
        if len(starts) != 1:
            raise Unresolved(f"{path.name} has no paragraph ({letter})")
        end = next((i for i in range(starts[0] + 1, len(lines))
                    if re.match(r"\([a-z]\) ", lines[i])), len(lines))
        body = lines[starts[0] + 1:end]
        for n in items:
            if not any(line.startswith(f"{n}. ") for line in body):
                raise Unresolved(f"{path.name} has no item {n} in paragraph ({letter})")


def resolve(citation: str) -> list[str]:
    """The references of a citation, each checked against the repository's files (an
    `Unresolved` error names the first that does not resolve)."""
    for p in PATH_LIKE.findall(citation):
        if not p.startswith("docs/") or not (ROOT / p).is_file():
            raise Unresolved(f"names a file outside the repository's docs/: {p}")
    refs = []
    for m in REFERENCE.finditer(citation):
        refs.append(m.group(0))
        if m["nj"]:
            path = _one_file(f"nj-13-69F-{m['nj']}-*.txt")
            if not m["nj_par"]:
                raise Unresolved(f"N.J.A.C. 13:69F-{m['nj']} cited with no paragraph")
            _check_paragraphs(path, m["nj_par"])
        elif m["pa"]:
            path = _one_file(f"pa-58-{m['pa']}-*.txt")
            if not m["pa_par"]:
                raise Unresolved(f"§ {m['pa']} cited with no paragraph")
            _check_paragraphs(path, m["pa_par"])
        elif m["nz"]:
            lines = _lines(_one_file("nz-gazette-1996-*.txt"))
            for rule in re.split(r"–|, ", m["nz"]):
                if not any(line.startswith(f"{rule} ") for line in lines):
                    raise Unresolved(f"the NZ Gazette text has no rule {rule}")
        else:
            path = ROOT / m["doc"]
            if m["doc_par"]:
                _check_paragraphs(path, m["doc_par"])
            elif m["heading"]:
                heading = m["heading"].strip()
                if not any(re.fullmatch(rf"#+ {re.escape(heading)}", line)
                           for line in _lines(path)):
                    raise Unresolved(f"{m['doc']} has no heading {heading!r}")
            else:
                raise Unresolved(f"{m['doc']} cited with no paragraph or heading")
    if not refs:
        raise Unresolved("no reference to a text in the repository")
    return refs


def _citations() -> list[tuple[str, str, str]]:
    """(pack, code, citation) of every rule and record check of every pack."""
    out = set()
    for pack in all_packs():
        out |= {(pack.name, r.code, r.citation) for r in (*pack.rules, *pack.posting)}
        out |= {(pack.name, code, cite) for code, (_, cite) in pack.record_citations.items()}
    return sorted(out)


@pytest.mark.parametrize(("pack", "code", "citation"), _citations())
def test_every_citation_resolves_to_a_paragraph_in_the_repository(
        pack: str, code: str, citation: str) -> None:
    resolve(citation)


@pytest.mark.parametrize("citation", [
    "N.J.A.C. 13:69F-2.8(a)1–2",
    "N.J.A.C. 13:69F-2.25(d)–(f) (three eights: the table's posted pay table)",
    "N.J.A.C. 13:69F-2A.8(a), (d)",
    "58 Pa. Code § 672a.8(c); odds as posted, docs/regulations/posted-rules.txt (b)",
    "NZ Gazette 1996 No 7, Blackjack 9.3, 9.4",
    "docs/regulations/posted-rules.txt (d)5",
    "pitwatch record rule, docs/procedure.md § A round, in order",
])
def test_the_forms_of_docs_violations_md_resolve(citation: str) -> None:
    assert resolve(citation)


@pytest.mark.parametrize(("citation", "why"), [
    ("pitwatch record rule, design/events.md (seq rises by 1 per device)", "outside"),
    ("see /work/shared/regulations/nj.txt", "outside"),
    ("N.J.A.C. 13:69F-2.9(a)", "2.9"),  # not retrieved: no paragraph to cite
    ("N.J.A.C. 13:69F-2.3(a)", "no single file"),
    ("N.J.A.C. 13:69F-2.8(d)", "no paragraph (d)"),
    ("N.J.A.C. 13:69F-2.8(a)3", "no item 3"),
    ("N.J.A.C. 13:69F-2.25(g)–(j)", "no paragraph (i)"),
    ("58 Pa. Code § 672a.8(c) (odds of § 672a.11(b) as posted)", "672a.11"),
    ("NZ Gazette 1996 No 7, Blackjack 9.5", "no rule 9.5"),
    ("docs/regulations/posted-rules.txt (z)", "no paragraph (z)"),
    ("docs/events.md § The wire", "no heading"),
    ("docs/events.md", "no paragraph or heading"),
    ("Posted soft-17 rule of the table (not in the regulation files)", "no reference"),
])
def test_a_citation_that_does_not_resolve_is_refused(citation: str, why: str) -> None:
    with pytest.raises(Unresolved, match=re.escape(why) if why != "2.9" else "paragraph"):
        resolve(citation)


@cache
def catalogue() -> dict[str, str]:
    """code -> severity, from the tables of docs/violations.md."""
    rows = re.findall(r"^\| ([A-Z][A-Z0-9_]+) \| (CRITICAL|HIGH|MEDIUM|LOW) \|",
                      (DOCS / "violations.md").read_text(encoding="utf-8"), re.M)
    codes = [code for code, _ in rows]
    assert len(codes) == len(set(codes)), "a code listed twice in docs/violations.md"
    return dict(rows)


def test_every_code_a_pack_can_raise_is_in_the_catalogue_with_its_severity() -> None:
    listed = catalogue()
    for pack in all_packs():
        for r in (*pack.rules, *pack.posting):
            assert listed.get(r.code) == r.severity, (pack.name, r.code, r.severity)
        for code, (severity, _) in pack.record_citations.items():
            assert listed.get(code) == severity, (pack.name, code, severity)


def test_the_catalogue_lists_the_codes_of_issue_7() -> None:
    listed = catalogue()
    assert listed["VOID_WAGER_SETTLED"] == "CRITICAL"
    assert listed["WAGER_OUTSIDE_LIMITS"] == "HIGH"


def test_no_message_names_a_file_outside_the_repository() -> None:
    """The violations the hand-built rounds raise name only files of docs/, in their
    citations and in their messages."""
    rep = audit_paths([ROOT / "tests" / "data" / "rounds.jsonl"])
    assert rep.violations
    for v in rep.violations:
        for text in (v.citation, v.message):
            for p in PATH_LIKE.findall(text):
                assert p.startswith("docs/") and (ROOT / p).is_file(), (v.code, text)
