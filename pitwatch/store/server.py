"""The ClickHouse server store, through clickhouse-driver's native protocol. Rows are
sent as data with `INSERT INTO t (cols) VALUES`, a batch as one list per column
(the driver's `columnar=True`: native blocks without a tuple per row)."""

from __future__ import annotations

import re
import struct
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from ..address import host_ports, join_host_port
from ..connect import CLICKHOUSE_PORT, ClickHouseAuth
from .base import TABLES, Params, StoreError, check_params, columns, ddl_statements

_TIME_COLUMNS = frozenset({"ts", "started", "ended", "detected_at"})
_PLACEHOLDER = re.compile(r"\{(\w+):[^{}]+\}")


def driver_placeholders(sql: str) -> str:
    """`{name:Type}` (chDB's and newer servers' parameters) as clickhouse-driver's
    `%(name)s`, which the driver fills in as escaped literals: ClickHouse 18.16 has no
    server-side parameters. A literal `%` is doubled for the driver's formatting."""
    return _PLACEHOLDER.sub(r"%(\1)s", sql.replace("%", "%%"))


def reason(e: BaseException) -> str:
    """A driver or server error in one line that says why: ClickHouse's own message
    (`Wrong password for user x`) with its code, not its stack trace."""
    text = str(getattr(e, "message", "") or e)
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not re.fullmatch(r"Code: \d+\.?", ln.strip())]
    first = (lines[0] if lines else text).removeprefix("DB::Exception: ")
    first = first.split(". Stack trace:")[0].removesuffix(" Stack trace:")
    code = getattr(e, "code", None)
    return f"{first} (code {code})" if isinstance(code, int) else first


#: ClickHouse's codes for a refusal that passes: the table read-only without ZooKeeper
#: (242), ZooKeeper itself (225, 999), every replica of a shard out of reach (279), the
#: network (209, 210), an insert whose fate is not known (319)
OUTAGE_CODES = frozenset({209, 210, 225, 242, 279, 319, 999})


def is_outage(e: BaseException) -> bool:
    """Whether a driver error says the server cannot take rows now, rather than that
    these rows cannot be taken: the server's answer with one of OUTAGE_CODES, or any
    error but an answer and but the driver's own refusal of a value it cannot write in
    its column's type (a seat of 300 in a UInt8: a dead letter, not an outage)."""
    from clickhouse_driver.errors import (
        CannotParseDomainError,
        CannotParseUuidError,
        ServerException,
        TooLargeStringSize,
        TypeMismatchError,
    )

    if isinstance(e, ServerException):
        return getattr(e, "code", None) in OUTAGE_CODES
    return not isinstance(e, TypeMismatchError | CannotParseUuidError | CannotParseDomainError
                          | TooLargeStringSize | ValueError | TypeError | OverflowError
                          | struct.error)


def _utc(seconds: int) -> datetime:
    """A DateTime column's value: naive UTC (the driver sends naive times as they are)."""
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


class ServerStore:
    #: Rows a batch (`BatchWriter`): an insert costs the server about the same whatever
    #: its size.
    batch_rows = 20_000

    def __init__(self, host: str = "127.0.0.1", port: int = 19000,
                 database: str = "pitwatch", connect_timeout: float = 5.0,
                 auth: ClickHouseAuth | None = None,
                 alt_hosts: Sequence[tuple[str, int]] = ()) -> None:
        """`auth`: user, password, TLS and cluster; by default from the environment
        (PITWATCH_CLICKHOUSE_*, see pitwatch.connect). `alt_hosts`: the servers tried
        after `host`, in order, when it does not answer (a replica that died)."""
        from clickhouse_driver import Client

        self.database = database
        auth = self._auth = auth or ClickHouseAuth.from_env()
        self.cluster = auth.cluster
        login = auth.driver(host)
        for other, _ in alt_hosts:
            auth.driver(other)  # a password goes in clear to none of them either
        alt = ",".join(join_host_port(h, p) for h, p in alt_hosts) or None
        # on a cluster, an insert returns once every shard holds its rows, and a
        # subquery over a Distributed table inside a query of one (an index's pairs,
        # the triage of what a page shows) is read once and sent to every shard as
        # GLOBAL IN: ClickHouse refuses it otherwise, and a shard's own rows alone
        # ('local') would miss those of a table sharded by another key
        settings = {"insert_distributed_sync": 1, "distributed_product_mode": "global"} \
            if self.cluster else {}
        self.client = Client(host=host, port=port, database=database, alt_hosts=alt,
                             connect_timeout=connect_timeout, send_receive_timeout=30,
                             settings=settings, **login)
        self._admin = Client(host=host, port=port, database="default", alt_hosts=alt,
                             connect_timeout=connect_timeout, send_receive_timeout=30, **login)
        # a cluster's insert in one thread: a shard that takes a Distributed insert runs
        # its materialized views there, and 18.16 fails a view's subquery read in more
        # than one thread in that context ("Attempt to attach to nullptr thread group",
        # code 49: pinned_handled_mv's, when its table has parts to read in parallel),
        # refusing the insert
        self._insert_settings = {"max_threads": 1} if self.cluster else None
        self._cols = {t: columns(t) for t in TABLES}

    @classmethod
    def at(cls, hosts: str, database: str = "pitwatch") -> ServerStore:
        """The store on the servers `HOST:PORT[,HOST:PORT...]` (the first that answers;
        the next when it dies)."""
        (host, port), *alt = host_ports(hosts, CLICKHOUSE_PORT)
        return cls(host, port, database, alt_hosts=alt)

    def _execute(self, sql: str, params: Any = None) -> Any:
        try:
            return self.client.execute(sql, params) if params is not None \
                else self.client.execute(sql)
        except Exception as e:  # network errors and server exceptions alike
            self.client.disconnect()
            raise StoreError(f"ClickHouse: {reason(e)}") from e

    def setup(self) -> None:
        from .lookup import add_columns, migrate

        if self.cluster:
            self._setup_cluster()
        else:
            self._admin_execute(f"CREATE DATABASE IF NOT EXISTS {self.database}")
            add_columns(self)  # a later version's columns, before a view reads them
            for stmt in ddl_statements():
                self._execute(stmt)
        migrate(self)  # the index tables of a store made before them

    def _admin_execute(self, sql: str) -> Any:
        try:
            return self._admin.execute(sql)
        except Exception as e:
            raise StoreError(f"ClickHouse: {reason(e)}") from e
        finally:
            self._admin.disconnect()

    def _setup_cluster(self) -> None:
        """The cluster's tables, made ON CLUSTER once: a store whose every table the
        server it reached already has is left as it is, but for a later version's
        columns and sharding, each changed once (a DDL ON CLUSTER waits for every
        server, and a sink starting again while one is down must not)."""
        from .cluster import cluster_statements, table_names
        from .lookup import add_columns

        have = {r[0] for r in self._admin_execute(
            f"SELECT name FROM system.tables WHERE database = '{self.database}'")}
        if have:  # a store made before: a later version's columns and sharding first
            add_columns(self)
            self._remake_distributed()
        if set(table_names()) <= have:
            return
        self._admin_execute(f"CREATE DATABASE IF NOT EXISTS {self.database} "
                            f"ON CLUSTER {self.cluster}")
        for stmt in cluster_statements(self.database, self.cluster):
            self._execute(stmt)

    def _remake_distributed(self) -> None:
        """Each Distributed table that is not as this version makes it (a column its
        local tables gained, or a sharding key a later version changed: `triage` and
        `pinned_open` by violation, then by casino table, 024_triage_table.sql) dropped
        and made again ON CLUSTER. A Distributed table holds no rows (inserts are
        synchronous), so only the routing of later inserts changes; each row already
        stored stays on its shard."""
        from .cluster import distributed

        made = dict(self._admin_execute(
            "SELECT name, engine_full FROM system.tables WHERE database = "
            f"'{self.database}' AND engine = 'Distributed'"))
        cols: dict[str, set[str]] = {}
        for table, name in self._admin_execute(
                f"SELECT table, name FROM system.columns WHERE database = '{self.database}'"):
            cols.setdefault(table, set()).add(name)
        on = f"ON CLUSTER {self.cluster}"
        for name, (key, create) in distributed(self.database, self.cluster).items():
            if name in made and (not made[name].endswith(f", {key})")
                                 or cols.get(name) != cols.get(f"{name}_local")):
                self._admin_execute(f"DROP TABLE IF EXISTS {self.database}.{name} {on}")
                self._execute(create)

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            cols = self._cols.get(table) or columns(table)  # the three, or e.g. triage
            self._insert(table, cols, [[r[c] for r in rows] for c in cols])

    def insert_columns(self, table: str, data: Sequence[Sequence[Any]]) -> None:
        """A batch as one sequence per column, in DDL order."""
        if data and len(data[0]):
            self._insert(table, self._cols.get(table) or columns(table), data)

    def events_insert(self) -> None:
        """The `events` rows go as columns, as every table's."""

    def sync(self) -> None:
        """Nothing to wait for: an insert returns once the server has its rows."""

    def _insert(self, table: str, cols: Sequence[str], data: Sequence[Sequence[Any]]) -> None:
        data = [[_utc(x) for x in col] if c in _TIME_COLUMNS else col
                for c, col in zip(cols, data, strict=True)]
        try:
            self.client.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES", data,
                                columnar=True, settings=self._insert_settings)
        except Exception as e:  # network errors and server exceptions alike
            self.client.disconnect()
            raise StoreError(f"ClickHouse: {reason(e)}", is_outage(e)) from e

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        check_params(sql, params)
        try:
            if params:
                rows, meta = self.client.execute(driver_placeholders(sql), dict(params),
                                                 with_column_types=True)
            else:
                rows, meta = self.client.execute(sql, with_column_types=True)
        except Exception as e:
            self.client.disconnect()
            raise StoreError(f"ClickHouse: {reason(e)}") from e
        names = [m[0] for m in meta]
        return [dict(zip(names, r, strict=True)) for r in rows]

    def read_only(self) -> None:
        """From now on this session's queries run with readonly=1 (a user whose profile
        is read-only already is left as it is: it may not change settings)."""
        level = self.query("SELECT value FROM system.settings WHERE name = 'readonly'")
        if level and level[0]["value"] == "0":
            self.client.settings["readonly"] = 1

    def dedupe(self, events_of: Collection[str] | None = None) -> None:
        for t in TABLES:
            if t == "events" and events_of is not None and not events_of:
                continue
            if self.cluster:
                self._optimize_shards(t)
            else:
                self._execute(f"OPTIMIZE TABLE {t} FINAL")

    def _optimize_shards(self, table: str) -> None:
        """OPTIMIZE FINAL on one live replica of each shard (which puts the merge in the
        replication log for the others): ClickHouse 18.16 fails it ON CLUSTER."""
        from clickhouse_driver import Client

        rows = self.query("SELECT shard_num, host_address, port FROM system.clusters "
                          "WHERE cluster = {c:String} ORDER BY shard_num, replica_num",
                          {"c": self.cluster})
        shards: dict[int, list[str]] = {}
        for r in rows:
            shards.setdefault(int(r["shard_num"]), []).append(
                join_host_port(str(r["host_address"]), int(r["port"])))
        for hosts in shards.values():
            (host, port), *alt = host_ports(",".join(hosts), CLICKHOUSE_PORT)
            # the hosts come from the server's answer: each is held to the same rule as
            # those named by the user (no password in clear to another host)
            login = self._auth.driver(host)
            for other, _ in alt:
                self._auth.driver(other)
            c = Client(host=host, port=port, database=self.database, connect_timeout=5,
                       alt_hosts=",".join(join_host_port(h, p) for h, p in alt) or None, **login)
            try:  # 18.16 fails OPTIMIZE of a replicated table that has no part yet
                if c.execute("SELECT count() FROM system.parts WHERE active AND database = "
                             "%(d)s AND table = %(t)s", {"d": self.database,
                                                         "t": f"{table}_local"})[0][0]:
                    c.execute(f"OPTIMIZE TABLE {table}_local FINAL")
            except Exception as e:
                raise StoreError(f"ClickHouse: {reason(e)}") from e
            finally:
                c.disconnect()

    def close(self) -> None:
        self.client.disconnect()
