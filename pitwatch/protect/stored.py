"""Observations into the store's `observations` table (schemas/clickhouse/
015_observations.sql), through the store's one writer path (`Store.insert`): a row per
observation id, which a ReplacingMergeTree keeps once, so storing the observations of
the same record again changes nothing."""

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


def store_observations(store: Store, observations: Iterable[Observation]) -> int:
    """Write the observations to the store; how many rows were written."""
    rows = [observation_row(o) for o in observations]
    store.insert(TABLE, rows)
    sync = getattr(store, "sync", None)
    if sync is not None:
        sync()
    return len(rows)
