"""`pitwatch investigate`: the case folder a regulator files. The PDF is rendered to PNG
with pdftoppm and its text extracted with pdftotext (poppler-utils, installed by
scripts/system-deps.sh), and must carry the finding, the paragraph it cites, quoted,
and the chain verdict; the same selection twice gives the same bytes except the marked
generation time; the manifest hashes every file."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.citations import quote
from pitwatch.events.model import PayEntry, PayTable, Rules
from pitwatch.producers.simulate import simulate_floor
from pitwatch.replay.case import Selection, build_case
from pitwatch.replay.case_files import write_case
from pitwatch.replay.present import quote_kind, rules_lines
from pitwatch.store.embedded import EmbeddedStore


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("inv") / "data"
    store = EmbeddedStore(d)
    store.setup()
    audit_events(simulate_floor(3, 24, 26, 0.3)[0], store=store)
    store.close()
    yield d


def _critical_round(data: Path) -> tuple[str, str, str]:
    store = EmbeddedStore(data)
    try:
        r = store.query("SELECT round_id, code, citation FROM violations FINAL WHERE severity "
                        "= 'CRITICAL' AND citation LIKE 'N.J.A.C.%' ORDER BY round_id LIMIT 1")
    finally:
        store.close()
    assert r, "the floor has a CRITICAL finding citing a regulation paragraph"
    return r[0]["round_id"], r[0]["code"], r[0]["citation"]


def _case(data: Path, sel: Selection, out: Path, generated_ms: int) -> dict[str, bytes]:
    store = EmbeddedStore(data)
    try:
        case = build_case(store, sel, "chdb:test", generated_ms)
    finally:
        store.close()
    return write_case(case, out)


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.skipif(shutil.which("pdftoppm") is None or shutil.which("pdftotext") is None,
                    reason="poppler-utils not installed (scripts/system-deps.sh installs it)")
def test_the_pdf_shows_the_finding_the_paragraph_and_the_chain_verdict(
        data: Path, tmp_path: Path) -> None:
    rid, code, citation = _critical_round(data)
    files = _case(data, Selection(round_id=rid), tmp_path / "case", 1_796_000_000_000)
    pdf = tmp_path / "case" / "report.pdf"
    assert files["report.pdf"].startswith(b"%PDF")
    subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "2", str(pdf),
                    str(tmp_path / "page")], check=True, timeout=120)
    pngs = sorted(tmp_path.glob("page-*.png"))
    assert pngs and all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)
    text = _words(subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True,
                                 capture_output=True, text=True, timeout=120).stdout)
    assert code in text
    assert rid in text
    cited = quote(citation)
    assert cited is not None
    paragraph = cited.paragraphs[0][1]
    # the paragraph's opening words, as the regulation text has them
    assert _words(paragraph)[:60] in text
    assert "digest chains VERIFIED" in text
    assert "VERIFIED: seq" in text  # each device's own verdict
    assert "$" in text and " cents" not in text
    # "the PDF footer has page N of M"
    pages = int(re.search(r"page 1 of (\d+)", text).group(1))  # type: ignore[union-attr]
    assert pages >= 2 and f"page {pages} of {pages}" in text


def test_the_case_folder_holds_what_it_says(data: Path, tmp_path: Path) -> None:
    rid, code, _ = _critical_round(data)
    files = _case(data, Selection(round_id=rid), tmp_path / "c", 1_796_000_000_000)
    out = tmp_path / "c"
    assert sorted(p.name for p in out.iterdir()) == sorted(files) == [
        "TableEvent.avsc", "evidence.jsonl", "manifest.json", "observations.json",
        "report.html", "report.pdf", "violations.csv"]
    m = json.loads((out / "manifest.json").read_text())
    for name, entry in m["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == entry["sha256"]
    assert set(m["files"]) == set(files) - {"manifest.json"}
    assert m["selection"]["round_id"] == rid
    assert m["packs"] and all(p["name"] and p["version"] for p in m["packs"])
    assert m["made_by"]["name"] == "pitwatch" and m["made_by"]["version"]
    assert m["store"]["identity"] == "chdb:test"
    assert m["generated_at"] == "2026-11-30T00:53:20.000Z"
    assert m["signed_by"].startswith("UNSIGNED")
    assert code in {f["code"] for f in m["findings"]}
    # evidence: the round's events as sent, after the table context they were judged in
    ev = [json.loads(x) for x in (out / "evidence.jsonl").read_text().splitlines()]
    assert rid in {e["round_id"] for e in ev} and ev[0]["type"] == "TableOpened"
    assert {"event_id", "device_id", "seq", "ts", "prev_digest"} <= ev[0].keys()
    rows = list(csv.DictReader(io.StringIO((out / "violations.csv").read_text())))
    assert code in {r["code"] for r in rows}
    assert {r["status"] for r in rows} == {"rebuilt and stored"}
    html = (out / "report.html").read_text()
    assert "<link" not in html and "<script" not in html and "src=" not in html
    assert 'class="card' in html and any(suit in html for suit in "♠♥♦♣")
    assert "<blockquote>" in html and "Posted rules in force" in html


def test_pitwatchs_own_words_are_never_quoted_as_regulation_text() -> None:
    """"pitwatch's own paraphrase is never quoted as regulation text (mark it as
    pitwatch's summary)"."""
    paraphrase = quote("N.J.A.C. 13:69F-2.2(a)")
    assert paraphrase is not None and "PARAPHRASE" in (
        Path(__file__).parents[2] / paraphrase.source).read_text()
    assert quote_kind(paraphrase).startswith("pitwatch's summary of the regulation")
    text = quote("N.J.A.C. 13:69F-2.8(a)1–2")
    assert text is not None and quote_kind(text) == "regulation"
    own = quote("pitwatch record rule, docs/events.md § Rounds (every round ends with "
                "RoundEnded)")
    assert own is not None and quote_kind(own).startswith("pitwatch's own rule")
    posted = quote("Posted dealer's draw, docs/regulations/posted-rules.txt (c)")
    assert posted is not None and quote_kind(posted).startswith("pitwatch's own rule")


def test_the_posted_rules_in_force_name_the_dealer_22_push_and_side_pay_tables() -> None:
    """"posted rules in force includes the push-on-22 and side-wager pay tables"."""
    free_bet = Rules(push22_wager=True, pay_tables=None)
    lines = rules_lines(free_bet, "FREE_BET_BLACKJACK")
    assert any("dealer's 22 pushes" in x for x in lines)
    assert "pay table PUSH22 (none posted; pitwatch judges by): DEALER_22 11 to 1" in lines
    posted = Rules(match_wager=True, pay_tables=(PayTable("MATCH", (PayEntry("ONE_PAIR", 2, 1),)),))
    lines = rules_lines(posted, "BLACKJACK_SWITCH")
    assert "pay table MATCH: ONE_PAIR 2 to 1" in lines
    assert not any("MATCH (none posted" in x for x in lines)
    assert not any("22 pushes" in x for x in rules_lines(Rules(), "BLACKJACK"))


def test_the_same_selection_gives_the_same_bytes_but_the_marked_time(
        data: Path, tmp_path: Path) -> None:
    store = EmbeddedStore(data)
    try:
        table = store.query("SELECT table_id FROM rounds FINAL ORDER BY table_id LIMIT 1"
                            )[0]["table_id"]
    finally:
        store.close()
    sel = Selection(table=table, severity="MEDIUM")
    a = _case(data, sel, tmp_path / "a", 1_796_000_000_000)
    b = _case(data, sel, tmp_path / "b", 1_796_000_000_000)
    assert a == b
    later = _case(data, sel, tmp_path / "c", 1_796_000_999_000)
    assert later["report.pdf"] != a["report.pdf"]
    for name in ("evidence.jsonl", "violations.csv"):
        assert later[name] == a[name]
    marked = re.compile(rb'<td data-field="generated-at">[^<]*</td>')
    assert len(marked.findall(a["report.html"])) == 1
    assert marked.sub(b"", later["report.html"]) == marked.sub(b"", a["report.html"])
    assert later["report.html"] != a["report.html"]


def test_selection_by_table_time_dealer_code_and_severity(data: Path) -> None:
    store = EmbeddedStore(data)
    try:
        rows = store.query("SELECT table_id, round_id, dealer_id, toUInt64(toUnixTimestamp("
                           "started)) * 1000 + started_ms AS t FROM rounds FINAL "
                           "ORDER BY table_id, t")
        table = rows[0]["table_id"]
        mine = [r for r in rows if r["table_id"] == table]
        lo, hi = int(mine[3]["t"]), int(mine[6]["t"])
        got = Selection(table=table, start_ms=lo, end_ms=hi).round_ids(store)
        assert [r for _, r in got] == [r["round_id"] for r in mine[3:6]]
        dealer = rows[0]["dealer_id"]
        assert {r for _, r in Selection(dealer=dealer).round_ids(store)} == \
            {r["round_id"] for r in rows if r["dealer_id"] == dealer}
        v = store.query("SELECT code, round_id, severity FROM violations FINAL")
        code = v[0]["code"]
        assert {r for _, r in Selection(code=code).round_ids(store)} == \
            {x["round_id"] for x in v if x["code"] == code}
        assert {r for _, r in Selection(severity="HIGH").round_ids(store)} == \
            {x["round_id"] for x in v if x["severity"] in ("CRITICAL", "HIGH")}
        assert Selection(table="NO-SUCH").round_ids(store) == []
    finally:
        store.close()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_command_writes_a_case_and_explains_empty_selections(
        data: Path, tmp_path: Path) -> None:
    rid, _, _ = _critical_round(data)
    r = _cli("investigate", rid, "--data", str(data), "--out", str(tmp_path / "k"),
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "every round (1) rebuilt" in r.stdout and "VERIFIED" in r.stdout
    assert (tmp_path / "k" / "report.pdf").exists()
    none = _cli("investigate", "--table", "NO-SUCH", "--data", str(data), "--out",
                str(tmp_path / "n"), cwd=tmp_path)
    assert none.returncode == 1 and "no round in the store matches" in none.stderr
    bare = _cli("investigate", "--data", str(data), "--out", str(tmp_path / "n"),
                cwd=tmp_path)
    assert bare.returncode == 2 and "select something" in bare.stderr
    bad = _cli("investigate", "--from", "yesterday", "--data", str(data), "--out",
               str(tmp_path / "n"), cwd=tmp_path)
    assert bad.returncode == 2 and "not a time" in bad.stderr


def test_a_case_too_large_is_refused_before_any_rebuild(data: Path) -> None:
    store = EmbeddedStore(data)
    try:
        with pytest.raises(ValueError, match="at most 2 a case: narrow the selection"):
            build_case(store, Selection(severity="LOW"), "chdb:test", 0, max_rounds=2)
    finally:
        store.close()
