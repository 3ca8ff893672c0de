"""The console over an embedded store, through HTTP (aiohttp's test client): pages,
the feed's snapshot and filters, triage kept apart from violations, the floor board,
the round view, bad input. The browser tests (tests/integration/test_console_browser.py)
drive the same pages in Chromium."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from pitwatch.audit.run import audit_events
from pitwatch.console.accounts import Accounts
from pitwatch.console.app import Settings, make_app
from pitwatch.console.data import refresh_aggregates
from pitwatch.console.triage import ROLES
from pitwatch.producers.simulate import Floor
from pitwatch.store.base import StoreError
from pitwatch.store.embedded import EmbeddedStore

Check = Callable[[TestClient[Any, Any]], Awaitable[None]]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four tables, 25 rounds each with faults; the last table's last round left open."""
    path = tmp_path_factory.mktemp("console-store")
    events = list(Floor(4, 25, seed=11, inject=0.3).events())
    store = EmbeddedStore(path)
    try:
        store.setup()
        # stop before the RoundEnded of the last table's last round: it stays open
        last = max(i for i, e in enumerate(events) if e.round_id == "AK-BJ-04-000025"
                   and type(e.payload).__name__ == "RoundEnded")
        audit_events(events[:last], store=store, finish=False)
        store.dedupe()
    finally:
        store.close()
    return path


class Flaky:
    """The embedded store, with its clock moved on by `shift_ms` and able to go away
    (`down`): every question then fails as a dead server's would."""

    def __init__(self, path: Path, shift_ms: int = 0) -> None:
        self.inner = EmbeddedStore(path)
        self.shift_s = shift_ms // 1000
        self.down = False

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        if self.down:
            raise StoreError("Connection refused (127.0.0.1:19000)")
        if "now()" in sql and self.shift_s:
            sql = sql.replace("now()", f"(now() + {self.shift_s})")
        return self.inner.query(sql, params)

    def insert(self, table: str, rows: Any) -> None:
        if self.down:
            raise StoreError("Connection refused (127.0.0.1:19000)")
        self.inner.insert(table, rows)

    def setup(self) -> None:
        self.inner.setup()

    def close(self) -> None:
        self.inner.close()


PASSWORD = "correct horse battery staple"
CSRF: dict[int, str] = {}  # client id -> its session's CSRF token


def users_file(store_dir: Path) -> Path:
    """An accounts file with one user of each role, named for the role."""
    path = store_dir.parent / f"{store_dir.name}-users.json"
    accounts = Accounts(path)
    for role in ROLES:
        if accounts.get(role) is None:
            accounts.add(role, role, PASSWORD)
    return path


async def login(client: TestClient[Any, Any], user: str, password: str = PASSWORD) -> None:
    """Log in through the login form; the session's CSRF token is kept for `post`."""
    form = await (await client.get("/login")).text()
    token = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    resp = await client.post("/login", data={"csrf": token, "next": "/", "user": user,
                                             "password": password}, allow_redirects=False)
    assert resp.status == 302, await resp.text()
    page = await (await client.get("/triage")).text()
    CSRF[id(client)] = page.split('name="pitwatch-csrf" content="', 1)[1].split('"', 1)[0]


async def post(client: TestClient[Any, Any], body: Any, path: str = "/api/triage",
               **headers: str) -> Any:
    """POST JSON as the console's own page does (with the session's CSRF token)."""
    return await client.post(path, data=orjson.dumps(body),
                             headers={"X-CSRF-Token": CSRF.get(id(client), ""), **headers})


def serve(store_dir: Path, check: Check, user: str | None = "supervisor",
          store: Any = None, **settings: Any) -> None:
    """The console over the store, logged in as `user` (None: not logged in)."""
    async def main() -> None:
        app = make_app(store or EmbeddedStore(store_dir),
                       Settings(poll_every=None, users=users_file(store_dir), **settings))
        async with TestClient(TestServer(app)) as client:
            if user:
                await login(client, user)
            await check(client)

    asyncio.run(main())


async def snapshot(client: TestClient[Any, Any], query: str = "") -> dict[str, Any]:
    """The first event of the feed's stream: the alerts that pass the filters."""
    resp = await client.get(f"/api/feed{query}")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    head = await resp.content.readline()
    assert head == b"event: snapshot\n"
    data = await resp.content.readline()
    resp.close()
    parsed: dict[str, Any] = orjson.loads(data.removeprefix(b"data: "))
    return parsed


def test_pages_answer(store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        for path in ("/", "/floor", "/triage", "/tables/AC-BJ-01", "/rounds/AC-BJ-01-000001",
                     "/static/console.js", "/static/console.css"):
            resp = await client.get(path)
            assert resp.status == 200, path
        health = await (await client.get("/api/health")).json()
        assert health["kafka"] == "off" and health["store_kind"] == "EmbeddedStore"

    serve(store_dir, check)


def test_feed_snapshot_is_the_store_newest_first_and_filters_narrow_it(store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        everything = (await snapshot(client))["alerts"]
        assert len(everything) > 10
        times = [a["detected_at"] for a in everything]
        assert times == sorted(times, reverse=True)
        severities = {a["severity"] for a in everything}
        assert len(severities) > 1
        for sev in severities:
            only = (await snapshot(client, f"?severity={sev}"))["alerts"]
            assert only and {a["severity"] for a in only} == {sev}
            assert len(only) == sum(1 for a in everything if a["severity"] == sev)
        one = everything[0]
        narrowed = (await snapshot(client, f"?table={one['table_id']}&code={one['code']}"))
        assert one["violation_id"] in {a["violation_id"] for a in narrowed["alerts"]}
        assert {(a["table_id"], a["code"]) for a in narrowed["alerts"]} == \
            {(one["table_id"], one["code"])}
        by_jur = (await snapshot(client, "?jurisdiction=NZ"))["alerts"]
        assert by_jur and {a["jurisdiction"] for a in by_jur} == {"NZ"}
        assert {a["table_id"] for a in by_jur} == {"AK-BJ-04"}

    serve(store_dir, check)


def test_the_feed_shows_no_seat_and_no_hand_as_none_and_filters_real_seats_only(
        store_dir: Path) -> None:
    """A violation of no seat or no hand is shown with none (the page prints nothing
    for it), never as seat 0 or hand -1; a seat filter names a seat (1 on)."""
    async def check(client: TestClient[Any, Any]) -> None:
        shown = {a["violation_id"]: a for a in (await snapshot(client))["alerts"]}
        store = EmbeddedStore(store_dir)
        try:
            rows = {r["violation_id"]: r for r in store.query(
                "SELECT violation_id, seat, hand FROM violations FINAL")}
        finally:
            store.close()
        assert {a["seat"] is None for a in shown.values()} == {True, False}
        for vid, a in shown.items():
            seat, hand = int(rows[vid]["seat"]), int(rows[vid]["hand"])
            assert a["seat"] == (None if seat == 0 else seat)
            assert a["hand"] == (None if hand == -1 else hand)
        seated = next(a for a in shown.values() if a["seat"] is not None)
        only = (await snapshot(client, f"?seat={seated['seat']}"))["alerts"]
        assert seated["violation_id"] in {a["violation_id"] for a in only}
        assert {a["seat"] for a in only} == {seated["seat"]}
        resp = await client.get("/api/feed?seat=0")
        assert resp.status == 400 and "seat: a number from 1 to 255" in await resp.text()

    serve(store_dir, check)


def test_bad_filters_and_ids_get_a_clear_error(store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        resp = await client.get("/api/feed?severity=URGENT")
        assert resp.status == 400
        assert "severity must be one of" in (await resp.json())["error"]
        resp = await client.get("/rounds/x'%20OR%201=1")  # any id: looked up as data
        assert resp.status == 404 and "no round x&#x27; OR 1=1" in await resp.text()
        resp = await client.get("/rounds/" + "r" * 129)
        assert resp.status == 400 and "1 to 128 characters" in await resp.text()
        resp = await client.get("/rounds/NO-SUCH-000001")
        assert resp.status == 404 and "no round NO-SUCH-000001" in await resp.text()
        resp = await client.get("/nowhere")
        assert resp.status == 404

    serve(store_dir, check)


def test_triage_is_appended_apart_and_never_edits_the_violation(store_dir: Path) -> None:
    """Every change records the logged-in user, the time and the previous state.
    Nothing is ever overwritten."""
    async def check(client: TestClient[Any, Any]) -> None:
        target = (await snapshot(client, "?severity=CRITICAL"))["alerts"][0]
        vid = target["violation_id"]
        for body in ({"violation_id": vid, "action": "acknowledge", "note": "looked at it"},
                     {"violation_id": vid, "action": "note", "note": "payout re-checked"}):
            resp = await post(client, body)
            assert resp.status == 201, await resp.text()
        # both changes are in the log, newest first, by the logged-in user; the
        # violation is as it was
        snap = await snapshot(client, "?severity=CRITICAL")
        assert snap["states"][vid]["status"] == "acknowledged"
        assert snap["states"][vid]["who"] == "supervisor"
        assert vid not in {a["violation_id"] for a in snap["pinned"]["alerts"]}
        after = next(a for a in snap["alerts"] if a["violation_id"] == vid)
        assert after == target
        log = await (await client.get("/triage")).text()
        assert "payout re-checked" in log and "looked at it" in log
        assert "new → acknowledged" in log and "acknowledged → acknowledged" in log
        # bad changes are refused with the reason
        for body, status, reason in (
                ({"violation_id": vid, "action": "shout"}, 400, "action must be one of"),
                ({"violation_id": vid, "action": "acknowledge"}, 409, "already acknowledged"),
                ({"violation_id": vid, "action": "note"}, 400, "write something"),
                ({"violation_id": vid, "action": "close"}, 400, "needs a disposition"),
                ({"violation_id": vid, "action": "close", "disposition": "false_alarm"},
                 400, "reason in the note"),
                ({"violation_id": "0" * 32, "action": "acknowledge"}, 404, "no violation"),
                ({"violation_id": "v" * 129, "action": "acknowledge"}, 400,
                 "1 to 128 characters")):
            resp = await post(client, body)
            assert resp.status == status, (body, await resp.text())
            assert reason in (await resp.json())["error"]
        resp = await client.post("/api/triage", data=b"not json",
                                 headers={"X-CSRF-Token": CSRF[id(client)]})
        assert resp.status == 400
        # a page of another site cannot act through a person's browser
        resp = await post(client, {"violation_id": vid, "action": "escalate"},
                          Origin="http://evil.example")
        assert resp.status == 403 and "another site" in (await resp.json())["error"]
        # nor can one that has no CSRF token (a form posted from elsewhere)
        resp = await client.post("/api/triage", data=orjson.dumps(
            {"violation_id": vid, "action": "escalate"}))
        assert resp.status == 403 and "CSRF" in (await resp.json())["error"]
        # closing as confirmed keeps the money; the whole history stays
        resp = await post(client, {"violation_id": vid, "action": "close",
                                   "disposition": "confirmed", "amount": 1250,
                                   "note": "short-paid, video 14:02"})
        assert resp.status == 201
        row = (await resp.json())["done"][0]
        assert (row["prev_status"], row["status"], row["amount"]) == \
            ("acknowledged", "closed", 1250)
        resp = await post(client, {"violation_id": vid, "action": "escalate"})
        assert resp.status == 409 and "reopens it first" in (await resp.json())["error"]
        html = await (await client.get(f"/rounds/{target['round_id']}")).text()
        assert "closed (confirmed, $12.50) by supervisor" in html
        page = await client.get("/")
        assert "default-src 'self'" in page.headers["Content-Security-Policy"]

    serve(store_dir, check)


def test_floor_board_shows_every_table_its_open_round_and_todays_counts(
        store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        html = await (await client.get("/floor")).text()
        for table in ("AC-BJ-01", "AC-SW-02", "PH-FB-03", "AK-BJ-04"):
            assert f'data-table="{table}"' in html
        # the clock is the newest event: the last table is 0 s old and has an open round
        assert "/rounds/AK-BJ-04-000025" in html
        assert "BLACKJACK_SWITCH" in html and "FREE_BET_BLACKJACK" in html
        assert 'class="silent"' not in html
        html = await (await client.get("/tables/AC-SW-02")).text()
        assert "NJ BLACKJACK_SWITCH" in html and 'href="/?table=AC-SW-02"' in html
        assert html.count('href="/rounds/AC-SW-02-') == 25

    serve(store_dir, check, clock="store", silent_after_s=60)

    async def live(client: TestClient[Any, Any]) -> None:
        html = await (await client.get("/floor")).text()
        # a live floor: silence by when events ARRIVED, on the store's clock. This shift
        # was dealt at a simulated time long ago but has just arrived: nothing is silent,
        # and its findings count for this gaming day
        assert 'class="silent"' not in html
        assert "found by the store's clock" in html
        assert html.count('class="count sev-CRITICAL"') >= 1

    serve(store_dir, live, clock="wall", silent_after_s=60)

    async def later(client: TestClient[Any, Any]) -> None:
        html = await (await client.get("/floor")).text()
        # ten minutes later on the store's clock, with nothing arrived since: all silent
        assert html.count('class="silent"') == 4 and "10 min" in html

    serve(store_dir, later, store=Flaky(store_dir, shift_ms=600_000), clock="wall",
          silent_after_s=60)


def test_round_view_draws_cards_and_quotes_the_cited_paragraph(store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        alerts = (await snapshot(client))["alerts"]
        quoted = next(a for a in alerts if a["citation"].startswith(("N.J.A.C. 13:69F-2.",
                                                                      "NZ Gazette")))
        html = await (await client.get(f"/rounds/{quoted['round_id']}")).text()
        assert html.count('class="card') >= 4 and "data-card=" in html
        assert f'id="v-{quoted["violation_id"]}"' in html
        assert 'class="regulation"' in html and "docs/regulations/" in html
        assert "shall" in html.split('class="regulation"', 1)[1]
        resp = await client.get(f"/violations/{quoted['violation_id']}", allow_redirects=False)
        assert resp.status == 302
        assert resp.headers["Location"] == \
            f"/rounds/{quoted['round_id']}#v-{quoted['violation_id']}"

    serve(store_dir, check)


def test_round_view_links_a_case_file_when_there_is_one(store_dir: Path,
                                                        tmp_path: Path) -> None:
    for folder, rounds in (("d137", ["AC-BJ-01-000001", "AC-BJ-01-000002"]),
                           ("one", ["AC-BJ-01-000002"]), ("half-written", [])):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "report.html").write_text(f"<h1>case {folder}</h1>")
        (tmp_path / folder / "manifest.json").write_bytes(orjson.dumps({"rounds": rounds}))
    (tmp_path / "half-written" / "manifest.json").write_text("{")

    async def check(client: TestClient[Any, Any]) -> None:
        html = await (await client.get("/rounds/AC-BJ-01-000002")).text()
        assert 'href="/cases/d137/report.html"' in html
        assert 'href="/cases/one/report.html"' in html
        assert (await (await client.get("/cases/one/report.html")).text()) == "<h1>case one</h1>"
        html = await (await client.get("/rounds/AC-BJ-01-000001")).text()
        assert 'href="/cases/d137/report.html"' in html and "/cases/one/" not in html
        html = await (await client.get("/rounds/AC-BJ-01-000003")).text()
        assert "No case file yet" in html
        assert "pitwatch investigate --out cases/NAME -- AC-BJ-01-000003" in html
        # a case report keeps its own styles: the console's policy does not apply to it
        resp = await client.get("/cases/one/report.html")
        csp = resp.headers["Content-Security-Policy"]
        assert "style-src 'unsafe-inline'" in csp and "sandbox" in csp
        assert "script-src" not in csp and "default-src 'none'" in csp

    serve(store_dir, check, cases=tmp_path)


def test_aggregates_are_filled_and_brought_up_to_the_schema(store_dir: Path) -> None:
    store = EmbeddedStore(store_dir)
    try:
        before = store.query("SELECT count() AS n FROM table_activity")[0]["n"]
        for t in ("violations_hourly", "rounds_hourly", "table_activity", "table_posted"):
            store.query(f"TRUNCATE TABLE {t}")
        assert sorted(refresh_aggregates(store)) == [
            f"{t}: filled from the rows stored before it existed"
            for t in ("rounds_hourly", "table_activity", "table_posted", "violations_hourly")]
        assert store.query("SELECT count() AS n FROM table_activity")[0]["n"] == before
        assert refresh_aggregates(store) == []  # up to date and filled: nothing to do
        n_violations = store.query("SELECT count() AS n FROM violations FINAL")[0]["n"]
        hourly = store.query("SELECT uniqExactMerge(violations) AS n FROM violations_hourly")
        assert int(hourly[0]["n"]) == int(n_violations)
        # an aggregate of an earlier schema (one column fewer) is made again and filled
        store.query("DROP TABLE table_activity_mv")
        store.query("DROP TABLE table_activity")
        store.query("CREATE TABLE table_activity (table_id String, month Date, "
                    "last_ms AggregateFunction(max, UInt64)) ENGINE = AggregatingMergeTree() "
                    "PARTITION BY toYYYYMM(month) ORDER BY (table_id, month)")
        assert refresh_aggregates(store) == [
            "table_activity: made again to the current schema",
            "table_activity: filled from the rows stored before it existed"]
        assert store.query("SELECT count() AS n FROM table_activity")[0]["n"] == before
        # and its view fills it again from new rows
        views = {r["name"] for r in store.query(
            "SELECT name FROM system.tables WHERE database = currentDatabase()")}
        assert "table_activity_mv" in views
    finally:
        store.close()


#: `table_activity` and its view as pitwatch made them before 2026-12-03, with a count of
#: every event id a table and month that nothing showed.
_OLD_TABLE_ACTIVITY = (
    "CREATE TABLE table_activity (table_id String, month Date, "
    "last_ms AggregateFunction(max, UInt64), "
    "last_round AggregateFunction(argMax, String, UInt64), "
    "events AggregateFunction(uniqExact, String)) ENGINE = AggregatingMergeTree() "
    "PARTITION BY toYYYYMM(month) ORDER BY (table_id, month)",
    "CREATE MATERIALIZED VIEW table_activity_mv TO table_activity AS "
    "SELECT table_id, toStartOfMonth(ts) AS month, "
    "maxState(toUInt64(ts) * 1000 + ts_ms) AS last_ms, "
    "argMaxState(round_id, toUInt64(ts) * 1000 + ts_ms) AS last_round, "
    "uniqExactState(event_id) AS events FROM events GROUP BY table_id, month")


def test_a_store_with_the_old_event_count_still_audits_and_is_made_again(
        tmp_path: Path) -> None:
    """A store made before `table_activity` lost its event count opens, and takes an
    audit, with today's schema (its old view goes on filling it); `serve` makes it
    again without the count, and the floor board reads the same last events."""
    events = list(Floor(3, 4, seed=7).events())
    last = ("SELECT table_id, maxMerge(last_ms) AS m, argMaxMerge(last_round) AS r "
            "FROM table_activity GROUP BY table_id ORDER BY table_id")
    store = EmbeddedStore(tmp_path / "old")
    try:
        store.setup()
        store.query("DROP TABLE table_activity_mv")
        store.query("DROP TABLE table_activity")
        for stmt in _OLD_TABLE_ACTIVITY:
            store.query(stmt)
    finally:
        store.close()
    store = EmbeddedStore(tmp_path / "old")
    try:
        store.setup()  # today's CREATE ... IF NOT EXISTS over the old view
        audit_events(events, store=store)
        counted = store.query("SELECT uniqExactMerge(events) AS n FROM table_activity")
        assert int(counted[0]["n"]) == len(events)  # the old view still fills it
        before = store.query(last)
        assert len(before) == 3
        assert refresh_aggregates(store) == [
            "table_activity: made again to the current schema",
            "table_activity: filled from the rows stored before it existed"]
        cols = [r["name"] for r in store.query(
            "SELECT name FROM system.columns WHERE database = currentDatabase() "
            "AND table = 'table_activity'")]
        assert cols == ["table_id", "month", "last_ms", "last_round"]
        assert store.query(last) == before
    finally:
        store.close()


def test_silent_tables_are_an_alert_on_the_feed(store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not (await (await client.get("/api/health")).json())["silent"]:
            assert loop.time() < deadline, "no silent table reported"
            await asyncio.sleep(0.05)
        snap = await snapshot(client)
        assert sorted(t["table_id"] for t in snap["silent"]) == [
            "AC-BJ-01", "AC-SW-02", "AK-BJ-04", "PH-FB-03"]
        assert all(t["age_ms"] > 60_000 for t in snap["silent"])

    # ten minutes after the shift arrived, on the store's clock: every table is silent
    serve(store_dir, check, store=Flaky(store_dir, shift_ms=600_000), clock="wall",
          silent_after_s=60, silent_every=0.1)

    async def quiet(client: TestClient[Any, Any]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not (await (await client.get("/api/health")).json()).get("checked"):
            assert loop.time() < deadline
            await asyncio.sleep(0.05)
        assert (await snapshot(client))["silent"] == []

    # by the store's clock, with a long enough threshold, none is
    serve(store_dir, quiet, clock="store", silent_after_s=3600, silent_every=0.1)


def test_table_posted_reads_only_the_tables_opened(tmp_path: Path) -> None:
    """The floor board's game and jurisdiction come from each table's last TableOpened;
    its view reads only those events: a month of a table's other events adds no row."""
    from pitwatch.store.columns import event_row

    events = list(Floor(2, 2, seed=5).events())
    rows = [event_row(ev, i) for i, ev in enumerate(events)]
    opened = [r for r in rows if r["type"] == "TableOpened"]
    assert opened and len(opened) < len(rows)
    later = [dict(r, ts=r["ts"] + 40 * 86_400) for r in rows if r["type"] != "TableOpened"]
    store = EmbeddedStore(tmp_path)
    try:
        store.setup()
        store.insert("events", rows + later)
        posted = store.query(
            "SELECT table_id, toString(month) AS m, argMaxIfMerge(jurisdiction) AS j, "
            "argMaxIfMerge(game) AS g FROM table_posted GROUP BY table_id, month "
            "ORDER BY table_id, m")
        months = store.query("SELECT count(DISTINCT (table_id, toStartOfMonth(ts))) AS n "
                             "FROM events")
    finally:
        store.close()
    assert int(months[0]["n"]) == 2 * len({r["table_id"] for r in rows})
    want = {(ev.table_id, ev.payload.jurisdiction, ev.payload.game)  # type: ignore[attr-defined]
            for ev in events if type(ev.payload).__name__ == "TableOpened"}
    assert {(p["table_id"], p["j"], p["g"]) for p in posted} == want
    assert len(posted) == len(want) and all(p["j"] and p["g"] for p in posted)


def test_a_round_s_case_links_and_command_survive_any_name(tmp_path: Path) -> None:
    """A case folder's name is a URL segment (encoded like every other link); the
    command to make one takes the id after `--`, quoted as one shell word, so an id
    starting with "-" is not an option."""
    import shlex
    from html import unescape

    from pitwatch.console import pages

    r = {"summary": None, "table_id": "T", "round_id": "-rm x'y", "events": [],
         "violations": [], "triage": []}
    html = pages.round_page(r, [])
    cmd = html.split("<code>", 1)[1].split("</code>", 1)[0]
    assert shlex.split(unescape(cmd)) == ["pitwatch", "investigate", "--out", "cases/NAME",
                                          "--", "-rm x'y"]
    html = pages.round_page(r, ["case #1?"])
    assert 'href="/cases/case%20%231%3F/report.html"' in html and ">case #1?</a>" in html
