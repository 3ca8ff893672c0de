"""Single sign-on by OpenID Connect (console/oidc.py), against a small identity provider
written here: real HTTP on loopback, real RS256 and ES256 signatures. Issue 34: "Where
a site already has single sign-on, a configured trusted reverse-proxy header or OIDC is
used instead." Both sides: a valid sign-in works; a bad signature, a wrong audience, an
expired token, a wrong nonce, an unsigned token and a replayed state are refused."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import html
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from pitwatch.console.app import Settings, make_app
from pitwatch.console.oidc import OidcConfig, check_url, parse_roles

from .test_console_sessions import OneStore
from .test_console_views import store_dir as store_dir  # the fixture, shared
from .test_console_views import users_file

CLIENT = "pitwatch-console"
REDIRECT = "http://127.0.0.1:8080/login/oidc/callback"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n: int) -> str:
    return b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


class IdP:
    """An OpenID provider: discovery, JWKS, authorize (remembers the request), token
    (checks the code once, the client, the redirect URI and the PKCE verifier against
    the challenge, then signs an id_token as `mode` says)."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.issuer = ""
        self.mode = "RS256"
        self.codes: dict[str, dict[str, str]] = {}
        self.verified_pkce = 0
        self.claims: dict[str, Any] = {"preferred_username": "ana",
                                       "groups": ["surveillance", "pit-bosses"]}

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self.discovery)
        app.router.add_get("/jwks", self.jwks)
        app.router.add_get("/authorize", self.authorize)
        app.router.add_post("/token", self.token)
        return app

    async def discovery(self, _r: web.Request) -> web.Response:
        return web.json_response({"issuer": self.issuer,
                                  "authorization_endpoint": self.issuer + "/authorize",
                                  "token_endpoint": self.issuer + "/token",
                                  "jwks_uri": self.issuer + "/jwks"})

    async def jwks(self, _r: web.Request) -> web.Response:
        r, e = self.rsa.public_key().public_numbers(), self.ec.public_key().public_numbers()
        return web.json_response({"keys": [
            {"kty": "RSA", "kid": "rsa1", "alg": "RS256", "n": uint(r.n), "e": uint(r.e)},
            {"kty": "EC", "kid": "ec1", "crv": "P-256", "x": uint(e.x), "y": uint(e.y)}]})

    async def authorize(self, request: web.Request) -> web.Response:
        q = request.query
        assert q["response_type"] == "code" and q["code_challenge_method"] == "S256"
        assert "openid" in q["scope"].split()
        code = secrets.token_urlsafe(16)
        self.codes[code] = dict(q)
        raise web.HTTPFound(f"{q['redirect_uri']}?code={code}&state={q['state']}")

    async def token(self, request: web.Request) -> web.Response:
        form = await request.post()
        asked = self.codes.pop(str(form["code"]), None)
        if asked is None:
            return web.json_response({"error": "invalid_grant"}, status=400)
        challenge = b64(hashlib.sha256(str(form["code_verifier"]).encode()).digest())
        if (challenge != asked["code_challenge"] or form["client_id"] != CLIENT
                or form["redirect_uri"] != asked["redirect_uri"]):
            return web.json_response({"error": "invalid_grant"}, status=400)
        self.verified_pkce += 1
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": CLIENT, "sub": "u-1", "iat": now,
                  "exp": now + 300, "nonce": asked["nonce"], **self.claims}
        if self.mode == "wrong-aud":
            claims["aud"] = "another-app"
        elif self.mode == "expired":
            claims["iat"], claims["exp"] = now - 3600, now - 600
        elif self.mode == "wrong-nonce":
            claims["nonce"] = "not-this-login"
        elif self.mode == "wrong-iss":
            claims["iss"] = "https://evil.example"
        elif self.mode == "not-yet":
            claims["nbf"] = now + 3600
        return web.json_response({"access_token": "a", "token_type": "Bearer",
                                  "id_token": self.sign(claims)})

    def sign(self, claims: dict[str, Any]) -> str:
        alg = {"ES256": "ES256", "none": "none", "HS256": "HS256"}.get(self.mode, "RS256")
        kid = "ec1" if alg == "ES256" else "rsa1"
        head = b64(orjson.dumps({"alg": alg, "kid": kid, "typ": "JWT"}))
        signed = f"{head}.{b64(orjson.dumps(claims))}".encode()
        if alg == "none":
            return signed.decode() + "."
        if alg == "HS256":  # the public key as an HMAC secret: algorithm confusion
            pem = self.rsa.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            return f"{signed.decode()}.{b64(hmac.new(pem, signed, 'sha256').digest())}"
        if alg == "ES256":
            r, s = decode_dss_signature(self.ec.sign(signed, ec.ECDSA(hashes.SHA256())))
            sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        else:  # a bad signature: another key, under the published key's kid
            key = self.other if self.mode == "bad-sig" else self.rsa
            sig = key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
        return f"{signed.decode()}.{b64(sig)}"


Check = Callable[[TestClient[Any, Any], IdP, aiohttp.ClientSession], Awaitable[None]]


def run(store_dir: Path, check: Check, second: list[TestClient[Any, Any]] | None = None
        ) -> None:
    """`check` with a console (and, given `second`, a second console process over the
    same store, put in it) signing in at an IdP on loopback."""
    async def main() -> None:
        idp = IdP()
        async with TestServer(idp.app(), host="127.0.0.1") as server, \
                aiohttp.ClientSession() as browser_at_idp:
            idp.issuer = f"http://127.0.0.1:{server.port}"
            cfg = OidcConfig(issuer=idp.issuer, client_id=CLIENT, redirect_uri=REDIRECT,
                             roles=parse_roles(["pit-bosses=supervisor",
                                                "surveillance=operator"]))
            store: Any = OneStore(store_dir)
            store.users = 2 if second is not None else 1
            settings = Settings(poll_every=None, users=users_file(store_dir), oidc=cfg)
            async with TestClient(TestServer(make_app(store, settings))) as console:
                if second is None:
                    await check(console, idp, browser_at_idp)
                    return
                async with TestClient(TestServer(make_app(store, settings))) as other:
                    second.append(other)
                    await check(console, idp, browser_at_idp)

    asyncio.run(main())


async def sign_in(console: TestClient[Any, Any], browser: aiohttp.ClientSession,
                  back_at: TestClient[Any, Any] | None = None,
                  ) -> tuple[aiohttp.ClientResponse, str, str]:
    """The browser's round trip: the console's /login/oidc, the issuer's authorize,
    back to the console's callback (at `back_at`, another console process behind the
    same load balancer, when given). (The callback's answer, its path and query, and
    the sign-in's cookie.)"""
    start = await console.get("/login/oidc?next=/floor", allow_redirects=False)
    assert start.status == 302, await start.text()
    cookie = start.cookies["pitwatch_oidc"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    at_idp = await browser.get(start.headers["Location"], allow_redirects=False)
    assert at_idp.status == 302
    back = urlsplit(at_idp.headers["Location"])
    assert f"{back.scheme}://{back.netloc}{back.path}" == REDIRECT
    callback = f"{back.path}?{back.query}"
    there = back_at or console
    if back_at is not None:
        back_at.session.cookie_jar.update_cookies({"pitwatch_oidc": cookie.value})
    return await there.get(callback, allow_redirects=False), callback, cookie.value


def test_a_valid_sign_in_makes_a_session_with_the_mapped_role(store_dir: Path) -> None:
    async def check(console: TestClient[Any, Any], idp: IdP,
                    browser: aiohttp.ClientSession) -> None:
        login = await (await console.get("/login")).text()
        assert 'href="/login/oidc?next=%2F"' in login
        start = await console.get("/login/oidc?next=/floor", allow_redirects=False)
        q = parse_qs(urlsplit(start.headers["Location"]).query)
        assert q["code_challenge_method"] == ["S256"] and len(q["code_challenge"][0]) == 43
        assert q["client_id"] == [CLIENT] and q["redirect_uri"] == [REDIRECT]
        assert len(q["state"][0]) >= 43 and len(q["nonce"][0]) >= 43
        for mode in ("RS256", "ES256"):
            idp.mode = mode
            console.session.cookie_jar.clear()
            resp, _, _ = await sign_in(console, browser)
            assert resp.status == 200, await resp.text()
            assert 'content="0;url=/floor"' in await resp.text()
            floor = await console.get("/floor", allow_redirects=False)
            assert floor.status == 200
            page = await floor.text()
            assert 'name="pitwatch-user" content="ana"' in page
            assert '<span class="role">supervisor</span>' in page
        assert idp.verified_pkce == 2  # the token endpoint saw the verifier match
        rows = await console.app[_db_key()].run(lambda s: s.query(
            "SELECT user, role, via FROM console_sessions WHERE user = 'ana'"),
            console.app[_db_key()].store)
        assert {(r["user"], r["role"], r["via"]) for r in rows} == \
            {("ana", "supervisor", "oidc")}

    run(store_dir, check)


def _db_key() -> Any:
    from pitwatch.console.app import DB

    return DB


@pytest.mark.parametrize(("mode", "said"), [
    ("bad-sig", "signature is not the issuer's"),
    ("wrong-aud", "not for this console (aud)"),
    ("expired", "has expired"),
    ("wrong-nonce", "nonce is not this login's"),
    ("wrong-iss", "another issuer"),
    ("not-yet", "not valid yet"),
    ("none", "algorithm is not one the console takes"),
    ("HS256", "algorithm is not one the console takes"),
])
def test_a_token_that_fails_a_check_is_refused(store_dir: Path, mode: str, said: str) -> None:
    async def check(console: TestClient[Any, Any], idp: IdP,
                    browser: aiohttp.ClientSession) -> None:
        idp.mode = mode
        resp, _, _ = await sign_in(console, browser)
        assert resp.status == 403
        assert said in html.unescape(await resp.text())
        assert (await console.get("/floor", allow_redirects=False)).status == 302

    run(store_dir, check)


def test_a_replayed_or_foreign_state_is_refused(store_dir: Path) -> None:
    """A callback is taken once, at any console process; one that comes back to another
    console process than the one that started it (a load balancer) works."""
    second: list[TestClient[Any, Any]] = []

    async def check(console: TestClient[Any, Any], idp: IdP,
                    browser: aiohttp.ClientSession) -> None:
        other = second[0]
        resp, callback, cookie = await sign_in(console, browser, back_at=other)
        assert resp.status == 200, await resp.text()
        assert (await other.get("/floor", allow_redirects=False)).status == 200
        # the same answer again (a replay), with its cookie, at either process
        for there in (other, console):
            there.session.cookie_jar.clear()
            there.session.cookie_jar.update_cookies({"pitwatch_oidc": cookie})
            again = await there.get(callback, allow_redirects=False)
            assert again.status == 400
            assert "used already" in html.unescape(await again.text())
            assert (await there.get("/floor", allow_redirects=False)).status == 302
        # an answer naming another issuer (RFC 9207's iss): refused before the code is used
        start = await console.get("/login/oidc", allow_redirects=False)
        at_idp = await browser.get(start.headers["Location"], allow_redirects=False)
        back = urlsplit(at_idp.headers["Location"])
        mixed = await console.get(f"{back.path}?{back.query}&iss=https%3A%2F%2Fevil.example",
                                  allow_redirects=False)
        assert mixed.status == 403 and "another issuer" in html.unescape(await mixed.text())
        # a forged state, with the cookie
        forged = callback.replace("state=", "state=x")
        again = await console.get(forged, allow_redirects=False)
        assert again.status == 400
        # a callback in a browser that did not start the sign-in (no state cookie)
        start = await console.get("/login/oidc", allow_redirects=False)
        at_idp = await browser.get(start.headers["Location"], allow_redirects=False)
        back = urlsplit(at_idp.headers["Location"])
        console.session.cookie_jar.clear()
        foreign = await console.get(f"{back.path}?{back.query}", allow_redirects=False)
        assert foreign.status == 400 and "not started in this browser" in \
            html.unescape(await foreign.text())
        assert idp.verified_pkce == 1  # none of them reached the token endpoint

    run(store_dir, check, second)


def test_the_issuer_is_https_but_at_a_loopback_address() -> None:
    assert check_url("https://idp.example/realms/x", "issuer")
    assert check_url("http://127.0.0.1:9000", "issuer")
    for bad in ("http://idp.example", "ftp://idp.example", "https://", "javascript:x"):
        with pytest.raises(ValueError, match="https"):
            check_url(bad, "issuer")
    with pytest.raises(ValueError, match="VALUE=ROLE"):
        OidcConfig(issuer="https://i.example", client_id="c", redirect_uri=REDIRECT,
                   roles=parse_roles(["admins=root"]))


def test_serve_takes_oidc_from_flags_or_the_environment_and_the_secret_from_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from pitwatch.console.serve import command, oidc_config

    def parsed(*argv: str) -> argparse.Namespace:
        p = argparse.ArgumentParser()
        command.configure(p)
        return p.parse_args(list(argv))

    assert oidc_config(parsed()) is None
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    secret.chmod(0o600)
    cfg = oidc_config(parsed("--oidc-issuer", "https://idp.example/r", "--oidc-client-id",
                             "c", "--oidc-client-secret-file", str(secret), "--oidc-role",
                             "admins=supervisor,ops=operator", "--public-url",
                             "https://console.example/"))
    assert cfg is not None and cfg.client_secret == "s3cret"
    assert cfg.redirect_uri == "https://console.example/login/oidc/callback"
    assert cfg.roles == (("admins", "supervisor"), ("ops", "operator"))
    assert cfg.role_of({"groups": ["ops", "admins"]}) == "supervisor"
    assert cfg.role_of({"groups": "ops"}) == "operator"
    assert cfg.role_of({"groups": [{"ops": 1}]}) == cfg.role_of({}) == "viewer"
    monkeypatch.setenv("PITWATCH_OIDC_ISSUER", "https://idp.example/env")
    monkeypatch.setenv("PITWATCH_OIDC_CLIENT_ID", "env-client")
    monkeypatch.setenv("PITWATCH_OIDC_CLIENT_SECRET", "from-env")
    monkeypatch.setenv("PITWATCH_OIDC_ROLES", "pit=investigator")
    monkeypatch.setenv("PITWATCH_OIDC_ROLE_CLAIM", "roles")
    monkeypatch.setenv("PITWATCH_OIDC_USER_CLAIM", "email")
    monkeypatch.setenv("PITWATCH_OIDC_DEFAULT_ROLE", "operator")
    cfg = oidc_config(parsed())
    assert cfg is not None
    assert (cfg.issuer, cfg.client_id, cfg.client_secret, cfg.roles, cfg.role_claim,
            cfg.user_claim, cfg.default_role) == (
        "https://idp.example/env", "env-client", "from-env", (("pit", "investigator"),),
        "roles", "email", "operator")
    with pytest.raises(ValueError, match="https"):
        oidc_config(parsed("--oidc-issuer", "http://idp.example"))
    secret.chmod(0o644)  # a secret others may read is refused
    with pytest.raises(ValueError, match="oidc-client-secret-file"):
        oidc_config(parsed("--oidc-client-secret-file", str(secret)))


def test_an_rsa_key_under_2048_bits_is_not_trusted() -> None:
    from pitwatch.console.oidc import verify_signature

    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    strong = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for key, ok in ((weak, False), (strong, True)):
        sig = key.sign(b"a.b", padding.PKCS1v15(), hashes.SHA256())
        assert verify_signature("RS256", key.public_key(), b"a.b", sig) is ok
        assert verify_signature("RS256", key.public_key(), b"a.c", sig) is False
