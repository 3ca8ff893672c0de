"""What the console reads from and writes to the store (chDB or a ClickHouse server).

Every call is synchronous and runs on the console's one store thread (`app.StoreThread`):
neither chDB's session nor clickhouse-driver's client may be shared between threads.
Values go in as query parameters (`{name:Type}`), ids are checked against a strict
pattern first (a clear error for garbage), and what people type (who, note) goes in as
row data only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from pitwatch.engine.violation import Severity
from pitwatch.packs.registry import all_packs
from pitwatch.store import lookup
from pitwatch.store.base import Store, added_columns, columns, ddl_statements
from pitwatch.store.rows import VIOLATION_COLUMNS, stored_json, violation_from_row

from .feed_types import Polled
from .triage import Change, State, check

MAX_ID = 128  # docs/events.md § Ranges: ids are 1 to 128 characters of any kind
_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
SEVERITIES = tuple(s.value for s in Severity)
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}


class NotFound(LookupError):
    """No such table, round or violation in the store."""


def checked_id(value: object, what: str) -> str:
    """An id as the event contract allows it (1 to 128 characters, any of them), or
    ValueError naming what was wrong. Ids reach the store as query parameters only."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID:
        n = len(value) if isinstance(value, str) else 0
        raise ValueError(f"not a valid {what}: 1 to {MAX_ID} characters, got {n}")
    return value


def pack_jurisdictions() -> dict[str, str]:
    """pack name -> jurisdiction, from the registry (every version of a pack agrees)."""
    return {p.name: p.jurisdiction for p in all_packs()}


def catalogue_codes() -> list[str]:
    codes: set[str] = set()
    for p in all_packs():
        codes |= p.codes()
    return sorted(codes)


_VIEW = re.compile(r"CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+) TO (\w+) AS\s+(SELECT\b.*)",
                   re.S)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """A dashboard aggregate of the schema: its table, the view that fills it, and the
    view's SELECT (which also fills it from rows stored before the view existed)."""

    table: str
    view: str
    select: str


def aggregates() -> list[Aggregate]:
    return [Aggregate(m.group(2), m.group(1), m.group(3))
            for stmt in ddl_statements() if (m := _VIEW.match(stmt))]


def refresh_aggregates(store: Store) -> list[str]:
    """Make the schema's tables (`store.setup()`), with the dashboards' aggregates up to
    the schema, and fill the empty aggregates from the base tables; returns what it did
    to the aggregates, one line each.

    An aggregate whose columns differ from the schema's (a store made by an earlier
    pitwatch) is dropped with its view and made again: it is derived data. An empty one
    is filled with its view's SELECT (a store made before the views were). Every
    aggregate is idempotent, so a row counted by the view and by the fill counts once."""
    done = []
    for agg in aggregates():
        have = [r["name"] for r in store.query(
            "SELECT name FROM system.columns WHERE database = currentDatabase() "
            "AND table = {t:String}", {"t": agg.table})]
        added = {c for t, c, _ in added_columns() if t == agg.table}  # setup adds them
        if have and have != [c for c in columns(agg.table) if c in have or c not in added]:
            lookup.drop_derived(store, agg.table,
                                [a.view for a in aggregates() if a.table == agg.table])
            done.append(f"{agg.table}: made again to the current schema")
    done += migrate_triage(store)
    store.setup()  # every table and view of the schema that is missing
    for agg in aggregates():
        if "now()" in agg.select:
            continue  # an arrival time is the store's clock at insert: never made up later
        if _count(store, agg.table) == 0:
            store.query(f"INSERT INTO {agg.table} {agg.select}")
            if _count(store, agg.table):
                done.append(f"{agg.table}: filled from the rows stored before it existed")
    return done


def migrate_triage(store: Store) -> list[str]:
    """A `triage` table with the earlier columns (acknowledgements only) is renamed
    triage_v1, kept as it was, and its rows copied into the new `triage` as changes from
    new to acknowledged. Nothing is dropped."""
    have = [r["name"] for r in store.query(
        "SELECT name FROM system.columns WHERE database = currentDatabase() "
        "AND table = 'triage'")]
    if not have or "change_id" in have:  # today's (`lookup.add_columns` adds the rest)
        return []
    if "action" not in have or "triage_id" not in have:
        raise RuntimeError(f"the store's triage table has columns pitwatch does not know: "
                           f"{', '.join(have)[:200]}")
    store.query("RENAME TABLE triage TO triage_v1")
    store.setup()
    store.query(
        "INSERT INTO triage (change_id, violation_id, action, status, prev_status, "
        "assignee, prev_assignee, disposition, amount, note, who, role, ts, ts_ms) "
        "SELECT triage_id AS change_id, violation_id, "
        "'acknowledge' AS action, 'acknowledged' AS status, 'new' AS prev_status, "
        "'' AS assignee, '' AS prev_assignee, '' AS disposition, toInt64(0) AS amount, "
        "note, who, '' AS role, ts, ts_ms FROM triage_v1")
    return ["triage: the earlier acknowledgements kept in triage_v1 and copied into the "
            "triage workflow"]


def _count(store: Store, table: str) -> int:
    return int(store.query(f"SELECT count() AS n FROM {table}")[0]["n"])


@dataclass(frozen=True, slots=True)
class Filters:
    """What a feed or a search narrows to; empty means any. Each is checked when made.
    Times are device time, UTC ms, [since, until)."""

    severity: str = ""
    code: str = ""
    table: str = ""
    jurisdiction: str = ""
    round: str = ""
    dealer: str = ""
    seat: int | None = None
    since: int | None = None
    until: int | None = None
    unhandled: bool = False

    @classmethod
    def parse(cls, q: dict[str, str]) -> Filters:
        sev = q.get("severity", "").upper()
        if sev and sev not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}")
        code = q.get("code", "").upper()
        if code and not _CODE.match(code):
            raise ValueError(f"not a violation code: {code[:40]!r}")
        ids = {k: q.get(k, "") for k in ("table", "round", "dealer")}
        for k, v in ids.items():
            if v:
                checked_id(v, f"{k} id")
        jur = q.get("jurisdiction", "").upper()
        if jur and jur not in set(pack_jurisdictions().values()):
            raise ValueError(f"unknown jurisdiction {jur[:10]!r}")
        seat = None
        if q.get("seat", ""):
            if not q["seat"].isdigit() or not 1 <= int(q["seat"]) <= 255:
                raise ValueError("seat: a number from 1 to 255")
            seat = int(q["seat"])
        times = {k: _ms(q.get(k, ""), k) for k in ("since", "until")}
        return cls(sev, code, ids["table"], jur, ids["round"], ids["dealer"], seat,
                   times["since"], times["until"], q.get("unhandled", "") in ("1", "on", "true"))

    def query(self) -> dict[str, str]:
        """The filters as URL query values (the inverse of `parse`)."""
        out = {k: v for k, v in (("severity", self.severity), ("code", self.code),
                                 ("table", self.table), ("jurisdiction", self.jurisdiction),
                                 ("round", self.round), ("dealer", self.dealer)) if v}
        if self.seat is not None:
            out["seat"] = str(self.seat)
        for k, t in (("since", self.since), ("until", self.until)):
            if t is not None:
                out[k] = str(t)
        if self.unhandled:
            out["unhandled"] = "1"
        return out

    def matches(self, alert: dict[str, Any], handled: bool = False) -> bool:
        """Whether a live alert passes (a dealer filter needs the store: search)."""
        return ((not self.severity or alert["severity"] == self.severity)
                and (not self.code or alert["code"] == self.code)
                and (not self.table or alert["table_id"] == self.table)
                and (not self.jurisdiction or alert["jurisdiction"] == self.jurisdiction)
                and (not self.round or alert["round_id"] == self.round)
                and (self.seat is None or alert["seat"] == self.seat)
                and (self.since is None or alert["detected_at"] >= self.since)
                and (self.until is None or alert["detected_at"] < self.until)
                and not (self.unhandled and handled) and not self.dealer)

    def where(self, unhandled: bool = True) -> tuple[str, dict[str, Any]]:
        """The SQL condition on `violations` and its parameters. A round, dealer or code
        filter selects its (table, round) pairs from an index table through its sort key
        (schemas/clickhouse/005_lookups.sql: `round_index` by round, `dealer_rounds` by
        dealer, `violation_codes` by severity and code), and `violations` is read
        through its own, (table, round): never a scan of the history. A subquery, not a
        list of the pairs: a dealer's year of rounds is more than a query's text may
        hold. Unhandled reads the triage of the violations the other filters select
        alone, through `triage`'s sort key (violation id), never all of triage; with
        `unhandled` False it is left to the caller (a read back in time asks the triage
        of each window's violations: `lookup.newest_violations`)."""
        conds: list[str] = ["1"]
        params: dict[str, Any] = {}
        pairs = "(table_id, round_id) IN (SELECT table_id, round_id FROM "
        if self.round:
            conds.append(pairs + "round_index WHERE round_id = {round:String})")
        if self.dealer:
            conds.append(pairs + "dealer_rounds WHERE dealer_id = {dealer:String})")
            params["dealer"] = self.dealer
        if self.code:
            conds.append(pairs + "violation_codes WHERE severity IN {sevs:Array(String)} "
                         "AND code = {code:String})")
            params["sevs"] = (self.severity,) if self.severity else SEVERITIES
        for col, key, val in (("severity", "severity", self.severity),
                              ("code", "code", self.code), ("table_id", "table", self.table),
                              ("round_id", "round", self.round)):
            if val:
                conds.append(f"{col} = {{{key}:String}}")
                params[key] = val
        if self.jurisdiction:
            packs = [n for n, j in pack_jurisdictions().items() if j == self.jurisdiction]
            if packs:
                conds.append("has({packs:Array(String)}, pack)")
                params["packs"] = packs
            else:  # no pack of that jurisdiction: no violation (an empty array is no SQL)
                conds.append("0")
        if self.seat is not None:
            conds.append("seat = {seat:UInt8}")
            params["seat"] = self.seat
        if self.since is not None:
            conds.append("toUInt64(detected_at) * 1000 + detected_ms >= {since:UInt64}")
            params["since"] = self.since
        if self.until is not None:
            conds.append("toUInt64(detected_at) * 1000 + detected_ms < {until:UInt64}")
            params["until"] = self.until
        if self.unhandled and unhandled:
            conds.append("violation_id NOT IN (SELECT violation_id FROM triage WHERE "
                         "violation_id IN (SELECT violation_id FROM violations WHERE "
                         f"{' AND '.join(conds)}))")
        return " AND ".join(conds), params


def _window_of(f: Filters, since_s: int | None) -> tuple[int, int | None]:
    """The detection seconds a read back in time spans for `f`: from its `since` (and
    `since_s`), to its `until`'s second."""
    floor = max(since_s or 0, (f.since or 0) // 1000)
    return floor, None if f.until is None else f.until // 1000


def _ms(value: str, what: str) -> int | None:
    if not value:
        return None
    if not value.isdigit() or len(value) > 15:
        raise ValueError(f"{what}: a time in ms since 1970 (UTC)")
    return int(value)


def state_of(change: dict[str, Any]) -> dict[str, Any]:
    """A violation's triage state from its newest change."""
    return {"status": change["status"], "assignee": change["assignee"],
            "disposition": change["disposition"], "amount": int(change["amount"]),
            "who": change["who"], "at": int(change["at"]), "note": change["note"]}


def alert(v: dict[str, Any], jurisdictions: dict[str, str]) -> dict[str, Any]:
    """A violation as the feed shows it, from `Violation.to_json()`."""
    return {
        "violation_id": v["violation_id"], "code": v["code"], "severity": v["severity"],
        "table_id": v["table_id"], "round_id": v["round_id"], "seat": v["seat"],
        "hand": v["hand"], "event_id": v["event_id"], "citation": v["citation"],
        "message": v["message"], "pack": v["pack"], "pack_version": v["pack_version"],
        "detected_at": v["detected_at"], "jurisdiction": jurisdictions.get(v["pack"], ""),
    }


def stored_alert(row: dict[str, Any], jurisdictions: dict[str, str]) -> dict[str, Any]:
    """A row of `violations` selected as `VIOLATION_COLUMNS` as the feed shows it, under
    the id the store keys it by (`violation_from_row`)."""
    return alert({**violation_from_row(row).to_json(), "violation_id": row["violation_id"]},
                 jurisdictions)


#: The triage changes the feed's first read brings besides those of the violations it
#: shows: those of the last day (ms, the store's clock), from which its poller goes on.
FIRST_TRIAGE_MS = 24 * 3_600_000

#: Hours of a table's record its page's dealer summary covers: the rounds started in
#: the hour of its last event and the 23 before it (a table's whole record is its
#: search, by table and time).
DEALER_HOURS = 24


class ConsoleData:
    """The console's queries over one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.jurisdictions = pack_jurisdictions()

    # --- violations and triage ------------------------------------------------------

    def violations(self, f: Filters, limit: int = 200,
                   since_ms: int | None = None) -> list[dict[str, Any]]:
        """The newest violations that pass the filters (device time at or after
        `since_ms` when given: a poll reads only the recent partitions)."""
        return [stored_alert(r, self.jurisdictions) for r in self._newest(f, limit, since_ms).rows]

    def _newest(self, f: Filters, want: int, since_ms: int | None = None) -> lookup.Back:
        """The `want` newest violations that pass the filters: a round, dealer or code
        filter selects its rounds through its index table (`Filters.where`); any other
        reads back in windows of detection time (`lookup.newest_violations`), as far as
        its budget of violations examined (`Back.reached`)."""
        indexed = bool(f.round or f.dealer or f.code)
        where, params = f.where(unhandled=indexed)
        since_s = max(0, since_ms // 1000) if since_ms is not None else None
        if since_s is not None:
            where += " AND detected_at >= toDateTime({since_s:UInt32})"
            params["since_s"] = since_s
        order = "detected DESC, violation_id"
        if indexed:
            return lookup.Back(self.store.query(
                f"SELECT {VIOLATION_COLUMNS} FROM violations FINAL WHERE {where} "
                f"ORDER BY {order} LIMIT {int(want)}", params), None)
        floor, until = _window_of(f, since_s)
        return lookup.newest_violations(self.store, VIOLATION_COLUMNS, where, params, order,
                                        want, floor, until, table_id=f.table or None,
                                        unhandled=f.unhandled)

    def found_since(self, since_s: int, limit: int = 1000) -> list[dict[str, Any]]:
        """Violations the store received at or after `since_s` (its own clock)."""
        # the ids received from the months of arrival since then, their (table, round)
        # through `violation_ids`, their rows through `violations`' sort key
        received = ("SELECT violation_id FROM violations_found "
                    "WHERE month >= toStartOfMonth(toDate(toDateTime({s:UInt32}))) "
                    "GROUP BY violation_id HAVING toUInt32(minMerge(found)) >= {s:UInt32}")
        rows = self.store.query(
            f"SELECT {VIOLATION_COLUMNS} FROM violations FINAL WHERE (table_id, round_id) IN "
            f"(SELECT table_id, round_id FROM violation_ids WHERE violation_id IN ({received})) "
            f"AND violation_id IN ({received}) "
            f"ORDER BY detected DESC, violation_id LIMIT {int(limit)}", {"s": since_s})
        return [stored_alert(r, self.jurisdictions) for r in rows]

    def poll(self, since_s: int | None, triage_after_ms: int | None) -> Polled:
        """What the feed's poller brings: the newest violations (first read) or those
        received since `since_s`, the triage changes after `triage_after_ms` (none
        given: those of the violations it brings, by their ids, and those of the last
        `FIRST_TRIAGE_MS`, never all of triage), and the store's clock."""
        now_ms = self.store_now_ms()
        alerts = (self.violations(Filters(), 200) if since_s is None
                  else self.found_since(since_s))
        if triage_after_ms is not None:
            return Polled(alerts, self.triage(limit=1000, after_ms=triage_after_ms),
                          now_ms // 1000)
        changes = {c["change_id"]: c for c in [
            *self.triage([a["violation_id"] for a in alerts], limit=1000),
            *self.triage(limit=1000, after_ms=now_ms - FIRST_TRIAGE_MS)]}
        return Polled(alerts, sorted(changes.values(), key=lambda c: (-c["at"], c["change_id"])),
                      now_ms // 1000)

    def violation(self, violation_id: str) -> dict[str, Any]:
        vid = checked_id(violation_id, "violation id")
        # its table and round from the index by id, then its row through `violations`'
        # sort key (pitwatch/store/lookup.py)
        rows = lookup.violations_by_id(self.store, [vid], VIOLATION_COLUMNS)
        if not rows:
            raise NotFound(f"no violation {vid}")
        return stored_alert(rows[0], self.jurisdictions)

    def search(self, f: Filters, offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """The violations that pass the filters, newest first: counts by severity, a
        page of `limit` from `offset`, and each one's triage. A filter an index selects
        (round, dealer, code, severity) is counted and paged over the whole store; any
        other reads back in time as far as `lookup.BUDGET` violations examined, and then
        says how far (`reached`, ms: its counts and pages are of the violations
        detected since; `exact` False); a search with `until` before it reads on."""
        counts, reached = self._counts(f)
        got = self._newest(f, int(offset) + int(limit))
        found = [stored_alert(r, self.jurisdictions) for r in got.rows[int(offset):]]
        if reached is None and got.reached is not None:
            reached = got.reached
        return {"total": sum(counts.values()),
                "counts": {s: counts.get(s, 0) for s in SEVERITIES},
                "exact": reached is None,
                "reached": None if reached is None else reached * 1000,
                "offset": offset, "limit": limit, "alerts": found,
                "states": self.states([a["violation_id"] for a in found])}

    def _counts(self, f: Filters) -> tuple[dict[str, int], int | None]:
        """How many violations pass the filters, by severity, and the second the count
        reached back to when it stopped on its budget (None: the whole store): a filter
        of severity and code (and table) counted in `violation_codes` (severity, then
        code, is its sort key; a row a violation), reading what matches; a round, dealer
        or code filter in the rounds its index selects; any other back in windows of
        detection time (`lookup.count_violations`)."""
        indexed = bool(f.round or f.dealer or f.code)
        where, params = f.where(unhandled=indexed)
        if f.severity and f == Filters(severity=f.severity, code=f.code, table=f.table):
            conds, cparams = ["1"], dict[str, Any]()
            for col, val in (("severity", f.severity), ("code", f.code),
                             ("table_id", f.table)):
                if val:
                    conds.append(f"{col} = {{{col}:String}}")
                    cparams[col] = val
            return {r["severity"]: int(r["n"]) for r in self.store.query(
                "SELECT severity, count() AS n FROM violation_codes FINAL WHERE "
                f"{' AND '.join(conds)} GROUP BY severity", cparams)}, None
        if indexed:
            return {r["severity"]: int(r["n"]) for r in self.store.query(
                f"SELECT severity, count() AS n FROM violations FINAL WHERE {where} "
                "GROUP BY severity", params)}, None
        floor, until = _window_of(f, None)
        got = lookup.count_violations(self.store, where, params, floor, until,
                                      table_id=f.table or None, unhandled=f.unhandled)
        return {r["severity"]: int(r["n"]) for r in got.rows}, got.reached

    def stored_ids(self, violation_ids: list[str]) -> set[str]:
        """Which of these violations the store holds."""
        return lookup.stored_violations(self.store, violation_ids)

    def pinned(self, limit: int = 50) -> dict[str, Any]:
        """Unhandled CRITICALs (no triage change yet), newest first, and how many."""
        # the CRITICALs not yet taken out of `pinned_open` (what is pinned, a row each
        # once merged), those of them with a triage change through `triage`'s sort key
        # (violation id), then their rows by id: never every CRITICAL of the history
        ids = lookup.pinned_open(self.store)
        if ids:
            ids -= {r["violation_id"] for r in self.store.query(
                "SELECT DISTINCT violation_id FROM triage WHERE violation_id IN "
                "{ids:Array(String)}", {"ids": tuple(sorted(ids))})}
        rows = sorted(lookup.violations_by_id(self.store, ids, VIOLATION_COLUMNS),
                      key=lambda r: (-int(r["detected"]), r["violation_id"]))
        rows = [r for r in rows if r["severity"] == "CRITICAL"]
        return {"total": len(rows),
                "alerts": [stored_alert(r, self.jurisdictions) for r in rows[:int(limit)]]}

    # --- triage: the workflow's record -----------------------------------------------

    _CHANGE_COLS = ("change_id, violation_id, action, status, prev_status, assignee, "
                    "prev_assignee, disposition, amount, note, who, role, "
                    "toUInt64(ts) * 1000 + ts_ms AS at")

    def triage(self, violation_ids: Iterable[str] | None = None, limit: int = 500,
               after_ms: int | None = None) -> list[dict[str, Any]]:
        """Triage changes, newest first: all, those of the given violations, or those
        made after `after_ms`."""
        conds, params = ["1"], dict[str, Any]()
        if violation_ids is not None:
            ids = [checked_id(v, "violation id") for v in violation_ids]
            if not ids:
                return []
            # IN, which reads through `triage`'s sort key (violation id) on 18.16 too
            conds.append("violation_id IN {ids:Array(String)}")
            params["ids"] = tuple(sorted(set(ids)))
        if after_ms is not None:  # the seconds first: the months' partitions alone
            conds.append("ts >= toDateTime({after_s:UInt32}) "
                         "AND toUInt64(ts) * 1000 + ts_ms > {after:UInt64}")
            params["after"], params["after_s"] = after_ms, max(0, after_ms // 1000)
        rows = self.store.query(
            f"SELECT {self._CHANGE_COLS} FROM triage WHERE {' AND '.join(conds)} "
            f"ORDER BY at DESC, change_id LIMIT {int(limit)}", params)
        return [{**r, "at": int(r["at"]), "amount": int(r["amount"])} for r in rows]

    def states(self, violation_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Each violation's current triage state (its newest change); a violation
        without one is new and not in the answer."""
        out: dict[str, dict[str, Any]] = {}
        for r in reversed(self.triage(violation_ids, limit=100_000)):
            out[r["violation_id"]] = state_of(r)
        return out

    def apply(self, violation_id: str, change: Change, user: str, role: str,
              at_ms: int, table_id: str | None = None) -> dict[str, Any]:
        """Check a change against the violation's current state and append it (the
        violation is never touched); Refused when the role or the state forbids it.
        `table_id`: the violation's casino table (the row carries it: a cluster keeps
        the change on the violation's shard), looked up when not given."""
        vid = checked_id(violation_id, "violation id")
        if table_id is None:
            table_id = lookup.violation_tables(self.store, [vid]).get(vid, "")
        cur = self.states([vid]).get(vid)
        before = State(cur["status"], cur["assignee"]) if cur else State()
        after = check(change, role, before)
        content = [vid, change.action, after.status, after.assignee, change.disposition,
                   change.amount, change.note, user, role, at_ms, before.status]
        cid = hashlib.sha256(orjson.dumps(content)).hexdigest()[:32]
        row = {"change_id": cid, "violation_id": vid, "action": change.action,
               "status": after.status, "prev_status": before.status,
               "assignee": after.assignee, "prev_assignee": before.assignee,
               "disposition": change.disposition if change.action == "close" else "",
               "amount": change.amount if change.disposition == "confirmed" else 0,
               "note": change.note, "who": user, "role": role,
               "ts": at_ms // 1000, "ts_ms": at_ms % 1000, "table_id": table_id}
        self.store.insert("triage", [row])
        out = {k: v for k, v in row.items() if k not in ("ts", "ts_ms")}
        return {**out, "at": at_ms}

    # --- the floor ------------------------------------------------------------------

    def latest_event_ms(self) -> int | None:
        rows = self.store.query("SELECT maxMerge(last_ms) AS m, count() AS n "
                                "FROM table_span")
        return int(rows[0]["m"]) if rows and int(rows[0]["n"]) else None

    def store_now_ms(self) -> int:
        """The store's own clock: the processing clock the arrival times are on."""
        return int(self.store.query("SELECT toUInt32(now()) AS n")[0]["n"]) * 1000

    def floor(self, now_ms: int, silent_after_ms: int, day_start_ms: int,
              clock: str = "arrival") -> list[dict[str, Any]]:
        """Every table: game, jurisdiction, open round, its last event (device time),
        and its silence and violations this gaming day on the `clock`:

        - "arrival" (a live floor): when its newest event ARRIVED in the store, against
          the store's now (`now_ms`); violations by when they were found. A table with
          no arrival time (its rows predate the arrival aggregate) has age None.
        - "store" (a recorded shift): its newest device time against the newest device
          time in the store (`now_ms`); violations by device time.
        """
        activity = self.store.query(
            "SELECT table_id, maxMerge(last_ms) AS last_ms, "
            "argMaxMerge(last_round) AS last_round "
            "FROM table_span GROUP BY table_id ORDER BY table_id")
        # a row a table each (schemas/clickhouse/022_spans.sql), not a table and month
        posted = {r["table_id"]: r for r in self.store.query(
            "SELECT table_id, argMaxIfMerge(jurisdiction) AS jurisdiction, "
            "argMaxIfMerge(game) AS game FROM table_opened GROUP BY table_id")}
        arrived = {r["table_id"]: int(r["a"]) * 1000 for r in self.store.query(
            "SELECT table_id, toUInt32(maxMerge(arrived)) AS a FROM table_arrived "
            "GROUP BY table_id")}
        before = sorted({r["table_id"] for r in activity} - arrived.keys())
        if before:  # rows that arrived before `table_arrived` was: by their days
            arrived.update({r["table_id"]: int(r["a"]) * 1000 for r in self.store.query(
                "SELECT table_id, toUInt32(maxMerge(arrived)) AS a FROM table_arrival "
                "WHERE table_id IN {t:Array(String)} GROUP BY table_id", {"t": tuple(before)})})
        latest = [(r["table_id"], r["last_round"]) for r in activity]
        finished = self._closed(latest)
        today: dict[str, dict[str, int]] = {}
        if clock == "arrival":
            counted = self.store.query(
                "SELECT table_id, severity, count() AS n FROM (SELECT table_id, "
                "violation_id, severity, toUInt32(minMerge(found)) AS f "
                "FROM violations_found GROUP BY table_id, violation_id, severity) "
                "WHERE f >= {day:UInt32} GROUP BY table_id, severity",
                {"day": day_start_ms // 1000})
        else:
            counted = self.store.query(  # the day's (table, round)s by `violation_times`
                "SELECT table_id, severity, count() AS n FROM violations FINAL "
                "WHERE (table_id, round_id) IN (SELECT table_id, round_id FROM "
                "violation_times WHERE detected_at >= toDateTime({day_s:UInt32})) "
                "AND detected_at >= toDateTime({day_s:UInt32}) "
                "AND toUInt64(detected_at) * 1000 + detected_ms >= {day:UInt64} "
                "GROUP BY table_id, severity",
                {"day": day_start_ms, "day_s": min(day_start_ms // 1000, 2**32 - 1)})
        for r in counted:
            today.setdefault(r["table_id"], {})[r["severity"]] = int(r["n"])
        out = []
        for r in activity:
            t = r["table_id"]
            last = int(r["last_ms"])
            open_round = r["last_round"] if r["last_round"] and \
                r["last_round"] not in finished else ""
            seen = arrived.get(t) if clock == "arrival" else last
            age = None if seen is None else max(0, now_ms - seen)
            out.append({
                "table_id": t, "game": posted.get(t, {}).get("game", ""),
                "jurisdiction": posted.get(t, {}).get("jurisdiction", ""),
                "open_round": open_round, "last_event": last, "arrived": seen,
                "age_ms": age, "silent": age is not None and age > silent_after_ms,
                "today": {s: today.get(t, {}).get(s, 0) for s in SEVERITIES},
            })
        return out

    def _closed(self, pairs: list[tuple[str, str]]) -> set[str]:
        """Which of these (table, round)s have a summary: their spans of device time
        from `round_index` (round id first), then `rounds` through its sort key (table,
        round) in the months they started in alone (a round starts within its events'
        span)."""
        pairs = [(t, r) for t, r in pairs if r]
        if not pairs:  # no table has a round: nothing to ask (an empty IN is no SQL)
            return set()
        rounds = tuple(sorted({r for _, r in pairs}))
        spans = self.store.query(
            "SELECT toUInt32(minMerge(began)) AS a, toUInt32(maxMerge(ended)) AS z, "
            "count() AS n FROM round_index WHERE round_id IN {r:Array(String)}",
            {"r": rounds})
        if not spans or not int(spans[0]["n"]):
            return set()
        return {r["round_id"] for r in self.store.query(
            "SELECT round_id FROM rounds WHERE table_id IN {t:Array(String)} "
            "AND round_id IN {r:Array(String)} AND started >= toDateTime({a:UInt32}) "
            "AND started <= toDateTime({z:UInt32})",
            {"t": tuple(sorted({t for t, _ in pairs})), "r": rounds,
             "a": int(spans[0]["a"]), "z": int(spans[0]["z"])})}

    def tables(self) -> list[str]:
        return [r["table_id"] for r in self.store.query(
            "SELECT DISTINCT table_id FROM table_span ORDER BY table_id")]

    # --- a shift ----------------------------------------------------------------------

    def shift(self, lo_ms: int, hi_ms: int) -> list[dict[str, Any]]:
        """Rounds started in [lo, hi) (device time) by table and dealer: rounds,
        incomplete rounds, money, findings by severity, and the money confirmed moved
        wrongly (closed as confirmed in triage)."""
        rounds = self.store.query(
            "SELECT table_id, dealer_id, any(jurisdiction) AS jurisdiction, "
            "count() AS rounds, countIf(complete = 0) AS incomplete, "
            "sum(wagered) AS wagered, sum(paid) AS paid, sum(collected) AS collected, "
            "groupArray(round_id) AS ids FROM rounds FINAL "
            # the rounds started in the shift through `round_starts`' sort key (table,
            # start) of each table the store holds, then `rounds`' own (table, round)
            "WHERE (table_id, round_id) IN (SELECT table_id, round_id FROM round_starts "
            "WHERE table_id IN (SELECT DISTINCT table_id FROM table_devices) "
            "AND started >= toDateTime({los:UInt32}) AND started <= toDateTime({his:UInt32})) "
            "AND started >= toDateTime({los:UInt32}) AND started <= toDateTime({his:UInt32}) "
            "AND toUInt64(started) * 1000 + started_ms >= {lo:UInt64} "
            "AND toUInt64(started) * 1000 + started_ms < {hi:UInt64} "
            "GROUP BY table_id, dealer_id ORDER BY table_id, dealer_id",
            {"lo": lo_ms, "hi": hi_ms, "los": lo_ms // 1000,
             "his": min(hi_ms // 1000, 2**32 - 1)})
        out = []
        for r in rounds:
            pairs = [(r["table_id"], rid) for rid in r["ids"]]
            by_sev: dict[str, list[str]] = {}
            for v in lookup.violations_of(self.store, pairs,
                                          "table_id, round_id, violation_id, severity"):
                by_sev.setdefault(v["severity"], []).append(v["violation_id"])
            vids = [v for ids in by_sev.values() for v in ids]
            states = self.states(vids) if vids else {}
            confirmed = sum(int(s["amount"]) for s in states.values()
                            if s["disposition"] == "confirmed")
            out.append({
                "table_id": r["table_id"], "dealer_id": r["dealer_id"],
                "jurisdiction": r["jurisdiction"], "rounds": int(r["rounds"]),
                "incomplete": int(r["incomplete"]), "wagered": int(r["wagered"]),
                "paid": int(r["paid"]), "collected": int(r["collected"]),
                "findings": {s: len(by_sev.get(s, ())) for s in SEVERITIES},
                "confirmed_cents": confirmed,
                "unhandled": sum(1 for v in vids if v not in states),
            })
        return out

    # --- a table and its rounds -----------------------------------------------------

    def table(self, table_id: str, limit: int = 300) -> dict[str, Any]:
        t = checked_id(table_id, "table id")
        # the latest rounds' ids from `round_starts` read back in time, then their
        # summaries through `rounds`' sort key (table, round)
        newest = lookup.rounds_back(self.store, t, limit)
        rounds = sorted(self.store.query(
            "SELECT round_id, dealer_id, jurisdiction, game, pack, pack_version, events, "
            "wagered, paid, collected, returned, violations, complete, "
            "toUInt64(started) * 1000 + started_ms AS started_at "
            "FROM rounds FINAL WHERE table_id = {t:String} AND round_id IN "
            "{r:Array(String)} AND started >= toDateTime({a:UInt32}) AND started <= "
            "toDateTime({z:UInt32})",  # their months' partitions alone
            {"t": t, "r": tuple(sorted({r for r, _, _ in newest})),
             "a": min(s for _, s, _ in newest), "z": max(s for _, s, _ in newest)}),
            key=lambda r: (-int(r["started_at"]), r["round_id"]))[:limit] if newest else []
        # the dealers of the rounds started in the last `DEALER_HOURS` of the table's
        # record (its last event's hour and those before), through `rounds_hourly`'
        # sort key (table, hour): as many rows with a year of the table as with a day
        top = self.store.query("SELECT intDiv(maxMerge(last_ms), 1000) AS m, count() AS n "
                               "FROM table_span WHERE table_id = {t:String}", {"t": t})
        dealers: list[dict[str, Any]] = []
        window: tuple[int, int] | None = None
        if top and int(top[0]["n"]):
            last = int(top[0]["m"])
            since = last - last % 3600 - (DEALER_HOURS - 1) * 3600
            window = (max(0, since) * 1000, last * 1000)
            dealers = self.store.query(
                "SELECT dealer_id, count() AS rounds, sum(violations) AS violations, "
                "sum(wagered) AS wagered, sum(paid) AS paid, sum(collected) AS collected, "
                "min(hour) AS first_hour, max(hour) AS last_hour "
                "FROM rounds_hourly FINAL WHERE table_id = {t:String} "
                "AND hour >= toDateTime({a:UInt32}) AND hour <= toDateTime({z:UInt32}) "
                "GROUP BY dealer_id ORDER BY rounds DESC, dealer_id",
                {"t": t, "a": max(0, since), "z": last})
        if not rounds and lookup.table_extent(self.store, t) is None:
            raise NotFound(f"no table {t} in the store")
        for r in rounds:
            r["started_at"] = int(r["started_at"])
        posted = self.store.query(
            "SELECT argMaxIfMerge(jurisdiction) AS jurisdiction, argMaxIfMerge(game) AS game "
            "FROM table_opened WHERE table_id = {t:String}", {"t": t})
        return {"table_id": t, "rounds": rounds, "dealers": dealers,
                "dealers_window": window,
                "jurisdiction": posted[0]["jurisdiction"] if posted else "",
                "game": posted[0]["game"] if posted else ""}

    def round(self, round_id: str) -> dict[str, Any]:
        """The round's events in table order (as the auditor folded them), its summary
        (None while open) and its violations."""
        rid = checked_id(round_id, "round id")
        # through the index tables (pitwatch/store/lookup.py), never a scan of history:
        # the round's table and span, its events by position, its summary and its
        # violations through their tables' sort key (table, round)
        rows = lookup.round_rows(self.store, rid)
        if not rows:
            raise NotFound(f"no round {rid} in the store")
        events = [stored_json(r) for r in rows]
        table_id = rows[0]["table_id"]
        summary = self.store.query(
            "SELECT round_id, table_id, jurisdiction, game, pack, pack_version, dealer_id, "
            "wagered, paid, collected, returned, violations, complete, "
            "toUInt64(started) * 1000 + started_ms AS started_at, "
            "toUInt64(ended) * 1000 + ended_ms AS ended_at "
            "FROM rounds FINAL WHERE table_id = {t:String} AND round_id = {r:String}",
            {"t": table_id, "r": rid})
        found = sorted(lookup.violations_of(self.store, [(table_id, rid)], VIOLATION_COLUMNS),
                       key=lambda v: (int(v["detected"]), v["violation_id"]))
        violations = [stored_alert(v, self.jurisdictions) for v in found]
        ids = [v["violation_id"] for v in violations]
        return {"round_id": rid, "table_id": table_id, "events": events,
                "summary": summary[0] if summary else None, "violations": violations,
                "triage": self.triage(ids)}
