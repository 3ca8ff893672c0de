"""How pitwatch's clients authenticate and encrypt: Kafka (SASL_SSL with SCRAM-SHA-512)
and ClickHouse (user, password, secure native port), configured from the environment.

Environment (a flag of the same name, where a command has one, wins: see
`add_connection_flags`):

    PITWATCH_KAFKA_SECURITY           PLAINTEXT (default), SSL or SASL_SSL
    PITWATCH_KAFKA_SASL_MECHANISM     SCRAM-SHA-512 (default) or SCRAM-SHA-256
    PITWATCH_KAFKA_USER               SASL user
    PITWATCH_KAFKA_PASSWORD           its password, or PITWATCH_KAFKA_PASSWORD_FILE
    PITWATCH_KAFKA_CA_FILE            PEM file of the CA that signed the broker's cert
    PITWATCH_CLICKHOUSE_USER          ClickHouse user (default `default`)
    PITWATCH_CLICKHOUSE_PASSWORD      its password, or PITWATCH_CLICKHOUSE_PASSWORD_FILE
    PITWATCH_CLICKHOUSE_SECURE        1: TLS to the secure native port (tcp_port_secure)
    PITWATCH_CLICKHOUSE_CA_FILE       PEM file of the CA that signed the server's cert
    PITWATCH_CLICKHOUSE_CLUSTER       the cluster (remote_servers) whose Distributed
                                      tables the store is: its DDL goes ON CLUSTER

A ClickHouse address is a list, `HOST:PORT[,HOST:PORT...]` (read by
`pitwatch.address.host_ports`): a client connects to the first that answers and, when
that one dies, to the next.

Passwords are never taken from a flag (a flag shows in the process list): only from
the environment or a file, and a file that its group or others may read is refused.
They are held in `Secret`, whose repr and str hide them. A password is never sent in
clear to another machine: ClickHouse's only over TLS unless the host is a loopback
address, Kafka's SASL only over SSL (SASL_PLAINTEXT is refused).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .secret_file import SecretFileError, read_secret

KAFKA_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
#: Kafka's transports that would send a SASL password without TLS: refused by name.
CLEAR_SASL = ("SASL_PLAINTEXT",)
SASL_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
#: ClickHouse's native port: the port of a ClickHouse address that names none
CLICKHOUSE_PORT = 9000


class ConnectionConfigError(ValueError):
    """A security setting that cannot be used; the message names the variable."""


class Secret:
    """A password: `reveal()` gives it to a client; repr, str and format hide it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)


def _password(env: Mapping[str, str], name: str) -> Secret | None:
    """PITWATCH_<NAME>_PASSWORD, or the first line of the file PITWATCH_<NAME>_PASSWORD_FILE
    names (not both)."""
    var = f"PITWATCH_{name}_PASSWORD"
    value, file = env.get(var), env.get(var + "_FILE")
    if value is not None and file:
        raise ConnectionConfigError(f"set {var} or {var}_FILE, not both")
    if file:
        try:
            text = read_secret(file).decode("utf-8")
        except (SecretFileError, UnicodeDecodeError) as e:
            raise ConnectionConfigError(f"{var}_FILE: {e}") from None
        lines = text.splitlines()
        return Secret(lines[0] if lines else "")
    return None if value is None else Secret(value)


def _ca_file(env: Mapping[str, str], var: str) -> str:
    ca = env.get(var, "")
    if ca and not Path(ca).is_file():
        raise ConnectionConfigError(f"{var}: no such file {ca}")
    return ca


@dataclass(frozen=True)
class KafkaAuth:
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "SCRAM-SHA-512"
    user: str = ""
    password: Secret | None = None
    ca_file: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> KafkaAuth:
        env = os.environ if env is None else env
        proto = env.get("PITWATCH_KAFKA_SECURITY", "PLAINTEXT").upper()
        if proto in CLEAR_SASL:
            raise ConnectionConfigError(
                f"PITWATCH_KAFKA_SECURITY={proto} refused: it sends the SASL password "
                "without TLS; use SASL_SSL")
        if proto not in KAFKA_PROTOCOLS:
            raise ConnectionConfigError(
                f"PITWATCH_KAFKA_SECURITY={proto}: use one of {', '.join(KAFKA_PROTOCOLS)}")
        mech = env.get("PITWATCH_KAFKA_SASL_MECHANISM", "SCRAM-SHA-512").upper()
        if mech not in SASL_MECHANISMS:
            raise ConnectionConfigError(
                f"PITWATCH_KAFKA_SASL_MECHANISM={mech}: use one of {', '.join(SASL_MECHANISMS)}")
        auth = cls(proto, mech, env.get("PITWATCH_KAFKA_USER", ""),
                   _password(env, "KAFKA"), _ca_file(env, "PITWATCH_KAFKA_CA_FILE"))
        if proto == "SASL_SSL" and not (auth.user and auth.password):
            raise ConnectionConfigError(
                "PITWATCH_KAFKA_SECURITY=SASL_SSL needs PITWATCH_KAFKA_USER and "
                "PITWATCH_KAFKA_PASSWORD (or PITWATCH_KAFKA_PASSWORD_FILE)")
        return auth

    @classmethod
    def sink_from_env(cls, env: Mapping[str, str] | None = None) -> KafkaAuth:
        """The worker's ClickHouse sink logs in as PITWATCH_SINK_KAFKA_USER, with
        PITWATCH_SINK_KAFKA_PASSWORD (or _FILE), when that is set (a principal of its
        own, with the sink's ACLs); otherwise as the worker does."""
        env = os.environ if env is None else env
        auth = cls.from_env(env)
        user = env.get("PITWATCH_SINK_KAFKA_USER", "")
        if not user:
            return auth
        password = _password(env, "SINK_KAFKA")
        if not password:
            raise ConnectionConfigError("PITWATCH_SINK_KAFKA_USER needs PITWATCH_SINK_KAFKA_"
                                        "PASSWORD (or PITWATCH_SINK_KAFKA_PASSWORD_FILE)")
        return replace(auth, user=user, password=password)

    @property
    def sasl(self) -> bool:
        return self.security_protocol == "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self.security_protocol != "PLAINTEXT"

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context (server cert checked against the CA file, or the system's
        CAs), None in plaintext."""
        if not self.tls:
            return None
        return ssl.create_default_context(cafile=self.ca_file or None)

    def kafka_python(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python's clients."""
        if not self.tls:
            return {}
        out: dict[str, Any] = {"security_protocol": self.security_protocol,
                               "ssl_context": self.ssl_context()}
        if self.sasl:
            out |= self._sasl()
        return out

    def aiokafka(self) -> dict[str, Any]:
        """Keyword arguments for aiokafka's clients (the sink, the console feed)."""
        return self.kafka_python()  # the same names in both libraries

    def faust(self) -> dict[str, Any]:
        """Keyword arguments for faust.App: broker_credentials."""
        if not self.tls:
            return {}
        import faust

        ctx = self.ssl_context()
        if self.sasl:
            assert self.password is not None
            return {"broker_credentials": faust.SASLCredentials(
                username=self.user, password=self.password.reveal(), ssl_context=ctx,
                mechanism=self.sasl_mechanism)}
        return {"broker_credentials": faust.SSLCredentials(ctx)}

    def _sasl(self) -> dict[str, Any]:
        assert self.password is not None
        return {"sasl_mechanism": self.sasl_mechanism, "sasl_plain_username": self.user,
                "sasl_plain_password": self.password.reveal()}


@dataclass(frozen=True)
class ClickHouseAuth:
    user: str = "default"
    password: Secret | None = None
    secure: bool = False
    ca_file: str = ""
    #: the cluster whose Distributed tables the store is ('' for one server)
    cluster: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClickHouseAuth:
        env = os.environ if env is None else env
        secure = env.get("PITWATCH_CLICKHOUSE_SECURE", "0").lower()
        if secure not in ("0", "1", "true", "false", ""):
            raise ConnectionConfigError(f"PITWATCH_CLICKHOUSE_SECURE={secure}: use 1 or 0")
        cluster = env.get("PITWATCH_CLICKHOUSE_CLUSTER", "")
        if cluster and not _NAME.fullmatch(cluster):
            raise ConnectionConfigError(f"PITWATCH_CLICKHOUSE_CLUSTER={cluster!r}: a cluster "
                                        "name is letters, digits and _")
        return cls(env.get("PITWATCH_CLICKHOUSE_USER") or "default",
                   _password(env, "CLICKHOUSE"), secure in ("1", "true"),
                   _ca_file(env, "PITWATCH_CLICKHOUSE_CA_FILE"), cluster)

    def driver(self, host: str) -> dict[str, Any]:
        """Keyword arguments for clickhouse-driver's Client to `host`. A password goes
        in clear only to this machine: to any other host without TLS it is refused."""
        if self.password and not self.secure and not is_loopback(host):
            raise ConnectionConfigError(
                f"refused to send ClickHouse's password in clear to {host}: set "
                "PITWATCH_CLICKHOUSE_SECURE=1 (TLS to the secure native port), or reach "
                "it on this machine (127.0.0.1, ::1, localhost)")
        out: dict[str, Any] = {"user": self.user,
                               "password": self.password.reveal() if self.password else ""}
        if self.secure:
            out |= {"secure": True, "verify": True}
            if self.ca_file:
                out["ca_certs"] = self.ca_file
        return out


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine by its name alone: a loopback address, or
    `localhost` (no other name is looked up: what it resolves to may change)."""
    name = host.strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


#: flag -> the variable it sets (passwords only through a file)
_FLAGS = {
    "kafka_security": "PITWATCH_KAFKA_SECURITY",
    "kafka_user": "PITWATCH_KAFKA_USER",
    "kafka_password_file": "PITWATCH_KAFKA_PASSWORD_FILE",
    "kafka_ca_file": "PITWATCH_KAFKA_CA_FILE",
    "clickhouse_user": "PITWATCH_CLICKHOUSE_USER",
    "clickhouse_password_file": "PITWATCH_CLICKHOUSE_PASSWORD_FILE",
    "clickhouse_ca_file": "PITWATCH_CLICKHOUSE_CA_FILE",
}


class _NoPasswordFlag(argparse.Action):
    """`--kafka-password X` refused with where a password goes (and not taken, by
    argparse's prefix matching, as --kafka-password-file)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        var = "PITWATCH_" + (option_string or "").lstrip("-").upper().replace("-", "_")
        parser.error(f"{option_string} is not taken (a flag shows in the process list): "
                     f"set {var} or pass {option_string}-file FILE")


def add_connection_flags(p: argparse.ArgumentParser, kafka: bool = True,
                         clickhouse: bool = True) -> None:
    """The security flags; each overrides its PITWATCH_* variable (never a password:
    that comes from the environment or a file)."""
    g = p.add_argument_group(
        "connection security",
        "defaults from the environment (PITWATCH_KAFKA_*, PITWATCH_CLICKHOUSE_*: see the "
        "README's Security section); passwords only from PITWATCH_KAFKA_PASSWORD / "
        "PITWATCH_CLICKHOUSE_PASSWORD or the files below")
    if kafka:
        g.add_argument("--kafka-security", choices=KAFKA_PROTOCOLS, type=str.upper,
                       help="Kafka transport (PITWATCH_KAFKA_SECURITY, default PLAINTEXT)")
        g.add_argument("--kafka-user", metavar="USER", help="SASL SCRAM user")
        g.add_argument("--kafka-password", action=_NoPasswordFlag, help=argparse.SUPPRESS)
        g.add_argument("--kafka-password-file", metavar="FILE",
                       help="file whose first line is the SASL password")
        g.add_argument("--kafka-ca-file", metavar="PEM", help="CA of the broker's certificate")
    if clickhouse:
        g.add_argument("--clickhouse-user", metavar="USER", help="ClickHouse user")
        g.add_argument("--clickhouse-password", action=_NoPasswordFlag, help=argparse.SUPPRESS)
        g.add_argument("--clickhouse-password-file", metavar="FILE",
                       help="file whose first line is the ClickHouse password")
        g.add_argument("--clickhouse-secure", action="store_true", default=None,
                       help="TLS to ClickHouse's secure native port")
        g.add_argument("--clickhouse-ca-file", metavar="PEM",
                       help="CA of ClickHouse's certificate")


def apply_connection_flags(args: argparse.Namespace) -> None:
    """Put the flags given into the environment, where every client (and the worker's
    sink process) reads them; then check the whole configuration once."""
    for attr, var in _FLAGS.items():
        value = getattr(args, attr, None)
        if value is not None:
            os.environ[var] = value
            if var.endswith("_PASSWORD_FILE"):
                os.environ.pop(var[: -len("_FILE")], None)  # the file wins over the variable
    if getattr(args, "clickhouse_secure", None):
        os.environ["PITWATCH_CLICKHOUSE_SECURE"] = "1"
    KafkaAuth.from_env()
    ClickHouseAuth.from_env()
