"""Observations into the store's `observations` table (schemas/clickhouse/
015_observations.sql), through the store's one writer path (`Store.insert`): a row per
observation id, which a ReplacingMergeTree keeps once (the last written), so storing the
observations of the same record again changes nothing and a newer value replaces the
older. The worker publishes the same row on the observations topic
(`observation_message`), and the sink reads it back (`message_row`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import orjson

from ..store.base import Store
from .observation import Observation

TABLE = "observations"


def observation_row(o: Observation) -> dict[str, Any]:
    """The row of an observation: absent figures as the table says (nan, 0, '')."""
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
    }


#: a row's columns, and the ones that are floats (nan travels as JSON null)
ROW_KEYS = frozenset({
    "observation_id", "code", "scope", "table_id", "subject", "seat", "dealer_id",
    "statistic", "value", "p_value", "likelihood_ratio", "strength", "rounds",
    "weight_rounds", "inferred", "player_id", "player_kind", "message", "details"})
_FLOATS = frozenset({"value", "p_value", "likelihood_ratio", "strength"})
_INTS = frozenset({"seat", "rounds", "inferred"})


def observation_message(o: Observation) -> bytes:
    """The observation's row as a message of the observations topic (JSON; nan as
    null, floats exact)."""
    return orjson.dumps(observation_row(o))


def message_row(value: bytes) -> dict[str, Any]:
    """The row a message of the observations topic carries; ValueError naming what is
    wrong when it is not one (the fields, their types)."""
    try:
        row = orjson.loads(value)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from e
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
    if row["seat"] > 255 or row["inferred"] > 1:
        raise ValueError("seat or inferred out of range")
    return row


def store_observations(store: Store, observations: Iterable[Observation]) -> int:
    """Write the observations to the store; how many rows were written."""
    rows = [observation_row(o) for o in observations]
    store.insert(TABLE, rows)
    sync = getattr(store, "sync", None)
    if sync is not None:
        sync()
    return len(rows)
