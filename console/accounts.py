"""The console's local accounts: a JSON file of user names, roles and argon2id password
hashes (argon2-cffi), readable by its owner only. `pitwatch users` edits it; every
console process that names the same file sees the change (it re-reads the file when
it changes). A site with single sign-on may leave it empty (serve --sso-header)."""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

import orjson
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from pitwatch.secret_file import SecretFileError, read_secret

from .triage import ROLES

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_HASHER = PasswordHasher()  # argon2id, the library's current recommended parameters
#: verified against when the name is unknown, so an unknown name costs the same time
_DUMMY = _HASHER.hash(secrets.token_urlsafe(16))
MIN_PASSWORD = 12


def checked_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError("a user name: 1 to 64 of letters, digits and . _ @ -, "
                         "starting with a letter or digit")
    return name


def checked_role(role: str) -> str:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    return role


@dataclass(frozen=True, slots=True)
class Account:
    name: str
    role: str
    hash: str


class Accounts:
    """The accounts file. Reads are cached by the file's mtime and size."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int] | None = None
        self._accounts: dict[str, Account] = {}

    def all(self) -> dict[str, Account]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._seen, self._accounts = None, {}
            return {}
        key = (st.st_mtime_ns, st.st_size)
        if key != self._seen:
            try:
                raw = orjson.loads(read_secret(self.path))
            except SecretFileError as e:
                raise PermissionError(str(e)) from None
            self._accounts = {n: Account(n, checked_role(u["role"]), u["hash"])
                              for n, u in raw.get("users", {}).items()}
            self._seen = key
        return dict(self._accounts)

    def get(self, name: str) -> Account | None:
        return self.all().get(name)

    def verify(self, name: str, password: str) -> Account | None:
        """The account when the password is right; None otherwise (the same work
        either way)."""
        acct = self.get(name)
        try:
            _HASHER.verify(acct.hash if acct else _DUMMY, password)
        except (VerificationError, InvalidHashError):
            return None
        return acct

    def _write(self, accounts: dict[str, Account]) -> None:
        data = {"users": {a.name: {"role": a.role, "hash": a.hash}
                          for a in sorted(accounts.values(), key=lambda a: a.name)}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(data, option=orjson.OPT_INDENT_2))
        os.replace(tmp, self.path)

    def add(self, name: str, role: str, password: str) -> Account:
        """Add an account or replace its role and password."""
        if len(password) < MIN_PASSWORD:
            raise ValueError(f"a password of at least {MIN_PASSWORD} characters")
        acct = Account(checked_name(name), checked_role(role), _HASHER.hash(password))
        accounts = self.all()
        accounts[name] = acct
        self._write(accounts)
        return acct

    def remove(self, name: str) -> bool:
        accounts = self.all()
        if accounts.pop(name, None) is None:
            return False
        self._write(accounts)
        return True


def new_password() -> str:
    return secrets.token_urlsafe(15)  # 20 characters, 120 bits
