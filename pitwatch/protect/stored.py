"""Observations into the store's `observations` table (schemas/clickhouse/
015_observations.sql), through the store's one writer path (`Store.insert`): a row per
observation id, which a ReplacingMergeTree keeps once (the last written), so storing the
observations of the same record again changes nothing and a newer value replaces the
older. The worker publishes the same row on the observations topic
(`observation_message`), and the sink reads it back (`message_row`).

`judge_stored` judges a store's history (what `pitwatch protect` with no PATH does, for
the scopes that need every table: a dealer's error rate and hold): table by table in its
order of record, each table's events read in windows of positions through the sort key
(with the events it quarantined fed back at their place) through the audit's fold and
its watcher, as `read_floor` reads files; a table's rounds are judged and let go before
the next is read, and the floor-wide scopes keep running tallies alone (`FloorJudge`),
so what it holds does not grow with the number of tables. `read_stored` reads the same
history into one `ReadFloor`, every table's rounds held (for tests and small stores)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..engine.auditor import TableAuditor
from ..engine.state import Round
from ..engine.violation import Violation
from ..events.model import Event
from ..events.schema import released_writers
from ..packs.registry import select
from ..sitetime import SiteTime
from ..store.base import Store
from ..store.history import Quarantine, stream
from .observation import Observation
from .rounds import FloorReader, ReadFloor, RoundView, TableReader
from .run import Findings, FloorJudge, slim

TABLE = "observations"


@dataclass(frozen=True, slots=True)
class Withdrawn(Observation):
    """An observation published earlier that a later publication of its subject no
    longer gives: stored under the same id with `withdrawn` 1, so it replaces the row;
    every reader of stored observations leaves it out."""


def withdrawal(table_id: str, scope: str, subject: str, code: str,
               seat: int | None) -> Withdrawn:
    """The withdrawal of the observation (table, subject, code) names: its id and sort
    key, and no figures."""
    return Withdrawn(code, scope, table_id, subject, seat, None, "", math.nan, None, None,
                     0.0, 0, (), False, "withdrawn: no longer given on the record since")


def observation_row(o: Observation) -> dict[str, Any]:
    """The row of an observation: absent figures as the table says (nan, 0, ''); a
    `Withdrawn` one with `withdrawn` 1."""
    return {
        "observation_id": o.observation_id, "code": o.code, "scope": o.scope,
        "table_id": o.table_id, "subject": o.subject, "seat": o.seat or 0,
        "dealer_id": o.dealer_id or "", "statistic": o.statistic, "value": o.value,
        "p_value": math.nan if o.p_value is None else o.p_value,
        "likelihood_ratio": math.nan if o.likelihood_ratio is None else o.likelihood_ratio,
        "strength": o.strength, "rounds": o.rounds, "weight_rounds": list(o.weight_rounds),
        "inferred": int(o.inferred), "player_id": o.player_id or "",
        "player_kind": o.player_kind or "", "message": o.message,
        "details": orjson.dumps(dict(o.details)).decode(),
        "withdrawn": int(isinstance(o, Withdrawn)),
    }


#: a row's columns, and the ones that are floats (nan travels as JSON null)
ROW_KEYS = frozenset({
    "observation_id", "code", "scope", "table_id", "subject", "seat", "dealer_id",
    "statistic", "value", "p_value", "likelihood_ratio", "strength", "rounds",
    "weight_rounds", "inferred", "player_id", "player_kind", "message", "details",
    "withdrawn"})
_FLOATS = frozenset({"value", "p_value", "likelihood_ratio", "strength"})
_INTS = frozenset({"seat", "rounds", "inferred", "withdrawn"})
#: what a reader of stored observations adds to its WHERE: withdrawn rows left out
LIVE = "withdrawn = 0"


def observation_message(o: Observation) -> bytes:
    """The observation's row as a message of the observations topic (JSON; nan as
    null, floats exact)."""
    return orjson.dumps(observation_row(o))


def message_row(value: bytes) -> dict[str, Any]:
    """The row a message of the observations topic carries (one without `withdrawn`,
    written before withdrawals existed, as not withdrawn); ValueError naming what is
    wrong when it is not one (the fields, their types)."""
    try:
        row = orjson.loads(value)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from e
    if isinstance(row, dict):
        row.setdefault("withdrawn", 0)
    if not isinstance(row, dict) or row.keys() != ROW_KEYS:
        got = set(row) if isinstance(row, dict) else set()
        raise ValueError("fields missing or unknown: "
                         + ", ".join(sorted(got ^ ROW_KEYS)) if got else "not an object")
    for k, v in row.items():
        if k in _FLOATS:
            if v is None:
                row[k] = math.nan
            elif isinstance(v, bool) or not isinstance(v, int | float):
                raise ValueError(f"{k} is not a number")
            else:
                row[k] = float(v)
        elif k in _INTS:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2 ** 32:
                raise ValueError(f"{k} is not a count")
        elif k == "weight_rounds":
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError("weight_rounds is not a list of round ids")
        elif not isinstance(v, str):
            raise ValueError(f"{k} is not text")
    if row["seat"] > 255 or row["inferred"] > 1 or row["withdrawn"] > 1:
        raise ValueError("seat, inferred or withdrawn out of range")
    return row


def store_observations(store: Store, observations: Iterable[Observation]) -> int:
    """Write the observations to the store; how many rows were written."""
    rows = [observation_row(o) for o in observations]
    store.insert(TABLE, rows)
    store.sync()
    return len(rows)


def withdraw_others(store: Store, found: Iterable[Observation]) -> int:
    """After the store's whole history was judged again: withdraw each stored live
    observation that judgement no longer gives (one the worker published as a session
    or hold stood, say), so the store holds exactly `found`; how many were withdrawn."""
    keep = {o.observation_id for o in found}
    gone = [withdrawal(str(r["table_id"]), str(r["scope"]), str(r["subject"]),
                       str(r["code"]), int(r["seat"]) or None)
            for r in store.query("SELECT observation_id, code, scope, table_id, subject, "
                                 f"seat FROM {TABLE} FINAL WHERE {LIVE}")
            if r["observation_id"] not in keep]
    return store_observations(store, gone) if gone else 0


def stored_tables(store: Store) -> list[str]:
    """The tables whose events the store holds, sorted (from `table_devices`, its
    index of each table's devices, never a scan of the events)."""
    rows = store.query("SELECT DISTINCT table_id FROM table_devices ORDER BY table_id")
    return [str(r["table_id"]) for r in rows]


def read_stored(store: Store, tables: Iterable[str] | None = None,
                on_table: Callable[[str, int], None] | None = None) -> tuple[ReadFloor, int]:
    """The store's history audited again (nothing stored) and read from the audit's
    fold, table by table in its order of record, each quarantined event fed back at its
    place (`store.history.Quarantine`): every table's completed rounds and seat stays,
    the audit's violations, and how many events were read. `on_table(table, events)`
    is told as each table is done. It holds every table's rounds: `judge_stored` judges
    a store of any size."""
    floor = FloorReader()
    found: list[Violation] = []
    n = 0
    for table_id in stored_tables(store) if tables is None else tables:
        read = read_table(store, table_id, floor.watch, found.append)
        n += read
        if on_table is not None:
            on_table(table_id, read)
    return ReadFloor(floor, found), n


def read_table(store: Store, table_id: str, watch: Callable[[Event, Round | None], None],
               on_violation: Callable[[Violation], None]) -> int:
    """One table's history audited again (nothing stored), its events read in windows
    of positions through the sort key (`store.history.stream`), each quarantined event
    fed back at its place: the fold's events go to `watch`, its violations to
    `on_violation`. How many events were read."""
    auditor = TableAuditor(table_id, select, on_violation, lambda _: None,
                           released=released_writers())
    auditor.watch = watch
    held = Quarantine(store, table_id)
    rounds: set[str] = {""}
    read = 0
    for st in stream(store, table_id, 0):
        held.feed(auditor, st.event)
        rounds.add(st.event.round_id or "")
        read += 1
    for q in held.trailing(rounds):
        auditor.refused(q, q.refused or "")
    auditor.finish()
    return read


class _SlimRounds:
    """One table's completed rounds as the detectors read them (`slim`, as each
    completes) and its seat stays, from the audit's fold (`TableReader`)."""

    def __init__(self, table_id: str) -> None:
        self.reader = TableReader(table_id)
        self.rounds: list[RoundView] = []
        #: the fold took an event of the table
        self.watched = False

    def watch(self, ev: Event, r: Round | None) -> None:
        self.watched = True
        done = self.reader.watch(ev, r)
        if done is not None:
            self.rounds.append(slim(done))


@dataclass(frozen=True, slots=True)
class Judged:
    """A store's history judged (`judge_stored`): the observations, and what was read."""

    observations: list[Observation]
    events: int
    tables: int
    rounds: int
    violations: int


def judge_stored(store: Store, site: SiteTime | None = None,
                 tables: Sequence[str] | None = None,
                 on_table: Callable[[str, int], None] | None = None) -> Judged:
    """The store's history judged as `observe` judges the rounds `read_stored` reads,
    one table at a time (`read_table`, `FloorJudge`): what is held is one table's
    rounds and violations, and the floor-wide scopes' running tallies (a dealer's and a
    shift's hold, a dealer's rounds dealt and errors). `tables`: those to judge (by
    default every stored table, in order); `on_table(table, events)` is told as each
    table is done. A table's rounds are held as the detectors read them (`slim`) until
    it is judged."""
    judge = FloorJudge(site)
    events = violations = 0
    for table_id in stored_tables(store) if tables is None else tables:
        table = _SlimRounds(table_id)
        found: list[Violation] = []
        read = read_table(store, table_id, table.watch, found.append)
        if table.watched:
            judge.add(table_id, table.rounds, Findings.of(found),
                      table.reader.seat_log.seatings)
        events += read
        violations += len(found)
        if on_table is not None:
            on_table(table_id, read)
    return Judged(judge.observations(), events, judge.tables, judge.rounds, violations)
