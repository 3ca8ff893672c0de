"""`pitwatch serve`: the surveillance console in a browser."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pitwatch.connect import add_connection_flags
from pitwatch.store.base import Store
from pitwatch.topics import ALERTS_TOPIC, EVENTS_TOPIC

if TYPE_CHECKING:
    from .accounts import Accounts


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
proxy (--sso-proxy ADDR) sets to the authenticated user.

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
        p.add_argument("--secure-cookies", action="store_true",
                       help="session cookies only over HTTPS (behind a TLS proxy)")
        p.add_argument("--tz", default="UTC", metavar="ZONE",
                       help="the site's time zone, IANA (default %(default)s)")
        p.add_argument("--gaming-day-start", default="06:00", metavar="HH:MM",
                       help="local time a gaming day starts (default %(default)s)")
        p.add_argument("--shifts", default="06:00,14:00,22:00", metavar="HH:MM,...",
                       help="local times the shifts start, the first with the gaming "
                       "day (default %(default)s)")
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
        from .sitetime import SiteTime

        try:
            site = SiteTime.make(args.tz, args.gaming_day_start, args.shifts)
        except ValueError as e:
            print(f"pitwatch serve: {e}", file=sys.stderr)
            return 2
        users = args.users or (Path(args.data) / "console-users.json" if not args.clickhouse
                               else Path("pitwatch-users.json"))
        accounts = Accounts(users)
        try:
            if not accounts.all() and not args.sso_header:
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
                            public_url=args.public_url or f"http://{args.host}:{args.port}")
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


command = _Serve()
