"""Where the replay stages read from: the embedded store (`--data`, the default) or a
ClickHouse server (`--clickhouse HOST:PORT`). The same options on every command here."""

from __future__ import annotations

import argparse
from pathlib import Path

from pitwatch.connect import add_connection_flags
from pitwatch.store.base import Store
from pitwatch.store.lookup import ensure


def add_store_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("store")
    g.add_argument("--data", default="pitwatch-data", metavar="DIR",
                   help="embedded store (default ./%(default)s)")
    g.add_argument("--clickhouse", metavar="HOST:PORT[,HOST:PORT...]",
                   help="read from a ClickHouse server instead (e.g. 127.0.0.1:19000); "
                   "a list: the next when one does not answer")
    g.add_argument("--clickhouse-db", default="pitwatch", metavar="DB",
                   help="its database (default %(default)s)")
    add_connection_flags(p, kafka=False)


def open_store(args: argparse.Namespace) -> Store:
    if args.clickhouse:
        from pitwatch.store.server import ServerStore

        server = ServerStore.at(args.clickhouse, args.clickhouse_db)
        ensure(server)  # a store made before its index tables is migrated first
        return server
    from pitwatch.store.embedded import EmbeddedStore, holds_store

    if not holds_store(args.data):
        raise FileNotFoundError(f"no store at {args.data}: run `pitwatch audit` or "
                                "`pitwatch demo` first, or pass --data or --clickhouse")
    store = EmbeddedStore(args.data)
    ensure(store)
    return store


def store_identity(args: argparse.Namespace) -> str:
    """What a case file names as its source."""
    if args.clickhouse:
        return f"clickhouse://{args.clickhouse}/{args.clickhouse_db}"
    return f"chdb:{Path(args.data).resolve()}"
