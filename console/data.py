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
from pitwatch.store.base import Store, columns, ddl_statements
from pitwatch.store.rows import EVENT_COLUMNS, stored_json

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
SEVERITIES = tuple(s.value for s in Severity)
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}


class NotFound(LookupError):
    """No such table, round or violation in the store."""


def checked_id(value: str, what: str) -> str:
    """An id safe to put in SQL text, or ValueError naming what was wrong."""
    if not _ID.match(value):
        raise ValueError(f"not a valid {what}: {value[:40]!r}")
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
        if have and have != columns(agg.table):
            store.query(f"DROP TABLE IF EXISTS {agg.view}")
            store.query(f"DROP TABLE IF EXISTS {agg.table}")
            done.append(f"{agg.table}: made again to the current schema")
    store.setup()  # every table and view of the schema that is missing
    for agg in aggregates():
        if _count(store, agg.table) == 0:
            store.query(f"INSERT INTO {agg.table} {agg.select}")
            if _count(store, agg.table):
                done.append(f"{agg.table}: filled from the rows stored before it existed")
    return done


def _count(store: Store, table: str) -> int:
    return int(store.query(f"SELECT count() AS n FROM {table}")[0]["n"])


@dataclass(frozen=True, slots=True)
class Filters:
    """The feed's filters; empty means any. Each is checked when made."""

    severity: str = ""
    code: str = ""
    table: str = ""
    jurisdiction: str = ""

    @classmethod
    def parse(cls, q: dict[str, str]) -> Filters:
        sev = q.get("severity", "").upper()
        if sev and sev not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}")
        code = q.get("code", "").upper()
        if code and not _CODE.match(code):
            raise ValueError(f"not a violation code: {code[:40]!r}")
        table = q.get("table", "")
        if table:
            checked_id(table, "table id")
        jur = q.get("jurisdiction", "").upper()
        if jur and jur not in set(pack_jurisdictions().values()):
            raise ValueError(f"unknown jurisdiction {jur[:10]!r}")
        return cls(sev, code, table, jur)

    def matches(self, alert: dict[str, Any]) -> bool:
        return ((not self.severity or alert["severity"] == self.severity)
                and (not self.code or alert["code"] == self.code)
                and (not self.table or alert["table_id"] == self.table)
                and (not self.jurisdiction or alert["jurisdiction"] == self.jurisdiction))

    def where(self) -> tuple[str, dict[str, Any]]:
        """The SQL condition and its parameters."""
        conds: list[str] = ["1"]
        params: dict[str, Any] = {}
        if self.severity:
            conds.append("severity = {severity:String}")
            params["severity"] = self.severity
        if self.code:
            conds.append("code = {code:String}")
            params["code"] = self.code
        if self.table:
            conds.append("table_id = {table:String}")
            params["table"] = self.table
        if self.jurisdiction:
            conds.append("has({packs:Array(String)}, pack)")
            params["packs"] = [n for n, j in pack_jurisdictions().items()
                               if j == self.jurisdiction]
        return " AND ".join(conds), params


def alert(v: dict[str, Any], jurisdictions: dict[str, str]) -> dict[str, Any]:
    """A violation as the feed shows it, from a store row or `Violation.to_json()`."""
    seat = v.get("seat") or None
    hand = v.get("hand")
    detected = int(v["detected"]) if "detected" in v else int(v["detected_at"])
    return {
        "violation_id": v["violation_id"], "code": v["code"], "severity": v["severity"],
        "table_id": v["table_id"], "round_id": v["round_id"], "seat": seat,
        "hand": None if hand is None or hand < 0 else hand, "event_id": v["event_id"],
        "citation": v["citation"], "message": v["message"], "pack": v["pack"],
        "pack_version": v["pack_version"], "detected_at": detected,
        "jurisdiction": jurisdictions.get(v["pack"], ""),
    }


_VIOLATION_COLS = ("violation_id, code, severity, table_id, round_id, seat, hand, event_id, "
                   "citation, message, pack, pack_version, "
                   "toUInt64(detected_at) * 1000 + detected_ms AS detected")


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
        where, params = f.where()
        if since_ms is not None:
            where += " AND detected_at >= toDateTime({since:UInt32})"
            params["since"] = max(0, since_ms // 1000)
        rows = self.store.query(
            f"SELECT {_VIOLATION_COLS} FROM violations FINAL WHERE {where} "
            f"ORDER BY detected DESC, violation_id LIMIT {int(limit)}", params)
        return [alert(r, self.jurisdictions) for r in rows]

    def violation(self, violation_id: str) -> dict[str, Any]:
        vid = checked_id(violation_id, "violation id")
        rows = self.store.query(
            f"SELECT {_VIOLATION_COLS} FROM violations FINAL "
            "WHERE violation_id = {vid:String}", {"vid": vid})
        if not rows:
            raise NotFound(f"no violation {vid}")
        return alert(rows[0], self.jurisdictions)

    def triage(self, violation_ids: Iterable[str] | None = None,
               limit: int = 500) -> list[dict[str, Any]]:
        """Triage rows, newest first: all of them, or those of the given violations."""
        where, params = "1", dict[str, Any]()
        if violation_ids is not None:
            ids = [checked_id(v, "violation id") for v in violation_ids]
            if not ids:
                return []
            where, params = "has({ids:Array(String)}, violation_id)", {"ids": ids}
        rows = self.store.query(
            "SELECT triage_id, violation_id, action, who, note, "
            f"toUInt64(ts) * 1000 + ts_ms AS at FROM triage WHERE {where} "
            f"ORDER BY at DESC, triage_id LIMIT {int(limit)}", params)
        return [{**r, "at": int(r["at"])} for r in rows]

    def add_triage(self, violation_id: str, action: str, who: str, note: str,
                   at_ms: int) -> dict[str, Any]:
        """Append one triage row; the violation is never touched."""
        vid = checked_id(violation_id, "violation id")
        tid = hashlib.sha256(orjson.dumps([vid, action, who, note, at_ms])).hexdigest()[:32]
        row = {"triage_id": tid, "violation_id": vid, "action": action, "who": who,
               "note": note, "ts": at_ms // 1000, "ts_ms": at_ms % 1000}
        self.store.insert("triage", [row])
        return {"triage_id": tid, "violation_id": vid, "action": action, "who": who,
                "note": note, "at": at_ms}

    # --- the floor ------------------------------------------------------------------

    def latest_event_ms(self) -> int | None:
        rows = self.store.query("SELECT maxMerge(last_ms) AS m, count() AS n "
                                "FROM table_activity")
        return int(rows[0]["m"]) if rows and int(rows[0]["n"]) else None

    def floor(self, now_ms: int, silent_after_ms: int) -> list[dict[str, Any]]:
        """Every table: game, jurisdiction, open round, age of its last event, silent or
        not, and violations today (the UTC day of `now_ms`) by severity."""
        activity = self.store.query(
            "SELECT table_id, maxMerge(last_ms) AS last_ms, "
            "argMaxMerge(last_round) AS last_round "
            "FROM table_activity GROUP BY table_id ORDER BY table_id")
        posted = {r["table_id"]: r for r in self.store.query(
            "SELECT table_id, argMaxIfMerge(jurisdiction) AS jurisdiction, "
            "argMaxIfMerge(game) AS game FROM table_posted GROUP BY table_id")}
        latest = [(r["table_id"], r["last_round"]) for r in activity
                  if _ID.match(r["table_id"]) and _ID.match(r["last_round"])]
        finished = {r["round_id"] for r in self.store.query(
            "SELECT round_id FROM rounds WHERE has({t:Array(String)}, table_id) "
            "AND has({r:Array(String)}, round_id)",
            {"t": [t for t, _ in latest], "r": [r for _, r in latest]})} if latest else set()
        day_start = now_ms // 86_400_000 * 86_400
        today: dict[str, dict[str, int]] = {}
        for r in self.store.query(
                "SELECT table_id, severity, uniqExactMerge(violations) AS n "
                "FROM violations_hourly WHERE hour >= toDateTime({day:UInt32}) "
                "GROUP BY table_id, severity", {"day": day_start}):
            today.setdefault(r["table_id"], {})[r["severity"]] = int(r["n"])
        out = []
        for r in activity:
            t = r["table_id"]
            last = int(r["last_ms"])
            open_round = r["last_round"] if r["last_round"] and \
                r["last_round"] not in finished else ""
            age = max(0, now_ms - last)
            out.append({
                "table_id": t, "game": posted.get(t, {}).get("game", ""),
                "jurisdiction": posted.get(t, {}).get("jurisdiction", ""),
                "open_round": open_round, "last_event": last, "age_ms": age,
                "silent": age > silent_after_ms,
                "today": {s: today.get(t, {}).get(s, 0) for s in SEVERITIES},
            })
        return out

    def tables(self) -> list[str]:
        return [r["table_id"] for r in self.store.query(
            "SELECT DISTINCT table_id FROM table_activity ORDER BY table_id")]

    # --- a table and its rounds -----------------------------------------------------

    def table(self, table_id: str, limit: int = 300) -> dict[str, Any]:
        t = checked_id(table_id, "table id")
        rounds = self.store.query(
            "SELECT round_id, dealer_id, jurisdiction, game, pack, pack_version, events, "
            "wagered, paid, collected, returned, violations, complete, "
            "toUInt64(started) * 1000 + started_ms AS started_at "
            "FROM rounds FINAL WHERE table_id = {t:String} "
            f"ORDER BY started_at DESC LIMIT {int(limit)}", {"t": t})
        dealers = self.store.query(
            "SELECT dealer_id, count() AS rounds, sum(violations) AS violations, "
            "sum(wagered) AS wagered, sum(paid) AS paid, sum(collected) AS collected, "
            "min(hour) AS first_hour, max(hour) AS last_hour "
            "FROM rounds_hourly FINAL WHERE table_id = {t:String} "
            "GROUP BY dealer_id ORDER BY rounds DESC, dealer_id", {"t": t})
        if not rounds and not self.store.query(
                "SELECT 1 AS x FROM events WHERE table_id = {t:String} LIMIT 1", {"t": t}):
            raise NotFound(f"no table {t} in the store")
        for r in rounds:
            r["started_at"] = int(r["started_at"])
        posted = self.store.query(
            "SELECT argMaxIfMerge(jurisdiction) AS jurisdiction, argMaxIfMerge(game) AS game "
            "FROM table_posted WHERE table_id = {t:String}", {"t": t})
        return {"table_id": t, "rounds": rounds, "dealers": dealers,
                "jurisdiction": posted[0]["jurisdiction"] if posted else "",
                "game": posted[0]["game"] if posted else ""}

    def round(self, round_id: str) -> dict[str, Any]:
        """The round's events in table order (as the auditor folded them), its summary
        (None while open) and its violations."""
        rid = checked_id(round_id, "round id")
        rows = self.store.query(
            f"SELECT {EVENT_COLUMNS} FROM events FINAL WHERE round_id = {{r:String}} "
            "ORDER BY pos, ts, ts_ms", {"r": rid})
        if not rows:
            raise NotFound(f"no round {rid} in the store")
        events = [stored_json(r) for r in rows]
        summary = self.store.query(
            "SELECT round_id, table_id, jurisdiction, game, pack, pack_version, dealer_id, "
            "wagered, paid, collected, returned, violations, complete, "
            "toUInt64(started) * 1000 + started_ms AS started_at, "
            "toUInt64(ended) * 1000 + ended_ms AS ended_at "
            "FROM rounds FINAL WHERE round_id = {r:String}", {"r": rid})
        found = self.store.query(
            f"SELECT {_VIOLATION_COLS} FROM violations FINAL WHERE round_id = {{r:String}} "
            "ORDER BY detected, violation_id", {"r": rid})
        violations = [alert(v, self.jurisdictions) for v in found]
        ids = [v["violation_id"] for v in violations]
        return {"round_id": rid, "table_id": events[0]["table_id"], "events": events,
                "summary": summary[0] if summary else None, "violations": violations,
                "triage": self.triage(ids)}
