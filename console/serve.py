"""`pitwatch serve`: the surveillance console in a browser."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pitwatch.connect import add_connection_flags
from pitwatch.sitetime import add_site_flags, site_from_flags
from pitwatch.store.base import Store
from pitwatch.topics import ALERTS_TOPIC, EVENTS_TOPIC

if TYPE_CHECKING:
    from .accounts import Accounts
    from .oidc import OidcConfig


class _Serve:
    name = "serve"
    help = "the surveillance console: live alerts, triage, floor board, round views"
    description = """\
A web console for surveillance, over the embedded store (--data, the default) or a
ClickHouse server (--clickhouse), plus the alerts topic when streaming (--kafka):

  /            live alert feed: violations pushed the moment they reach the alerts topic
               (server-sent events), repeats grouped, unhandled CRITICALs pinned, filters;
               triage one finding or a selection
  /floor       every table: game, jurisdiction, open round, how long since its last event
               ARRIVED (a silent table is flagged), violations this gaming day
  /search      findings by round, table, dealer, seat, code, severity, time; counts, pages
  /shift       a shift by table and dealer, as CSV and PDF (--tz, --gaming-day-start,
               --shifts)
  /tables/T    a table's rounds and dealers
  /rounds/R    a round as it happened: cards, wagers, decisions, money, each finding at
               its event with the cited texts quoted from docs/regulations/
  /triage      the triage record: every change, who, when, the state it replaced
  /api/health  the store, Kafka and the worker group's lag (503 when one is down)

examples:
  pitwatch demo --serve                  a shift with faults, then the console on it
  pitwatch serve --clock store           the console on ./pitwatch-data (a recorded shift)
  pitwatch serve --clickhouse 127.0.0.1:19000 --kafka 127.0.0.1:19092 --cases cases/

Users log in (accounts: `pitwatch users add NAME --role ROLE`, argon2id hashes in
--users FILE); roles are viewer (reads), operator (acknowledges, escalates, notes),
investigator (also investigates, assigns, closes) and supervisor (everything, reopens).
When the accounts file holds no account, serve creates `demo` (a supervisor) and writes
its password to a file beside the accounts file (FILE's name .demo-password, mode 600),
whose path it prints. With single sign-on, --sso-header names the header the site's reverse
proxy (--sso-proxy ADDR) sets to the authenticated user. With OpenID Connect
(--oidc-issuer, --oidc-client-id), the login page offers the issuer's sign-in (the
authorization-code flow with PKCE; the issuer registers --public-url's
/login/oidc/callback as the redirect URI), and --oidc-role-claim's values map to roles
(--oidc-role VALUE=ROLE). Each --oidc-* flag can also be set in the environment:
PITWATCH_OIDC_ISSUER, PITWATCH_OIDC_CLIENT_ID, PITWATCH_OIDC_USER_CLAIM,
PITWATCH_OIDC_ROLE_CLAIM, PITWATCH_OIDC_ROLES (VALUE=ROLE,...),
PITWATCH_OIDC_DEFAULT_ROLE; the client secret only in a file (--oidc-client-secret-file)
or PITWATCH_OIDC_CLIENT_SECRET.

Sessions are kept in the store (the token's SHA-256 only): every console process over
the same store honours a login made at any of them, and a logout ends it at all.

It listens on 127.0.0.1 unless told otherwise (--host), and answers only requests whose
Host is one it is served as (--allow-host)."""

    def configure(self, p: argparse.ArgumentParser) -> None:
        src = p.add_mutually_exclusive_group()
        src.add_argument("--data", metavar="DIR", default="pitwatch-data",
                         help="embedded store directory (default ./%(default)s)")
        src.add_argument("--clickhouse", metavar="HOST:PORT[,HOST:PORT...]",
                         help="a ClickHouse server (native port) instead of the embedded "
                         "store; a list: the next when one does not answer")
        p.add_argument("--clickhouse-db", default="pitwatch", metavar="DB",
                       help="its database (default %(default)s)")
        p.add_argument("--kafka", metavar="HOST:PORT",
                       help="read the alerts topic here for the live feed")
        p.add_argument("--alerts-topic", default=ALERTS_TOPIC, metavar="TOPIC",
                       help="(default %(default)s)")
        p.add_argument("--host", default="127.0.0.1", help="listen address (default %(default)s)")
        p.add_argument("--port", type=int, default=8080, help="(default %(default)s)")
        add_connection_flags(p)
        p.add_argument("--clock", choices=("wall", "store"), default="wall",
                       help="the floor board's now: this machine's clock (wall, live floors) "
                       "or the newest event in the store (store, a recorded shift such as "
                       "the demo's); default %(default)s")
        p.add_argument("--silent-after", type=int, default=300, metavar="SECONDS",
                       help="a table with no event for this long is silent (default "
                       "%(default)s)")
        p.add_argument("--cases", metavar="DIR", type=Path,
                       help="where `pitwatch investigate --out` writes case folders "
                       "(DIR/NAME/): the round view links every one whose manifest lists "
                       "the round")
        p.add_argument("--users", type=Path, metavar="FILE",
                       help="the accounts file (default DIR/console-users.json with --data, "
                       "./pitwatch-users.json with --clickhouse)")
        p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="a host name the console is served as (repeat; 127.0.0.1, "
                       "localhost and --host always are)")
        p.add_argument("--sso-header", default="", metavar="HEADER",
                       help="single sign-on: the header the reverse proxy sets to the "
                       "user's name (e.g. X-Remote-User), trusted from --sso-proxy only")
        p.add_argument("--sso-proxy", action="append", default=[], metavar="ADDR",
                       help="the address the reverse proxy connects from (repeat)")
        p.add_argument("--sso-role-header", default="", metavar="HEADER",
                       help="the header with the user's role, for a user with no account "
                       "(else viewer)")
        env = os.environ.get
        p.add_argument("--oidc-issuer", default=env("PITWATCH_OIDC_ISSUER", ""), metavar="URL",
                       help="OpenID Connect: the issuer (https; its "
                       "/.well-known/openid-configuration is read)")
        p.add_argument("--oidc-client-id", default=env("PITWATCH_OIDC_CLIENT_ID", ""),
                       metavar="ID", help="the console's client id at the issuer")
        p.add_argument("--oidc-client-secret-file", type=Path, metavar="FILE",
                       help="a file (mode 600) holding the client secret (else "
                       "PITWATCH_OIDC_CLIENT_SECRET; none: a public client, PKCE alone)")
        p.add_argument("--oidc-user-claim",
                       default=env("PITWATCH_OIDC_USER_CLAIM", "preferred_username"),
                       metavar="CLAIM", help="the id_token's claim naming the user (else "
                       "sub; default %(default)s)")
        p.add_argument("--oidc-role-claim", default=env("PITWATCH_OIDC_ROLE_CLAIM", "groups"),
                       metavar="CLAIM", help="the id_token's claim whose values map to "
                       "roles (default %(default)s)")
        p.add_argument("--oidc-role", action="append",
                       default=[r for r in [env("PITWATCH_OIDC_ROLES", "")] if r],
                       metavar="VALUE=ROLE", help="a role-claim value and the role it "
                       "gives (repeat; the highest role given holds)")
        p.add_argument("--oidc-default-role",
                       default=env("PITWATCH_OIDC_DEFAULT_ROLE", "viewer"), metavar="ROLE",
                       help="the role of a user no --oidc-role value maps (default "
                       "%(default)s)")
        p.add_argument("--secure-cookies", action="store_true",
                       help="session cookies only over HTTPS (behind a TLS proxy)")
        add_site_flags(p, "the pages' times and the shift summaries")
        p.add_argument("--webhook-file", type=Path, metavar="FILE",
                       help="a file (mode 600) holding the URL each CRITICAL is POSTed to "
                       "as JSON (a paging system; its token makes it a secret, so never on "
                       "the command line); else the environment's PITWATCH_WEBHOOK. Set it "
                       "on one console of a site")
        p.add_argument("--webhook", default=None, help=argparse.SUPPRESS)
        p.add_argument("--public-url", default="", metavar="URL",
                       help="how the webhook's links name this console (default "
                       "http://HOST:PORT)")
        p.add_argument("--worker-group", default="pitwatch", metavar="GROUP",
                       help="the worker's consumer group, whose lag the status shows "
                       "(default %(default)s)")
        p.add_argument("--events-topic", default=EVENTS_TOPIC, metavar="TOPIC",
                       help="(default %(default)s)")
        p.add_argument("--poll", type=float, default=2.0, metavar="SECONDS",
                       help="how often to read a ClickHouse server's newest violations into "
                       "the feed (default %(default)s; the embedded store is read once)")

    def run(self, args: argparse.Namespace) -> int:
        try:
            webhook = webhook_url(args)
            oidc = oidc_config(args)
            site = site_from_flags(args)
        except ValueError as e:
            print(f"pitwatch serve: {e}", file=sys.stderr)
            return 2
        try:
            from aiohttp import web

            from .app import Settings, make_app
        except ImportError as e:
            print(f"pitwatch serve: {e}; install the console extra: "
                  "pip install 'pitwatch[console]'", file=sys.stderr)
            return 2
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
        store: Store
        if args.clickhouse:
            from pitwatch.store.server import ServerStore

            store = ServerStore.at(args.clickhouse, args.clickhouse_db)
            where = f"ClickHouse {args.clickhouse}/{args.clickhouse_db}"
            poll: float | None = args.poll
        else:
            from pitwatch.store.embedded import EmbeddedStore, holds_store

            if not holds_store(args.data):
                print(f"pitwatch serve: no embedded store in {args.data}/ (run `pitwatch "
                      "demo` or `pitwatch audit FILES --data DIR` first)", file=sys.stderr)
                return 2
            try:
                store = EmbeddedStore(args.data)
            except RuntimeError as e:  # chDB: the directory is another process's
                print(f"pitwatch serve: cannot open the embedded store in {args.data}/ "
                      f"(is another pitwatch process using it?): {str(e)[:200]}",
                      file=sys.stderr)
                return 2
            where = f"embedded store {args.data}/"
            poll = None
        from .data import refresh_aggregates

        # the triage log and the dashboard aggregates, made if missing
        for line in refresh_aggregates(store):
            print(f"pitwatch serve: {line}", file=sys.stderr)
        from .accounts import Accounts

        users = args.users or (Path(args.data) / "console-users.json" if not args.clickhouse
                               else Path("pitwatch-users.json"))
        accounts = Accounts(users)
        try:
            if not accounts.all() and not args.sso_header and oidc is None:
                kept = first_account(accounts)
                print(f"pitwatch serve: no account in {users}: made user 'demo' "
                      f"(supervisor), its password in {kept} (readable by you alone; add "
                      f"your own with `pitwatch users add NAME --role ROLE --users "
                      f"{users}`)", flush=True)
        except (OSError, PermissionError, ValueError) as e:
            print(f"pitwatch serve: accounts file {users}: {e}", file=sys.stderr)
            return 2
        hosts = ("127.0.0.1", "localhost", "::1", args.host.lower(),
                 *(h.lower() for h in args.allow_host))
        settings = Settings(kafka=args.kafka, alerts_topic=args.alerts_topic,
                            worker_group=args.worker_group, events_topic=args.events_topic,
                            clock=args.clock, silent_after_s=args.silent_after,
                            cases=args.cases, poll_every=poll, site=site, users=users,
                            allowed_hosts=hosts, sso_header=args.sso_header,
                            sso_proxies=tuple(args.sso_proxy),
                            sso_role_header=args.sso_role_header,
                            secure_cookies=args.secure_cookies, webhook=webhook,
                            public_url=args.public_url or f"http://{args.host}:{args.port}",
                            oidc=oidc)
        app = make_app(store, settings)
        feed = f", alerts from {args.kafka} topic {args.alerts_topic}" if args.kafka else ""
        print(f"pitwatch console on http://{args.host}:{args.port}/ over {where}{feed} "
              "(Ctrl-C stops)", flush=True)
        web.run_app(app, host=args.host, port=args.port, print=None,
                    handle_signals=True, shutdown_timeout=2)
        return 0


def first_account(accounts: Accounts) -> Path:
    """The `demo` supervisor for an accounts file with none, its new password written to
    a file beside it that only its owner may read (never printed: a terminal's
    scroll-back, a CI log or `docker logs` keeps what is printed); that file's path."""
    from .accounts import new_password

    password = new_password()
    kept = accounts.path.with_name(accounts.path.stem + ".demo-password")
    kept.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an older file of looser mode is made the owner's alone
        os.write(fd, (password + "\n").encode())
    finally:
        os.close(fd)
    accounts.add("demo", "supervisor", password)
    return kept


def webhook_url(args: argparse.Namespace) -> str:
    """The webhook's URL, from --webhook-file (read as a secret) or PITWATCH_WEBHOOK;
    never from the command line, where every user of the machine reads it."""
    from pitwatch.secret_file import SecretFileError, read_secret

    if getattr(args, "webhook", None):
        raise ValueError("--webhook URL is no more: the URL is a secret (its token pages "
                         "the site), and a command line is every local user's to read; put "
                         "it in a file (chmod 600) named by --webhook-file, or in the "
                         "environment's PITWATCH_WEBHOOK")
    if args.webhook_file is not None:
        try:
            url = read_secret(args.webhook_file).decode("utf-8", "replace").strip()
        except SecretFileError as e:
            raise ValueError(f"--webhook-file: {e}") from None
        if not url:
            raise ValueError(f"--webhook-file: {args.webhook_file} is empty")
    else:
        url = os.environ.get("PITWATCH_WEBHOOK", "").strip()
    if url and not url.startswith(("http://", "https://")):
        raise ValueError("the webhook's URL must start with http:// or https://")
    return url


def oidc_config(args: argparse.Namespace) -> OidcConfig | None:
    """The OpenID Connect settings, None when no issuer is set; ValueError naming what
    is wrong. The client secret from --oidc-client-secret-file or the environment's
    PITWATCH_OIDC_CLIENT_SECRET, never the command line."""
    from pitwatch.secret_file import SecretFileError, read_secret

    from .oidc import OidcConfig, parse_roles

    if not args.oidc_issuer:
        return None
    if args.oidc_client_secret_file is not None:
        try:
            secret = read_secret(args.oidc_client_secret_file).decode().strip()
        except (SecretFileError, UnicodeDecodeError) as e:
            raise ValueError(f"--oidc-client-secret-file: {e}") from None
    else:
        secret = os.environ.get("PITWATCH_OIDC_CLIENT_SECRET", "").strip()
    public = args.public_url or f"http://{args.host}:{args.port}"
    return OidcConfig(issuer=args.oidc_issuer, client_id=args.oidc_client_id,
                      redirect_uri=public.rstrip("/") + "/login/oidc/callback",
                      client_secret=secret, user_claim=args.oidc_user_claim,
                      role_claim=args.oidc_role_claim, roles=parse_roles(args.oidc_role),
                      default_role=args.oidc_default_role)


command = _Serve()
