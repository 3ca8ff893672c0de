"""The store's interface and what both back ends share: the DDL and the row shapes."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..events.schema import schemas_dir

TABLES = ("events", "rounds", "violations")

#: Query parameters: values for the `{name:Type}` placeholders of a statement.
Params = Mapping[str, Any]


class StoreError(RuntimeError):
    """The store could not be reached or refused a statement. `outage`: it refused for
    a reason of its own that passes (a replica cut off from its coordination service,
    a shard out of reach), not for the rows: a writer retries them, never dead-letters."""

    def __init__(self, message: str, outage: bool = False) -> None:
        super().__init__(message)
        self.outage = outage


class Store(Protocol):
    def setup(self) -> None:
        """Create the tables (idempotent)."""

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows as data (never as SQL text). (A store may also offer
        `insert_columns(table, cols)`, the batch as one sequence per column in DDL
        order, and `insert_events(events, positions)`, a batch of the `events` table
        as the events themselves, or `insert_event_rows(raw, rows)`, rows C wrote an
        event at a time (`store.arrow.event_rows`): `store.batch.BatchWriter` hands its
        batches so when it does. A store whose inserts return before the rows are stored also offers
        `sync()`, which waits for them and raises what failed: `BatchWriter.flush`
        calls it. A store may name the rows a batch it takes best, `batch_rows`: the
        audit's writer uses that size when it is there. A store that takes its events in a
        form of its own offers `event_rows()`, the writer `insert_event_rows` takes from.)"""

    def query(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        """Run a query; rows as dicts. Values go in as `params` for `{name:Type}`
        placeholders, never spliced into the text."""

    def dedupe(self, events_of: Collection[str] | None = None) -> None:
        """Merge replaced rows now (OPTIMIZE ... FINAL), so plain reads see no duplicate:
        of every table, or, given `events_of`, of `rounds` and `violations` and of
        `events` only if the events of those table ids hold any (none: `events` is left
        as it is)."""

    def close(self) -> None: ...


#: A materialized view of schemas/clickhouse (`CREATE MATERIALIZED VIEW IF NOT EXISTS
#: name TO target AS SELECT ...`): its name, target and select.
VIEW = re.compile(r"CREATE MATERIALIZED VIEW IF NOT EXISTS (?P<name>\w+) TO (?P<target>\w+) "
                  r"AS\s+(?P<select>SELECT.*)", re.S)


def ddl_statements() -> list[str]:
    """The CREATE TABLE statements of schemas/clickhouse, in file order."""
    files = sorted(Path(schemas_dir(), "clickhouse").glob("*.sql"))
    out: list[str] = []
    for f in files:
        lines = [ln for ln in f.read_text().splitlines() if not ln.lstrip().startswith("--")]
        out.extend(s.strip() for s in "\n".join(lines).split(";") if s.strip())
    return out


def columns(table: str) -> list[str]:
    """Column names of a table, in DDL order."""
    return list(column_names(table))


@functools.cache
def column_names(table: str) -> tuple[str, ...]:
    """Column names of a table, in DDL order (the same tuple every call)."""
    return tuple(name for name, _ in column_types(table))


@functools.cache
def column_types(table: str) -> tuple[tuple[str, str], ...]:
    """(name, ClickHouse type) of a table's columns, in DDL order."""
    for stmt in ddl_statements():
        head, _, rest = stmt.partition("(")
        if head.split()[-1] == table:
            body = rest.split(") ENGINE", 1)[0]
            cols = []
            for line in body.splitlines():
                parts = line.strip().rstrip(",").split(None, 1)
                if parts:
                    cols.append((parts[0], parts[1].split()[0] if len(parts) > 1 else ""))
            return tuple(cols)
    raise KeyError(table)


def to_columns(table: str, rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Rows (dicts) as one list per column, in DDL order: the form both back ends insert."""
    return [[r[c] for r in rows] for c in column_names(table)]
