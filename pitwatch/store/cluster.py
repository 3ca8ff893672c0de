"""The store's DDL on a ClickHouse cluster: the one-server DDL (schemas/clickhouse/*.sql)
rewritten by the templates of schemas/clickhouse/cluster/cluster.sql, so that the
columns, engines and sort keys stay written once.

Each table becomes `NAME_local`, a Replicated engine on every shard, and `NAME`, a
Distributed table over them sharded by `table_id`; each materialized view reads and
writes the local tables of its shard. Every statement runs ON CLUSTER, and is
idempotent (IF NOT EXISTS)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ..events.schema import schemas_dir
from .base import VIEW, ddl_statements

_TABLE = re.compile(
    r"CREATE TABLE IF NOT EXISTS (?P<name>\w+) \((?P<columns>.*?)\)\s*"
    r"ENGINE = (?P<engine>\w*MergeTree)\((?P<args>[^)]*)\)\s*(?P<clauses>.*)", re.S)
_FROM = re.compile(r"\bFROM\s+(\w+)\b")
_ORDER = re.compile(r"ORDER BY \(?\s*(\w+)")
_TEMPLATE = re.compile(r"-- (\w+): ")


@functools.cache
def templates() -> dict[str, str]:
    """The three statement templates of cluster.sql, each by the name its comment
    opens with (`-- local:`, `-- distributed:`, `-- view:`)."""
    text = Path(schemas_dir(), "clickhouse", "cluster", "cluster.sql").read_text()
    out: dict[str, str] = {}
    for part in re.split(r";\s*$", text, flags=re.M):
        lines = part.strip().splitlines()
        names = [m[1] for ln in lines if (m := _TEMPLATE.match(ln))]
        body = "\n".join(ln for ln in lines if not ln.startswith("--")).strip()
        if body and names:
            out[names[-1]] = body
    if set(out) != {"local", "distributed", "view"}:
        raise ValueError(f"cluster.sql: expected the templates local, distributed and view, "
                         f"found {sorted(out)}")
    return out


def shard_key(columns: str, clauses: str) -> str:
    """The column rows are sharded by: `table_id`, or the first of the sort key."""
    names = [line.strip().split()[0] for line in columns.splitlines() if line.strip()]
    if "table_id" in names:
        return "table_id"
    m = _ORDER.search(clauses)
    if m is None:
        raise ValueError(f"no table_id and no ORDER BY to shard by in: {clauses!r}")
    return m.group(1)


def _fields(database: str, cluster: str, m: re.Match[str]) -> dict[str, str]:
    args = m["args"].strip()
    return {"db": database, "cluster": cluster, "name": m["name"], "columns": m["columns"],
            "engine": m["engine"], "args": f", {args}" if args else "",
            "clauses": m["clauses"].strip(), "shard_key": shard_key(m["columns"], m["clauses"])}


def cluster_statements(database: str, cluster: str) -> list[str]:
    """The store's DDL for `database` on `cluster`, in the one-server DDL's order: each
    table's local and Distributed tables, each view on the shards."""
    t = templates()
    out: list[str] = []
    for stmt in ddl_statements():
        if m := _TABLE.fullmatch(stmt):
            fields = _fields(database, cluster, m)
            out.append(t["local"].format(**fields))
            out.append(t["distributed"].format(**fields))
        elif m := VIEW.fullmatch(stmt):
            select = _FROM.sub(lambda f: f"FROM {database}.{f.group(1)}_local", m["select"])
            out.append(t["view"].format(db=database, cluster=cluster, name=m["name"],
                                        target=m["target"], select=select))
        else:
            raise ValueError("a statement of schemas/clickhouse that cluster.sql has no "
                             f"template for: {stmt[:120]!r}")
    return out


def table_names() -> list[str]:
    """Every table and view the cluster DDL makes, local tables included."""
    names: list[str] = []
    for stmt in ddl_statements():
        if m := _TABLE.fullmatch(stmt):
            names += [m["name"], m["name"] + "_local"]
        elif m := VIEW.fullmatch(stmt):
            names.append(m["name"])
    return names


def distributed(database: str, cluster: str) -> dict[str, tuple[str, str]]:
    """Each table's Distributed table: its sharding expression (as `system.tables`
    shows it in `engine_full`) and the statement that makes it."""
    out: dict[str, tuple[str, str]] = {}
    for stmt in ddl_statements():
        if m := _TABLE.fullmatch(stmt):
            fields = _fields(database, cluster, m)
            out[m["name"]] = (f"cityHash64({fields['shard_key']})",
                              templates()["distributed"].format(**fields))
    return out
