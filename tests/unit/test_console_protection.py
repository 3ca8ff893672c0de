"""The console's game-protection pages (console/protection.py, charts.py,
protection_pages.py) over an embedded store: the protection list, a seat session's bets
against the true count (the numbers the count detector judged), a dealer's hold against
theoretical (the hold detector's tally, with its band of 3 standard deviations), every
id escaped in the page and the SVG, and the observations a round page shows."""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from pitwatch.audit.run import audit_events
from pitwatch.console.charts import bet_chart, hold_chart
from pitwatch.console.protection import (
    BetPoint,
    HoldPoint,
    ProtectionData,
    dealer_view,
    hold_points,
    seat_session,
    session_tables,
)
from pitwatch.console.protection_pages import dealer_page, protection_list, session_page
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.hold import Z_THRESHOLD, hold_tallies
from pitwatch.protect.rounds import read_floor
from pitwatch.protect.run import protect
from pitwatch.protect.sessions import infer_sessions
from pitwatch.protect.stored import store_observations
from pitwatch.protect.touching import session_parts, touches
from pitwatch.store.embedded import EmbeddedStore

from .test_console_views import serve

TABLE = "SIM-BJ-00000"
HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>/&amp;'


async def _direct(fn: Any, *args: Any) -> Any:
    """The store thread and the fold's thread as direct calls."""
    return fn(*args)


def _session(data: ProtectionData, sid: str) -> dict[str, Any]:
    return asyncio.run(seat_session(_direct, _direct, data, sid))


def _dealer(data: ProtectionData, dealer_id: str) -> dict[str, Any]:
    return asyncio.run(dealer_view(_direct, _direct, data, dealer_id))


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """One table, 100 rounds: a counter with a 1-8 ramp at seat 1 (a rated player), a
    flat bettor at 3, a hole-card player at 5 (the dealer flashes); audited into the
    store with its observations."""
    path = tmp_path_factory.mktemp("protection-store")
    players = {s: make_player(p, 5, s, 0)
               for s, p in {1: "counter-8", 3: "flat", 5: "holecard"}.items()}
    evs = events(SimTable(0, 5, players, flash=0.3, seated=True), 100, 5)
    store = EmbeddedStore(path)
    try:
        store.setup()
        audit_events(evs, store=store)
        store_observations(store, protect(evs))
        store.dedupe()
    finally:
        store.close()
    return path, evs


@pytest.fixture(scope="module")
def data(floor: tuple[Path, list[Any]]) -> Any:
    store = EmbeddedStore(floor[0])
    yield ProtectionData(store)
    store.close()


def test_the_list_is_strongest_first(data: ProtectionData) -> None:
    got = data.protection_list()
    codes = [o["code"] for o in got["observations"]]
    assert {"COUNT_CORRELATED_BETTING", "HOLE_CARD_PLAY"} <= set(codes)
    strengths = [o["strength"] for o in got["observations"]]
    assert strengths == sorted(strengths, reverse=True)
    assert got["total"] == len(codes)
    assert data.protection_list(offset=1, limit=1)["observations"] == got["observations"][1:2]


def test_a_counters_session_charts_what_the_count_detector_judged(
        data: ProtectionData, floor: tuple[Path, list[Any]]) -> None:
    sid = f"{TABLE}/1/{TABLE}-000001"
    s = _session(data, sid)
    assert (s["table_id"], s["seat"], s["player_id"], s["player_kind"]) == (
        TABLE, 1, "LOYAL-00000-1", "RATED")
    assert [o["code"] for o in s["observations"]] == ["COUNT_CORRELATED_BETTING"]
    read = read_floor(floor[1])
    want = next(x for x in infer_sessions(read.floor.tables[TABLE],
                                          seatings=read.floor.seatings[TABLE])
                if x.session_id == sid)
    assert s["rounds"] == [r.round_id for r in want.rounds]
    assert s["points"] == [BetPoint(r.round_id, r.true_count, r.seats[1].main)
                           for r in want.rounds if r.true_count is not None]
    assert s["started_at"] < s["ended_at"]
    svg = bet_chart(s["points"], s["observations"][0]["weight_rounds"], sid)
    assert f"seat session {sid}" in svg and svg.count("<circle") == len(s["points"])
    assert svg.count('class="pt weight"') == len(s["observations"][0]["weight_rounds"])


def test_an_unknown_or_garbage_session_is_not_found(data: ProtectionData) -> None:
    from pitwatch.console.data import NotFound

    for sid in (f"{TABLE}/9/NO-SUCH-ROUND", "no slash at all", f"{TABLE}/x/{TABLE}-000001"):
        with pytest.raises(NotFound):
            _session(data, sid)
    with pytest.raises(ValueError):
        _session(data, "x" * 129)


def test_a_dealers_hold_is_the_hold_detectors_tally_with_its_band(
        data: ProtectionData, floor: tuple[Path, list[Any]]) -> None:
    dealer = "SD00000-001"  # rounds 1 to 40
    d = _dealer(data, dealer)
    assert [t["table_id"] for t in d["tables"]] == [TABLE]
    assert len(d["rounds"]) == 40 and d["rounds"][0]["round_id"] == f"{TABLE}-000040"
    read = read_floor(floor[1])
    mine = [r for r in read.floor.tables[TABLE] if r.dealer_id == dealer]
    tally = next(t for t in hold_tallies({TABLE: mine}) if t.subject == dealer)
    last = d["hold"][-1]
    assert (len(d["hold"]), last.actual) == (tally.rounds, tally.actual)
    assert last.expected == pytest.approx(tally.expected)
    # the band: expected +- 3 standard deviations of the sum, at every point
    assert last.half_band == pytest.approx(Z_THRESHOLD * math.sqrt(tally.variance))
    assert all(p.high - p.low == pytest.approx(2 * p.half_band) for p in d["hold"])
    assert [p.half_band for p in d["hold"]] == sorted(p.half_band for p in d["hold"])


def test_the_band_in_numbers() -> None:
    p = HoldPoint(0, "R1", "T", actual=-500, expected=1000.0, half_band=300.0)
    assert (p.low, p.high) == (700.0, 1300.0)
    svg = hold_chart([p, HoldPoint(1, "R2", "T", 250, 1500.0, 600.0)], "dealer D")
    band = re.search(r'<polygon class="band" points="([^"]+)"', svg)
    assert band is not None and len(band.group(1).split()) == 4
    assert "$15.00 expected, band $9.00 to $21.00 (3 standard deviations)" in svg


def test_a_chart_with_nothing_to_draw_says_why_in_its_description_and_its_body() -> None:
    for svg, chart, why in (
            (bet_chart([], [], HOSTILE), "bet-chart",
             "no round of the session has a known true count"),
            (hold_chart([], HOSTILE), "hold-chart", "no blackjack round with a main wager")):
        assert svg.startswith(f'<svg class="chart" id="{chart}"') and svg.endswith("</svg>")
        assert f'<desc id="{chart}-d">{why}</desc>' in svg
        assert f'<text class="empty" x="360" y="160" text-anchor="middle">{why}</text>' in svg
        assert "<script>" not in svg and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
        assert "<circle" not in svg and "<polyline" not in svg


def test_hold_points_leave_out_rounds_with_no_main_wager(
        floor: tuple[Path, list[Any]]) -> None:
    rounds = read_floor(floor[1]).floor.tables[TABLE][:5]
    for r in rounds[1:]:
        r.seats.clear()
    assert [p.round_id for p in hold_points(enumerate(rounds), "D")] == [rounds[0].round_id]


def test_hostile_ids_are_escaped_in_pages_and_charts() -> None:
    sid = f"{HOSTILE}/1/{HOSTILE}"
    obs = {"observation_id": "x", "code": "COUNT_CORRELATED_BETTING", "scope": "SEAT_SESSION",
           "table_id": HOSTILE, "subject": sid, "seat": 1, "dealer_id": HOSTILE,
           "statistic": HOSTILE, "value": 7.0, "p_value": 1e-9, "likelihood_ratio": None,
           "strength": 0.5, "rounds": 2, "weight_rounds": [HOSTILE], "inferred": False,
           "player_id": HOSTILE, "player_kind": HOSTILE, "message": HOSTILE, "details": {}}
    pages = [
        session_page({"session_id": sid, "table_id": HOSTILE, "seat": 1,
                      "player_id": HOSTILE, "player_kind": HOSTILE, "inferred": False,
                      "rounds": [HOSTILE], "points": [BetPoint(HOSTILE, 2.0, 500)],
                      "started_at": 0, "ended_at": 1, "dealers": [HOSTILE],
                      "observations": [obs]}),
        dealer_page({"dealer_id": HOSTILE, "tables": [{"table_id": HOSTILE, "rounds": 1,
                                                        "first_ms": 0, "last_ms": 0}],
                     "rounds": [{"table_id": HOSTILE, "round_id": HOSTILE, "at": 0}],
                     "observations": [{**obs, "scope": "DEALER", "subject": HOSTILE,
                                       "code": "DEALER_ERROR_RATE"}],
                     "hold": [HoldPoint(0, HOSTILE, HOSTILE, 10, 5.0, 3.0)], "limit": 400}),
        protection_list({"observations": [obs], "total": 1, "offset": 0, "limit": 50}),
        bet_chart([BetPoint(HOSTILE, 1.0, 100)], [HOSTILE], HOSTILE),
        hold_chart([HoldPoint(0, HOSTILE, HOSTILE, 10, 5.0, 3.0)], HOSTILE),
    ]
    for html in pages:
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_each_scope_links_its_page() -> None:
    from pitwatch.console.protection_pages import subject_link

    def link(scope: str, subject: str, table: str = "") -> str:
        return subject_link({"scope": scope, "subject": subject, "table_id": table,
                             "seat": 2})

    assert 'href="/sessions/T%2F2%2FT-1"' in link("SEAT_SESSION", "T/2/T-1", "T")
    assert 'href="/dealers/D%201"' in link("DEALER", "D 1")
    assert 'href="/tables/T"' in link("TABLE", "T", "T")
    assert 'href="/shift?day=2026-12-05&amp;shift=2"' in link("SHIFT", "2026-12-05/2")


def test_a_session_id_names_its_table_whatever_its_slashes() -> None:
    sid = "PIT 3/BJ-01/4/PIT 3/BJ-01-000007"
    assert session_tables(sid) == ("PIT 3", "PIT 3/BJ-01", "PIT 3/BJ-01/4",
                                   "PIT 3/BJ-01/4/PIT 3")
    assert session_parts(sid, "PIT 3/BJ-01") == (4, "PIT 3/BJ-01-000007")
    assert session_parts(sid, "PIT 3") is None  # "BJ-01" is no seat


def test_what_touches_a_round() -> None:
    base = {"scope": "SEAT_SESSION", "table_id": "T", "subject": "T/2/T-1",
            "weight_rounds": ["T-9"]}
    assert touches(base, "T", "T-9", "D")  # a round that carries the weight
    assert touches(base, "T", "T-1", "D")  # the session began with it
    assert not touches(base, "T", "T-5", "D")
    assert touches({**base, "scope": "TABLE", "subject": "T", "weight_rounds": []},
                   "T", "T-5", "D")
    assert touches({**base, "scope": "DEALER", "table_id": "", "subject": "D",
                    "weight_rounds": []}, "T", "T-5", "D")
    assert not touches({**base, "scope": "DEALER", "table_id": "", "subject": "E",
                        "weight_rounds": []}, "T", "T-5", "D")


def test_the_pages_through_http_for_a_viewer(floor: tuple[Path, list[Any]]) -> None:
    from urllib.parse import quote

    sid = f"{TABLE}/1/{TABLE}-000001"

    async def check(client: TestClient[Any, Any]) -> None:
        listing = await (await client.get("/protection")).text()
        assert 'href="/protection"' in listing and quote(sid, safe="") in listing
        session = await client.get(f"/sessions/{quote(sid, safe='')}")
        assert session.status == 200
        assert 'id="bet-chart"' in await session.text()
        dealer = await (await client.get("/dealers/SD00000-001")).text()
        assert 'id="hold-chart"' in dealer and "Error rate against the floor" in dealer
        table = await (await client.get(f"/tables/{TABLE}")).text()
        assert 'href="/dealers/SD00000-001"' in table and quote(sid, safe="") in table
        first = await (await client.get(f"/rounds/{TABLE}-000001")).text()
        assert quote(sid, safe="") in first and 'href="/dealers/SD00000-001"' in first
        assert (await client.get("/dealers/NO-SUCH-DEALER")).status == 404
        assert (await client.get("/sessions/nothing")).status == 404

    serve(floor[0], check, user="viewer")


def test_a_case_folder_carries_the_observations_of_its_rounds_and_verifies(
        data: ProtectionData, tmp_path: Path) -> None:
    """Issue 37: "The observations that touch the selected rounds, in case folders"; the
    file is listed in the manifest like every other, shown in the report, and
    `pitwatch verify` still verifies the folder."""
    import json

    from pitwatch.replay.case import Selection, build_case
    from pitwatch.replay.case_files import write_case
    from pitwatch.replay.verify import REFUSED, UNSIGNED, verify

    heavy = next(o for o in data.table_observations(TABLE)
                 if o["code"] == "COUNT_CORRELATED_BETTING")
    rid = heavy["weight_rounds"][0]  # a round that carries the counter's weight
    case = build_case(data.store, Selection(round_id=rid), "test", 1796061930000)
    assert [rb.round_id for rb in case.rounds] == [rid]
    files = write_case(case, tmp_path / "case")
    doc = json.loads(files["observations.json"])
    codes = {(o["code"], o["subject"]) for o in doc["observations"]}
    assert ("COUNT_CORRELATED_BETTING", heavy["subject"]) in codes
    manifest = json.loads(files["manifest.json"])
    assert manifest["observations"] == {"file": "observations.json",
                                        "count": len(doc["observations"])}
    assert "observations.json" in manifest["files"]
    assert b"Game protection observations" in files["report.html"]
    assert heavy["subject"].encode() in files["report.html"]
    status, out = verify(tmp_path / "case")
    assert status == UNSIGNED and out.reproduced, out.lines  # no site key given here
    (tmp_path / "case" / "observations.json").write_bytes(
        files["observations.json"].replace(b"COUNT_CORRELATED", b"COUNT_UNCORRELATED"))
    assert verify(tmp_path / "case")[0] == REFUSED  # changed: refused


def test_seat_events_read_as_sentences_in_the_round_view_and_the_case_report() -> None:
    """Issue 37's seat events (`PlayerSeated`, `PlayerLeft`) in plain words, the
    player's id escaped on the page."""
    from pitwatch.console.roundview import describe as on_page
    from pitwatch.events.model import Event, PlayerLeft, PlayerSeated
    from pitwatch.replay.present import describe as in_case

    seated = {"type": "PlayerSeated", "seat": 3, "player_id": HOSTILE,
              "player_kind": "ANONYMOUS"}
    html = on_page(seated)
    assert html.startswith("An anonymous session, &quot;&gt;&lt;script&gt;")
    assert "sat down at seat 3: a seat session starts." in html and "<script>" not in html
    assert on_page({"type": "PlayerLeft", "seat": 3}) == (
        "The player at seat 3 left: the seat session there ends.")
    ev = Event("e1", "T", "D", 1, 0, None, None, PlayerSeated(5, "LOYAL-1", "RATED"))
    assert in_case(ev) == "A rated player, LOYAL-1, sat down at seat 5: a seat session starts."
    assert in_case(Event("e2", "T", "D", 2, 0, None, None, PlayerLeft(5))) == (
        "The player at seat 5 left: the seat session there ends.")
