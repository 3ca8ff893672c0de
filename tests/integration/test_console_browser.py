"""The console in a real browser: Debian's chromium driven by selenium through Debian's
chromedriver (headless; no browser download), against `pitwatch serve` over the test
ClickHouse server and the alerts topic on the test Kafka.

Screenshots of every page go to .run/artifacts/console-*.png. Every wait is a
condition with a deadline (WebDriverWait), never a sleep."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from pitwatch.audit.run import audit_events
from pitwatch.engine.alerts import encode_violation
from pitwatch.engine.violation import Violation
from pitwatch.store.server import ServerStore
from producers.simulate import Floor

from .conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".run" / "artifacts"
KAFKA = os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092")
CH_HOST, CH_PORT = "127.0.0.1", int(os.environ.get("CLICKHOUSE_TCP_PORT", "19000"))
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as r:
        return orjson.loads(r.read())


@dataclass
class Console:
    url: str
    db: str
    alerts_topic: str
    store: ServerStore
    proc: subprocess.Popen[bytes]


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """A database and an alerts topic of its own, a small audited floor in it (the last
    round of the last table still open), and `pitwatch serve` over both."""
    from kafka.admin import KafkaAdminClient, NewTopic

    tag = "c" + uuid.uuid4().hex[:10]
    topic = f"{tag}-alerts"
    admin = KafkaAdminClient(bootstrap_servers=KAFKA, client_id="console-test")
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        admin.close()
    store = ServerStore(CH_HOST, CH_PORT, tag)
    store.setup()
    events = list(Floor(4, 20, seed=23, inject=0.3).events())
    audit_events(events[:-6], store=store, finish=False)
    port = _free_port()
    log = open(tmp_path_factory.mktemp("console") / "serve.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "pitwatch.cli", "serve", "--clickhouse", f"{CH_HOST}:{CH_PORT}",
         "--clickhouse-db", tag, "--kafka", KAFKA, "--alerts-topic", topic,
         "--port", str(port), "--clock", "store", "--poll", "0.5"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until("the console to read the alerts topic",
                   lambda: _get(f"{url}/api/health")["kafka"] == "live", 120, every=0.1,
                   ignore=(OSError,))
        yield Console(url, tag, topic, store, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        try:
            store.query(f"DROP DATABASE IF EXISTS {tag}")
        finally:
            store.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail("chromium and chromium-driver are not installed: scripts/system-deps.sh")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: Any, name: str) -> None:
    driver.save_screenshot(str(ARTIFACTS / f"console-{name}.png"))


def wait(driver: Any, timeout: float = 30.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05)


def css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


def open_feed(driver: Any, url: str) -> None:
    driver.get(url)
    wait(driver).until(lambda d: d.find_element("id", "feed").get_attribute("data-ready"))


def new_violation(severity: str = "CRITICAL", code: str = "PAYOUT_WRONG") -> Violation:
    return Violation(code, severity, "AC-BJ-01", "AC-BJ-01-000777", 3, 0,
                     str(uuid.uuid4()), (), "N.J.A.C. 13:69F-2.8(a)1–2",
                     "MAIN $20.00 collected whole after a surrender; expected $10.00",
                     "nj-blackjack", "2024.09-1", 1796064572723)


def send(topic: str, *values: bytes) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=KAFKA, linger_ms=0)
    try:
        for v in values:
            producer.send(topic, key=b"AC-BJ-01", value=v)
        producer.flush()
    finally:
        producer.close()


def test_feed_shows_a_new_alert_within_2s_and_a_bad_message_does_not_stop_it(
        console: Console, browser: Any) -> None:
    open_feed(browser, console.url)
    before = len(css(browser, "#feed tbody tr"))
    assert before > 5  # the stored violations
    shot(browser, "feed")
    v = new_violation()
    send(console.alerts_topic, b"\x00garbage that is no violation")
    send(console.alerts_topic, encode_violation(v))
    row = wait(browser, 2.0).until(
        lambda d: d.find_elements("css selector", f'tr[data-id="{v.violation_id}"]'))
    assert "MAIN $20.00 collected whole" in row[0].text
    assert "AC-BJ-01" in row[0].text and "N.J.A.C. 13:69F-2.8(a)1–2" in row[0].text
    assert "2026-11-30 18:49:32.723" in row[0].text  # device time, UTC, to the ms
    wait(browser).until(lambda d: "undecodable" in d.find_element("id", "feed-bad").text)
    assert len(css(browser, "#feed tbody tr")) == before + 1
    shot(browser, "feed-live")


def test_filters_narrow_the_feed(console: Console, browser: Any) -> None:
    from selenium.webdriver.support.ui import Select

    open_feed(browser, console.url)
    rows = css(browser, "#feed tbody tr")
    severities = {r.get_attribute("data-severity") for r in rows}
    assert len(severities) > 1
    Select(browser.find_element("id", "f-severity")).select_by_value("HIGH")
    wait(browser).until(lambda d: d.find_element("id", "feed").get_attribute("data-ready"))
    high = css(browser, "#feed tbody tr")
    assert high and {r.get_attribute("data-severity") for r in high} == {"HIGH"}
    assert len(high) < len(rows)
    assert "severity=HIGH" in browser.current_url  # a reload keeps the filters
    Select(browser.find_element("id", "f-jurisdiction")).select_by_value("NZ")
    wait(browser).until(lambda d: d.find_element("id", "feed").get_attribute("data-ready"))
    both = css(browser, "#feed tbody tr")
    assert {(r.get_attribute("data-severity"), r.get_attribute("data-jurisdiction"))
            for r in both} <= {("HIGH", "NZ")}
    shot(browser, "feed-filtered")
    # a live alert that fails the filters stays off the page; one that passes appears
    other = new_violation("CRITICAL")
    send(console.alerts_topic, encode_violation(other))
    Select(browser.find_element("id", "f-jurisdiction")).select_by_value("")
    Select(browser.find_element("id", "f-severity")).select_by_value("CRITICAL")
    wait(browser).until(lambda d: d.find_elements(
        "css selector", f'tr[data-id="{other.violation_id}"]'))
    assert {r.get_attribute("data-severity") for r in css(browser, "#feed tbody tr")} == \
        {"CRITICAL"}


def test_acknowledging_persists_across_a_reload_and_never_edits_the_violation(
        console: Console, browser: Any) -> None:
    open_feed(browser, console.url + "/?severity=CRITICAL")
    stored = {r["violation_id"] for r in console.store.query(
        "SELECT violation_id FROM violations FINAL WHERE severity = 'CRITICAL'")}
    row = next(r for r in css(browser, "#feed tbody tr")
               if r.get_attribute("data-id") in stored)
    vid = row.get_attribute("data-id")
    before = console.store.query(
        f"SELECT * FROM violations FINAL WHERE violation_id = '{vid}'")
    assert before
    row.find_element("css selector", "button.ack").click()
    wait(browser).until(lambda d: d.find_element("id", "ack-dialog").is_displayed())
    browser.find_element("id", "ack-who").send_keys("Ana Surveillance")
    browser.find_element("id", "ack-note").send_keys("payout checked on camera 12")
    shot(browser, "ack-dialog")
    browser.find_element("id", "ack-submit").click()
    acked = f'tr[data-id="{vid}"] .acked'
    wait(browser).until(lambda d: d.find_elements("css selector", acked))
    browser.refresh()
    wait(browser).until(lambda d: d.find_elements("css selector", acked))
    text = css(browser, acked)[0].text
    assert "acknowledged by Ana Surveillance" in text and "camera 12" in text
    acks = console.store.query(
        f"SELECT who, note, action FROM triage WHERE violation_id = '{vid}'")
    assert acks == [{"who": "Ana Surveillance", "note": "payout checked on camera 12",
                       "action": "ACK"}]
    assert console.store.query(
        f"SELECT * FROM violations FINAL WHERE violation_id = '{vid}'") == before
    browser.get(console.url + "/triage")
    assert "payout checked on camera 12" in browser.find_element("css selector", "main").text
    shot(browser, "triage")


def test_round_view_shows_the_cards_and_the_quoted_paragraph(console: Console,
                                                              browser: Any) -> None:
    rows = console.store.query(
        "SELECT round_id, violation_id FROM violations FINAL "
        "WHERE citation LIKE 'N.J.A.C. 13:69F-2.%' OR citation LIKE 'NZ Gazette%' "
        "ORDER BY round_id LIMIT 1")
    assert rows, "the floor has a finding that cites a regulation file"
    rid, vid = rows[0]["round_id"], rows[0]["violation_id"]
    browser.get(f"{console.url}/rounds/{rid}")
    wait(browser).until(lambda d: d.find_elements("css selector", ".layout .card"))
    cards = css(browser, ".layout .card")
    assert len(cards) >= 4
    assert all(c.get_attribute("data-card") for c in cards)
    assert any(c.text.strip()[-1] in "♣♦♥♠" for c in cards)
    finding = browser.find_element("id", f"v-{vid}")
    quote = finding.find_element("css selector", "blockquote.regulation")
    assert "shall" in quote.text and "docs/regulations/" in quote.text
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", finding)
    shot(browser, "round-finding")
    browser.execute_script("window.scrollTo(0, 0)")
    shot(browser, "round")


def test_floor_and_table_pages(console: Console, browser: Any) -> None:
    browser.get(console.url + "/floor")
    rows = wait(browser).until(lambda d: d.find_elements("css selector", "table.floor tbody tr"))
    assert {r.get_attribute("data-table") for r in rows} == {
        "AC-BJ-01", "AC-SW-02", "PH-FB-03", "AK-BJ-04"}
    text = browser.find_element("css selector", "table.floor").text
    assert "AK-BJ-04-000020" in text  # the open round
    shot(browser, "floor")
    browser.find_element("link text", "AC-BJ-01").click()
    wait(browser).until(lambda d: d.find_elements("css selector", "table.rounds tbody tr"))
    assert len(css(browser, "table.rounds tbody tr")) == 20
    assert "$" in browser.find_element("css selector", "table.dealers").text
    shot(browser, "table")
