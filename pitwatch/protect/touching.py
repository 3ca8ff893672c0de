"""Stored observations read back (`observations`, schemas/clickhouse/015_observations.sql)
in their JSON form, and which of them touch a round: what a case folder carries and
what the console's round page shows.

An observation touches a round when it names the round among the rounds that carry its
weight, or it is about the round's table (a hold), the round's dealer (a hold, an error
rate), or a seat session at the round's table that began with the round. Reads go
through the table's sort key (table, subject): a table's observations, and the
dealers' under table ''.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

import orjson

from ..store.base import Store
from .observation import DEALER, SEAT_SESSION, TABLE
from .stored import LIVE

COLUMNS: Final = (
    "observation_id, code, scope, table_id, subject, seat, dealer_id, statistic, value, "
    "p_value, likelihood_ratio, strength, rounds, weight_rounds, inferred, player_id, "
    "player_kind, message, details")


def observation_from_row(r: dict[str, Any]) -> dict[str, Any]:
    """A stored row in the observation's JSON form (`Observation.to_json`): absent
    (or not finite) figures None, `details` an object."""
    def figure(v: Any) -> float | None:  # nan: the test gives the other figure
        return None if v is None or not math.isfinite(float(v)) else float(v)

    try:
        details = orjson.loads(r["details"] or "{}")
    except orjson.JSONDecodeError:
        details = {}
    return {
        "observation_id": r["observation_id"], "code": r["code"], "scope": r["scope"],
        "table_id": r["table_id"], "subject": r["subject"], "seat": int(r["seat"]) or None,
        "dealer_id": r["dealer_id"] or None, "statistic": r["statistic"],
        "value": figure(r["value"]), "p_value": figure(r["p_value"]),
        "likelihood_ratio": figure(r["likelihood_ratio"]),
        "strength": figure(r["strength"]) or 0.0, "rounds": int(r["rounds"]),
        "weight_rounds": list(r["weight_rounds"]), "inferred": bool(int(r["inferred"])),
        "message": r["message"], "details": details if isinstance(details, dict) else {},
        "player_id": r["player_id"] or None, "player_kind": r["player_kind"] or None,
    }


def session_parts(session_id: str, table_id: str) -> tuple[int, str] | None:
    """(seat, first round) of a seat session's id (`TABLE/SEAT/FIRST_ROUND`) at
    `table_id`, or None when the id is not one of that table's."""
    rest = session_id[len(table_id) + 1:] if session_id.startswith(table_id + "/") else ""
    seat, _, first = rest.partition("/")
    if not seat.isdigit() or not first or int(seat) > 255:
        return None
    return int(seat), first


def touches(o: dict[str, Any], table_id: str, round_id: str, dealer_id: str) -> bool:
    """Whether an observation (JSON form) touches a round (see the module's note)."""
    if round_id in o["weight_rounds"]:
        return True
    if o["scope"] == TABLE:
        return bool(o["table_id"] == table_id)
    if o["scope"] == DEALER:
        return bool(o["subject"] == dealer_id)
    parts = (session_parts(o["subject"], table_id)
             if o["scope"] == SEAT_SESSION and o["table_id"] == table_id else None)
    return parts is not None and parts[1] == round_id


def stored(store: Store, table_ids: Iterable[str] = (), dealer_ids: Iterable[str] = ()
           ) -> list[dict[str, Any]]:
    """The observations about these tables (and their seat sessions) and these dealers,
    by table, subject and code; withdrawn ones left out."""
    out: list[dict[str, Any]] = []
    tables, dealers = tuple(sorted(set(table_ids))), tuple(sorted(set(dealer_ids)))
    if tables:
        out += store.query(f"SELECT {COLUMNS} FROM observations FINAL WHERE table_id IN "
                           f"{{t:Array(String)}} AND {LIVE}", {"t": tables})
    if dealers:
        out += store.query(f"SELECT {COLUMNS} FROM observations FINAL WHERE table_id = '' "
                           f"AND subject IN {{d:Array(String)}} AND {LIVE}", {"d": dealers})
    found = [observation_from_row(r) for r in out]
    return sorted(found, key=lambda o: (o["table_id"], o["subject"], o["code"]))


def touching(store: Store, rounds: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """The stored observations that touch any of these (table, round, dealer)."""
    rounds = list(rounds)
    found = stored(store, (t for t, _, _ in rounds), (d for _, _, d in rounds if d))
    return [o for o in found if any(touches(o, t, r, d) for t, r, d in rounds)]
