"""Sessions shared by every console process over one store (console/sessions.py,
schemas/clickhouse/014_sessions.sql): "a user logged in at one console process is a
stranger at the next one behind a load balancer" no more, and "logout revokes it
everywhere"."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pitwatch.console.app import Settings, make_app
from pitwatch.console.sessions import csrf_of
from pitwatch.store.embedded import EmbeddedStore

from .test_console_views import CSRF, Flaky, login, serve, users_file
from .test_console_views import store_dir as store_dir  # the fixture, shared


class OneStore:
    """One embedded store for two console apps in one test process (chDB is one
    process's): each app's store thread takes the lock; only the last close closes."""

    def __init__(self, path: Path) -> None:
        self.inner = EmbeddedStore(path)
        self.lock = threading.Lock()
        self.users = 2

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        with self.lock:
            return self.inner.query(sql, params)

    def insert(self, table: str, rows: Any) -> None:
        with self.lock:
            self.inner.insert(table, rows)

    def setup(self) -> None:
        with self.lock:
            self.inner.setup()

    def close(self) -> None:
        with self.lock:
            self.users -= 1
            if not self.users:
                self.inner.close()


def test_a_session_made_at_one_process_holds_at_another_and_logout_ends_it_at_both(
        store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Log in on one process, use the cookie on a second process over the same store;
    logout on the second; the first refuses it (and ends the live feed it streams)."""
    import pitwatch.console.app as app_module

    monkeypatch.setattr(app_module, "STATUS_EVERY", 0.1)
    monkeypatch.setattr(app_module, "SESSION_EVERY", 0.1)
    store = OneStore(store_dir)

    async def main() -> None:
        settings = Settings(poll_every=None, users=users_file(store_dir))
        one: Any = store  # the store's methods, behind a lock
        async with TestClient(TestServer(make_app(one, settings))) as first, \
                TestClient(TestServer(make_app(one, settings))) as second:
            assert (await second.get("/floor", allow_redirects=False)).status == 302
            await login(first, "operator")
            cookie = first.session.cookie_jar.filter_cookies(first.make_url("/"))
            token = cookie["pitwatch_session"].value
            # the second process never saw the login: it honours the store's session
            second.session.cookie_jar.update_cookies({"pitwatch_session": token})
            page = await second.get("/floor", allow_redirects=False)
            assert page.status == 200
            html = await page.text()
            assert 'name="pitwatch-user" content="operator"' in html
            assert f'name="pitwatch-csrf" content="{csrf_of(token)}"' in html
            assert CSRF[id(first)] == csrf_of(token)  # one CSRF token, whichever process
            # the store holds the token's SHA-256 alone, never the token
            rows = store.query("SELECT token_sha256, user, revoked FROM console_sessions")
            assert [r["token_sha256"] for r in rows if r["user"] == "operator"] == \
                [hashlib.sha256(token.encode()).hexdigest()]
            dump = str(store.query("SELECT * FROM console_sessions"))
            assert token not in dump and csrf_of(token) not in dump
            feed = await first.get("/api/feed")
            assert feed.status == 200 and await feed.content.readline() == b"event: snapshot\n"
            # a POST without the session's CSRF token is refused at the second too
            resp = await second.post("/logout", data={"csrf": "forged"},
                                     allow_redirects=False)
            assert resp.status == 403
            resp = await second.post("/logout", data={"csrf": csrf_of(token)},
                                     allow_redirects=False)
            assert resp.status == 302 and resp.headers["Location"] == "/login"
            # the first process verified this session itself, and refuses it now: its
            # open feed ends, and the next request is sent to the login
            async def ended() -> None:
                while await feed.content.readline():
                    pass

            await asyncio.wait_for(ended(), 10)
            again = await first.get("/floor", allow_redirects=False)
            assert again.status == 302 and again.headers["Location"].startswith("/login")
            api = await first.get("/api/search")
            assert api.status == 401
            health = await (await first.get("/api/health")).json()
            assert "store_kind" not in health  # the public answer: no session
            # a token the store never saw is nobody's, at either process
            for client in (first, second):
                client.session.cookie_jar.update_cookies({"pitwatch_session": "x" * 43})
                assert (await client.get("/floor", allow_redirects=False)).status == 302

    asyncio.run(main())


def test_an_expired_session_is_refused_by_every_process(store_dir: Path) -> None:
    """expiry: a session whose stored expiry has passed is no one's."""
    store = OneStore(store_dir)
    store.users = 1

    async def main() -> None:
        settings = Settings(poll_every=None, users=users_file(store_dir))
        one: Any = store
        async with TestClient(TestServer(make_app(one, settings))) as client:
            await login(client, "viewer")
            token = client.session.cookie_jar.filter_cookies(
                client.make_url("/"))["pitwatch_session"].value
            h = hashlib.sha256(token.encode()).hexdigest()
            got = store.query("SELECT version FROM console_sessions WHERE "
                              "token_sha256 = {h:String}", {"h": h})
            store.insert("console_sessions", [{
                "token_sha256": h, "version": int(got[0]["version"]) + 1, "user": "viewer",
                "role": "viewer", "via": "password", "expires": 1, "revoked": 0,
                "ts": 1}])
            resp = await client.get("/floor", allow_redirects=False)
            assert resp.status == 302

    asyncio.run(main())


def test_a_login_while_the_store_is_down_is_written_when_it_answers(store_dir: Path) -> None:
    """An outage: this process honours the logins it made itself, and records them (and
    a logout) in the store once it answers again, in order."""
    flaky = Flaky(store_dir)

    async def check(client: TestClient[Any, Any]) -> None:
        flaky.down = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while (await client.get("/api/health")).status != 503:
            assert loop.time() < deadline, "the outage was not noticed"
            await asyncio.sleep(0.05)
        await login(client, "investigator")
        token = client.session.cookie_jar.filter_cookies(
            client.make_url("/"))["pitwatch_session"].value
        assert (await client.get("/api/status")).status == 200
        flaky.down = False
        deadline = loop.time() + 10
        while (await client.get("/api/health")).status != 200:
            assert loop.time() < deadline
            await asyncio.sleep(0.05)
        assert (await client.get("/api/status")).status == 200
        h = hashlib.sha256(token.encode()).hexdigest()
        rows = flaky.query("SELECT user, revoked FROM console_sessions WHERE "
                           "token_sha256 = {h:String} ORDER BY version", {"h": h})
        assert rows[0] == {"user": "investigator", "revoked": 0}
        # a logout during the next outage: refused here at once, and written after it
        flaky.down = True
        deadline = loop.time() + 10
        while (await client.get("/api/health")).status != 503:
            assert loop.time() < deadline
            await asyncio.sleep(0.05)
        resp = await client.post("/logout", data={"csrf": csrf_of(token)},
                                 allow_redirects=False)
        assert resp.status == 302
        client.session.cookie_jar.update_cookies({"pitwatch_session": token})
        assert (await client.get("/floor", allow_redirects=False)).status == 302
        flaky.down = False
        deadline = loop.time() + 10
        while (await client.get("/api/health")).status != 200:
            assert loop.time() < deadline
            await asyncio.sleep(0.05)
        # the next session check writes the logout first: the store's login row does
        # not bring the session back
        assert (await client.get("/floor", allow_redirects=False)).status == 302
        rows = flaky.query("SELECT revoked FROM console_sessions WHERE token_sha256 = "
                           "{h:String} ORDER BY version DESC LIMIT 1", {"h": h})
        assert rows == [{"revoked": 1}]

    serve(store_dir, check, user=None, store=flaky, probe_every=0.1)
