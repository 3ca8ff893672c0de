"""The Grafana provisioning's SQL (panels, variables, alert rules, macros expanded)
against the test ClickHouse server (18.16): the same checks as on chDB in
tests/unit/test_grafana_sql.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.producers.simulate import Floor
from pitwatch.store.server import ServerStore
from tests.unit.test_grafana_sql import check_provisioning, money_in_dollars

pytestmark = pytest.mark.integration
CH_HOST, CH_PORT = "127.0.0.1", int(os.environ.get("CLICKHOUSE_TCP_PORT", "19000"))


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[ServerStore, str, int, int]]:
    db = "g" + uuid.uuid4().hex[:10]
    store = ServerStore(CH_HOST, CH_PORT, db)
    try:
        store.setup()
        events = list(Floor(4, 15, seed=31, inject=0.3).events())
        audit_events(events, store=store)
        ts = [e.ts // 1000 for e in events]
        yield store, db, min(ts) - 3600, max(ts) + 3600
    finally:
        try:
            store.query(f"DROP DATABASE IF EXISTS {db}")
        finally:
            store.close()


def test_every_panel_variable_and_alert_rule_runs_on_the_server(
        server: tuple[ServerStore, str, int, int]) -> None:
    store, db, frm, to = server
    check_provisioning(store.query, db, frm, to)


def test_money_is_shown_in_dollars_on_the_server(
        server: tuple[ServerStore, str, int, int]) -> None:
    store, db, frm, to = server
    money_in_dollars(store.query, db, frm, to)


#: fields of the provisioned dashboard that Grafana's UI keeps and its published schema
#: does not describe: a query variable's `definition` (the text the variable editor shows)
UNDESCRIBED = {"definition"}


def _dropped(ours: object, loaded: object, path: str = "") -> list[str]:
    """What of `ours` the loader did not keep, or kept otherwise."""
    if isinstance(ours, dict):
        if not isinstance(loaded, dict):
            return [f"{path}: not an object"]
        out = []
        for k, v in ours.items():
            if k not in loaded:
                if k not in UNDESCRIBED:
                    out.append(f"{path}/{k}")
            else:
                out += _dropped(v, loaded[k], f"{path}/{k}")
        return out
    if isinstance(ours, list):
        if not isinstance(loaded, list) or len(ours) != len(loaded):
            return [f"{path}: list differs"]
        return [d for i, (a, b) in enumerate(zip(ours, loaded, strict=True))
                for d in _dropped(a, b, f"{path}[{i}]")]
    return [] if ours == loaded else [f"{path}: {ours!r} became {loaded!r}"]


def test_every_dashboard_loads_with_grafanas_own_schema_types() -> None:
    """A test validates every dashboard JSON against Grafana's own schema or loader:
    grafana-foundation-sdk's Dashboard, generated from Grafana's schema, loads each
    dashboard and writes it back; nothing but UNDESCRIBED may be lost or changed."""
    import json
    from pathlib import Path

    try:
        from grafana_foundation_sdk.cog.encoder import JSONEncoder
        from grafana_foundation_sdk.models.dashboard import Dashboard
    except ImportError:
        pytest.skip("grafana-foundation-sdk (Grafana's schema types, the test extra) is not "
                    "installed; no Grafana server or its schema can be had otherwise here")
    boards = sorted((Path(__file__).parents[2] / "deploy/grafana/dashboards").glob("*.json"))
    assert boards
    for board in boards:
        ours = json.loads(board.read_text())
        loaded = json.loads(json.dumps(Dashboard.from_json(ours), cls=JSONEncoder))
        assert _dropped(ours, loaded) == [], board.name
