"""Writes docs/settings.md, the reference of every PITWATCH_* variable the code reads:
the worker's settings from their table (`pitwatch.processors.settings.SETTINGS`), the others
from `OTHERS` below, each name once.

    .venv/bin/python scripts/settings_reference.py          # print it
    .venv/bin/python scripts/settings_reference.py --write  # write docs/settings.md

tests/unit/test_settings_reference.py fails when docs/settings.md differs from what this
writes, and when `OTHERS` and the names the code reads differ."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pitwatch.processors.settings import SETTINGS, Setting  # noqa: E402

OUT = ROOT / "docs" / "settings.md"
WORKER = "`pitwatch worker`"
KAFKA = "every Kafka client (`pitwatch/connect.py`)"
CLICKHOUSE = "every ClickHouse client (`pitwatch/connect.py`)"
KEY_USERS = "`audit`, `replay`, `investigate`, `reaudit`"


@dataclass(frozen=True)
class Variable:
    """A PITWATCH_* variable read outside the worker's table: who reads it, what it does."""

    name: str
    read_by: str
    help: str


#: the variables the code reads besides the worker's settings (or read by other
#: commands too: then the worker's row says so)
OTHERS: tuple[Variable, ...] = (
    Variable("PITWATCH_KAFKA", "`pitwatch produce`, `python -m pitwatch.processors.alerts_tail`",
             "Kafka bootstrap servers (flag `--kafka`)"),
    Variable("PITWATCH_TOPIC_PREFIX", "`pitwatch produce`",
             "prefix of every topic name (flag `--topic-prefix`)"),
    Variable("PITWATCH_KEYS", KEY_USERS, "the device key registry (flag `--keys`)"),
    Variable("PITWATCH_SITE_PUBLIC_KEY", f"{KEY_USERS}, {WORKER}",
             "the site's Ed25519 public key (PEM): a key registry without its signature "
             "(`keys.json.sig`) is refused (flag `--site-public-key`)"),
    Variable("PITWATCH_SITE_KEY", "`investigate`",
             "the site's Ed25519 private key (PEM, mode 600) that signs case manifests "
             "(flag `--site-key`)"),
    Variable("PITWATCH_KAFKA_SECURITY", KAFKA,
             "Kafka transport: `PLAINTEXT` (default), `SSL` or `SASL_SSL` (flag "
             "`--kafka-security`)"),
    Variable("PITWATCH_KAFKA_SASL_MECHANISM", KAFKA,
             "`SCRAM-SHA-512` (default) or `SCRAM-SHA-256`"),
    Variable("PITWATCH_KAFKA_USER", KAFKA, "the SASL user (flag `--kafka-user`)"),
    Variable("PITWATCH_KAFKA_PASSWORD", KAFKA,
             "its password (never a flag: a command line is every local user's to read)"),
    Variable("PITWATCH_KAFKA_PASSWORD_FILE", KAFKA,
             "a file whose first line is the password, instead of the variable (flag "
             "`--kafka-password-file`)"),
    Variable("PITWATCH_KAFKA_CA_FILE", KAFKA,
             "PEM file of the CA that signed the broker's certificate (flag "
             "`--kafka-ca-file`)"),
    Variable("PITWATCH_SINK_KAFKA_USER", "the worker's sink",
             "the sink's own Kafka user (with the sink's ACLs); unset, it logs in as the "
             "worker"),
    Variable("PITWATCH_SINK_KAFKA_PASSWORD", "the worker's sink", "its password"),
    Variable("PITWATCH_SINK_KAFKA_PASSWORD_FILE", "the worker's sink",
             "a file whose first line is the password, instead of the variable"),
    Variable("PITWATCH_CLICKHOUSE_USER", CLICKHOUSE,
             "ClickHouse user (default `default`; flag `--clickhouse-user`)"),
    Variable("PITWATCH_CLICKHOUSE_PASSWORD", CLICKHOUSE, "its password (never a flag)"),
    Variable("PITWATCH_CLICKHOUSE_PASSWORD_FILE", CLICKHOUSE,
             "a file whose first line is the password, instead of the variable (flag "
             "`--clickhouse-password-file`)"),
    Variable("PITWATCH_CLICKHOUSE_SECURE", CLICKHOUSE,
             "`1`: TLS to the secure native port (flag `--clickhouse-secure`); a "
             "password goes in clear only to a loopback address"),
    Variable("PITWATCH_CLICKHOUSE_CA_FILE", CLICKHOUSE,
             "PEM file of the CA that signed the server's certificate (flag "
             "`--clickhouse-ca-file`)"),
    Variable("PITWATCH_CLICKHOUSE_CLUSTER", CLICKHOUSE,
             "the `remote_servers` cluster whose Distributed tables the store is (its DDL "
             "runs ON CLUSTER); unset: one server"),
    Variable("PITWATCH_REPLICATION", "whoever creates the topics (`pitwatch/topics.py`)",
             "the topics' replication factor (default 1; 3 on a real cluster, with "
             "`min.insync.replicas=2`)"),
    Variable("PITWATCH_RELEASED_SCHEMAS", "every reader of event files and messages",
             "more directories of released Avro schemas, separated by the path separator "
             "(`:`), besides `schemas/avro/released/` (docs/events.md)"),
    Variable("PITWATCH_OUTAGE_TIMEOUT", "`pitwatch produce`",
             "seconds it retries through a broker outage (flag `--outage-timeout`)"),
    Variable("PITWATCH_WEBHOOK", "`pitwatch serve`",
             "the URL each CRITICAL is POSTed to as JSON (a secret; or "
             "`--webhook-file FILE`)"),
    Variable("PITWATCH_OIDC_ISSUER", "`pitwatch serve`",
             "OpenID Connect issuer, https (flag `--oidc-issuer`); unset: no OIDC log-in"),
    Variable("PITWATCH_OIDC_CLIENT_ID", "`pitwatch serve`",
             "the console's client id at the issuer (flag `--oidc-client-id`)"),
    Variable("PITWATCH_OIDC_CLIENT_SECRET", "`pitwatch serve`",
             "the client secret (or `--oidc-client-secret-file FILE`; none: a public "
             "client, PKCE alone)"),
    Variable("PITWATCH_OIDC_USER_CLAIM", "`pitwatch serve`",
             "the id_token's claim naming the user (default `preferred_username`; flag "
             "`--oidc-user-claim`)"),
    Variable("PITWATCH_OIDC_ROLE_CLAIM", "`pitwatch serve`",
             "the id_token's claim whose values map to roles (default `groups`; flag "
             "`--oidc-role-claim`)"),
    Variable("PITWATCH_OIDC_ROLES", "`pitwatch serve`",
             "`VALUE=ROLE[,VALUE=ROLE...]`: a role-claim value and the role it gives "
             "(flag `--oidc-role`, repeated)"),
    Variable("PITWATCH_OIDC_DEFAULT_ROLE", "`pitwatch serve`",
             "the role of a user no mapping gives one (default `viewer`; flag "
             "`--oidc-default-role`)"),
    Variable("PITWATCH_WEB_FD", WORKER,
             "set by the worker itself: the listening socket a restarted worker takes "
             "over; leave it unset"),
    Variable("PITWATCH_RESTARTS_IN_A_ROW", WORKER,
             "set by the worker itself: its restarts in a row, for the back-off; leave "
             "it unset"),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


#: how the reference names a setting's type
TYPE_NAMES = {str: "text", int: "whole number", float: "number", bool: "switch"}


def _default(s: Setting) -> str:
    if s.type is bool:
        return "off"
    return f"`{s.default}`" if s.default != "" else "(none)"


def markdown() -> str:
    also = {v.name: v for v in OTHERS}
    lines = [
        "# Settings",
        "",
        "<!-- Generated by scripts/settings_reference.py from processors/settings.py and "
        "the script's table of the other variables; edit those, then run it with --write. "
        "tests/unit/test_settings_reference.py fails when this file differs. -->",
        "",
        "Every `PITWATCH_*` variable pitwatch reads, once each. The deploy and CI "
        "scripts' own variables are in [deploy/README.md](../deploy/README.md).",
        "",
        "## `pitwatch worker`",
        "",
        "Each setting is a flag; all but the switches can also be set in the environment "
        "as `PITWATCH_<FLAG>`. A flag wins over the environment, the environment over the "
        "default. A value that cannot be read (a port that is not a number) is refused at "
        "the start, naming the variable (exit 2).",
        "",
        "| flag | variable | type | default | what | also read by |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in SETTINGS:
        other = also.get(s.env or "")
        flag = f"{s.flag} {s.metavar}" if s.metavar else s.flag
        lines.append(f"| `{_cell(flag)}` | {f'`{s.env}`' if s.env else '(a switch)'} | "
                     f"{TYPE_NAMES[s.type]} | {_default(s)} | "
                     f"{_cell(s.help)} | {other.read_by if other else ''} |")
    worker = {s.env for s in SETTINGS}
    lines += [
        "",
        "## Every other variable",
        "",
        "| variable | read by | what |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{v.name}` | {v.read_by} | {_cell(v.help)} |"
              for v in OTHERS if v.name not in worker]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = markdown()
    if argv == ["--write"]:
        OUT.write_text(text, encoding="utf-8")
    elif argv:
        print("usage: scripts/settings_reference.py [--write]", file=sys.stderr)
        return 2
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
