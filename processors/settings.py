"""Worker settings: where Kafka and ClickHouse are, topic names, batching, time-outs.

`Settings` is the one table of the worker's settings: a field with a `Flag` in its
metadata is a setting of `pitwatch worker`, and from it come the flag (`add_flags`), its
default from the environment as PITWATCH_<FLAG> (PITWATCH_KAFKA for --kafka,
PITWATCH_ROUND_TIMEOUT for --round-timeout), typed, a bad value refused naming the
variable (`settings_from_args`), and the reference in docs/settings.md
(scripts/settings_reference.py). A flag wins over the environment, the environment
over the defaults here."""

from __future__ import annotations

import argparse
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from pitwatch.address import AddressError, host_ports
from pitwatch.connect import CLICKHOUSE_PORT
from pitwatch.topics import (
    ALERTS_TOPIC,
    DEAD_LETTER_TOPIC,
    EVENTS_TOPIC,
    OBSERVATIONS_TOPIC,
    PARTITIONS,
    REFUSED_TOPIC,
    ROUNDS_TOPIC,
    replication,
)


@dataclass(frozen=True)
class Flag:
    """How `pitwatch worker` sets a field: its flag, what it does, and whether
    PITWATCH_<FLAG> sets it too (a switch is the command line's alone)."""

    flag: str
    help: str
    env: bool = True
    metavar: str | None = None
    #: a value as written (an argument, a variable) to the field's type; ValueError
    #: saying what is wrong (by default the field's type: int, float or str)
    parse: Callable[[str], Any] | None = None


def _flag(default: Any, flag: str, help: str, *, env: bool = True,
          metavar: str | None = None, parse: Callable[[str], Any] | None = None) -> Any:
    return field(default=default, metadata={"flag": Flag(flag, help, env, metavar, parse)})


def _clickhouse_servers(spec: str) -> list[tuple[str, int]]:
    return host_ports(spec, CLICKHOUSE_PORT)


def _servers(raw: str) -> str:
    """A list of ClickHouse servers, checked and kept as written."""
    try:
        _clickhouse_servers(raw)
    except AddressError as e:
        raise ValueError(str(e)) from None
    return raw


def _number(kind: type, what: str) -> Callable[[str], Any]:
    def convert(raw: str) -> Any:
        try:
            return kind(raw)
        except ValueError:
            raise ValueError(f"not {what}") from None
    return convert


#: how a value of each type is read
PARSE: Mapping[type, Callable[[str], Any]] = {
    int: _number(int, "a whole number"), float: _number(float, "a number"), str: str}


@dataclass(frozen=True)
class Settings:
    kafka: str = _flag("127.0.0.1:19092", "--kafka",
                       "Kafka bootstrap servers", metavar="HOST:PORT[,HOST:PORT...]")
    clickhouse: str = _flag(
        "127.0.0.1:19000", "--clickhouse",
        "ClickHouse native HOST:PORT, or a list HOST:PORT,HOST:PORT tried in order when "
        "one dies, an IPv6 address in brackets", parse=_servers,
        metavar="HOST:PORT[,HOST:PORT...]")
    clickhouse_db: str = _flag("pitwatch", "--clickhouse-db",
                               "ClickHouse database (created if missing)", metavar="NAME")
    app_id: str = _flag("pitwatch", "--app-id",
                        "consumer group and Faust app id: workers with the same one split "
                        "the partitions", metavar="ID")
    topic_prefix: str = _flag("", "--topic-prefix",
                              "prefix of every topic name, the changelog's too (isolated runs)",
                              metavar="PREFIX")
    partitions: int = _flag(PARTITIONS, "--partitions",
                            "partitions of table-events when this worker creates it; an "
                            "existing topic's count comes from Kafka")
    #: Faust table store for the open rounds: memory:// (tests) or rocksdb:// (production)
    store: str = _flag("memory://", "--store",
                       "Faust table store of the open rounds: memory:// or rocksdb://",
                       metavar="URL")
    data_dir: str = _flag(".run/worker", "--data-dir", "worker state directory",
                          metavar="DIR")
    web_port: int = _flag(6066, "--web-port", "health and metrics port, 0 for none",
                         metavar="PORT")
    web_bind: str = _flag("127.0.0.1", "--web-bind",
                          "address of the health and metrics server",
                          metavar="ADDRESS")
    sink: bool = _flag(True, "--no-sink", "audit and alert only: no ClickHouse sink",
                       env=False)
    round_timeout_s: float = _flag(900.0, "--round-timeout",
                                   "seconds before an open round is incomplete")
    #: how often the processing-time rule is checked
    idle_check_s: float = _flag(5.0, "--idle-check",
                                "seconds between checks of the processing-time rule")
    #: a crashed worker's partitions move to the others after this
    session_timeout_s: float = _flag(10.0, "--session-timeout",
                                     "seconds before a silent worker's partitions move")
    #: a partition with messages waiting whose read position stands still this long
    #: restarts the worker (a consumer that does not recover)
    stall_timeout_s: float = _flag(120.0, "--stall-timeout",
                                   "seconds a partition with messages waiting may go unread "
                                   "before the worker restarts itself")
    #: the sink's consumer: longer than this between polls and it would be evicted, so
    #: it pauses its partitions and keeps polling while ClickHouse is down
    sink_max_poll_interval_s: float = _flag(300.0, "--sink-max-poll-interval",
                                            "the sink consumer's max.poll.interval in seconds")
    keys: str = _flag(
        "", "--keys",
        "device key registry (JSON): a device in it must sign its chain, or "
        "SIGNATURE_INVALID (HIGH). Without one, the one pinned in the ClickHouse store; "
        "without either, the worker says at its start that signatures are NOT CHECKED. "
        "One named is pinned in the store", metavar="FILE")
    require_signatures: bool = _flag(False, "--require-signatures",
                                     "refuse to start without a key registry (exit 2)",
                                     env=False)
    loglevel: str = _flag("warning", "--loglevel",
                          "log level: debug, info, warning, error",
                          metavar="LEVEL")
    #: the rest follow from the flags or are fixed
    events_topic: str = EVENTS_TOPIC
    alerts_topic: str = ALERTS_TOPIC
    rounds_topic: str = ROUNDS_TOPIC
    refused_topic: str = REFUSED_TOPIC
    observations_topic: str = OBSERVATIONS_TOPIC
    dead_letter_topic: str = DEAD_LETTER_TOPIC
    replication_factor: int = 1
    sink_batch_rows: int = 5000
    sink_batch_seconds: float = 1.0
    heartbeat_s: float = 2.0

    @property
    def clickhouse_host(self) -> str:
        return _clickhouse_servers(self.clickhouse)[0][0]

    @property
    def clickhouse_port(self) -> int:
        return _clickhouse_servers(self.clickhouse)[0][1]

    @property
    def clickhouse_alt_hosts(self) -> tuple[tuple[str, int], ...]:
        """The servers tried after the first, in order, when it dies."""
        return tuple(_clickhouse_servers(self.clickhouse)[1:])

    def with_prefix(self, prefix: str) -> Settings:
        """The same settings with every topic name prefixed (isolated runs, tests)."""
        return replace(self, topic_prefix=prefix, events_topic=prefix + self.events_topic,
                       alerts_topic=prefix + self.alerts_topic,
                       rounds_topic=prefix + self.rounds_topic,
                       refused_topic=prefix + self.refused_topic,
                       observations_topic=prefix + self.observations_topic,
                       dead_letter_topic=prefix + self.dead_letter_topic)


@dataclass(frozen=True)
class Setting:
    """One row of the worker's settings table."""

    name: str  # the field of Settings
    flag: str
    env: str | None  # the variable that sets it, None for a switch
    type: type
    default: Any
    help: str
    metavar: str | None  # what its argument is called (None for a switch)
    parse: Callable[[str], Any]


#: what a flag's argument is called in --help, by the setting's type
METAVARS: Mapping[type, str] = {int: "N", float: "SECONDS", str: "TEXT"}


def _env_name(flag: str) -> str:
    return "PITWATCH_" + flag.lstrip("-").upper().replace("-", "_")


def _table() -> tuple[Setting, ...]:
    hints = typing.get_type_hints(Settings)
    return tuple(Setting(f.name, m.flag, _env_name(m.flag) if m.env else None, hints[f.name],
                         f.default, m.help, m.metavar or METAVARS.get(hints[f.name]),
                         m.parse or PARSE.get(hints[f.name], str))
                 for f in fields(Settings) if isinstance(m := f.metadata.get("flag"), Flag))


#: the worker's settings, in the order of its --help
SETTINGS: tuple[Setting, ...] = _table()


class SettingError(ValueError):
    """A value of a setting that cannot be used; the message names where it came from."""


@dataclass(frozen=True)
class _BadEnv:
    """A default the environment gave that cannot be used: refused once it is used
    (a flag given instead wins)."""

    message: str

    def __str__(self) -> str:
        return f"refused: {self.message}"


def env_value(s: Setting, environ: Mapping[str, str]) -> Any:
    """The value of `s`'s variable in `environ` as its type, else its default;
    SettingError naming the variable when it cannot be read."""
    raw = None if s.env is None else environ.get(s.env)
    if raw is None:
        return s.default
    try:
        return s.parse(raw)
    except ValueError as e:
        raise SettingError(f"{s.env}={raw!r}: {e} ({s.help})") from None


def add_flags(p: argparse.ArgumentParser, environ: Mapping[str, str] | None = None) -> None:
    """The worker's flags, each defaulting to its variable in `environ` (os.environ)."""
    environ = os.environ if environ is None else environ
    for s in SETTINGS:
        if s.type is bool:  # a switch: the flag turns the default over
            p.add_argument(s.flag, dest=s.name, default=s.default,
                           action="store_false" if s.default else "store_true", help=s.help)
            continue
        try:
            default = env_value(s, environ)
        except SettingError as e:
            default = _BadEnv(str(e))
        shown = "" if s.default == "" else "; default %(default)s"
        p.add_argument(s.flag, dest=s.name, type=_checked(s), default=default,
                       metavar=s.metavar,
                       help=f"{s.help} (env {s.env}{shown})")


def _checked(s: Setting) -> Callable[[str], Any]:
    """`s`'s parser as argparse's type: a bad argument is a usage error saying why."""
    def flag_value(raw: str) -> Any:
        try:
            return s.parse(raw)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{raw!r}: {e}") from None
    return flag_value


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The worker's Settings from its parsed flags (`add_flags`); SettingError naming
    the variable when a default came from a bad one. The topics carry --topic-prefix,
    the heartbeat a third of the session time-out at most, the replication factor
    PITWATCH_REPLICATION."""
    values = {s.name: getattr(args, s.name) for s in SETTINGS}
    bad = [str(v.message) for v in values.values() if isinstance(v, _BadEnv)]
    if bad:
        raise SettingError("; ".join(bad))
    try:
        replicas = replication()
    except ValueError as e:
        raise SettingError(str(e)) from None
    return Settings(**values, heartbeat_s=min(Settings.heartbeat_s,
                                              values["session_timeout_s"] / 3),
                    replication_factor=replicas).with_prefix(values["topic_prefix"])
