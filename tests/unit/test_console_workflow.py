"""The console's pieces without a browser: the triage workflow's rules, the site's clock
and shifts, the shift summary's CSV (cells a spreadsheet reads as text) and PDF,
search with counts and pages, the CRITICAL webhook, the poller that carries another
console's triage, and `pitwatch users`."""

from __future__ import annotations

import asyncio
import csv
import io
import logging
from datetime import date, time
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from pitwatch.console.data import SEVERITIES
from pitwatch.console.feed import Hub, StorePoller, Webhook
from pitwatch.console.feed_types import Polled
from pitwatch.console.shift import csv_bytes, pdf_bytes
from pitwatch.console.sitetime import SiteTime
from pitwatch.console.triage import Change, Refused, State, check
from pitwatch.console.users import command as users_command

from .test_console_views import post, serve, snapshot
from .test_console_views import store_dir as store_dir  # the fixture, shared


def test_a_change_is_checked_against_the_role_and_the_state() -> None:
    """Each finding carries a status: new, acknowledged, investigating, escalated, or
    closed with a disposition (confirmed, with the money involved; false alarm, with
    its reason; referred to the regulator)."""
    ack = Change.parse({"action": "acknowledge"})
    assert check(ack, "operator", State()) == State("acknowledged")
    with pytest.raises(Refused, match="already acknowledged"):
        check(ack, "operator", State("acknowledged"))
    with pytest.raises(Refused, match="a viewer may not acknowledge") as refused:
        check(ack, "viewer", State())
    assert refused.value.status == 403
    close = Change.parse({"action": "close", "disposition": "confirmed", "amount": "1250"})
    assert close.amount == 1250
    assert check(close, "investigator", State("escalated", "ana")) == State("closed", "ana")
    with pytest.raises(Refused, match="an operator may not close"):
        check(close, "operator", State("escalated"))
    with pytest.raises(Refused, match="reopens it first"):
        check(Change.parse({"action": "escalate"}), "supervisor", State("closed"))
    note = Change.parse({"action": "note", "note": "still closed"})
    assert check(note, "operator", State("closed")) == State("closed")
    reopen = Change.parse({"action": "reopen"})
    assert check(reopen, "supervisor", State("closed")) == State("acknowledged")
    with pytest.raises(Refused, match="only a closed"):
        check(reopen, "supervisor", State("new"))
    assign = Change.parse({"action": "assign", "assignee": "bo"})
    assert check(assign, "investigator", State("new")) == State("new", "bo")
    for body, reason in (({"action": "close", "disposition": "false_alarm"}, "reason"),
                         ({"action": "close", "disposition": "lost"}, "disposition"),
                         ({"action": "acknowledge", "disposition": "referred"}, "close only"),
                         ({"action": "close", "disposition": "confirmed", "amount": -5},
                          "0 or more"),
                         ({"action": "close", "disposition": "confirmed", "amount": True},
                          "whole cents"),
                         ({"action": "note", "note": "x" * 2001}, "at most"),
                         ({"action": "assign"}, "to whom")):
        with pytest.raises(ValueError, match=reason):
            Change.parse(body)


def test_gaming_days_and_shifts_in_the_site_zone() -> None:
    """The site's time zone and gaming-day start are configured. Times show local, with
    UTC beside them."""
    site = SiteTime.make("America/New_York", "06:00", "06:00,14:00,22:00")
    # 2026-12-05 05:30 EST = 10:30 UTC: still the gaming day of the 4th, its last shift
    ms = 1796466600000
    assert site.gaming_day(ms) == date(2026, 12, 4)
    assert site.shift_of(ms) == (date(2026, 12, 4), 2)
    assert site.show(ms) == "2026-12-05 05:30:00 EST (10:30:00 UTC)"
    lo, hi = site.day_bounds(date(2026, 12, 4))
    assert (hi - lo) == 24 * 3600 * 1000 and site.show(lo).startswith("2026-12-04 06:00:00")
    s3 = site.shift_bounds(date(2026, 12, 4), 2)
    assert site.show(s3[0]).startswith("2026-12-04 22:00") and s3[1] == hi
    assert site.shift_name(2) == "shift 3 (22:00–06:00)"
    # a day the clocks change is 25 hours long, and its shifts still tile it
    lo, hi = site.day_bounds(date(2026, 10, 31))  # 02:00 on Nov 1 falls back
    assert hi - lo == 25 * 3600 * 1000
    assert site.shift_bounds(date(2026, 10, 31), 2)[1] == hi
    assert SiteTime.make("UTC", "00:00", "00:00,12:00").shifts == (time(0), time(12))
    for args, reason in ((("Mars/Olympus", "06:00", "06:00"), "unknown time zone"),
                         (("UTC", "6am", "06:00"), "HH:MM"),
                         (("UTC", "06:00", "07:00,15:00"), "first shift")):
        with pytest.raises(ValueError, match=reason):
            SiteTime.make(*args)


def _row(table: str, dealer: str) -> dict[str, Any]:
    return {"table_id": table, "dealer_id": dealer, "jurisdiction": "NJ", "rounds": 3,
            "incomplete": 1, "wagered": 1000, "paid": 500, "collected": 200,
            "findings": {s: 1 for s in SEVERITIES}, "confirmed_cents": 1250, "unhandled": 2}


def test_the_shift_csv_neutralises_formulas_and_the_pdf_is_a_pdf() -> None:
    """exported as CSV (cells neutralised against spreadsheet formulas) and PDF"""
    site = SiteTime()
    rows = [_row("=HYPERLINK(\"http://x\")", "@SUM(A1)"), _row("AC-BJ-01", "-D1")]
    data = csv_bytes(site, date(2026, 11, 30), 1, 0, 1000, rows).decode()
    got = list(csv.reader(io.StringIO(data)))
    assert got[0][0].startswith("# pitwatch shift summary: gaming day 2026-11-30, shift 2")
    assert got[1][:5] == ["table_id", "dealer_id", "jurisdiction", "rounds",
                          "incomplete_rounds"]
    assert got[2][:2] == ["'=HYPERLINK(\"http://x\")", "'@SUM(A1)"]
    assert got[3][:2] == ["AC-BJ-01", "'-D1"]
    assert got[3][10] == "1250"  # money in cents, a number
    pdf = pdf_bytes(site, date(2026, 11, 30), 1, 0, 1000, rows, "ana")
    assert pdf.startswith(b"%PDF-") and len(pdf) > 1000


def test_search_counts_pages_and_unhandled_only(store_dir: Path) -> None:
    """Search by round, table, dealer, seat, code, severity and time range over the
    whole store, with counts and paging. An "unhandled only" filter."""
    async def check_(client: TestClient[Any, Any]) -> None:
        everything = await (await client.get("/api/search?limit=7")).json()
        total = everything["total"]
        assert total == sum(everything["counts"].values()) and len(everything["alerts"]) == 7
        second = await (await client.get("/api/search?limit=7&offset=7")).json()
        assert not {a["violation_id"] for a in second["alerts"]} & \
            {a["violation_id"] for a in everything["alerts"]}
        a = everything["alerts"][0]
        one = await (await client.get("/api/search", params={
            "round": a["round_id"], "code": a["code"], "table": a["table_id"]})).json()
        assert a["violation_id"] in {x["violation_id"] for x in one["alerts"]}
        timed = await (await client.get("/api/search", params={
            "since": str(a["detected_at"]), "until": str(a["detected_at"] + 1)})).json()
        assert {x["detected_at"] for x in timed["alerts"]} == {a["detected_at"]}
        seated = await (await client.get("/api/search?seat=2")).json()
        assert seated["total"] and {x["seat"] for x in seated["alerts"]} == {2}
        html = await (await client.get("/tables/AC-BJ-01")).text()
        dealer = html.split('href="/search?dealer=', 1)[1].split('"', 1)[0]
        by_dealer = await (await client.get(f"/api/search?dealer={dealer}")).json()
        assert by_dealer["total"] and {x["table_id"] for x in by_dealer["alerts"]} == \
            {"AC-BJ-01"}
        unhandled = await (await client.get("/api/search?unhandled=1")).json()
        resp = await post(client, {"violation_id": unhandled["alerts"][0]["violation_id"],
                                   "action": "acknowledge"})
        assert resp.status == 201
        after = await (await client.get("/api/search?unhandled=1")).json()
        assert after["total"] == unhandled["total"] - 1
        page = await (await client.get(
            "/search?severity=HIGH&from=2026-11-30T00:00&limit=5")).text()
        assert "1–5 of" in page and 'rel="next"' in page
        bad = await client.get("/api/search?seat=x")
        assert bad.status == 400 and "seat" in (await bad.json())["error"]

    serve(store_dir, check_)


def test_repeats_are_counted_and_a_critical_stays_pinned(store_dir: Path) -> None:
    async def check_(client: TestClient[Any, Any]) -> None:
        snap = await snapshot(client)
        crit = [a for a in snap["alerts"] if a["severity"] == "CRITICAL"]
        pinned = {a["violation_id"] for a in snap["pinned"]["alerts"]}
        assert crit and {a["violation_id"] for a in crit} <= pinned | set(snap["states"])
        status = await (await client.get("/api/status")).json()
        assert status["pinned"]["total"] == snap["pinned"]["total"] > 0

    serve(store_dir, check_)


def test_the_webhook_carries_each_critical_and_retries() -> None:
    """A configurable outbound webhook carries CRITICALs to a paging system."""
    got: list[dict[str, Any]] = []
    calls = {"n": 0}

    async def hook(request: web.Request) -> web.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.Response(status=503)  # the pager hiccups once
        got.append(orjson.loads(await request.read()))
        return web.Response(status=204)

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/page", hook)
        async with TestServer(app) as server:
            hub = Hub()
            sender = Webhook(hub, str(server.make_url("/page")), "http://console:8080/")
            task = asyncio.create_task(sender.run())
            base = {"code": "PAYOUT_WRONG", "table_id": "PIT 3/BJ", "round_id": "r/1",
                    "seat": 1, "hand": None, "event_id": "e", "citation": "c",
                    "message": "m", "pack": "p", "pack_version": "1", "detected_at": 5,
                    "jurisdiction": "NJ"}
            hub.add_alert({**base, "violation_id": "low", "severity": "LOW"})
            hub.add_alert({**base, "violation_id": "v/1 x", "severity": "CRITICAL"})
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while not got:
                assert loop.time() < deadline
                await asyncio.sleep(0.05)
            task.cancel()
        assert [g["violation_id"] for g in got] == ["v/1 x"]  # the LOW never paged
        assert got[0]["link"] == "http://console:8080/violations/v%2F1%20x"
        assert sender.sent == 1 and calls["n"] == 2

    asyncio.run(main())


def test_the_poller_brings_another_consoles_triage_once() -> None:
    async def main() -> None:
        hub = Hub()
        page = hub.subscribe()
        change = {"change_id": "c1", "violation_id": "v", "at": 100_000,
                  "status": "acknowledged"}
        polls = [Polled([], [change], 100), Polled([], [change], 102)]
        asked: list[tuple[int | None, int | None]] = []

        async def fetch(since: int | None, after: int | None) -> Polled:
            asked.append((since, after))
            return polls.pop(0) if polls else Polled([], [], 104)

        poller = StorePoller(hub, fetch, every=0.01)
        task = asyncio.create_task(poller.run())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while len(asked) < 3:
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        task.cancel()
        msgs = []
        while not page.empty():
            msgs.append(page.get_nowait())
        assert [m["type"] for m in msgs] == ["triage"]  # once, though read twice
        assert asked[0] == (None, None)
        assert asked[1] == (100 - StorePoller.OVERLAP_S, 100_000 - StorePoller.TRIAGE_OVERLAP_MS)

    asyncio.run(main())


def test_users_command_adds_lists_and_removes(tmp_path: Path, monkeypatch: Any,
                                              capsys: Any) -> None:
    import argparse

    p = argparse.ArgumentParser()
    users_command.configure(p)
    path = str(tmp_path / "u.json")
    assert users_command.run(p.parse_args(["add", "ana", "--role", "operator", "--users",
                                           path, "--generate"])) == 0
    assert "password " in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    assert users_command.run(p.parse_args(["add", "bo", "--role", "viewer", "--users", path,
                                           "--password-stdin"])) == 0
    capsys.readouterr()
    assert users_command.run(p.parse_args(["list", "--users", path])) == 0
    assert capsys.readouterr().out == "ana\toperator\nbo\tviewer\n"
    assert users_command.run(p.parse_args(["remove", "bo", "--users", path])) == 0
    assert users_command.run(p.parse_args(["remove", "bo", "--users", path])) == 1
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert users_command.run(p.parse_args(["add", "cy", "--role", "viewer", "--users", path,
                                           "--password-stdin"])) == 2


def test_a_finding_that_arrives_late_is_polled_by_its_arrival(tmp_path: Path) -> None:
    """A table's silence is measured on the processing clock ... never its device time
    against the wall clock; the feed's poller likewise reads findings by arrival."""
    from pitwatch.audit.run import audit_events
    from pitwatch.console.data import ConsoleData, refresh_aggregates
    from pitwatch.producers.simulate import Floor
    from pitwatch.store.embedded import EmbeddedStore

    store = EmbeddedStore(tmp_path / "s")
    try:
        store.setup()
        refresh_aggregates(store)
        events = list(Floor(2, 6, seed=5, inject=0.5).events())
        audit_events(events, store=store)
        data = ConsoleData(store)
        now_s = data.store_now_ms() // 1000
        first = data.poll(None, None)
        assert first.alerts and first.store_now_s >= now_s
        # everything arrived just now, though dealt at a simulated time long ago
        since = data.found_since(now_s - 60)
        assert {a["violation_id"] for a in since} == {
            r["violation_id"] for r in store.query("SELECT violation_id FROM violations")}
        assert data.found_since(now_s + 3600) == []
        board = data.floor(data.store_now_ms(), 60_000, 0, "arrival")
        assert board and not any(t["silent"] for t in board)
        assert all(t["age_ms"] is not None and t["age_ms"] < 60_000 for t in board)
    finally:
        store.close()


def test_the_webhook_url_is_never_on_the_command_line_nor_in_the_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The webhook's URL holds the pager's token: read from a file or the environment,
    and a failure is logged without it."""
    import argparse
    import socket

    from pitwatch.console.feed import webhook_failure
    from pitwatch.console.serve import command, webhook_url

    p = argparse.ArgumentParser()
    command.configure(p)
    monkeypatch.delenv("PITWATCH_WEBHOOK", raising=False)
    assert webhook_url(p.parse_args([])) == ""
    monkeypatch.setenv("PITWATCH_WEBHOOK", "https://pager.example/hook/T0KEN")
    assert webhook_url(p.parse_args([])) == "https://pager.example/hook/T0KEN"
    f = tmp_path / "webhook"
    f.write_text("https://pager.example/hook/FILET0KEN\n")
    f.chmod(0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        webhook_url(p.parse_args(["--webhook-file", str(f)]))
    f.chmod(0o600)
    assert webhook_url(p.parse_args(["--webhook-file", str(f)])) == (
        "https://pager.example/hook/FILET0KEN")
    with pytest.raises(ValueError, match="PITWATCH_WEBHOOK") as refused:
        webhook_url(p.parse_args(["--webhook", "https://pager.example/hook/T0KEN"]))
    assert "T0KEN" not in str(refused.value)

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/hook/S3CRET"

    async def main() -> None:
        hub = Hub()
        sender = Webhook(hub, url, "http://console:8080/", give_up_s=0.0)
        task = asyncio.create_task(sender.run())
        hub.add_alert({"code": "PAYOUT_WRONG", "table_id": "T", "round_id": "r",
                       "seat": 1, "hand": None, "event_id": "e", "citation": "c",
                       "message": "m", "pack": "p", "pack_version": "1", "detected_at": 5,
                       "jurisdiction": "NJ", "violation_id": "v1", "severity": "CRITICAL"})
        deadline = asyncio.get_running_loop().time() + 20
        while not sender.failed:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        task.cancel()

    with caplog.at_level(logging.WARNING, logger="pitwatch"):
        asyncio.run(main())
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "gave up on CRITICAL v1" in logged and "ClientConnectorError" in logged
    assert "S3CRET" not in logged and str(port) not in logged
    assert "S3CRET" not in webhook_failure(ValueError(url))
