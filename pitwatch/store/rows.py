"""Rows of the three tables, from events, round summaries and violations. Times are
split into DateTime seconds plus a milliseconds column (the subset ClickHouse 18.16
and chDB share)."""

from __future__ import annotations

from typing import Any

from ..engine.auditor import RoundSummary
from ..engine.violation import Violation
from ..events.avro import writer_fingerprint
from ..events.jsonl import dumps
from ..events.model import Event
from .base import column_names


def event_values(ev: Event, pos: int) -> tuple[Any, ...]:
    """The event's row of `events` as a tuple in DDL order (schemas/clickhouse): what a
    batch writer transposes into columns, with no dict a row."""
    p = ev.payload
    hand = getattr(p, "hand", None)
    ts = ev.ts
    return (ev.event_id, ev.table_id, ev.device_id, ev.seq, ts // 1000, ts % 1000,
            ev.round_id or "", type(p).__name__, getattr(p, "seat", None) or 0,
            -1 if hand is None else hand, getattr(p, "kind", ""), getattr(p, "amount", 0),
            pos, dumps(ev).decode(), writer_fingerprint(ev))


def event_row(ev: Event, pos: int) -> dict[str, Any]:
    return dict(zip(column_names("events"), event_values(ev, pos), strict=True))


def round_row(s: RoundSummary) -> dict[str, Any]:
    return {
        "round_id": s.round_id, "table_id": s.table_id, "jurisdiction": s.jurisdiction,
        "game": s.game, "pack": s.pack, "pack_version": s.pack_version,
        "dealer_id": s.dealer_id, "seats": list(s.seats), "events": s.events,
        "wagered": s.wagered, "paid": s.paid, "collected": s.collected,
        "returned": s.returned, "violations": s.violations, "complete": int(s.complete),
        "started": s.started // 1000, "started_ms": s.started % 1000,
        "ended": s.ended // 1000, "ended_ms": s.ended % 1000,
    }


def violation_row(v: Violation) -> dict[str, Any]:
    return {
        "violation_id": v.violation_id, "code": v.code, "severity": v.severity,
        "table_id": v.table_id, "round_id": v.round_id, "seat": v.seat or 0,
        "hand": -1 if v.hand is None else v.hand, "event_id": v.event_id,
        "evidence": list(v.evidence), "citation": v.citation, "message": v.message,
        "pack": v.pack, "pack_version": v.pack_version,
        "detected_at": v.detected_at // 1000, "detected_ms": v.detected_at % 1000,
    }
