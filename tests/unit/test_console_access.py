"""The console's doors: logins and roles, sessions, CSRF and the Host header, single
sign-on; ids of every kind the contract allows in every URL; and what a page and an
action do while the store does not answer."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from aiohttp.test_utils import TestClient

from pitwatch.audit.run import audit_events
from pitwatch.console.accounts import Accounts
from pitwatch.producers.simulate import Floor
from pitwatch.store.embedded import EmbeddedStore

from .test_console_views import PASSWORD, Flaky, login, post, serve, snapshot, users_file
from .test_console_views import store_dir as store_dir  # the fixture, shared

#: the longest table id the contract allows, with "/" and spaces in it
LONG = ("PIT 3/BJ-01 " * 11)[:128]


@pytest.fixture(scope="module")
def long_ids(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One table named LONG whose round ids are 128 characters with '/', '#', '?', '%'."""
    path = tmp_path_factory.mktemp("console-long-ids")

    def rename(ev: Any) -> Any:
        rid = None if ev.round_id is None else LONG[:118] + "#" + ev.round_id[-6:] + "?%"
        return dataclasses.replace(ev, table_id=LONG, round_id=rid,
                                   device_id=LONG[:100] + ev.device_id[len(ev.table_id):])

    events = [rename(e) for e in Floor(1, 4, seed=3, inject=0.5, sign=False).events()]
    store = EmbeddedStore(path)
    try:
        store.setup()
        audit_events(events, store=store)
        store.dedupe()
    finally:
        store.close()
    return path


def test_pages_need_a_login_and_a_wrong_password_is_refused(store_dir: Path) -> None:
    """Users log in ... Sessions and logout."""
    async def check(client: TestClient[Any, Any]) -> None:
        resp = await client.get("/floor", allow_redirects=False)
        assert resp.status == 302
        assert unquote(resp.headers["Location"]) == "/login?next=/floor"
        resp = await client.get("/api/feed")
        assert resp.status == 401 and (await resp.json())["login"] == "/login"
        assert (await client.get("/api/health")).status == 200  # monitors need no login
        form = await (await client.get("/login")).text()
        token = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        bad = {"csrf": token, "next": "/", "user": "operator", "password": "nope"}
        resp = await client.post("/login", data=bad, allow_redirects=False)
        assert resp.status == 401 and "Wrong user name or password" in await resp.text()
        resp = await client.post("/login", data={**bad, "csrf": "forged"},
                                 allow_redirects=False)
        assert resp.status == 403
        for _ in range(4):
            await client.post("/login", data=bad, allow_redirects=False)
        resp = await client.post("/login", data={**bad, "password": PASSWORD},
                                 allow_redirects=False)
        assert resp.status == 429 and "wait" in await resp.text()  # locked for a while
        # an open redirect is not: next= only a path of the console
        await login(client, "viewer")
        html = await (await client.get("/")).text()
        assert 'name="pitwatch-user" content="viewer"' in html
        resp = await client.post("/logout", data={"csrf": "wrong"}, allow_redirects=False)
        assert resp.status == 403
        page = await (await client.get("/triage")).text()
        csrf = page.split('name="pitwatch-csrf" content="', 1)[1].split('"', 1)[0]
        resp = await client.post("/logout", data={"csrf": csrf}, allow_redirects=False)
        assert resp.status == 302 and resp.headers["Location"] == "/login"
        assert (await client.get("/", allow_redirects=False)).status == 302

    serve(store_dir, check, user=None)


def test_each_role_does_what_it_may_and_no_more(store_dir: Path) -> None:
    """Roles are operator, supervisor, investigator and viewer."""
    outcomes: dict[str, list[int]] = {}

    def as_role(role: str) -> Any:
        async def check(client: TestClient[Any, Any]) -> None:
            crit = (await snapshot(client, "?severity=HIGH"))["alerts"]
            vid = next(a["violation_id"] for a in crit if a["table_id"] == {
                "viewer": "AC-BJ-01", "operator": "AC-SW-02", "investigator": "PH-FB-03",
                "supervisor": "AK-BJ-04"}[role])
            got = []
            for body in ({"action": "acknowledge"}, {"action": "note", "note": "seen"},
                         {"action": "assign", "assignee": "ana"},
                         {"action": "close", "disposition": "referred"},
                         {"action": "reopen"}):
                resp = await post(client, {"violation_id": vid, **body})
                got.append(resp.status)
                if resp.status == 403:
                    assert f" {role} may not" in (await resp.json())["error"]
            outcomes[role] = got
        return check

    for role in ("viewer", "operator", "investigator", "supervisor"):
        serve(store_dir, as_role(role), user=role)
    assert outcomes == {
        "viewer": [403, 403, 403, 403, 403],
        "operator": [201, 201, 403, 403, 403],
        "investigator": [201, 201, 201, 201, 403],
        "supervisor": [201, 201, 201, 201, 201],
    }


def test_a_request_for_another_host_name_is_refused(store_dir: Path) -> None:
    """the Host header checked"""
    async def check(client: TestClient[Any, Any]) -> None:
        resp = await client.get("/", headers={"Host": "attacker.example"})
        assert resp.status == 421 and "not served as" in await resp.text()
        resp = await client.get("/api/health", headers={"Host": "attacker.example:8080"})
        assert resp.status == 421
        assert (await client.get("/", headers={"Host": "localhost:8080"})).status == 200

    serve(store_dir, check)


def test_single_sign_on_trusts_the_header_from_the_proxy_only(store_dir: Path) -> None:
    """Where a site already has single sign-on, a configured trusted reverse-proxy
    header ... is used instead."""
    async def trusted(client: TestClient[Any, Any]) -> None:
        html = await (await client.get("/", headers={"X-Remote-User": "operator"})).text()
        assert 'name="pitwatch-user" content="operator"' in html
        assert 'name="pitwatch-role" content="operator"' in html  # its account's role
        html = await (await client.get("/", headers={"X-Remote-User": "zoe",
                                                     "X-Remote-Role": "investigator"})).text()
        assert 'name="pitwatch-role" content="investigator"' in html
        html = await (await client.get("/", headers={"X-Remote-User": "yan",
                                                     "X-Remote-Role": "root"})).text()
        assert 'name="pitwatch-role" content="viewer"' in html

    serve(store_dir, trusted, user=None, sso_header="X-Remote-User",
          sso_proxies=("127.0.0.1",), sso_role_header="X-Remote-Role")

    async def untrusted(client: TestClient[Any, Any]) -> None:
        resp = await client.get("/", headers={"X-Remote-User": "supervisor"},
                                allow_redirects=False)
        assert resp.status == 302  # the header from anyone else: a login is needed

    serve(store_dir, untrusted, user=None, sso_header="X-Remote-User",
          sso_proxies=("10.0.0.9",))


def test_a_removed_user_is_logged_out_and_a_new_role_holds_at_once(store_dir: Path,
                                                                   tmp_path: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        accounts = Accounts(users_file(store_dir))
        accounts.add("temp", "viewer", PASSWORD)
        await login(client, "temp")
        accounts.add("temp", "operator", PASSWORD)
        html = await (await client.get("/")).text()
        assert 'name="pitwatch-role" content="operator"' in html
        accounts.remove("temp")
        assert (await client.get("/", allow_redirects=False)).status == 302

    serve(store_dir, check, user=None)


def test_accounts_file_keeps_argon2_hashes_only_and_refuses_weak_setups(
        tmp_path: Path) -> None:
    accounts = Accounts(tmp_path / "users.json")
    accounts.add("ana", "supervisor", "a long enough password")
    raw = (tmp_path / "users.json").read_text()
    assert "a long enough password" not in raw and "$argon2id$" in raw
    assert (tmp_path / "users.json").stat().st_mode & 0o777 == 0o600
    assert accounts.verify("ana", "a long enough password") is not None
    assert accounts.verify("ana", "wrong") is None and accounts.verify("bo", "x") is None
    with pytest.raises(ValueError, match="at least 12"):
        accounts.add("bo", "viewer", "short")
    with pytest.raises(ValueError, match="role must be one of"):
        accounts.add("bo", "admin", "a long enough password")
    with pytest.raises(ValueError, match="a user name"):
        accounts.add("<script>", "viewer", "a long enough password")
    (tmp_path / "users.json").chmod(0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        Accounts(tmp_path / "users.json").all()


def test_a_128_character_id_with_slashes_and_spaces_works_in_every_url(
        long_ids: Path) -> None:
    """every id the contract allows works in every URL (encoded), page and API call"""
    async def check(client: TestClient[Any, Any]) -> None:
        floor = await (await client.get("/floor")).text()
        href = f'/tables/{quote(LONG, safe="")}'
        assert f'href="{href}"' in floor
        table = await client.get(href)
        assert table.status == 200
        html = await table.text()
        assert "PIT 3/BJ-01 PIT 3/BJ-01" in html
        rounds = [a.split('"', 1)[0] for a in html.split('href="/rounds/')[1:]]
        assert len(rounds) == 4
        for r in rounds:
            resp = await client.get(f"/rounds/{r}")
            assert resp.status == 200, r
        snap = await snapshot(client, "?table=" + quote(LONG, safe=""))
        assert snap["alerts"] and {a["table_id"] for a in snap["alerts"]} == {LONG}
        crit = next(a for a in snap["alerts"] if a["severity"] == "CRITICAL")
        resp = await client.get(f"/violations/{quote(crit['violation_id'], safe='')}",
                                allow_redirects=False)
        assert resp.headers["Location"].startswith(f"/rounds/{quote(crit['round_id'], safe='')}")
        resp = await post(client, {"violation_id": crit["violation_id"],
                                   "action": "acknowledge"})
        assert resp.status == 201
        found = await (await client.get("/api/search", params={
            "table": LONG, "round": crit["round_id"]})).json()
        assert found["total"] >= 1 and found["counts"]["CRITICAL"] == 1

    serve(long_ids, check)


def test_store_down_pages_are_held_as_of_and_actions_refused_with_a_message(
        store_dir: Path) -> None:
    """Pages degrade to the last data they had, marked "as of", never a 500. An action
    during an outage is refused with a message, never lost."""
    flaky = Flaky(store_dir)

    async def check(client: TestClient[Any, Any]) -> None:
        fresh = await (await client.get("/tables/AC-BJ-01")).text()
        vid = (await snapshot(client, "?severity=CRITICAL"))["alerts"][0]["violation_id"]
        flaky.down = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10  # the banner's promise: within 10 s
        while (await client.get("/api/health")).status != 503:
            assert loop.time() < deadline, "the outage was not noticed"
            await asyncio.sleep(0.05)
        health = await (await client.get("/api/health")).json()
        assert health["store"] == "down" and "Connection refused" in health["store_error"]
        held = await client.get("/tables/AC-BJ-01")
        assert held.status == 200
        text = await held.text()
        assert "the last copy held, as of" in text and "AC-BJ-01-000001" in text
        assert fresh.count("/rounds/") == text.count("/rounds/")
        never = await client.get("/tables/AC-SW-02")  # never seen: said so, no 500
        assert never.status == 503 and "holds no earlier copy" in await never.text()
        resp = await post(client, {"violation_id": vid, "action": "escalate"})
        assert resp.status == 503
        body = await resp.json()
        assert "NOT recorded: 1" in body["error"] and body["not_recorded"] == [vid]
        status = await (await client.get("/api/status")).json()
        assert status["store"] == "down" and status["pinned"] is None
        flaky.down = False
        deadline = loop.time() + 10
        while (await client.get("/api/health")).status != 200:
            assert loop.time() < deadline
            await asyncio.sleep(0.05)
        resp = await post(client, {"violation_id": vid, "action": "escalate"})
        assert resp.status == 201

    serve(store_dir, check, store=flaky, probe_every=0.1)


@pytest.mark.parametrize("nxt", ["/\t/evil.com", "/\n/evil.com", "/\r\n/evil.com",
                                 "/ /evil.com", "/\x7f/evil.com", "//evil.com",
                                 "/\\evil.com", "https://evil.com", "evil.com"])
def test_next_is_never_another_site(nxt: str) -> None:
    """yarl drops a tab or newline: `/<TAB>/evil.com` would redirect to //evil.com."""
    from pitwatch.console.auth import _safe_next

    assert _safe_next(nxt) == "/"
    assert _safe_next("/search?table=AC-BJ-01&offset=20") == "/search?table=AC-BJ-01&offset=20"


def test_login_with_a_tab_in_next_redirects_home(store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        form = await (await client.get("/login?next=/%09/evil.com")).text()
        assert 'name="next" value="/"' in form
        token = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        resp = await client.post("/login", data={
            "csrf": token, "next": "/\t/evil.com", "user": "viewer", "password": PASSWORD},
            allow_redirects=False)
        assert resp.status == 302 and resp.headers["Location"] == "/"

    serve(store_dir, check, user=None)


def test_passwords_are_checked_off_the_event_loop_a_few_at_once(
        store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2id takes a CPU for a while: the loop keeps answering meanwhile."""
    import threading
    import time

    import pitwatch.console.auth as auth

    real = Accounts.verify
    running, most, threads = [0], [0], set()
    lock = threading.Lock()

    def slow(self: Accounts, name: str, password: str) -> Any:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threads.add(threading.get_ident())
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        return real(self, name, password)

    monkeypatch.setattr(Accounts, "verify", slow)

    async def check(client: TestClient[Any, Any]) -> None:
        form = await (await client.get("/login")).text()
        token = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        logins = [asyncio.ensure_future(client.post("/login", data={
            "csrf": token, "next": "/", "user": f"nobody{i}", "password": "x"},
            allow_redirects=False)) for i in range(5)]
        await asyncio.sleep(0.1)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        assert (await client.get("/api/health")).status == 200
        assert loop.time() - t0 < 0.25  # not behind a password check
        assert [r.status for r in await asyncio.gather(*logins)] == [401] * 5
        assert threading.get_ident() not in threads
        assert most[0] <= auth.VERIFY_AT_ONCE

    serve(store_dir, check, user=None)


def test_wrong_passwords_and_ended_sessions_are_forgotten(store_dir: Path) -> None:
    """Neither the names tried nor the sessions grow without limit."""
    import time

    import pitwatch.console.auth as auth
    async def check(client: TestClient[Any, Any]) -> None:
        cfg = client.server.app[auth.AUTH]
        now = time.monotonic()
        for i in range(100):
            cfg.failures[f"old{i}"] = (3, 0.0, now - auth.FAILS_FORGET_S - 1)
        cfg.failures["locked"] = (0, now + 60, now - auth.FAILS_FORGET_S - 1)
        cfg.sessions["ended"] = auth.Session("viewer", "viewer", "c", now - auth.IDLE_S - 1)
        cfg.pruned_at = 0.0
        form = await (await client.get("/login")).text()
        token = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        resp = await client.post("/login", data={"csrf": token, "next": "/", "user": "new",
                                                 "password": "x"}, allow_redirects=False)
        assert resp.status == 401
        assert set(cfg.failures) == {"locked", "new"} and "ended" not in cfg.sessions

    serve(store_dir, check, user=None)

    cfg = auth.AuthConfig(Accounts(users_file(store_dir)))
    now = time.monotonic()
    for i in range(auth.MAX_FAILURES + 50):
        cfg.failures[f"n{i}"] = (1, 0.0, now - 1 + i * 1e-6)
    auth.prune(cfg, now)
    assert len(cfg.failures) == auth.MAX_FAILURES and "n0" not in cfg.failures


def test_single_sign_on_requests_without_the_cookie_do_not_pile_up_sessions(
        store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import pitwatch.console.auth as auth
    monkeypatch.setattr(auth, "MAX_SSO_SESSIONS", 3)

    async def check(client: TestClient[Any, Any]) -> None:
        cfg = client.server.app[auth.AUTH]
        cfg.sessions["ended"] = auth.Session("ana", "viewer", "c",
                                             time.monotonic() - auth.IDLE_S - 1, "sso")
        for _ in range(10):
            client.session.cookie_jar.clear()
            resp = await client.get("/", headers={"X-Remote-User": "operator"})
            assert resp.status == 200
        assert "ended" not in cfg.sessions
        assert len(cfg.sessions) <= 4

    serve(store_dir, check, user=None, sso_header="X-Remote-User",
          sso_proxies=("127.0.0.1",))


def test_health_without_a_login_says_up_or_down_and_nothing_more(store_dir: Path) -> None:
    """/api/health needs no login, so it names no table, error text or lag without one."""
    flaky = Flaky(store_dir)

    async def check(client: TestClient[Any, Any]) -> None:
        resp = await client.get("/api/health")
        assert resp.status == 200 and set(await resp.json()) == {"ok", "store", "kafka"}
        flaky.down = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while (resp := await client.get("/api/health")).status != 503:
            assert loop.time() < deadline, "the outage was not noticed"
            await asyncio.sleep(0.05)
        text = await resp.text()
        assert "Connection refused" not in text and "127.0.0.1" not in text
        assert await resp.json() == {"ok": False, "store": "down", "kafka": "off"}
        await login(client, "viewer")
        full = await (await client.get("/api/health")).json()
        assert "Connection refused" in full["store_error"] and "silent" in full
        flaky.down = False

    serve(store_dir, check, user=None, store=flaky, probe_every=0.1)


def test_the_first_demo_password_is_kept_in_a_file_of_its_own_never_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pitwatch.console.serve import first_account

    accounts = Accounts(tmp_path / "console-users.json")
    kept = first_account(accounts)
    assert kept == tmp_path / "console-users.demo-password"
    assert kept.stat().st_mode & 0o777 == 0o600
    password = kept.read_text().strip()
    assert len(password) >= 12 and accounts.verify("demo", password) is not None
    demo = accounts.get("demo")
    assert demo is not None and demo.role == "supervisor"
    assert password not in capsys.readouterr().out
    kept.chmod(0o644)  # an older file, opened to others: the owner's alone again
    first_account(accounts)
    assert kept.stat().st_mode & 0o777 == 0o600 and kept.read_text().strip() != password


def test_the_copies_held_for_outages_are_the_most_recent_few(
        store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each distinct search is a question held: a least-recently-used cache, capped."""
    import pitwatch.console.app as app_module
    monkeypatch.setattr(app_module, "HELD_MAX", 5)

    async def check(client: TestClient[Any, Any]) -> None:
        held = client.server.app[app_module.HELD]
        for i in range(20):
            resp = await client.get("/search", params={"dealer": f"nobody-{i}"})
            assert resp.status == 200
        assert len(held) <= 5

    serve(store_dir, check)

    cache = app_module.Held(2)
    cache.put(("a", ""), (1, "a"))
    cache.put(("b", ""), (2, "b"))
    assert cache.get(("a", "")) == (1, "a")  # used: now the most recent
    cache.put(("c", ""), (3, "c"))
    assert cache.get(("b", "")) is None and cache.get(("a", "")) == (1, "a")


def test_a_question_the_store_refuses_is_that_request_s_error_not_an_outage(
        store_dir: Path) -> None:
    """A page far past the end, or a query the store refuses, does not mark the store
    down for every page: only a connection refused or timed out does."""
    async def check(client: TestClient[Any, Any]) -> None:
        from pitwatch.console.app import DB
        from pitwatch.store.base import StoreError

        resp = await client.get("/search", params={"offset": "99999999999999999999"})
        assert resp.status == 200
        health = await (await client.get("/api/health")).json()
        assert health["store"] != "down"

        db = client.server.app[DB]

        def search(*_args: Any) -> Any:
            raise StoreError("chDB: Code: 62. DB::Exception: Syntax error") from RuntimeError()

        db.data.search = search  # type: ignore[method-assign]
        resp = await client.get("/search", params={"dealer": "x"})
        assert resp.status == 500 and "Syntax error" in await resp.text()
        assert "does not answer" not in await resp.text()
        health = await (await client.get("/api/health")).json()
        assert health["store"] != "down" and health["ok"]

        def gone(*_args: Any) -> Any:
            raise StoreError("ClickHouse: Connection refused") from ConnectionRefusedError()

        db.data.search = gone  # type: ignore[method-assign]
        resp = await client.get("/search", params={"dealer": "y"})
        assert resp.status == 503
        assert (await (await client.get("/api/health")).json())["store"] == "down"

    serve(store_dir, check)
