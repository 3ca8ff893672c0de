"""The store's DDL on a ClickHouse cluster (pitwatch.store.cluster), the list of servers
a client tries (pitwatch.address.host_ports), and which refusals are outages."""

from __future__ import annotations

import re

import pytest

from pitwatch.address import host_ports
from pitwatch.connect import CLICKHOUSE_PORT, ClickHouseAuth, ConnectionConfigError
from pitwatch.store import cluster
from pitwatch.store.base import ddl_statements
from pitwatch.store.server import is_outage


def _tables() -> list[str]:
    return [m[1] for s in ddl_statements()
            if (m := re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", s))]


def test_each_table_is_replicated_per_shard_under_a_distributed_table() -> None:
    """'ReplicatedReplacingMergeTree on each shard, with Distributed tables over them.'"""
    stmts = cluster.cluster_statements("db", "c")
    for name in _tables():
        (local,) = [s for s in stmts if f" db.{name}_local ON CLUSTER c (" in s]
        assert re.search(r"ENGINE = Replicated\w*MergeTree\('/clickhouse/tables/\{shard\}/"
                         rf"db/{name}', '\{{replica\}}'", local)
        (dist,) = [s for s in stmts if f" db.{name} ON CLUSTER c AS db.{name}_local" in s]
        assert f"Distributed(c, db, {name}_local, cityHash64(" in dist
    assert all(" ON CLUSTER c" in s and "IF NOT EXISTS" in s for s in stmts)


def test_sharded_by_table_id_so_one_tables_final_stays_on_one_shard() -> None:
    """'Sharded by table_id, so that one table's replacing merges and FINAL stay on one
    shard' - and a table without one by its sort key's first column."""
    stmts = cluster.cluster_statements("db", "c")
    # a triage change and a pinned CRITICAL's rows on the violation's shard, where the
    # view that cancels the one by the other reads them (024_triage_table.sql)
    for name in ("events", "rounds", "violations", "audit_states", "triage", "pinned_open"):
        (dist,) = [s for s in stmts if f"db, {name}_local, cityHash64(" in s]
        assert dist.endswith("cityHash64(table_id))")
        assert cluster.distributed("db", "c")[name] == ("cityHash64(table_id)", dist)
    (keys,) = [s for s in stmts if "db, key_registry_local, cityHash64(" in s]
    assert keys.endswith("cityHash64(sha256))")


def test_an_engines_arguments_and_clauses_are_kept() -> None:
    stmts = cluster.cluster_statements("db", "c")
    (states,) = [s for s in stmts if " db.audit_states_local " in s]
    assert "'{replica}', closed)" in states and "ORDER BY (table_id, pos)" in states
    (events,) = [s for s in stmts if " db.events_local " in s]
    assert "PARTITION BY toYYYYMM(ts)" in events


def test_views_read_and_write_their_shards_local_tables() -> None:
    stmts = cluster.cluster_statements("db", "c")
    (view,) = [s for s in stmts if "db.event_positions_mv" in s]
    assert "TO db.event_positions_local" in view and "FROM db.events_local" in view


def test_a_statement_without_a_template_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "ddl_statements", lambda: ["CREATE VIEW v AS SELECT 1"])
    with pytest.raises(ValueError, match="no template"):
        cluster.cluster_statements("db", "c")


def test_clickhouse_addresses_in_order_and_refused_when_malformed() -> None:
    assert host_ports("a:1,b:2, c", CLICKHOUSE_PORT) == [("a", 1), ("b", 2), ("c", 9000)]
    assert host_ports("[::1]:9440", CLICKHOUSE_PORT) == [("::1", 9440)]
    for bad in ("a:x", "a:0", ",", "a:1,:2"):
        with pytest.raises(ConnectionConfigError, match="HOST:PORT"):
            host_ports(bad, CLICKHOUSE_PORT)


def test_cluster_name_from_the_environment_and_checked() -> None:
    env = {"PITWATCH_CLICKHOUSE_CLUSTER": "pitwatch"}
    assert ClickHouseAuth.from_env(env).cluster == "pitwatch"
    assert ClickHouseAuth.from_env({}).cluster == ""
    with pytest.raises(ConnectionConfigError, match="PITWATCH_CLICKHOUSE_CLUSTER"):
        ClickHouseAuth.from_env({"PITWATCH_CLICKHOUSE_CLUSTER": "x; DROP"})


def test_outages_are_the_stores_refusals_that_pass_not_the_rows() -> None:
    from clickhouse_driver.errors import NetworkError, ServerException, TypeMismatchError

    assert is_outage(NetworkError("connection refused"))
    assert is_outage(ConnectionRefusedError(111, "Connection refused"))
    assert is_outage(ServerException("Table is in readonly mode", code=242))
    assert not is_outage(ServerException("Cannot parse input", code=27))
    # the driver's own refusal of a value its column cannot hold (a seat of 300 in a
    # UInt8): the row is a dead letter, the store is not down
    assert not is_outage(TypeMismatchError(
        "Column seats: ubyte format requires 0 <= number <= 255"))
    assert not is_outage(OverflowError("int too big to convert"))


def test_the_servers_a_cluster_names_are_held_to_the_password_rule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35: "refuse to send a password in clear to a non-loopback host" - also to
    the replicas the server's own system.clusters names, which nobody typed."""
    from pitwatch.connect import Secret
    from pitwatch.store.server import ServerStore

    auth = ClickHouseAuth(password=Secret("s3cret"), cluster="c")
    store = ServerStore("127.0.0.1", 1, auth=auth)  # the driver connects lazily
    monkeypatch.setattr(store, "query", lambda sql, params=None: [
        {"shard_num": 1, "host_address": "127.0.0.1", "port": 1},
        {"shard_num": 1, "host_address": "10.0.0.5", "port": 9000}])
    with pytest.raises(ConnectionConfigError, match=r"in clear to 10\.0\.0\.5") as e:
        store._optimize_shards("events")
    assert "s3cret" not in str(e.value)
