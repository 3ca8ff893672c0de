"""Single sign-on by OpenID Connect: the authorization-code flow with PKCE (S256),
state and nonce.

- /login/oidc sends the browser to the issuer's authorization endpoint (from its
  discovery document, whose `issuer` must be the one configured) with a state, a nonce
  and a PKCE challenge, all three derived from a random secret set in an HttpOnly
  cookie of its own (with the time and the page to go back to, which the state binds).
  So a callback is taken only in the browser that started the sign-in, by any console
  process (none keeps the sign-in in memory: behind a load balancer the callback may
  reach another), and the PKCE verifier never leaves the browser's cookie and the
  console for the URL.
- /login/oidc/callback takes the state once (a replayed state is refused: by this
  process from memory, by the others from its use recorded in the store, and by the
  issuer, whose code is good once), trades the code and the PKCE verifier at the token
  endpoint, and checks the id_token:
  its signature (RS256 or ES256, by the issuer's JWKS key of the token's `kid`; any
  other algorithm, `none` among them, is refused), `iss`, `aud` (and `azp` when there
  are several audiences), `exp`, `iat`, `nbf`, and the nonce; an `iss` in the answer
  (RFC 9207) must be the issuer's.
- The user is the `user_claim` (else `sub`); the role is the highest one the
  configured map gives any value of the `role_claim` (else `default_role`). The
  session is the store's, as a password login's (console/sessions.py).

The issuer is reached over HTTPS; plain HTTP only at a loopback address (a test or an
IdP beside the console). Signatures are checked with `cryptography`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from .triage import ROLES

log = logging.getLogger("pitwatch.console")
STATE_COOKIE = "pitwatch_oidc"
PENDING_S = 600  # a login started this long ago and not finished has ended
MAX_PENDING = 10_000  # states taken that this process remembers, the oldest forgotten
LEEWAY_S = 60  # clock difference allowed between the issuer and the console
CACHE_S = 3600  # the discovery document and the JWKS are fetched again after this
MAX_DOC = 1 << 20  # bytes of a discovery document, JWKS or token answer
ALGS = ("RS256", "ES256")


class OidcError(Exception):
    """A login refused, with the reason shown to the user (no secret in it)."""


@dataclass(frozen=True, slots=True)
class OidcConfig:
    issuer: str
    client_id: str
    redirect_uri: str
    client_secret: str = ""  # empty: a public client (PKCE alone)
    scope: str = "openid profile email"
    user_claim: str = "preferred_username"
    role_claim: str = "groups"
    #: (claim value, role): a user with the value gets the role
    roles: tuple[tuple[str, str], ...] = ()
    default_role: str = "viewer"

    def __post_init__(self) -> None:
        check_url(self.issuer, "the OIDC issuer")
        if not self.client_id:
            raise ValueError("OIDC needs a client id (--oidc-client-id)")
        for value, role in self.roles:
            if role not in ROLES or not value:
                raise ValueError(f"--oidc-role {value}={role}: VALUE=ROLE, the role one of "
                                 f"{', '.join(ROLES)}")
        if self.default_role not in ROLES:
            raise ValueError(f"the OIDC default role must be one of {', '.join(ROLES)}")

    def role_of(self, claims: dict[str, Any]) -> str:
        got = claims.get(self.role_claim)
        values = [got] if isinstance(got, str) else got if isinstance(got, list) else []
        mapped = {role for value, role in self.roles
                  if any(isinstance(v, str) and hmac.compare_digest(v.encode(), value.encode())
                         for v in values)}
        best = [r for r in ROLES if r in mapped]  # ROLES is ordered least to most
        return best[-1] if best else self.default_role


def parse_roles(items: list[str]) -> tuple[tuple[str, str], ...]:
    """VALUE=ROLE items (each may be a comma-separated list of them)."""
    out = []
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            value, sep, role = part.strip().rpartition("=")
            if not sep or not value:
                raise ValueError(f"--oidc-role {part.strip()!r}: VALUE=ROLE")
            out.append((value, role))
    return tuple(out)


def check_url(url: str, what: str) -> str:
    """An https URL, or http at a loopback address; ValueError otherwise."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme == "https" and host:
        return url
    if parts.scheme == "http" and host:
        try:
            if ipaddress.ip_address(host).is_loopback:
                return url
        except ValueError:
            if host == "localhost":
                return url
    raise ValueError(f"{what} must be an https:// URL (http:// at a loopback address "
                     f"only): {url[:200]!r}")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    if not isinstance(text, str) or len(text) > 1 << 16:
        raise OidcError("the id_token is malformed")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as e:
        raise OidcError("the id_token is malformed") from e


def _int(text: str) -> int:
    return int.from_bytes(unb64url(text), "big")


def public_key(jwk: dict[str, Any]) -> rsa.RSAPublicKey | ec.EllipticCurvePublicKey:
    """A JWKS key (RSA, or EC on P-256) as `cryptography`'s public key."""
    kty = jwk.get("kty")
    try:
        if kty == "RSA":
            return rsa.RSAPublicNumbers(_int(jwk["e"]), _int(jwk["n"])).public_key()
        if kty == "EC" and jwk.get("crv") == "P-256":
            return ec.EllipticCurvePublicNumbers(_int(jwk["x"]), _int(jwk["y"]),
                                                 ec.SECP256R1()).public_key()
    except (KeyError, ValueError) as e:
        raise OidcError("the issuer's key is malformed") from e
    raise OidcError(f"the issuer's key type is not one the console takes: {str(kty)[:20]}")


def verify_signature(alg: str, key: Any, signed: bytes, sig: bytes) -> bool:
    try:
        if alg == "RS256" and isinstance(key, rsa.RSAPublicKey) and key.key_size >= 2048:
            key.verify(sig, signed, padding.PKCS1v15(), hashes.SHA256())
            return True
        if alg == "ES256" and isinstance(key, ec.EllipticCurvePublicKey) and len(sig) == 64:
            der = encode_dss_signature(int.from_bytes(sig[:32], "big"),
                                       int.from_bytes(sig[32:], "big"))
            key.verify(der, signed, ec.ECDSA(hashes.SHA256()))
            return True
    except InvalidSignature:
        return False
    return False


def split_token(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """(header, claims, signed part, signature) of a compact JWS."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3:
        raise OidcError("the id_token is malformed")
    try:
        header = orjson.loads(unb64url(parts[0]))
        claims = orjson.loads(unb64url(parts[1]))
    except orjson.JSONDecodeError as e:
        raise OidcError("the id_token is malformed") from e
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise OidcError("the id_token is malformed")
    return header, claims, f"{parts[0]}.{parts[1]}".encode(), unb64url(parts[2])


def check_claims(cfg: OidcConfig, claims: dict[str, Any], nonce: str, now: float) -> None:
    """iss, aud (and azp), exp, iat and nonce; OidcError naming the one that failed."""
    if claims.get("iss") != cfg.issuer:
        raise OidcError("the id_token is from another issuer")
    aud = claims.get("aud")
    auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if cfg.client_id not in auds:
        raise OidcError("the id_token is not for this console (aud)")
    if len(auds) > 1 and claims.get("azp") != cfg.client_id:
        raise OidcError("the id_token is not for this console (azp)")
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int | float) or isinstance(exp, bool) or exp <= now - LEEWAY_S:
        raise OidcError("the id_token has expired")
    if iat is not None and (not isinstance(iat, int | float) or iat > now + LEEWAY_S):
        raise OidcError("the id_token is issued in the future")
    nbf = claims.get("nbf")
    if nbf is not None and (not isinstance(nbf, int | float) or nbf > now + LEEWAY_S):
        raise OidcError("the id_token is not valid yet (nbf)")
    got = claims.get("nonce")
    if not isinstance(got, str) or not hmac.compare_digest(got.encode(), nonce.encode()):
        raise OidcError("the id_token's nonce is not this login's")


@dataclass(frozen=True, slots=True)
class Pending:
    """A sign-in started and not finished, as its cookie holds it."""

    state: str
    nonce: str
    verifier: str
    next_url: str
    started: int  # s, UTC

    @classmethod
    def derive(cls, secret: str, started: int, next_url: str) -> Pending:
        def h(label: str) -> str:
            return b64url(hmac.new(secret.encode(), f"{label}|{started}|{next_url}".encode(),
                                   hashlib.sha256).digest())

        return cls(h("state"), h("nonce"), h("pkce"), next_url, started)

    @classmethod
    def from_cookie(cls, cookie: str) -> Pending:
        secret, _, rest = cookie.partition(".")
        started, _, nxt = rest.partition(".")
        try:
            next_url = unb64url(nxt).decode()
        except (OidcError, UnicodeDecodeError) as e:
            raise OidcError("this sign-in was not started in this browser: start "
                            "again") from e
        if len(secret) < 32 or not started.isdigit() or len(started) > 12:
            raise OidcError("this sign-in was not started in this browser: start again")
        return cls.derive(secret, int(started), next_url)


#: a sign-in's state and whether it is taken for the first time (the store's record,
#: shared by every console process); None: this process's memory alone
FirstUse = Callable[[str], Awaitable[bool]]


class Oidc:
    """The flow's state in this process: the logins started (each taken once), and the
    issuer's discovery document and keys, cached."""

    def __init__(self, cfg: OidcConfig, first_use: FirstUse | None = None) -> None:
        self.cfg = cfg
        self.first_use = first_use
        self.used: OrderedDict[str, float] = OrderedDict()  # states taken, by this process
        self._doc: tuple[float, dict[str, Any]] | None = None
        self._keys: tuple[float, dict[str, Any]] | None = None

    # --- the issuer -----------------------------------------------------------------

    async def _json(self, url: str, what: str, form: dict[str, str] | None = None,
                    auth: Any = None) -> dict[str, Any]:
        """The issuer's JSON object at `url`: a GET, or a POST of `form`; at most
        MAX_DOC bytes, no redirects, 10 s. OidcError names `what` when it fails."""
        import aiohttp

        check_url(url, what)
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as s, \
                    s.request("GET" if form is None else "POST", url, data=form, auth=auth,
                              allow_redirects=False) as resp:
                body = await resp.content.read(MAX_DOC + 1)
                if resp.status != 200 or len(body) > MAX_DOC:
                    raise OidcError(f"the issuer's {what} did not answer (HTTP {resp.status})")
                got = orjson.loads(body)
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as e:
            raise OidcError(f"the issuer's {what} could not be read: "
                            f"{type(e).__name__}") from e
        if not isinstance(got, dict):
            raise OidcError(f"the issuer's {what} is not a JSON object")
        return got

    async def discovery(self) -> dict[str, Any]:
        if self._doc is None or time.monotonic() - self._doc[0] > CACHE_S:
            doc = await self._json(self.cfg.issuer.rstrip("/")
                                       + "/.well-known/openid-configuration",
                                       "discovery document")
            if doc.get("issuer") != self.cfg.issuer:
                raise OidcError("the discovery document names another issuer")
            for k in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(doc.get(k), str):
                    raise OidcError(f"the discovery document has no {k}")
                check_url(doc[k], k)
            self._doc = (time.monotonic(), doc)
        return self._doc[1]

    async def key(self, kid: str) -> Any:
        """The issuer's key `kid`, the JWKS fetched again once when it is not known."""
        for fresh in (False, True):
            if fresh or self._keys is None or time.monotonic() - self._keys[0] > CACHE_S:
                jwks = await self._json((await self.discovery())["jwks_uri"], "JWKS")
                keys = jwks.get("keys")
                self._keys = (time.monotonic(), {
                    k["kid"]: k for k in keys if isinstance(k, dict)
                    and isinstance(k.get("kid"), str)} if isinstance(keys, list) else {})
            if kid in self._keys[1]:
                return public_key(self._keys[1][kid])
        raise OidcError("the id_token is signed by a key the issuer does not publish")

    # --- the flow -------------------------------------------------------------------

    async def start(self, next_url: str) -> tuple[str, str]:
        """(the authorization URL to send the browser to, the value of the sign-in's
        cookie)."""
        doc = await self.discovery()
        secret = secrets.token_urlsafe(32)
        p = Pending.derive(secret, int(time.time()), next_url)
        state, nonce = p.state, p.nonce
        challenge = b64url(hashlib.sha256(p.verifier.encode()).digest())
        query = urlencode({"response_type": "code", "client_id": self.cfg.client_id,
                           "redirect_uri": self.cfg.redirect_uri, "scope": self.cfg.scope,
                           "state": state, "nonce": nonce, "code_challenge": challenge,
                           "code_challenge_method": "S256"})
        endpoint = doc["authorization_endpoint"]
        cookie = f"{secret}.{p.started}.{b64url(next_url.encode())}"
        return endpoint + ("&" if "?" in endpoint else "?") + query, cookie

    async def take(self, state: str, cookie: str) -> Pending:
        """The sign-in the browser's cookie holds, if `state` is its state, taken once;
        OidcError for a state this browser did not start, one already used, or one too
        old."""
        pending = Pending.from_cookie(cookie)
        if not state or not hmac.compare_digest(state.encode(), pending.state.encode()):
            raise OidcError("this sign-in was not started in this browser: start again")
        if not -LEEWAY_S <= time.time() - pending.started <= PENDING_S:
            raise OidcError("this sign-in took too long: start again")
        now = time.monotonic()
        while self.used and (len(self.used) >= MAX_PENDING
                             or now - next(iter(self.used.values())) > PENDING_S):
            self.used.popitem(last=False)
        if state in self.used:
            raise OidcError("this sign-in was used already: start again")
        self.used[state] = now
        if self.first_use is not None and not await self.first_use(state):
            raise OidcError("this sign-in was used already: start again")
        return pending

    async def finish(self, code: str, pending: Pending) -> tuple[str, str]:
        """Trade the code for the id_token, check it; (user, role)."""
        import aiohttp

        doc = await self.discovery()
        form = {"grant_type": "authorization_code", "code": code,
                "redirect_uri": self.cfg.redirect_uri, "client_id": self.cfg.client_id,
                "code_verifier": pending.verifier}
        auth = (aiohttp.BasicAuth(self.cfg.client_id, self.cfg.client_secret)
                if self.cfg.client_secret else None)
        answer = await self._json(doc["token_endpoint"], "token endpoint", form, auth)
        token = answer.get("id_token")
        if not isinstance(token, str):
            raise OidcError("the issuer sent no id_token")
        header, claims, signed, sig = split_token(token)
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGS:
            raise OidcError(f"the id_token's algorithm is not one the console takes "
                            f"({', '.join(ALGS)})")
        if not isinstance(kid, str):
            raise OidcError("the id_token names no key (kid)")
        if not verify_signature(str(alg), await self.key(kid), signed, sig):
            raise OidcError("the id_token's signature is not the issuer's")
        check_claims(self.cfg, claims, pending.nonce, time.time())
        user = claims.get(self.cfg.user_claim) or claims.get("sub")
        if not isinstance(user, str) or not 1 <= len(user) <= 64 or not user.isprintable():
            raise OidcError("the id_token names no usable user (1 to 64 printable "
                            "characters)")
        return user, self.cfg.role_of(claims)
