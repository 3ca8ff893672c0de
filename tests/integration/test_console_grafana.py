"""The Grafana provisioning's SQL (panels, variables, alert rules, macros expanded)
against the test ClickHouse server (18.16): the same checks as on chDB in
tests/unit/test_grafana_sql.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.store.server import ServerStore
from producers.simulate import Floor
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
