"""A case folder's game-protection observations in report.pdf and report.html: "the
observations that touch the selected rounds", as observations.json lists them, in the
same order and the same words (replay/case_observations.py), money in dollars and
cents. The PDF's text is read with pdftotext (poppler-utils); a case that no stored
observation touches says so."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.producers.simulate import simulate_floor
from pitwatch.protect.observation import DEALER, TABLE, Observation
from pitwatch.protect.stored import store_observations
from pitwatch.replay import case_observations as words
from pitwatch.replay.case import Selection, build_case
from pitwatch.replay.case_files import write_case
from pitwatch.store.embedded import EmbeddedStore

HOSTILE = "<b>&amp; 'x'</b>"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """A store of two small tables; a hold observation about the first table (a
    hostile message) and a dealer's, neither about the second table's rounds."""
    d = tmp_path_factory.mktemp("caseobs") / "data"
    store = EmbeddedStore(d)
    store.setup()
    audit_events(simulate_floor(2, 3, 7)[0], store=store)
    rows = store.query("SELECT table_id, round_id, dealer_id FROM rounds FINAL "
                       "ORDER BY table_id, round_id")
    first, other = rows[0], next(r for r in rows if r["table_id"] != rows[0]["table_id"])
    assert first["dealer_id"] != other["dealer_id"]
    hold = Observation("HOLD_OFF_THEORETICAL", TABLE, first["table_id"], first["table_id"],
                       None, None, "z", 3.5, 0.0002, None, 0.4, 3, (first["round_id"],),
                       False, HOSTILE, (("expected_cents", 12345.4), ("actual_cents", -98765.0),
                                        ("sd_cents", 4000.0), ("hands", 3.0)))
    dealer = Observation("DEALER_ERROR_RATE", DEALER, "", first["dealer_id"], None,
                         first["dealer_id"], "errors", 4.0, 0.001, None, 0.2, 3, (), False,
                         "dealer errs")
    store_observations(store, [hold, dealer])
    store.close()
    yield d, first["round_id"], other["round_id"]


def _case(d: Path, round_id: str, out: Path) -> dict[str, bytes]:
    store = EmbeddedStore(d)
    try:
        case = build_case(store, Selection(round_id=round_id), "chdb:test", 1_796_000_000_000)
    finally:
        store.close()
    return write_case(case, out)


def _pdf_text(pdf: Path) -> str:
    """The PDF's text in the order it is drawn (a table cell's lines together)."""
    out = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return re.sub(r"\s+", " ", out)


@pytest.mark.skipif(shutil.which("pdftotext") is None,
                    reason="poppler-utils not installed (scripts/system-deps.sh installs it)")
def test_the_pdf_lists_the_observations_the_html_and_json_do(
        data: tuple[Path, str, str], tmp_path: Path) -> None:
    d, touched, _ = data
    files = _case(d, touched, tmp_path / "case")
    listed = json.loads(files["observations.json"])["observations"]
    assert [o["code"] for o in listed] == ["DEALER_ERROR_RATE", "HOLD_OFF_THEORETICAL"]
    text = _pdf_text(tmp_path / "case" / "report.pdf")
    html = files["report.html"].decode()
    assert words.TITLE in text and words.NONE not in text
    at = [text.index(o["code"]) for o in listed]
    assert at == sorted(at)  # the same order as observations.json
    for o in listed:
        assert o["subject"] in text
        cells = words.observation_cells(o)
        assert " ".join(c for c in cells if c) in text  # the line, cell after cell
    # money in dollars and cents, in both
    money = "house result -$987.65 against $123.45 expected (standard deviation $40.00)"
    assert money in text and money in html
    # a device-or-detector-written message is text in both, never markup
    assert HOSTILE in text
    assert "&lt;b&gt;&amp;amp; &#x27;x&#x27;&lt;/b&gt;" in html and HOSTILE not in html


@pytest.mark.skipif(shutil.which("pdftotext") is None,
                    reason="poppler-utils not installed (scripts/system-deps.sh installs it)")
def test_a_case_no_observation_touches_says_so(
        data: tuple[Path, str, str], tmp_path: Path) -> None:
    d, _, untouched = data
    files = _case(d, untouched, tmp_path / "case")
    assert json.loads(files["observations.json"])["observations"] == []
    text = _pdf_text(tmp_path / "case" / "report.pdf")
    assert words.TITLE in text and words.NONE in text
    assert words.NONE in files["report.html"].decode()


def test_an_observation_without_money_shows_none_and_a_bad_figure_is_left_out() -> None:
    o: dict[str, Any] = {
        "code": "C", "scope": "SEAT_SESSION", "subject": "T/1/R1", "statistic": "r",
        "value": None, "p_value": None, "likelihood_ratio": 12.0, "weight_rounds": [],
        "message": "m", "details": {"actual_cents": "1", "expected_cents": 5.0}}
    assert words.observation_cells(o) == (
        "C", "seat_session T/1/R1", "r = 0", "likelihood ratio 12", "", "none named", "m")
