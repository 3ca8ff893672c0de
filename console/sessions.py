"""Sessions kept in the store (schemas/clickhouse/014_sessions.sql), so every console
process over the same store honours a login made at any of them and a logout made at
any of them ends it at all.

- Only the SHA-256 of a session's token is stored, never the token.
- A session's CSRF token is derived from its session token (`csrf_of`), so each process
  computes the same one and none is stored.
- Every request with a session cookie asks the store for the session's newest row (a
  lookup through the table's sort key): a logout elsewhere holds at the next request.
  While the store does not answer, the process goes on with the sessions it verified
  itself (a logout elsewhere cannot have been recorded either), and a login or logout
  made here is kept and written, in order, when the store answers again.
- A used session's expiry moves on (IDLE_S after its use), written at most once a
  RENEW_S per session.

The functions taking a Store run on the console's store thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pitwatch.store.base import Store

TABLE = "console_sessions"
RENEW_S = 600  # a used session's expiry is written again at most this often


def digest(token: str) -> str:
    """What the store keeps of a session token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_of(token: str) -> str:
    """The session's CSRF token: a hash of the session token under a label of its own
    (not the stored digest, so a reader of the store cannot forge actions either)."""
    return hashlib.sha256(b"pitwatch-console-csrf\0" + token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Stored:
    """A session's newest row."""

    user: str
    role: str
    via: str
    expires_ms: int
    revoked: bool
    version: int

    def live(self, now_ms: int) -> bool:
        return not self.revoked and now_ms < self.expires_ms


def write(store: Store, token_sha256: str, user: str, role: str, via: str,
          expires_ms: int, revoked: bool, version: int) -> None:
    store.insert(TABLE, [{"token_sha256": token_sha256, "version": version, "user": user,
                          "role": role, "via": via, "expires": expires_ms // 1000,
                          "revoked": int(revoked), "ts": version // 1000}])


def read(store: Store, token_sha256: str) -> Stored | None:
    rows = store.query(
        "SELECT user, role, via, toUInt64(expires) * 1000 AS e, revoked, version "
        f"FROM {TABLE} WHERE token_sha256 = {{h:String}} "
        "ORDER BY version DESC LIMIT 1", {"h": token_sha256})
    if not rows:
        return None
    r = rows[0]
    return Stored(r["user"], r["role"], r["via"], int(r["e"]), bool(int(r["revoked"])),
                  int(r["version"]))


Runner = Callable[..., Awaitable[Any]]


class SharedSessions:
    """The store's sessions as the gate uses them; `run` is the store thread's runner
    (app.StoreThread.run: it raises when the store does not answer)."""

    def __init__(self, run: Runner, store: Store, idle_s: int) -> None:
        self.run = run
        self.store = store
        self.idle_s = idle_s
        #: logins and logouts made while the store did not answer, in order: write's
        #: arguments after the store
        self.unwritten: list[tuple[str, str, str, str, int, bool, int]] = []
        self._versions: dict[str, int] = {}  # a version is never written twice

    def _version(self, h: str, now_ms: int) -> int:
        v = max(now_ms, self._versions.get(h, 0) + 1)
        self._versions[h] = v
        if len(self._versions) > 10_000:
            self._versions.clear()
        return v

    async def open(self, token: str, user: str, role: str, via: str) -> bool:
        """Record a new session; False when the store did not answer (it is kept and
        written when it does: until then this process alone honours it)."""
        now = now_ms()
        h = digest(token)
        return await self._write((h, user, role, via, now + self.idle_s * 1000, False,
                                  self._version(h, now)))

    async def _write(self, row: tuple[str, str, str, str, int, bool, int]) -> bool:
        try:
            await self.flush()
            await self.run(write, self.store, *row)
        except Exception:  # kept, written by `flush` when the store answers
            self.unwritten.append(row)
            return False
        return True

    async def check(self, token: str) -> Stored | None:
        """The session's newest row if it is live (its expiry moved on when due);
        None when it is unknown, ended or revoked. Raises when the store does not
        answer (the caller falls back on what it verified itself)."""
        await self.flush()
        h = digest(token)
        got: Stored | None = await self.run(read, self.store, h)
        now = now_ms()
        if got is None or not got.live(now):
            return None
        expires = now + self.idle_s * 1000
        if expires - got.expires_ms >= RENEW_S * 1000:
            with contextlib.suppress(Exception):  # else written at the next use
                await self.run(write, self.store, h, got.user, got.role, got.via,
                               expires, False, self._version(h, max(now, got.version + 1)))
        return got

    async def close(self, token: str, user: str, role: str, via: str) -> bool:
        """Revoke the session everywhere; False when the store did not answer (the
        revocation is kept and written when it does)."""
        now = now_ms()
        h = digest(token)
        return await self._write((h, user, role, via, now, True, self._version(h, now)))

    async def first_use(self, state: str) -> bool:
        """Whether an OpenID Connect sign-in's state is taken for the first time by any
        console process over the store (its SHA-256 recorded, under a label of its own,
        as a revoked row). True while the store does not answer: the taking process
        remembers it, and the issuer's code is good once."""
        h = digest("oidc-state\0" + state)
        try:
            if await self.run(read, self.store, h) is not None:
                return False
            now = now_ms()
            await self.run(write, self.store, h, "", "", "oidc-state", now, True,
                           self._version(h, now))
        except Exception:  # the store does not answer
            return True
        return True

    async def flush(self) -> None:
        """Write the logins and logouts the store missed (raises while it still does not
        answer)."""
        while self.unwritten:
            await self.run(write, self.store, *self.unwritten[0])
            self.unwritten.pop(0)


def now_ms() -> int:
    return time.time_ns() // 1_000_000
