"""Every SQL of the Grafana provisioning (dashboard panels, template variables, alert
rules) runs, with the ClickHouse plugin's macros expanded as the plugin does, against
an embedded store (chDB) here and against the test ClickHouse server in
tests/integration/test_console_grafana.py; money comes out in dollars; the variables
narrow what the panels show."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.producers.simulate import Floor
from pitwatch.store.embedded import EmbeddedStore

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "surveillance.json"
RULES = GRAFANA / "provisioning" / "alerting" / "pitwatch-rules.yaml"
VARIABLES = ("jurisdiction", "table", "dealer")

Run = Callable[[str], list[dict[str, Any]]]


def dashboard() -> dict[str, Any]:
    d: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return d


def alert_rules() -> list[dict[str, Any]]:
    text = "\n".join(ln for ln in RULES.read_text().splitlines() if not ln.startswith("#"))
    return [r for g in json.loads(text)["groups"] for r in g["rules"]]


def panel_queries() -> list[tuple[str, str]]:
    return [(p["title"], t["rawSql"]) for p in dashboard()["panels"] for t in p["targets"]]


def rule_queries() -> list[tuple[str, str]]:
    return [(r["title"], d["model"]["rawSql"]) for r in alert_rules() for d in r["data"]
            if d["datasourceUid"] != "__expr__"]


def _call_args(sql: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose '(' is at `start`."""
    depth, args, cur, i = 0, [], "", start
    while True:
        ch = sql[i]
        if ch == "(":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append(cur.strip())
                return args, i + 1
        elif ch == "," and depth == 1:
            args.append(cur.strip())
            cur, i = "", i + 1
            continue
        cur += ch
        i += 1


def expand(sql: str, db: str, frm: int, to: int, values: dict[str, list[str]],
           selected: dict[str, list[str]]) -> str:
    """The plugin's expansion: ${db}; $__timeFilter(col) as DateTime bounds (plugin 4.x);
    $__conditionalAll(cond, $var) -> cond, or 1=1 when all of var is selected;
    ${var:singlequote} -> 'a','b' (All: every value of the variable). The alert rules
    name the database `pitwatch` (rules have no dashboard variables)."""
    sql = sql.replace("${db}", db).replace("pitwatch.", f"{db}.")
    sql = re.sub(r"\$__timeFilter\((\w+)\)",
                 lambda m: f"{m[1]} >= toDateTime({frm}) AND {m[1]} <= toDateTime({to})", sql)
    while (at := sql.find("$__conditionalAll(")) >= 0:
        args, end = _call_args(sql, at + len("$__conditionalAll"))
        cond, var = args[0], args[1].lstrip("$")
        every = var not in selected
        sql = sql[:at] + ("1=1" if every else cond) + sql[end:]
    for name in VARIABLES:
        chosen = selected.get(name, values.get(name, []))
        quoted = ",".join("'" + v.replace("'", "\\'") + "'" for v in chosen) or "''"
        sql = sql.replace(f"${{{name}:singlequote}}", quoted)
    assert "$" not in sql.replace("$__", ""), f"unexpanded: {sql}"
    assert "$__" not in sql, f"unexpanded macro: {sql}"
    return sql


def variable_values(run: Run, db: str, selected: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each template variable's options, in dependency order, as Grafana computes them."""
    values: dict[str, list[str]] = {}
    by_name = {v["name"]: v for v in dashboard()["templating"]["list"]}
    for name in VARIABLES:
        sql = expand(by_name[name]["query"], db, 0, 0, values, selected)
        rows = run(sql)
        values[name] = [str(next(iter(r.values()))) for r in rows]
    return values


def check_provisioning(run: Run, db: str, frm: int, to: int) -> None:
    """Run everything twice: all variables at All, then one jurisdiction, one table and
    one dealer. Shared by the chDB test here and the ClickHouse server test."""
    everything = variable_values(run, db, {})
    assert set(everything["jurisdiction"]) >= {"NJ", "PA", "NZ"}
    assert len(everything["table"]) == 4 and len(everything["dealer"]) >= 4
    for title, sql in panel_queries() + rule_queries():
        rows = run(expand(sql, db, frm, to, everything, {}))
        if "now()" not in sql:  # the silent-table queries depend on the machine's clock
            assert rows, f"{title}: no rows over the whole floor"
    # the variables narrow: one NJ table and one of its dealers
    table = next(t for t in everything["table"] if t.startswith("AC-BJ"))
    narrow = variable_values(run, db, {"jurisdiction": ["NJ"]})
    assert table in narrow["table"] and not any(t.startswith("AK-") for t in narrow["table"])
    dealers = variable_values(run, db, {"jurisdiction": ["NJ"], "table": [table]})["dealer"]
    selected = {"jurisdiction": ["NJ"], "table": [table], "dealer": dealers[:1]}
    for title, sql in panel_queries():
        rows = run(expand(sql, db, frm, to, everything, selected))
        assert {r["table_id"] for r in rows if "table_id" in r} <= {table}, title
        assert {r["dealer_id"] for r in rows if "dealer_id" in r} <= set(dealers[:1]), title


def money_in_dollars(run: Run, db: str, frm: int, to: int) -> None:
    """Panels with the currency unit divide the cents by 100."""
    d = dashboard()
    wagered = next(p for p in d["panels"] if p["title"] == "Wagered")
    assert wagered["fieldConfig"]["defaults"]["unit"] == "currencyUSD"
    rows = run(expand(wagered["targets"][0]["rawSql"], db, frm, to,
                      variable_values(run, db, {}), {}))
    # each jurisdiction's currency apart: USD (NJ, PA) in A, NZD (NZ) in B, never summed
    cents = int(run(f"SELECT sum(wagered) AS c FROM {db}.rounds FINAL "
                    "WHERE jurisdiction != 'NZ'")[0]["c"])
    assert cents > 0 and float(rows[0]["wagered_usd"]) == cents / 100
    nzd = run(expand(wagered["targets"][1]["rawSql"], db, frm, to,
                     variable_values(run, db, {}), {}))
    nz_cents = int(run(f"SELECT sum(wagered) AS c FROM {db}.rounds FINAL "
                       "WHERE jurisdiction = 'NZ'")[0]["c"])
    assert nz_cents > 0 and float(nzd[0]["wagered_nzd"]) == nz_cents / 100
    assert wagered["fieldConfig"]["overrides"][0]["properties"] == [
        {"id": "unit", "value": "currencyNZD"}]
    for p in d["panels"]:
        sql = p["targets"][0]["rawSql"]
        money_cols = re.findall(r"(wagered|paid|collected|house_result)\b", sql)
        if money_cols and p["title"] not in ("Rounds", "Incomplete rounds"):
            assert "/ 100" in sql, f"{p['title']}: money not in dollars"
            units = [p["fieldConfig"]["defaults"].get("unit")] + [
                prop["value"] for o in p["fieldConfig"]["overrides"]
                for prop in o["properties"] if prop["id"] == "unit"]
            assert "currencyUSD" in units, p["title"]


@pytest.fixture(scope="module")
def chdb_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Run, int, int]]:
    store = EmbeddedStore(tmp_path_factory.mktemp("grafana-store"))
    try:
        store.setup()
        events = list(Floor(4, 15, seed=31, inject=0.3).events())
        audit_events(events, store=store)
        ts = [e.ts // 1000 for e in events]
        yield store.query, min(ts) - 3600, max(ts) + 3600
    finally:
        store.close()


def test_every_panel_variable_and_alert_rule_runs_on_chdb(
        chdb_store: tuple[Run, int, int]) -> None:
    run, frm, to = chdb_store
    check_provisioning(run, "default", frm, to)


def test_money_is_shown_in_dollars(chdb_store: tuple[Run, int, int]) -> None:
    run, frm, to = chdb_store
    money_in_dollars(run, "default", frm, to)


def test_provisioning_has_variables_links_rules_and_a_pinned_plugin() -> None:
    d = dashboard()
    names = {v["name"] for v in d["templating"]["list"]}
    assert {"jurisdiction", "table", "dealer", "console_url"} <= names
    links = [link for p in d["panels"] for o in p["fieldConfig"]["overrides"]
             for prop in o["properties"] if prop["id"] == "links" for link in prop["value"]]
    assert links and all(link["url"] == "${console_url}/rounds/${__value.raw:percentencode}"
                         for link in links)
    titles = {r["title"] for r in alert_rules()}
    assert titles == {"pitwatch: CRITICAL findings", "pitwatch: silent table"}
    compose = (ROOT / "deploy" / "docker-compose.yml").read_text()
    assert re.search(r"GF_INSTALL_PLUGINS: .*grafana-clickhouse-datasource \d+\.\d+\.\d+",
                     compose)
    datasource = (GRAFANA / "provisioning" / "datasources" / "clickhouse.yml").read_text()
    assert "uid: pitwatch-clickhouse" in datasource


def test_expand_follows_the_plugin() -> None:
    sql = ("SELECT 1 FROM ${db}.t WHERE $__timeFilter(hour) AND table_id IN "
           "(${table:singlequote}) AND $__conditionalAll(round_id IN (SELECT r FROM x "
           "WHERE d IN (${dealer:singlequote})), $dealer)")
    values = {"table": ["A", "B"], "dealer": ["D1", "D2"]}
    assert expand(sql, "db1", 10, 20, values, {}) == (
        "SELECT 1 FROM db1.t WHERE hour >= toDateTime(10) AND hour <= toDateTime(20) AND "
        "table_id IN ('A','B') AND 1=1")
    assert expand(sql, "db1", 10, 20, values, {"dealer": ["D2"]}).endswith(
        "AND round_id IN (SELECT r FROM x WHERE d IN ('D2'))")
