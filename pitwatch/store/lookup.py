"""Lookups that read as many rows with a year of history as with a day.

Every lookup here finds its rows through a sort key: `events` by (table, device time),
and the index tables of schemas/clickhouse/005_lookups.sql, filled by materialized
views as rows land: a table's positions (`event_positions`), its context marks
(`event_marks`), its devices (`table_devices`), a round's table and span
(`round_index`), rounds by table and start (`round_starts`) and by dealer
(`dealer_rounds`), violations by severity and code (`violation_codes`). A stretch of
positions is read as a window of positions, never as "everything before" or "everything
after" (ClickHouse 18.16 reads every granule a condition leaves, whatever the LIMIT), and
a window that finds nothing grows until it meets what it looks for or the table's end.

A store made before these tables gets them when it is next set up (`migrate`: each view's
SELECT run once over its base table, recorded in `store_migrations`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .base import VIEW, Store, StoreError, added_columns, ddl_statements
from .order import STRIDE
from .rows import EVENT_COLUMNS, stored_event

#: A position moves 1,024 an event (pitwatch/store/order.py): a window of this many
#: positions holds about 4,096 events.
WINDOW = 1024 * 4096
#: Events a page of `stream`.
PAGE = 2000
#: Device seconds between two events read in one query of `events`: farther apart (a
#: device whose clock is off, a table closed overnight), they are read apart, each
#: through the sort key.
TIME_GAP = 600
#: The backfills of the index tables, by name, recorded in `store_migrations` when done.
MIGRATIONS = {"lookups-1": ("event_positions", "event_marks", "table_devices",
                            "round_index", "round_starts", "dealer_rounds",
                            "violation_codes"),
              "lookups-2": ("round_violations",),
              "lookups-3": ("event_ids", "device_seqs"),
              "lookups-4": ("violation_ids", "violation_times"),
              "lookups-5": ("audit_latest",),
              "lookups-6": ("table_span", "round_start_span", "violation_span",
                            "table_opened"),
              "lookups-7": ("pinned_open",)}
#: Seconds of a first window back in time that no span index sizes (then twice as many
#: each window further back).
ROUND_WINDOW = 3600



@dataclass(frozen=True, slots=True)
class Located:
    """Where an event is: its position, its id, and its device time (seconds)."""

    pos: int
    event_id: str
    ts: int


@dataclass(frozen=True, slots=True)
class Span:
    """A round's table and the first and last positions of its stored events."""

    table_id: str
    first: int
    last: int


def _ids(values: Iterable[str]) -> tuple[str, ...]:
    """A set of ids as a query parameter (`x IN {p:Array(String)}`): a tuple, which the
    server's driver writes as `('a', 'b')` and chDB reads as an array."""
    return tuple(sorted(set(values)))


# ---------------------------------------------------------------- migration


def backfills() -> dict[str, list[str]]:
    """Each index table's backfill: each of its views' SELECT (in file order), as an
    INSERT into it."""
    out: dict[str, list[str]] = {}
    for stmt in ddl_statements():
        m = VIEW.match(stmt)
        if m is not None:
            out.setdefault(m.group(2), []).append(f"INSERT INTO {m.group(2)} {m.group(3)}")
    return out


def add_columns(store: Store) -> list[str]:
    """The columns later files add to a table (`base.added_columns`) added to a store
    made before them, each once, before the store's DDL runs (a view of a later file may
    read the column): checked in `system.columns` (ClickHouse 18.16 has no ADD COLUMN
    IF NOT EXISTS); a table not made yet gets it in its CREATE. On a cluster, to the
    shards' local tables, ON CLUSTER (18.16 runs no ALTER ON CLUSTER of a Distributed
    table: `ServerStore` makes those again). The columns it added, as table.column."""
    cluster = getattr(store, "cluster", None)
    added = []
    for table, column, decl in added_columns():
        name = f"{table}_local" if cluster else table
        have = {r["name"] for r in store.query(
            "SELECT name FROM system.columns WHERE database = currentDatabase() AND "
            "table = {t:String}", {"t": name})}
        if not have or column in have:
            continue
        on = f" ON CLUSTER {cluster}" if cluster else ""
        store.query(f"ALTER TABLE {name}{on} ADD COLUMN {column} {decl}")
        added.append(f"{table}.{column}")
    return added


def drop_derived(store: Store, table: str, views: Sequence[str]) -> None:
    """A table that views fill, and those views, dropped, for `setup` to make again. On
    a cluster every server's: each shard's views, the Distributed table and the
    shards' `_local` tables, ON CLUSTER (a plain DROP drops the one server's view and
    Distributed table alone, and setup then makes the Distributed table again AS the
    old local table, at the old columns)."""
    cluster = getattr(store, "cluster", None)
    if not cluster:
        for name in (*views, table):
            store.query(f"DROP TABLE IF EXISTS {name}")
        return
    db = getattr(store, "database", "")
    for name in (*views, table, f"{table}_local"):
        store.query(f"DROP TABLE IF EXISTS {db}.{name} ON CLUSTER {cluster}")


def migrate(store: Store) -> list[str]:
    """Fill the index tables of a store made before them from its base tables, once
    (after `setup` made them; rows stored meanwhile are written twice, which the
    tables absorb). The migrations it ran, by name."""
    done = {r["name"] for r in store.query("SELECT name FROM store_migrations")}
    ran = []
    fills = backfills()
    for name, tables in MIGRATIONS.items():
        if name in done:
            continue
        for t in tables:
            for fill in fills[t]:
                store.query(fill)
        store.query("INSERT INTO store_migrations (name, done) SELECT {n:String}, now()",
                    {"n": name})
        ran.append(name)
    return ran


def ensure(store: Store) -> None:
    """Set up a store opened to be read (replay, investigate, reaudit) that has no index
    tables yet, or whose backfill has not run: what `setup` does for the writers."""
    have = store.query("SELECT count() AS n FROM system.tables WHERE database = "
                       "currentDatabase() AND name = 'store_migrations'")
    if not int(have[0]["n"]) or {r["name"] for r in store.query(
            "SELECT name FROM store_migrations")} < MIGRATIONS.keys():
        store.setup()


# ---------------------------------------------------------------- events of a table


def table_extent(store: Store, table_id: str) -> tuple[int, int] | None:
    """(first, last) position of the table's stored events; None for none."""
    rows = store.query("SELECT minMerge(first) AS a, maxMerge(last) AS z, count() AS n "
                       "FROM table_devices WHERE table_id = {t:String}", {"t": table_id})
    if not rows or not int(rows[0]["n"]):
        return None
    return int(rows[0]["a"]), int(rows[0]["z"])


def device_firsts(store: Store, table_id: str) -> dict[str, int]:
    """Each device of the table and the position of its first stored event."""
    return {r["device_id"]: int(r["f"]) for r in store.query(
        "SELECT device_id, minMerge(first) AS f FROM table_devices WHERE table_id = "
        "{t:String} GROUP BY device_id", {"t": table_id})}


def positions(store: Store, table_id: str, lo: int, hi: int, after: str = "",
              limit: int = PAGE) -> list[Located]:
    """The table's events at positions lo..hi (at `lo` only those whose id sorts after
    `after`), in order, `limit` at most."""
    return [Located(int(r["pos"]), r["event_id"], int(r["t"])) for r in store.query(
        "SELECT pos, event_id, toUInt32(ts) AS t FROM event_positions FINAL "
        "WHERE table_id = {t:String} AND pos >= {a:UInt64} AND pos <= {z:UInt64} "
        "AND (pos > {a:UInt64} OR event_id > {e:String}) "
        "ORDER BY pos, event_id LIMIT {n:UInt64}",
        {"t": table_id, "a": lo, "z": hi, "e": after, "n": limit})]


def _time_runs(located: Sequence[Located]) -> list[list[Located]]:
    """`located` in runs of device time no gap in which is over `TIME_GAP` seconds."""
    runs: list[list[Located]] = []
    for loc in sorted(located, key=lambda x: x.ts):
        if runs and loc.ts - runs[-1][-1].ts <= TIME_GAP:
            runs[-1].append(loc)
        else:
            runs.append([loc])
    return runs


def fetch(store: Store, table_id: str, located: Sequence[Located]) -> list[tuple[int, Any]]:
    """The stored events at `located` as (position, event), in order of record."""
    return [(int(r["pos"]), stored_event(r)) for r in fetch_rows(store, table_id, located)]


def fetch_rows(store: Store, table_id: str, located: Sequence[Located]
               ) -> list[dict[str, Any]]:
    """The rows of `events` at `located` (`pos` and `rows.EVENT_COLUMNS`), in order of
    record: each run of device time read through `events`' sort key (table, device
    time)."""
    got: dict[tuple[int, str], Any] = {}
    for run in _time_runs(located):
        rows = store.query(
            f"SELECT pos, {EVENT_COLUMNS} FROM events FINAL WHERE table_id = {{t:String}} "
            "AND ts >= toDateTime({a:UInt32}) AND ts <= toDateTime({z:UInt32}) "
            "AND event_id IN {ids:Array(String)}",
            {"t": table_id, "a": run[0].ts, "z": run[-1].ts,
             "ids": _ids(x.event_id for x in run)})
        for r in rows:
            got[int(r["pos"]), r["event_id"]] = r
    want = sorted((x.pos, x.event_id) for x in located)
    missing = [k for k in want if k not in got]
    if missing:
        raise StoreError(f"the store's event_positions name {len(missing)} event(s) of "
                         f"table {table_id} that events does not hold at that position "
                         f"(first: {missing[0][1]} at {missing[0][0]}): the index and its "
                         "table disagree; run `pitwatch audit` on the store again to "
                         "migrate it, or restore it")
    return [got[k] for k in want]


def stream(store: Store, table_id: str, begin: int, end: int | None = None
           ) -> Iterator[tuple[int, Any]]:
    """The table's events from position `begin` (to `end` inclusive) as (position,
    event), in order, a page of at most `PAGE` at a time, each page through a window
    of positions (the caller may stop early)."""
    extent = table_extent(store, table_id)
    if extent is None:
        return
    top = extent[1] if end is None else min(end, extent[1])
    pos, after, width = max(begin, extent[0]), "", WINDOW
    while pos <= top:
        hi = min(top, pos + width - 1)
        page = positions(store, table_id, pos, hi, after)
        yield from fetch(store, table_id, page)
        if len(page) == PAGE:
            pos, after, width = page[-1].pos, page[-1].event_id, WINDOW
        else:  # the window is read: the next one, wider after an empty one (a gap)
            pos, after, width = hi + 1, "", width * 2 if not page else WINDOW


def last_before(store: Store, table_id: str, before: int,
                devices: Iterable[str] | None = None) -> list[Located]:
    """Each device's last event before position `before` (of `devices`, else of every
    device of the table that has one), read in windows back from `before`."""
    found = _per_device_back(store, table_id, before, devices, "max(pos)")
    if not found:
        return []
    at = set(found.items())
    rows = store.query(
        "SELECT pos, event_id, device_id, toUInt32(ts) AS t FROM event_positions FINAL "
        "WHERE table_id = {t:String} AND pos IN {p:Array(UInt64)}",
        {"t": table_id, "p": tuple(sorted(set(found.values())))})
    return sorted((Located(int(r["pos"]), r["event_id"], int(r["t"])) for r in rows
                   if (r["device_id"], int(r["pos"])) in at),
                  key=lambda x: (x.pos, x.event_id))


def mark_before(store: Store, table_id: str, kinds: Sequence[str], before: int
                ) -> dict[str, int]:
    """The position of the table's last event of each kind (TableOpened, ShoeLoaded,
    Checkpoint) before position `before`, read in windows back from `before` until each
    kind is met or the table's first event (a kind that never came is left out)."""
    extent = table_extent(store, table_id)
    if extent is None:
        return {}
    found: dict[str, int] = {}
    hi, width = before, WINDOW
    while set(kinds) - found.keys() and hi > extent[0]:
        lo = max(extent[0], hi - width)
        for r in store.query(
                "SELECT type, max(pos) AS p FROM event_marks WHERE table_id = {t:String} "
                "AND type IN {k:Array(String)} AND pos >= {a:UInt64} AND pos < {b:UInt64} "
                "GROUP BY type",
                {"t": table_id, "k": _ids(set(kinds) - found.keys()), "a": lo, "b": hi}):
            found[r["type"]] = int(r["p"])
        hi, width = lo, width * 4
    return found


def marks_at(store: Store, table_id: str, kind: str, pos: int) -> list[Located]:
    """The table's events of `kind` at position `pos` (where `mark_before` found one)."""
    return [Located(int(r["pos"]), r["event_id"], int(r["t"])) for r in store.query(
        "SELECT pos, event_id, toUInt32(ts) AS t FROM event_positions FINAL "
        "WHERE table_id = {t:String} AND pos = {p:UInt64} AND type = {k:String} "
        "ORDER BY event_id", {"t": table_id, "p": pos, "k": kind})]


def checkpoints_before(store: Store, table_id: str, before: int, devices: Iterable[str]
                       ) -> list[Located]:
    """Each of `devices`' last Checkpoint before position `before`, read in windows
    back from `before`."""
    firsts = device_firsts(store, table_id)
    wanted = {d for d in devices if firsts.get(d, before) < before}
    found: dict[str, Located] = {}
    hi, width = before, WINDOW
    low = min((firsts[d] for d in wanted), default=before)
    while wanted - found.keys() and hi > low:
        lo = max(low, hi - width)
        for r in store.query(
                "SELECT device_id, max(pos) AS p, argMax(event_id, pos) AS e "
                "FROM event_marks WHERE table_id = {t:String} AND type = 'Checkpoint' "
                "AND pos >= {a:UInt64} AND pos < {b:UInt64} AND device_id IN "
                "{d:Array(String)} GROUP BY device_id",
                {"t": table_id, "a": lo, "b": hi, "d": _ids(wanted - found.keys())}):
            found[r["device_id"]] = Located(int(r["p"]), r["e"], 0)
        hi, width = lo, width * 4
    return _timed(store, table_id, found.values())


def _timed(store: Store, table_id: str, located: Iterable[Located]) -> list[Located]:
    """`located` with each event's device time (what `fetch` reads its row by), in
    order, read by position."""
    want = {(x.pos, x.event_id) for x in located}
    if not want:
        return []
    rows = store.query(
        "SELECT pos, event_id, toUInt32(ts) AS t FROM event_positions FINAL "
        "WHERE table_id = {t:String} AND pos IN {p:Array(UInt64)}",
        {"t": table_id, "p": tuple(sorted({p for p, _ in want}))})
    return sorted((Located(int(r["pos"]), r["event_id"], int(r["t"])) for r in rows
                   if (int(r["pos"]), r["event_id"]) in want),
                  key=lambda x: (x.pos, x.event_id))


def device_events_back(store: Store, table_id: str, device_id: str, since_seq: int,
                       start: int, before: int) -> list[Located]:
    """The device's events from its seq `since_seq` on and before position `before`,
    in order, read in windows back from `start` (the position of one of them) until
    one at or below `since_seq` is met, or the device's first event."""
    first = device_firsts(store, table_id).get(device_id, 0)
    out: dict[tuple[int, str], Located] = {}
    hi, width, met = before, max(WINDOW, before - start), False
    while not met and hi > first:
        lo = max(first, hi - width)
        for r in store.query(
                "SELECT pos, event_id, seq, toUInt32(ts) AS t FROM event_positions FINAL "
                "WHERE table_id = {t:String} AND pos >= {a:UInt64} AND pos < {b:UInt64} "
                "AND device_id = {d:String}",
                {"t": table_id, "a": lo, "b": hi, "d": device_id}):
            if int(r["seq"]) <= since_seq:
                met = True
            if int(r["seq"]) >= since_seq:
                out[int(r["pos"]), r["event_id"]] = Located(int(r["pos"]), r["event_id"],
                                                            int(r["t"]))
        hi, width = lo, width * 4
    return [out[k] for k in sorted(out)]


def rows_by_id(store: Store, table_id: str, event_ids: Iterable[str], columns: str
               ) -> list[dict[str, Any]]:
    """Every row of `events` (`columns`, with `event_id`) the table holds under
    `event_ids` (a copy under another device time is a row of its own): their device
    times from `event_ids`, then the rows through `events`' sort key (table, device
    time)."""
    ids = _ids(event_ids)
    if not ids:
        return []
    at = [Located(int(r["pos"]), r["event_id"], int(r["t"])) for r in store.query(
        "SELECT event_id, pos, toUInt32(ts) AS t FROM event_ids WHERE table_id = "
        "{t:String} AND event_id IN {e:Array(String)}", {"t": table_id, "e": ids})]
    out: list[dict[str, Any]] = []
    for run in _time_runs(at):  # runs apart in time: a row is in one of them alone
        out += store.query(
            f"SELECT {columns}, event_id, toUInt32(ts) AS ts_s, ts_ms AS ts_ms_ FROM "
            "events FINAL WHERE table_id = {t:String} AND ts >= toDateTime({a:UInt32}) "
            "AND ts <= toDateTime({z:UInt32}) AND event_id IN {e:Array(String)}",
            {"t": table_id, "a": run[0].ts, "z": run[-1].ts,
             "e": _ids(x.event_id for x in run)})
    out.sort(key=lambda r: (r["event_id"], int(r["ts_s"]), int(r["ts_ms_"])))
    return [{k: v for k, v in r.items() if k not in ("ts_s", "ts_ms_")} for r in out]


def at_seq(store: Store, table_id: str, device_id: str, seq: int) -> list[tuple[str, int]]:
    """(event id, position) of each stored event of the device at `seq`."""
    return [(r["event_id"], int(r["pos"])) for r in store.query(
        "SELECT event_id, pos FROM device_seqs FINAL WHERE table_id = {t:String} AND "
        "device_id = {d:String} AND seq = {s:UInt64} ORDER BY pos, event_id",
        {"t": table_id, "d": device_id, "s": seq})]


def seqs_upto(store: Store, table_id: str, upto: int) -> dict[str, int]:
    """Each device's largest seq among the table's events at positions up to `upto`:
    the seq of its last event there that moved it forward on the record clock (at a
    multiple of `order.STRIDE`: a conflicting, late or restarted copy never does), read in
    windows back from `upto`."""
    return _per_device_back(store, table_id, upto + 1, None, "argMax(seq, pos)",
                            f"pos % {STRIDE} = 0")


def _per_device_back(store: Store, table_id: str, before: int,
                     devices: Iterable[str] | None, value: str, where: str = "1"
                     ) -> dict[str, int]:
    """`value` (an aggregate over event_positions) of each device's events before
    position `before` that meet `where` (of `devices`, else of every device of the
    table), from the latest window back that holds one: windows read back from `before`,
    four times wider each time, until every device is met or its first event passed."""
    firsts = device_firsts(store, table_id)
    wanted = {d for d, f in firsts.items() if f < before
              and (devices is None or d in set(devices))}
    found: dict[str, int] = {}
    hi, width = before, WINDOW
    low = min((firsts[d] for d in wanted), default=before)
    while wanted - found.keys() and hi > low:
        lo = max(low, hi - width)
        for r in store.query(
                f"SELECT device_id, {value} AS v FROM event_positions WHERE table_id = "
                "{t:String} AND pos >= {a:UInt64} AND pos < {b:UInt64} AND device_id IN "
                f"{{d:Array(String)}} AND {where} GROUP BY device_id",
                {"t": table_id, "a": lo, "b": hi, "d": _ids(wanted - found.keys())}):
            found[r["device_id"]] = int(r["v"])
        hi, width = lo, width * 4
    return found


def recent(store: Store, table_id: str, upto: int, n: int) -> dict[str, int]:
    """The positions of the table's last `n` events at positions up to `upto`, by
    event id, read in windows back from `upto`."""
    extent = table_extent(store, table_id)
    out: dict[str, int] = {}
    if extent is None:
        return out
    hi, width = upto + 1, WINDOW
    while len(out) < n and hi > extent[0]:
        lo = max(extent[0], hi - width)
        for r in store.query(
                "SELECT event_id, pos FROM event_positions FINAL WHERE table_id = {t:String} "
                "AND pos >= {a:UInt64} AND pos < {b:UInt64} ORDER BY pos DESC, event_id DESC "
                "LIMIT {n:UInt64}", {"t": table_id, "a": lo, "b": hi, "n": n - len(out)}):
            out[r["event_id"]] = int(r["pos"])
        hi, width = lo, width * 4
    return out


# ---------------------------------------------------------------- rounds


def round_spans(store: Store, round_ids: Iterable[str]) -> dict[str, Span]:
    """Each round's table and first and last positions, from its stored events (a round
    with none is left out). A round id two tables' events carry is that of the table
    whose id sorts first."""
    ids = _ids(round_ids)
    if not ids:
        return {}
    out: dict[str, Span] = {}
    for r in store.query(
            "SELECT round_id, table_id, minMerge(first) AS a, maxMerge(last) AS z "
            "FROM round_index WHERE round_id IN {r:Array(String)} GROUP BY round_id, table_id "
            "ORDER BY round_id, table_id", {"r": ids}):
        out.setdefault(r["round_id"], Span(r["table_id"], int(r["a"]), int(r["z"])))
    return out


def round_rows(store: Store, round_id: str) -> list[dict[str, Any]]:
    """The rows of `events` (`pos` and `rows.EVENT_COLUMNS`) of a round, in order of
    record: its span from `round_index`, then its positions and events through their
    sort keys (what the console's round view reads)."""
    span = round_spans(store, [round_id]).get(round_id)
    if span is None:
        return []
    rows: list[dict[str, Any]] = []
    pos, after = span.first, ""
    while pos <= span.last:
        page = positions(store, span.table_id, pos, span.last, after)
        rows += [r for r in fetch_rows(store, span.table_id, page)
                 if r["round_id"] == round_id]
        if len(page) < PAGE:
            break
        pos, after = page[-1].pos, page[-1].event_id
    return rows


def round_closed(store: Store, table_id: str, round_id: str) -> bool:
    """Whether the store holds the round's summary (the run that stored it closed it)."""
    return bool(store.query("SELECT round_id FROM rounds FINAL WHERE table_id = {t:String} "
                            "AND round_id = {r:String}", {"t": table_id, "r": round_id}))


def violations_of(store: Store, rounds: Iterable[tuple[str, str]],
                  columns: str = "*") -> list[dict[str, Any]]:
    """The stored violations of (table, round) pairs, in table and round order: when
    they were detected from `round_violations`, then their rows through `violations`'
    sort key (table, round) in those months' partitions alone."""
    pairs = set(rounds)
    if not pairs:
        return []
    ts, rs = _ids(t for t, _ in pairs), _ids(r for _, r in pairs)
    months = store.query(
        "SELECT toUInt32(min(detected_at)) AS a, toUInt32(max(detected_at)) AS z, "
        "count() AS n FROM round_violations WHERE table_id IN {t:Array(String)} "
        "AND round_id IN {r:Array(String)}", {"t": ts, "r": rs})
    if not months or not int(months[0]["n"]):
        return []
    rows = store.query(  # the months `round_violations` names: the partitions to read
        f"SELECT {columns} FROM violations FINAL WHERE table_id IN {{t:Array(String)}} "
        "AND round_id IN {r:Array(String)} AND detected_at >= toDateTime({a:UInt32}) "
        "AND detected_at <= toDateTime({z:UInt32}) ORDER BY table_id, round_id, "
        "detected_at, detected_ms, code, violation_id",
        {"t": ts, "r": rs, "a": int(months[0]["a"]), "z": int(months[0]["z"])})
    return [r for r in rows if (r["table_id"], r["round_id"]) in pairs]


def stored_violations(store: Store, violation_ids: Iterable[str],
                      table_id: str | None = None) -> set[str]:
    """Which of these violations the store holds (of `table_id` when given), through
    `violation_ids`' sort key."""
    ids = _ids(violation_ids)
    if not ids:
        return set()
    return {r["violation_id"] for r in store.query(
        "SELECT DISTINCT violation_id FROM violation_ids WHERE violation_id IN "
        "{v:Array(String)}" + ("" if table_id is None else " AND table_id = {t:String}"),
        {"v": ids, "t": table_id or ""})}


def violation_tables(store: Store, violation_ids: Iterable[str]) -> dict[str, str]:
    """The casino table of each of these stored violations, through `violation_ids`'
    sort key; one not stored is not in the answer."""
    ids = _ids(violation_ids)
    if not ids:
        return {}
    return {r["violation_id"]: r["table_id"] for r in store.query(
        "SELECT DISTINCT violation_id, table_id FROM violation_ids WHERE violation_id IN "
        "{v:Array(String)}", {"v": ids})}


def pinned_open(store: Store) -> set[str]:
    """The ids of the CRITICAL violations no triage change has taken out of `pinned_open`
    (schemas/clickhouse/023_pinned.sql): a row each once merged, whatever the history's
    length. A few may have a change all the same (stored again after it): the caller asks
    `triage` of these."""
    return {r["violation_id"] for r in store.query(
        "SELECT violation_id FROM pinned_open GROUP BY violation_id HAVING sum(sign) > 0")}


def round_violation_ids(store: Store, table_id: str, round_id: str) -> set[str]:
    """The ids of a round's stored violations, through `round_violations`' sort key."""
    return {r["violation_id"] for r in store.query(
        "SELECT DISTINCT violation_id FROM round_violations WHERE table_id = {t:String} "
        "AND round_id = {r:String}", {"t": table_id, "r": round_id})}


def violations_by_id(store: Store, violation_ids: Iterable[str], columns: str = "*"
                     ) -> list[dict[str, Any]]:
    """The stored rows of these violations (`columns`, which name `violation_id`), in
    table, round and id order: each one's table, round and detection time from
    `violation_ids`, then the rows through `violations`' sort key (table, round) in
    those months' partitions alone."""
    ids = _ids(violation_ids)
    if not ids:
        return []
    at = store.query(
        "SELECT table_id, round_id, toUInt32(min(detected_at)) AS a, "
        "toUInt32(max(detected_at)) AS z FROM violation_ids WHERE violation_id IN "
        "{v:Array(String)} GROUP BY table_id, round_id", {"v": ids})
    if not at:
        return []
    pairs = {(r["table_id"], r["round_id"]) for r in at}
    rows = store.query(
        f"SELECT {columns} FROM violations FINAL WHERE table_id IN {{t:Array(String)}} "
        "AND round_id IN {r:Array(String)} AND violation_id IN {v:Array(String)} "
        "AND detected_at >= toDateTime({a:UInt32}) AND detected_at <= toDateTime({z:UInt32}) "
        "ORDER BY table_id, round_id, violation_id",
        {"t": _ids(t for t, _ in pairs), "r": _ids(r for _, r in pairs), "v": ids,
         "a": min(int(r["a"]) for r in at), "z": max(int(r["z"]) for r in at)})
    return [r for r in rows if (r["table_id"], r["round_id"]) in pairs]


#: Violations a read back in time of the newest violations, or of their counts, examines
#: at most (the window that passes it included): a filter no index selects (a
#: jurisdiction, a seat, unhandled, a table) reads no further back, and what it found
#: is then what matches since the second it reached (`Back.reached`), not the store's.
BUDGET = 20_000


@dataclass(frozen=True, slots=True)
class Back:
    """What a read back in windows of detection time found, and the second it reached
    back to when it stopped on `BUDGET` before the start it was given (None: it read to
    that start, and its answer is the store's)."""

    rows: list[dict[str, Any]]
    reached: int | None


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """The first and last second of a span index's rows (schemas/clickhouse/
    022_spans.sql), and how many were written between (a row written again counts
    twice)."""

    first: int
    last: int
    n: int

    def width(self, rows: int) -> int:
        """Seconds that hold about `rows` of the span's rows, at its mean density (one at
        least): the first window of a read back in time, so that a page is one window
        whatever the history's length."""
        return max(1, -(-(self.last - self.first + 1) * rows // max(1, self.n)))


def time_span(store: Store, index: str, table_id: str | None = None) -> TimeSpan | None:
    """The span of `index` (`round_start_span` or `violation_span`), of one casino table
    or of every one: a row a table, read through its sort key; None for no rows."""
    rows = store.query(
        "SELECT toUInt32(min(f)) AS a, toUInt32(max(l)) AS z, sum(c) AS n, count() AS k "
        "FROM (SELECT table_id, minMerge(first) AS f, maxMerge(last) AS l, countMerge(n) "
        f"AS c FROM {index}" + ("" if table_id is None else " WHERE table_id = {t:String}")
        + " GROUP BY table_id)", {"t": table_id or ""})
    if not rows or not int(rows[0]["k"]):
        return None
    return TimeSpan(int(rows[0]["a"]), int(rows[0]["z"]), int(rows[0]["n"]))


def _violation_spans(store: Store, table_id: str | None
                     ) -> tuple[TimeSpan | None, TimeSpan | None]:
    """The span of the store's violations, and of `table_id`'s (None: no table given,
    or none of its violations), in one read of `violation_span` (a row a table)."""
    rows = store.query(
        "SELECT toUInt32(min(f)) AS a, toUInt32(max(l)) AS z, sum(c) AS n, count() AS k, "
        "toUInt32(minIf(f, table_id = {t:String})) AS ta, toUInt32(maxIf(l, table_id = "
        "{t:String})) AS tz, sumIf(c, table_id = {t:String}) AS tn, countIf(table_id = "
        "{t:String}) AS tk FROM (SELECT table_id, minMerge(first) AS f, maxMerge(last) AS "
        "l, countMerge(n) AS c FROM violation_span GROUP BY table_id)",
        {"t": table_id or ""})
    if not rows or not int(rows[0]["k"]):
        return None, None
    r = rows[0]
    table = TimeSpan(int(r["ta"]), int(r["tz"]), int(r["tn"])) \
        if table_id is not None and int(r["tk"]) else None
    return TimeSpan(int(r["a"]), int(r["z"]), int(r["n"])), table


class _Windows:
    """Windows of detection time read back from the newest violation (of `table_id`
    when given: `violation_span`), or from `until_s` when given, to `since_s` or the
    oldest violation (of `table_id`), whichever is later: the first ending at the
    newest (or at `until_s`) and as wide as holds about `rows` of the store's violations
    at their mean density (`TimeSpan.width`: every table's violations are examined), each
    next one twice as wide as the one before while the last examined little of the
    budget, until the start is reached or `budget` violations were examined."""

    def __init__(self, store: Store, since_s: int, until_s: int | None, budget: int,
                 rows: int, table_id: str | None = None) -> None:
        every, table = _violation_spans(store, table_id)
        span = every if table_id is None else table
        self.empty = span is None
        newest = 0 if span is None else span.last
        self.since = since_s if span is None else max(since_s, span.first)
        self.budget, self.seen = budget, 0
        self.hi: int | None = None if until_s is None else until_s + 1
        self.width = ROUND_WINDOW if every is None else every.width(min(rows, budget))
        self.lo = max(self.since, min(newest, until_s if until_s is not None else newest)
                      + 1 - self.width)
        self.reached: int | None = None
        if self.hi is not None and self.hi <= self.since:
            self.empty = True

    def span(self) -> tuple[str, dict[str, int]]:
        """The window's condition on `detected_at`, and its parameters."""
        return ("detected_at >= toDateTime({w_lo:UInt32})" + (
            "" if self.hi is None else " AND detected_at < toDateTime({w_hi:UInt32})"),
            {"w_lo": self.lo, "w_hi": self.hi or 0})

    def examined(self, store: Store) -> int:
        """The violations' (table, round, second)s the window holds (`violation_times`)."""
        cond, params = self.span()
        return int(store.query(f"SELECT count() AS n FROM violation_times WHERE {cond}",
                               params)[0]["n"])

    def back(self, seen: int) -> bool:
        """The window before, after this one examined `seen`; False when there is none
        to read: `since` reached, or the budget spent (`reached`: how far back)."""
        self.seen += seen
        if self.lo <= self.since:
            return False
        if self.seen >= self.budget:
            self.reached = self.lo
            return False
        self.hi, self.width = self.lo, self.width * (2 if seen * 8 < self.budget else 1)
        self.lo = max(self.since, self.lo - self.width)
        return True


def _window_rows(span: str) -> str:
    """The condition on `violations` that selects a window's rows through its sort key:
    the window's (table, round) pairs from `violation_times`, and its detection times."""
    return (f"(table_id, round_id) IN (SELECT table_id, round_id FROM violation_times "
            f"WHERE {span}) AND {span}")


def _handled(store: Store, violation_ids: Iterable[str]) -> set[str]:
    """Which of these violations have a triage change (`triage`, by its sort key: the
    violation id): what an unhandled read leaves out, read for a window's violations
    alone, never all of triage."""
    ids = _ids(violation_ids)
    if not ids:
        return set()
    return {r["violation_id"] for r in store.query(
        "SELECT DISTINCT violation_id FROM triage WHERE violation_id IN {v:Array(String)}",
        {"v": ids})}


def newest_violations(store: Store, columns: str, where: str, params: dict[str, Any],
                      order: str, want: int, since_s: int = 0, until_s: int | None = None,
                      budget: int | None = None, table_id: str | None = None,
                      unhandled: bool = False) -> Back:
    """The `want` newest rows of `violations` (`columns`, in `order`: newest first)
    that meet `where`, detected at or after `since_s` (device seconds, and before
    `until_s` + 1 when given): read back in windows of detection time (`_Windows`), each
    window's (table, round) pairs from `violation_times` and its rows through
    `violations`' sort key, until `want` are found, the windows reach `since_s` (or the
    oldest violation), or `budget` (`BUDGET`) violations were examined. `table_id`:
    `where` selects that table's alone (the windows start at its newest); `unhandled`:
    only those without a triage change (`_handled`, asked for each window's)."""
    w = _Windows(store, since_s, until_s, BUDGET if budget is None else budget, 2 * want,
                 table_id)
    got: list[dict[str, Any]] = []
    if want <= 0 or w.empty:
        return Back(got, None)
    while True:
        span, sp = w.span()
        rows = store.query(
            f"SELECT {columns} FROM violations FINAL WHERE {_window_rows(span)} "
            f"AND {where} ORDER BY {order}"
            + ("" if unhandled else f" LIMIT {int(want - len(got))}"), {**params, **sp})
        if unhandled:
            handled = _handled(store, (r["violation_id"] for r in rows))
            rows = [r for r in rows if r["violation_id"] not in handled][:want - len(got)]
        got += rows
        if len(got) >= want or w.lo <= w.since or not w.back(w.examined(store)):
            break
    return Back(got, w.reached)


def count_violations(store: Store, where: str, params: dict[str, Any], since_s: int = 0,
                     until_s: int | None = None, budget: int | None = None,
                     table_id: str | None = None, unhandled: bool = False) -> Back:
    """How many violations meet `where`, by severity (rows of `severity` and `n`),
    detected at or after `since_s` (and before `until_s` + 1 when given): counted back
    in windows of detection time as `newest_violations` reads them, until the windows
    reach `since_s` or `budget` violations were examined (`Back.reached`: the count is
    then of those detected since that second; `budget`: `BUDGET`). `unhandled`: only
    those without a triage change (`_handled`, asked for each window's)."""
    budget = BUDGET if budget is None else budget
    w = _Windows(store, since_s, until_s, budget, budget, table_id)
    counts: dict[str, int] = {}
    if w.empty:
        return Back([], None)
    while True:
        span, sp = w.span()
        seen = 0
        if unhandled:  # each matching violation's id, to ask its triage
            rows = store.query(
                f"SELECT severity, violation_id, toUInt8({where}) AS ok FROM violations "
                f"FINAL WHERE {_window_rows(span)}", {**params, **sp})
            seen = len(rows)
            ok = [r for r in rows if int(r["ok"])]
            handled = _handled(store, (r["violation_id"] for r in ok))
            for r in ok:
                if r["violation_id"] not in handled:
                    counts[r["severity"]] = counts.get(r["severity"], 0) + 1
        else:
            for r in store.query(
                    f"SELECT severity, countIf({where}) AS n, count() AS seen FROM "
                    f"violations FINAL WHERE {_window_rows(span)} GROUP BY severity",
                    {**params, **sp}):
                counts[r["severity"]] = counts.get(r["severity"], 0) + int(r["n"])
                seen += int(r["seen"])
        if not w.back(seen):
            break
    return Back([{"severity": s, "n": n} for s, n in sorted(counts.items())], w.reached)


def rounds_back(store: Store, table_id: str, limit: int) -> list[tuple[str, int, int]]:
    """(round id, start second, start ms) of the table's `limit` latest-started round
    summaries, newest first (ties by round id): `round_starts` read back in windows of
    start time from the table's last start to its first (`round_start_span`), the first
    window as wide as holds about twice `limit` starts at the table's mean density, each
    next one twice as wide, until `limit` are found or the first start is read."""
    span = time_span(store, "round_start_span", table_id) if limit > 0 else None
    if span is None:
        return []
    found: set[tuple[str, int, int]] = set()
    hi, width = span.last + 1, span.width(2 * limit)
    while len(found) < limit and hi > span.first:
        lo = max(span.first, hi - width)
        for r in store.query(
                "SELECT round_id, toUInt32(started) AS s, started_ms AS ms FROM "
                "round_starts WHERE table_id = {t:String} AND started >= toDateTime("
                "{a:UInt32}) AND started < toDateTime({b:UInt32})",
                {"t": table_id, "a": lo, "b": hi}):
            found.add((r["round_id"], int(r["s"]), int(r["ms"])))
        hi, width = lo, width * 2
    newest = sorted(found, key=lambda x: (-x[1], -x[2], x[0]))
    return newest[:limit]


@dataclass(frozen=True, slots=True)
class RoundQuery:
    """What selects rounds: any together, at least one (or only `game`, which is every
    round of one rule pack: a whole-history read by its nature)."""

    round_id: str | None = None
    table: str | None = None
    start_ms: int | None = None  # started at or after (device time, ms)
    end_ms: int | None = None  # started before
    dealer: str | None = None
    code: str | None = None
    severities: tuple[str, ...] | None = None  # a violation of one of these
    jurisdiction: str | None = None
    game: str | None = None


def _time_params(q: RoundQuery) -> tuple[str, dict[str, Any]]:
    """The start-time condition on `started`/`started_ms`, whole seconds through the sort
    key, the milliseconds exactly."""
    where, params = "", {}
    started = "(toUInt64(toUnixTimestamp(started)) * 1000 + started_ms)"
    if q.start_ms is not None:
        where += " AND started >= toDateTime({as:UInt32}) AND " + started + " >= {a:UInt64}"
        params["as"], params["a"] = q.start_ms // 1000, q.start_ms
    if q.end_ms is not None:
        where += " AND started <= toDateTime({zs:UInt32}) AND " + started + " < {z:UInt64}"
        params["zs"], params["z"] = q.end_ms // 1000, q.end_ms
    return where, params


def select_rounds(store: Store, q: RoundQuery) -> list[tuple[str, str]]:
    """(table, round) of each stored round summary `q` selects, in table and start
    order: the candidates from an index (a round id, a table and its hours, a dealer, a
    code or severity), then their summaries through `rounds`' sort key (table, round)."""
    candidates: set[tuple[str, str]] | None = None

    def narrow(found: Iterable[tuple[str, str]]) -> None:
        nonlocal candidates
        got = set(found)
        candidates = got if candidates is None else candidates & got

    when, tparams = _time_params(q)
    if q.round_id is not None:
        narrow((s.table_id, q.round_id) for s in round_spans(store, [q.round_id]).values())
    if q.table is not None and candidates is None:
        narrow((r["table_id"], r["round_id"]) for r in store.query(
            "SELECT table_id, round_id FROM round_starts WHERE table_id = {t:String}" + when
            + ("" if q.dealer is None else " AND dealer_id = {d:String}"),
            {"t": q.table, "d": q.dealer or "", **tparams}))
    if q.dealer is not None and candidates is None:
        narrow((r["table_id"], r["round_id"]) for r in store.query(
            "SELECT table_id, round_id FROM dealer_rounds WHERE dealer_id = {d:String}"
            + when, {"d": q.dealer, **tparams}))
    if q.code is not None or q.severities is not None:
        from ..engine.violation import Severity

        sev = q.severities or tuple(s.value for s in Severity)
        cond = "severity IN {s:Array(String)}"
        params: dict[str, Any] = {"s": _ids(sev)}
        if q.code is not None:
            cond += " AND code = {c:String}"
            params["c"] = q.code
        if q.table is not None:
            cond += " AND table_id = {t:String}"
            params["t"] = q.table
        narrow((r["table_id"], r["round_id"]) for r in store.query(
            "SELECT DISTINCT table_id, round_id FROM violation_codes WHERE " + cond, params))
    if candidates is not None and not candidates:
        return []
    where, params = ["1 = 1"], dict(tparams)
    if candidates is not None:
        where.append("table_id IN {ts:Array(String)} AND round_id IN {rs:Array(String)}")
        params["ts"] = _ids(t for t, _ in candidates)
        params["rs"] = _ids(r for _, r in candidates)
    for col, val in (("round_id", q.round_id), ("table_id", q.table),
                     ("dealer_id", q.dealer), ("game", q.game)):
        if val is not None:
            where.append(f"{col} = {{{col}:String}}")
            params[col] = val
    if q.game is not None:
        where.append("jurisdiction = {jurisdiction:String}")
        params["jurisdiction"] = q.jurisdiction or ""
    rows = store.query("SELECT table_id, round_id FROM rounds FINAL WHERE "
                       + " AND ".join(where) + when + " ORDER BY table_id, started, "
                       "started_ms, round_id", params)
    found = [(r["table_id"], r["round_id"]) for r in rows]
    return found if candidates is None else [p for p in found if p in candidates]
