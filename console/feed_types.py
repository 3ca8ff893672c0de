"""What the store's poller hands the live feed (shared by data.py and feed.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Polled:
    """One poll of the store: violations to show, triage changes, the store's clock."""

    alerts: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    store_now_s: int
