"""The store's interface and what both back ends share: the DDL and the row shapes."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..events.model import Event
from ..events.schema import schemas_dir
from .native import RowWriter

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


#: The parameter values that are sequences of values (a string is one value).
_SEQUENCES = (list, tuple, set, frozenset)


def check_params(sql: str, params: Params | None) -> None:
    """Refuse a statement with a parameter that is an empty sequence, on every store:
    ClickHouse 18.16 has no typed parameters (the driver writes the value as a literal)
    and refuses an empty one where it is used, `x IN ()` as a syntax error (so any empty
    tuple), `x IN []` and `has([], x)` as type errors, while chDB answers them all, so a
    caller that asks about no values would be right on chDB, where the unit tests run,
    and fail on the server. The caller asks nothing instead: the answer about no values
    is known. A loop over the values, and nothing else unless one is empty."""
    if not params:
        return
    for name, value in params.items():
        if not value and isinstance(value, _SEQUENCES):
            raise StoreError(
                f"the query's parameter {name!r} is an empty sequence, which the ClickHouse "
                "server refuses (`x IN ()`, `has([], x)`): the caller must ask nothing when "
                f"there are no values and take the empty answer; the query: "
                f"{' '.join(sql.split())[:160]}")


class EventsInsert(Protocol):
    """How a store takes rows of the `events` table written in C, rather than as
    columns: `BatchWriter` adds each event to the `row_writer()`'s rows as it comes
    (while the event is in the cache), and hands over what that writer `take()`s with
    `insert_event_rows`; an event the writer does not write, and every event where it
    is None (no extension built), goes to `insert_events` as itself, whose rows are
    written in C for the batch or else in Python, which names a value its column
    refuses."""

    def row_writer(self) -> RowWriter | None: ...

    def insert_event_rows(self, taken: Any, rows: int) -> None:
        """`rows` rows as the `row_writer()`'s `take()` gave them."""

    def insert_events(self, events: list[Event], positions: list[int]) -> None:
        """A batch of events, each at its position in the order of record."""


class Store(Protocol):
    #: Rows a batch the store takes best: the size of `BatchWriter`'s batches into it.
    batch_rows: int

    def setup(self) -> None:
        """Create the tables (idempotent)."""

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows as data (never as SQL text)."""

    def insert_columns(self, table: str, cols: Sequence[Sequence[Any]]) -> None:
        """Insert a batch given as one sequence per column, in DDL order: how
        `store.batch.BatchWriter` hands over its batches."""

    def events_insert(self) -> EventsInsert | None:
        """How the store takes the `events` table's rows: None, as columns like any
        table's (`insert_columns`, the values written in Python: `columns.event_values`);
        else as written in C (`EventsInsert`)."""

    def sync(self) -> None:
        """Wait until every row inserted is stored, and raise what failed (a store whose
        inserts return before the rows are stored); `BatchWriter.flush` calls it."""

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


#: A column added to a table of an earlier file (`ALTER TABLE t ADD COLUMN c type ...`).
ADD_COLUMN = re.compile(r"ALTER TABLE (?P<table>\w+) ADD COLUMN (?P<column>\w+) (?P<decl>.+)",
                        re.S)


def _statements() -> list[str]:
    files = sorted(Path(schemas_dir(), "clickhouse").glob("*.sql"))
    out: list[str] = []
    for f in files:
        lines = [ln for ln in f.read_text().splitlines() if not ln.lstrip().startswith("--")]
        out.extend(s.strip() for s in "\n".join(lines).split(";") if s.strip())
    return out


def added_columns() -> list[tuple[str, str, str]]:
    """(table, column, type and default) of each column a later file adds to a table."""
    return [(m["table"], m["column"], " ".join(m["decl"].split()))
            for s in _statements() if (m := ADD_COLUMN.fullmatch(s))]


def ddl_statements() -> list[str]:
    """The CREATE TABLE statements of schemas/clickhouse, in file order, each with the
    columns later files add to its table (`added_columns`) at its end."""
    adds = added_columns()
    out: list[str] = []
    for stmt in _statements():
        if ADD_COLUMN.fullmatch(stmt):
            continue
        head, _, rest = stmt.partition("(")
        more = [f"{c} {d}" for t, c, d in adds if head.split()[-1:] == [t]]
        if more and stmt.startswith("CREATE TABLE") and ") ENGINE" in rest:
            body, _, tail = rest.partition(") ENGINE")
            stmt = (f"{head}({body.rstrip()},\n    " + ",\n    ".join(more)
                    + f"\n) ENGINE{tail}")
        out.append(stmt)
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
