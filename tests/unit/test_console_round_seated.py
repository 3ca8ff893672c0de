"""A round's seat sessions (console/protection.py `round_seated`, `round_seat`), found
when asked: the round page lists the round's seats from its own events, each linked to
`/rounds/{round}/seats/{seat}/session` (protection_pages.py `seated_section`), and reads
no fold; the link reads the table's rounds again, back from the round until where its
seats' sessions began, and leads to the session's page (303), or says why it does not
(`seat_sessions_page`): a seat with no session, a round the detectors do not read, a
session that began before the rounds read back. Read over an embedded store with no
observation stored, so no observation names the sessions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient

import pitwatch.console.protection as protection
from pitwatch.audit.run import audit_events
from pitwatch.console.data import NotFound
from pitwatch.console.protection import (
    ProtectionData,
    Seated,
    SeatSessions,
    round_seat,
    round_seated,
    seat_session,
)
from pitwatch.console.protection_pages import round_seats, seat_sessions_page, seated_section
from pitwatch.events.model import RoundStarted, WagerPlaced
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.store.embedded import EmbeddedStore

from .test_console_views import serve

INFERRED, RECORDED = "SIM-BJ-00000", "SIM-BJ-00001"
#: the round of INFERRED whose RoundStarted names seat 6, where nobody wagers
EMPTY_SEAT_ROUND = 6
#: the round of INFERRED whose record has a break (a seq skipped: events lost)
BROKEN_ROUND = 58
HOSTILE = '"><script>alert(1)</script>/&amp;'


class EmptySeat(SimTable):
    """A table whose round EMPTY_SEAT_ROUND names seat 6 as in play, with no wager, and
    whose round BROKEN_ROUND loses an event before its first wager."""

    def rounds(self, n: int) -> Iterator[tuple[str, list[Any]]]:
        for k, (round_id, steps) in enumerate(super().rounds(n), 1):
            for s in steps:
                if k == EMPTY_SEAT_ROUND and isinstance(s.payload, RoundStarted):
                    s.payload.seats = (*s.payload.seats, 6)
            if k == BROKEN_ROUND:
                next(s for s in steps if isinstance(s.payload, WagerPlaced)).skip_seq = True
            yield round_id, steps


async def _direct(fn: Any, *args: Any) -> Any:
    """The store thread and the fold's thread as direct calls."""
    return fn(*args)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """INFERRED: 60 rounds, no seat events, flat bettors at seats 1 and 3; RECORDED: 30
    rounds with seat events, a flat bettor at seat 2 (an anonymous session). No
    observation stored."""
    path = tmp_path_factory.mktemp("round-seated")
    inferred = EmptySeat(0, 11, {s: make_player("flat", 11, s, 0) for s in (1, 3)})
    recorded = SimTable(1, 11, {2: make_player("flat", 11, 2, 1)}, seated=True)
    store = EmbeddedStore(path)
    try:
        store.setup()
        audit_events(events(inferred, 60, 11) + events(recorded, 30, 11), store=store)
        store.dedupe()
        assert not store.query("SELECT observation_id FROM observations")
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def data(store_path: Path) -> Iterator[ProtectionData]:
    store = EmbeddedStore(store_path)
    yield ProtectionData(store)
    store.close()


def _seated(data: ProtectionData, table_id: str, round_id: str) -> list[Seated] | None:
    return asyncio.run(round_seated(_direct, _direct, data, table_id, round_id))


def test_a_session_no_observation_names_is_found_back_to_its_first_round(
        data: ProtectionData, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    fold = protection.fold_rounds

    async def counted(*args: Any) -> Any:
        reads.append(args[4])  # the position the fold reads from
        return await fold(*args)

    monkeypatch.setattr(protection, "fold_rounds", counted)
    rid = f"{INFERRED}-000050"
    want = [Seated(1, f"{INFERRED}/1/{INFERRED}-000001", True),
            Seated(3, f"{INFERRED}/3/{INFERRED}-000001", True)]
    top = protection.round_place(data.store, INFERRED, rid)
    assert top is not None
    # the summaries say the runs go back to the table's first round: one read from there
    assert protection.runs_began(data.store, INFERRED, rid) == 0
    assert _seated(data, INFERRED, rid) == want and reads == [top[0]]
    # without the summaries' hint: a stretch back that began within the sessions, then
    # one four times as wide, which reaches the table's first event
    reads.clear()
    monkeypatch.setattr(protection, "runs_began", lambda *_: None)
    assert _seated(data, INFERRED, rid) == want
    assert len(reads) == 2 and reads[0] > top[0] == reads[1]
    assert data.round_observations(INFERRED, rid, "") == []
    # the id is the one the session page reads
    s = asyncio.run(seat_session(_direct, _direct, data, want[0].session_id or ""))
    assert s["rounds"][0] == f"{INFERRED}-000001" and len(s["rounds"]) == 59
    assert f"{INFERRED}-{BROKEN_ROUND:06d}" not in s["rounds"]


def test_a_recorded_stay_names_its_player(data: ProtectionData) -> None:
    got = _seated(data, RECORDED, f"{RECORDED}-000020")
    assert got is not None and len(got) == 1
    x = got[0]
    assert (x.seat, x.session_id, x.inferred, x.player_kind) == (
        2, f"{RECORDED}/2/{RECORDED}-000001", False, "ANONYMOUS")
    assert x.player_id


def _at_seat(data: ProtectionData, round_id: str, seat: int) -> SeatSessions:
    return asyncio.run(round_seat(_direct, _direct, data, round_id, seat))


def test_a_seat_with_no_session_shows_none(data: ProtectionData) -> None:
    rid = f"{INFERRED}-{EMPTY_SEAT_ROUND:06d}"
    got = _seated(data, INFERRED, rid)
    assert got is not None and [x.seat for x in got] == [1, 3]
    none = _at_seat(data, rid, 6)
    assert none == SeatSessions(INFERRED, rid, 6, [])
    html = seat_sessions_page(none)
    assert "Seat session: none. No main wager at the seat" in html
    assert "/sessions/" not in html
    one = _at_seat(data, rid, 3)
    assert one.sessions == [Seated(3, f"{INFERRED}/3/{INFERRED}-000001", True)]
    # a round the table does not hold, or an unknown table: not read; an unknown round:
    # not found
    assert _seated(data, RECORDED, rid) is None
    assert _seated(data, "NO-SUCH-TABLE", rid) is None
    with pytest.raises(NotFound):
        _at_seat(data, "NO-SUCH-ROUND", 1)


def test_a_round_with_a_break_in_its_record_is_not_read(data: ProtectionData) -> None:
    """"A record that is not continuous ... checks that need the missing part suspend
    judgement": the round's seats are not judged, and the page says why."""
    rid = f"{INFERRED}-{BROKEN_ROUND:06d}"
    assert _seated(data, INFERRED, rid) is None
    got = _at_seat(data, rid, 1)
    assert got == SeatSessions(INFERRED, rid, 1, None)
    html = seat_sessions_page(got)
    assert "not read for this round" in html and "suspend judgement" in html
    assert "/sessions/" not in html


def _counted_folds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    fold = protection.fold_rounds

    async def counted(*args: Any) -> Any:
        reads.append(args[4])
        return await fold(*args)

    monkeypatch.setattr(protection, "fold_rounds", counted)
    return reads


def test_the_round_page_links_each_seat_and_reads_no_fold(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The round page is a read through sort keys: each of its seats links to where its
    session is found, and the fold runs only when a link is followed."""
    folds = _counted_folds(monkeypatch)
    rid = f"{INFERRED}-{EMPTY_SEAT_ROUND:06d}"

    async def check(client: TestClient[Any, Any]) -> None:
        page = await (await client.get(f"/rounds/{rid}")).text()
        assert "seat sessions: each seat of this round" in page
        for seat in (1, 3, 6):
            assert f'<tr data-seat="{seat}">' in page
            assert f'href="/rounds/{rid}/seats/{seat}/session"' in page
        assert folds == []
        # followed: 303 to the session's page, the id the session page reads
        resp = await client.get(f"/rounds/{rid}/seats/3/session", allow_redirects=False)
        sid = quote(f"{INFERRED}/3/{INFERRED}-000001", safe="")
        assert resp.status == 303 and resp.headers["Location"] == f"/sessions/{sid}"
        assert folds
        resp = await client.get(f"/rounds/{rid}/seats/6/session", allow_redirects=False)
        assert resp.status == 200 and "Seat session: none" in await resp.text()
        broken = f"{INFERRED}-{BROKEN_ROUND:06d}"
        resp = await client.get(f"/rounds/{broken}/seats/1/session", allow_redirects=False)
        assert resp.status == 200 and "suspend judgement" in await resp.text()

    serve(store_path, check, user="viewer")


def test_a_hostile_round_or_seat_in_the_link_is_not_found(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folds = _counted_folds(monkeypatch)
    rid = f"{INFERRED}-{EMPTY_SEAT_ROUND:06d}"
    hostile = quote(HOSTILE, safe="")

    async def check(client: TestClient[Any, Any]) -> None:
        for path in (f"/rounds/{hostile}/seats/1/session",
                     f"/rounds/{rid}/seats/{hostile}/session",
                     f"/rounds/{rid}/seats/0/session", f"/rounds/{rid}/seats/33/session",
                     f"/rounds/{rid}/seats/-1/session", f"/rounds/{rid}/seats/%C2%B2/session",
                     f"/rounds/{rid}/seats/1e3/session", f"/rounds/{'x' * 129}/seats/1/session"):
            resp = await client.get(path, allow_redirects=False)
            text = await resp.text()
            assert resp.status == 404, path
            assert "<script>" not in text and "Traceback" not in text
        assert folds == []

    serve(store_path, check, user="viewer")
    # the same access as the session page: not logged in, to the login page

    async def anonymous(client: TestClient[Any, Any]) -> None:
        for path in (f"/rounds/{rid}/seats/1/session", f"/sessions/{INFERRED}"):
            resp = await client.get(path, allow_redirects=False)
            assert resp.status == 302 and resp.headers["Location"].startswith("/login?")

    serve(store_path, anonymous, user=None)


def test_a_session_begun_before_the_rounds_read_back_is_named_not_linked(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SEATED_ROUNDS cap: a session that began further back is given without its
    id, and the seat's link says so instead of leading to a page."""
    monkeypatch.setattr(protection, "SEATED_ROUNDS", 10)
    monkeypatch.setattr(protection, "runs_began", lambda *_: None)
    rid = f"{INFERRED}-000050"

    async def check(client: TestClient[Any, Any]) -> None:
        resp = await client.get(f"/rounds/{rid}/seats/1/session", allow_redirects=False)
        text = await resp.text()
        assert resp.status == 200 and "began more than 2000 rounds before" in text
        assert "/sessions/" not in text

    serve(store_path, check, user="viewer")


def test_the_seats_of_a_round_and_hostile_ids_escaped() -> None:
    evs: list[dict[str, Any]] = [
        {"type": "RoundStarted", "seats": [2, 5]},
        {"type": "WagerPlaced", "seat": 7, "hand": 0, "kind": "MAIN", "amount": 500},
        {"type": "CardDealt", "seat": None}]
    assert round_seats(evs) == [2, 5, 7]
    html = seated_section(HOSTILE, [5, 2])
    assert "<script>" not in html
    assert html.index('data-seat="2"') < html.index('data-seat="5"')
    assert f'href="/rounds/{quote(HOSTILE, safe="")}/seats/2/session"' in html
    assert seated_section("R", []).endswith("no seat in this round.</p>")
    page = seat_sessions_page(SeatSessions(HOSTILE, HOSTILE, 2, [
        Seated(2, HOSTILE, False, HOSTILE, HOSTILE), Seated(2, None, True)]))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert f'href="/sessions/{quote(HOSTILE, safe="")}"' in page
    assert f'href="/rounds/{quote(HOSTILE, safe="")}"' in page
    assert "began more than 2000 rounds before this one" in page


class Summaries:
    """A store that answers `runs_began`'s reads from round summaries: round k (1..n)
    started at second 100 k, at positions 1,000 k and on, naming `seats[k]`."""

    def __init__(self, seats: dict[int, set[int]]) -> None:
        self.seats = seats

    def query(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        rid = {f"T-{k:06d}": k for k in self.seats}
        if "min(started)" in sql:
            return [{"s": 100, "n": len(self.seats)}]
        if "round_id = {r:String}" in sql:
            k = rid[params["r"]]
            return [{"seats": sorted(self.seats[k]), "s": 100 * k, "ms": 0}]
        if "FROM round_starts" in sql:
            return [{"round_id": f"T-{k:06d}", "s": 100 * k, "ms": 0} for k in self.seats
                    if params["a"] <= 100 * k <= params["b"]]
        return [{"round_id": r, "seats": sorted(self.seats[rid[r]])} for r in params["r"]]


def test_the_summaries_say_where_the_seats_runs_began(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """GAP_ROUNDS (3) rounds in a row without a seat end its run: the read starts the
    round after 4 rounds without it, so the fold sees the run begin."""
    from pitwatch.store import lookup

    monkeypatch.setattr(lookup, "round_spans", lambda _, ids: {
        r: lookup.Span("T", 1000 * int(r[2:]), 1000 * int(r[2:]) + 999) for r in ids})
    # seat 2: rounds 1-10, then 15-30 (rounds 11-14 without it); seat 5: 1-30
    seats = {k: ({2} if k <= 10 or k >= 15 else set()) | {5} for k in range(1, 31)}
    store: Any = Summaries(seats)
    assert protection.runs_began(store, "T", "T-000030") == 0  # seat 5: from the start
    for k in seats:
        seats[k].discard(5)
    assert protection.runs_began(store, "T", "T-000030") == 11_000
    assert protection.runs_began(store, "T", "T-000008") == 0
    seats[8] = set()
    assert protection.runs_began(store, "T", "T-000008") is None  # no seat named
    # runs longer than SEATED_ROUNDS: the read starts that many rounds back
    monkeypatch.setattr(protection, "SEATED_ROUNDS", 5)
    assert protection.runs_began(store, "T", "T-000030") == 25_000
