"""The console in a real browser: Debian's chromium driven by selenium through Debian's
chromedriver (headless; no browser download), against `pitwatch serve` over the test
ClickHouse server and the alerts topic on the test Kafka, as a surveillance room uses
it: logged in, at 1440×900 and 390×844, through outages of each service.

Screenshots of every page go to .run/artifacts/console-*.png. Every wait is a
condition with a deadline (WebDriverWait, wait_until), never a sleep."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from pitwatch.audit.run import audit_events
from pitwatch.console.accounts import Accounts
from pitwatch.console.sitetime import SiteTime
from pitwatch.engine.violation import Violation
from pitwatch.events.violation_avro import encode_violation
from pitwatch.producers.simulate import Floor
from pitwatch.store.server import ServerStore

from .conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".run" / "artifacts"
KAFKA = os.environ.get("PITWATCH_KAFKA", "127.0.0.1:19092")
CH_HOST, CH_PORT = "127.0.0.1", int(os.environ.get("CLICKHOUSE_TCP_PORT", "19000"))
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PASSWORD = "a shift's worth of password"
ROLES = ("viewer", "operator", "investigator", "supervisor")
#: the longest table id the contract allows, with "/" and spaces in it
LONG = ("PIT 3/BJ-01 " * 11)[:128]

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _health(url: str) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/api/health", timeout=5) as r:
            return r.status, orjson.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, orjson.loads(e.read())


class Proxy:
    """A TCP relay to ClickHouse that the test can cut (every connection dropped, new
    ones refused) and restore: ClickHouse stopped, as the console sees it, without
    stopping the server other tests use."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = _free_port()
        self.up = threading.Event()
        self.up.set()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._start()

    def _start(self) -> None:
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(16)
        self._listener = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def _accept(self, ls: socket.socket) -> None:
        while True:
            try:
                client, _ = ls.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            for s in (client, server):  # forward each write at once, as a router does
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        assert self._listener is not None
        with contextlib.suppress(OSError):  # wakes the accept() blocked on it
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for s in self._conns:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._conns.clear()

    def restore(self) -> None:
        self._start()


@dataclass
class Serve:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path


@dataclass
class Site:
    db: str
    alerts_topic: str
    store: ServerStore
    users: Path
    tmp: Path
    started: list[Serve] = field(default_factory=list)

    def serve(self, *extra: str, clickhouse: str = f"{CH_HOST}:{CH_PORT}",
              kafka: bool = True) -> Serve:
        """`pitwatch serve` over the site's database (and its alerts topic), running."""
        port = _free_port()
        log = self.tmp / f"serve-{port}.log"
        cmd = [sys.executable, "-m", "pitwatch.cli", "serve", "--clickhouse", clickhouse,
               "--clickhouse-db", self.db, "--port", str(port), "--clock", "store",
               "--poll", "0.5", "--users", str(self.users), *extra]
        if kafka:
            cmd += ["--kafka", KAFKA, "--alerts-topic", self.alerts_topic]
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        s = Serve(f"http://127.0.0.1:{port}", proc, log)
        self.started.append(s)
        wait_until("the console up" + (" and reading the alerts topic" if kafka else ""),
                   lambda: _health(s.url)[1]["kafka"] == ("live" if kafka else "off"),
                   120, every=0.1, ignore=(OSError,))
        return s


def _long_ids(events: list[Any]) -> list[Any]:
    """One table's events under LONG, its round ids 128 characters with # ? % in them."""
    def rename(ev: Any) -> Any:
        rid = None if ev.round_id is None else LONG[:118] + "#" + ev.round_id[-6:] + "?%"
        return dataclasses.replace(ev, table_id=LONG, round_id=rid,
                                   device_id=LONG[:100] + ev.device_id[len(ev.table_id):])
    return [rename(e) for e in events]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A database and an alerts topic of its own, a small audited floor in it (the last
    round of the last table still open) and a table named LONG; an account of each role
    (named for its role); and the consoles the tests start, stopped at the end."""
    from kafka.admin import KafkaAdminClient, NewTopic

    tag = "c" + uuid.uuid4().hex[:10]
    topic = f"{tag}-alerts"
    admin = KafkaAdminClient(bootstrap_servers=KAFKA, client_id="console-test")
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        admin.close()
    tmp = tmp_path_factory.mktemp("console")
    users = tmp / "users.json"
    accounts = Accounts(users)
    for role in ROLES:
        accounts.add(role, role, PASSWORD)
    store = ServerStore(CH_HOST, CH_PORT, tag)
    store.setup()
    # first the table named LONG, audited to its end: an audit that finishes closes every
    # round still open in the store, so the floor's open round comes after it
    audit_events(_long_ids(list(Floor(1, 3, seed=3, inject=0.5, sign=False).events())),
                 store=store)
    events = list(Floor(4, 20, seed=23, inject=0.3).events())
    # stop before the RoundEnded of the last table's last round: it stays open
    last = max(i for i, e in enumerate(events) if e.round_id == "AK-BJ-04-000020"
               and type(e.payload).__name__ == "RoundEnded")
    audit_events(events[:last], store=store, finish=False)
    s = Site(tag, topic, store, users, tmp)
    try:
        yield s
    finally:
        for c in s.started:
            c.proc.terminate()
            c.proc.wait(timeout=30)
        try:
            store.query(f"DROP DATABASE IF EXISTS {tag}")
        finally:
            store.close()


@pytest.fixture(scope="module")
def console(site: Site) -> Serve:
    return site.serve()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail("chromium and chromium-driver are not installed: scripts/system-deps.sh")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1440,900",
                # the alarm's sound plays without a click first, as on a room's wall screen
                "--autoplay-policy=no-user-gesture-required"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_window_size(1440, 900)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: Any, name: str) -> None:
    driver.save_screenshot(str(ARTIFACTS / f"console-{name}.png"))


def wait(driver: Any, timeout: float = 30.0) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # a row the feed has just drawn again is looked up again
    return WebDriverWait(driver, timeout, poll_frequency=0.05,
                         ignored_exceptions=(StaleElementReferenceException,))


def css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


def login(driver: Any, url: str, user: str, password: str = PASSWORD) -> None:
    driver.delete_all_cookies()
    driver.get(f"{url}/login")
    driver.find_element("id", "login-user").send_keys(user)
    driver.find_element("id", "login-password").send_keys(password + "\n")
    wait(driver).until(lambda d: d.find_elements(
        "css selector", f'meta[name="pitwatch-user"][content="{user}"]'))


def open_feed(driver: Any, url: str) -> None:
    driver.get(url)
    wait(driver).until(lambda d: d.find_element("id", "feed").get_attribute("data-ready"))


_NEXT_TS = [1796150972723]  # 2026-12-01 18:49:32.723 UTC, after the floor's shift


def new_violation(severity: str = "CRITICAL", code: str = "PAYOUT_WRONG",
                  table: str = "AC-BJ-01", ts: int | None = None) -> Violation:
    """A finding as the worker sends it; each one 20 minutes after the last (past the
    feed's 10-minute grouping window) unless `ts` is given."""
    if ts is None:
        ts = _NEXT_TS[0]
        _NEXT_TS[0] += 1_200_000
    return Violation(code, severity, table, f"{table}-000777", 3, 0,
                     str(uuid.uuid4()), (), "N.J.A.C. 13:69F-2.8(a)1–2",
                     "MAIN $20.00 collected whole after a surrender; expected $10.00",
                     "nj-blackjack", "2024.09-1", ts)


def send(topic: str, *values: bytes) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=KAFKA, linger_ms=5)
    try:
        for v in values:
            producer.send(topic, key=b"AC-BJ-01", value=v)
        producer.flush()
    finally:
        producer.close()


def no_sideways_scroll(driver: Any) -> bool:
    return bool(driver.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"))


# --- identity ---------------------------------------------------------------------------

def test_login_and_each_roles_limits(console: Serve, browser: Any) -> None:
    browser.delete_all_cookies()
    browser.get(console.url + "/floor")
    assert "/login" in browser.current_url  # nothing without a login
    browser.find_element("id", "login-user").send_keys("operator")
    browser.find_element("id", "login-password").send_keys("wrong\n")
    wait(browser).until(lambda d: "Wrong user name or password" in d.page_source)
    shot(browser, "login")
    acts: dict[str, set[str]] = {}
    for role in ROLES:
        login(browser, console.url, role)
        open_feed(browser, console.url)
        buttons = css(browser, "#feed button.act")
        if role == "viewer":
            assert not buttons  # a viewer reads
            vid = css(browser, "#feed tbody tr")[0].get_attribute("data-id")
            status = browser.execute_async_script(
                "const done = arguments[1];"
                "fetch('/api/triage', {method: 'POST', headers: {'Content-Type': "
                "'application/json', 'X-CSRF-Token': document.querySelector("
                "'meta[name=pitwatch-csrf]').content}, body: JSON.stringify("
                "{violation_id: arguments[0], action: 'acknowledge'})})"
                ".then(r => done(r.status))", vid)
            assert status == 403
            acts[role] = set()
            continue
        buttons[0].click()
        wait(browser).until(lambda d: d.find_element("id", "triage-dialog").is_displayed())
        acts[role] = {o.get_attribute("value") for o in css(browser, "#td-action option")}
        browser.find_element("id", "td-cancel").click()
    assert acts == {
        "viewer": set(),
        "operator": {"acknowledge", "escalate", "note"},
        "investigator": {"acknowledge", "escalate", "note", "investigate", "close", "assign"},
        "supervisor": {"acknowledge", "escalate", "note", "investigate", "close", "assign",
                       "reopen"},
    }
    browser.find_element("css selector", "form.logout button").click()
    wait(browser).until(lambda d: "/login" in d.current_url)


def test_a_login_at_one_console_process_holds_at_another_and_logout_ends_it_at_both(
        console: Serve, browser: Any, site: Site) -> None:
    """Sessions shared by every console process: "log in on one process, use the cookie
    on a second process over the same store; logout on the second; the first refuses
    it". (A browser sends a host's cookie to each of its ports: the second process gets
    the cookie the first one set.)"""
    second = site.serve(kafka=False)
    login(browser, console.url, "investigator")
    token = browser.get_cookie("pitwatch_session")["value"]
    browser.get(second.url + "/floor")
    wait(browser).until(lambda d: d.find_elements(
        "css selector", 'meta[name="pitwatch-user"][content="investigator"]'))
    assert "/login" not in browser.current_url
    browser.find_element("css selector", "form.logout button").click()
    wait(browser).until(lambda d: "/login" in d.current_url)
    # the cookie the first process set, given back to it: refused there now
    browser.add_cookie({"name": "pitwatch_session", "value": token, "path": "/"})
    browser.get(console.url + "/floor")
    wait(browser).until(lambda d: "/login" in d.current_url)
    assert not css(browser, 'meta[name="pitwatch-user"][content="investigator"]')
    rows = site.store.query("SELECT revoked FROM console_sessions WHERE token_sha256 = "
                            "{h:String} ORDER BY version", {"h": _sha256(token)})
    assert [int(r["revoked"]) for r in rows][-1] == 1


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


# --- the feed -------------------------------------------------------------------------------

def test_feed_shows_a_new_alert_within_2s_and_a_bad_message_does_not_stop_it(
        console: Serve, browser: Any, site: Site) -> None:
    login(browser, console.url, "operator")
    open_feed(browser, console.url)
    before = len(css(browser, "#feed tbody tr"))
    assert before > 5  # the stored violations
    shot(browser, "feed")
    v = new_violation("HIGH", "HOLE_CARD_EXPOSED")
    send(site.alerts_topic, b"\x00garbage that is no violation")
    send(site.alerts_topic, encode_violation(v))
    row = wait(browser, 2.0).until(
        lambda d: d.find_elements("css selector", f'tr[data-id="{v.violation_id}"]'))
    assert "MAIN $20.00 collected whole" in row[0].text
    assert "AC-BJ-01" in row[0].text and "N.J.A.C. 13:69F-2.8(a)1–2" in row[0].text
    stamp = datetime.fromtimestamp(v.detected_at / 1000, UTC)
    assert f"{stamp:%Y-%m-%d %H:%M:%S}.{v.detected_at % 1000:03d} UTC" in row[0].text
    wait(browser).until(lambda d: "undecodable" in d.find_element("id", "feed-bad").text)
    assert len(css(browser, "#feed tbody tr")) == before + 1
    # announced to a screen reader
    wait(browser).until(lambda d: "HOLE_CARD_EXPOSED" in d.find_element("id", "announce").text)
    assert browser.find_element("id", "announce").get_attribute("aria-live") == "polite"


def test_filters_narrow_the_feed(console: Serve, browser: Any, site: Site) -> None:
    from selenium.webdriver.support.ui import Select

    login(browser, console.url, "operator")
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
    other = new_violation("CRITICAL")
    send(site.alerts_topic, encode_violation(other))
    Select(browser.find_element("id", "f-jurisdiction")).select_by_value("")
    Select(browser.find_element("id", "f-severity")).select_by_value("CRITICAL")
    wait(browser).until(lambda d: d.find_elements(
        "css selector", f'tr[data-id="{other.violation_id}"]'))
    assert {r.get_attribute("data-severity") for r in css(browser, "#feed tbody tr")} == \
        {"CRITICAL"}


# --- triage ---------------------------------------------------------------------------------

def test_an_acknowledgement_is_seen_in_a_second_console_process(
        console: Serve, browser: Any, site: Site) -> None:
    from selenium.webdriver.common.keys import Keys

    second = site.serve()
    login(browser, console.url, "operator")
    open_feed(browser, console.url + "/?severity=HIGH")
    stored = {r["violation_id"] for r in site.store.query(
        "SELECT violation_id FROM violations FINAL WHERE severity = 'HIGH'")}
    row = next(r for r in css(browser, "#feed tbody tr")
               if r.get_attribute("data-id") in stored and r.get_attribute("data-count") == "1")
    vid = row.get_attribute("data-id")
    before = site.store.query(f"SELECT * FROM violations FINAL WHERE violation_id = '{vid}'")
    row.find_element("css selector", "button.act").click()
    wait(browser).until(lambda d: d.find_element("id", "triage-dialog").is_displayed())
    browser.find_element("id", "td-note").send_keys("payout checked on camera 12")
    shot(browser, "triage-dialog")
    browser.find_element("id", "td-submit").send_keys(Keys.ENTER)
    mine = f'tr[data-id="{vid}"] .st-acknowledged'
    wait(browser).until(lambda d: d.find_elements("css selector", mine))
    assert not browser.find_element("id", "triage-dialog").is_displayed()
    # the record: the logged-in user, the state it replaced; the violation untouched
    rows = site.store.query(f"SELECT who, role, status, prev_status, note FROM triage "
                            f"WHERE violation_id = '{vid}'")
    assert rows == [{"who": "operator", "role": "operator", "status": "acknowledged",
                     "prev_status": "new", "note": "payout checked on camera 12"}]
    assert site.store.query(
        f"SELECT * FROM violations FINAL WHERE violation_id = '{vid}'") == before
    # another console process, another user: it shows the acknowledgement
    login(browser, second.url, "supervisor")
    open_feed(browser, second.url + "/?severity=HIGH")
    wait(browser).until(lambda d: "acknowledged by operator" in d.find_element(
        "css selector", f'tr[data-id="{vid}"]').text)
    browser.get(second.url + "/triage")
    assert "payout checked on camera 12" in browser.find_element("css selector", "main").text
    shot(browser, "triage")
    # and one the second console records, the first console shows too
    open_feed(browser, second.url + "/?severity=HIGH")
    row = browser.find_element("css selector", f'tr[data-id="{vid}"]')
    row.find_element("css selector", "button.act").click()
    wait(browser).until(lambda d: d.find_element("id", "triage-dialog").is_displayed())
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "td-action")).select_by_value("assign")
    field_ = browser.find_element("id", "td-assignee")
    field_.send_keys("investigator" + Keys.ENTER)  # Enter in a field submits
    wait(browser).until(lambda d: "investigator" in d.find_element(
        "css selector", f'tr[data-id="{vid}"] .st').text)
    login(browser, console.url, "viewer")
    open_feed(browser, console.url + "/?severity=HIGH")
    wait(browser).until(lambda d: "· investigator" in d.find_element(
        "css selector", f'tr[data-id="{vid}"] .st').text)


# --- alarms ---------------------------------------------------------------------------------

def test_a_live_critical_raises_the_banner_and_the_alarm(
        console: Serve, browser: Any, site: Site) -> None:
    login(browser, console.url, "operator")
    open_feed(browser, console.url)
    alarm = browser.find_element("id", "alarm")
    rang = int(alarm.get_attribute("data-rang") or 0)
    v = new_violation("CRITICAL", "DEALER_DREW_WRONG", "PH-FB-03")
    send(site.alerts_topic, encode_violation(v))
    wait(browser, 10).until(lambda d: v.violation_id in [
        li.get_attribute("data-id") for li in d.find_elements("css selector", "#pinned li")])
    wait(browser, 10).until(lambda d: int(d.find_element("id", "alarm").get_attribute(
        "data-rang") or 0) > rang)  # the page's audio element played
    assert browser.execute_script("return document.getElementById('alarm').played.length") > 0
    banner = wait(browser, 10).until(lambda d: d.find_element("id", "banner").is_displayed()
                                     and d.find_element("id", "banner"))
    wait(browser, 10).until(lambda d: "UNHANDLED CRITICAL" in banner.text)
    shot(browser, "critical-banner")
    # muted, for this user: the next CRITICAL does not sound
    browser.find_element("id", "mute").click()
    assert browser.find_element("id", "mute").get_attribute("aria-pressed") == "true"
    rang = int(alarm.get_attribute("data-rang") or 0)
    w = new_violation("CRITICAL", "PAYOUT_WRONG", "PH-FB-03")
    send(site.alerts_topic, encode_violation(w))
    wait(browser, 10).until(lambda d: w.violation_id in [
        li.get_attribute("data-id") for li in d.find_elements("css selector", "#pinned li")])
    assert int(alarm.get_attribute("data-rang") or 0) == rang
    browser.find_element("id", "mute").click()


def test_a_flood_of_low_findings_cannot_bury_a_critical(
        console: Serve, browser: Any, site: Site) -> None:
    login(browser, console.url, "operator")
    open_feed(browser, console.url)
    base = 1796400000000  # 2026-12-04, apart from every other finding here
    crit = new_violation("CRITICAL", "PAYOUT_WRONG", "AK-BJ-04", base + 500_000)
    flood = [new_violation("LOW", "CHECKPOINT_LATE", "AC-SW-02", base + i * 300)
             for i in range(1000)]
    send(site.alerts_topic, *(encode_violation(v) for v in flood[:600]),
         encode_violation(crit), *(encode_violation(v) for v in flood[600:]))
    pinned = f'#pinned li[data-id="{crit.violation_id}"]'
    wait(browser, 20).until(lambda d: d.find_elements("css selector", pinned))
    wait(browser, 20).until(lambda d: d.find_elements(
        "css selector", 'tr[data-code="CHECKPOINT_LATE"][data-count="1000"]'))
    browser.execute_script("window.scrollTo(0, 0)")
    seen = browser.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return r.top >= 0 && r.bottom <= window.innerHeight", pinned)
    assert seen, "the CRITICAL is not on the first screen"
    shot(browser, "flood")


# --- outages --------------------------------------------------------------------------------

def _broker_pid() -> int:
    run = Path(os.environ.get("PITWATCH_RUN", ROOT / ".run"))
    pid = int((run / "kafka" / "kafka.pid").read_text().strip())
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert b"kafka.Kafka" in cmdline, f"pid {pid} is not the broker"
    return pid


def test_kafka_stopped_raises_the_banner_within_10s_and_health_says_down(
        console: Serve, browser: Any) -> None:
    login(browser, console.url, "operator")
    open_feed(browser, console.url)
    pid = _broker_pid()
    os.kill(pid, signal.SIGSTOP)  # the broker hangs: no reset, no answer
    try:
        t0 = time.monotonic()
        wait(browser, 10).until(lambda d: "ALERTS TOPIC DOWN" in d.find_element(
            "id", "banner").text)
        took = time.monotonic() - t0
        shot(browser, "kafka-down")
        status, body = _health(console.url)
        assert status == 503 and body["kafka"].startswith(("down", "connecting"))
        print(f"banner {took:.1f} s after the broker stopped")
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until("the alerts topic live again", lambda: _health(console.url)[1]["kafka"] == "live",
               120)
    wait(browser, 20).until(lambda d: "ALERTS TOPIC DOWN" not in d.find_element(
        "id", "banner").text)


def test_clickhouse_stopped_no_500_and_an_action_refused_with_a_message(
        site: Site, browser: Any) -> None:
    proxy = Proxy((CH_HOST, CH_PORT))
    c = site.serve(clickhouse=f"127.0.0.1:{proxy.port}", kafka=False)
    login(browser, c.url, "supervisor")
    browser.get(c.url + "/tables/AC-BJ-01")
    rounds = len(css(browser, "table.rounds tbody tr"))
    assert rounds == 20
    open_feed(browser, c.url + "/?severity=HIGH")
    proxy.cut()
    try:
        t0 = time.monotonic()
        wait(browser, 10).until(lambda d: "STORE DOWN" in d.find_element("id", "banner").text)
        print(f"banner {time.monotonic() - t0:.1f} s after ClickHouse stopped")
        row = css(browser, "#feed tbody tr")[0]
        row.find_element("css selector", "button.act").click()
        wait(browser).until(lambda d: d.find_element("id", "triage-dialog").is_displayed())
        browser.find_element("id", "td-note").send_keys("typed during the outage")
        browser.find_element("id", "td-submit").click()
        wait(browser).until(lambda d: "NOT recorded" in d.find_element("id", "td-error").text)
        assert browser.find_element("id", "triage-dialog").is_displayed()  # nothing lost
        assert browser.find_element("id", "td-note").get_attribute("value") == \
            "typed during the outage"
        shot(browser, "store-down-action")
        browser.get(c.url + "/tables/AC-BJ-01")  # held: the last copy, as of
        assert "the last copy held, as of" in browser.page_source
        assert len(css(browser, "table.rounds tbody tr")) == rounds
        browser.get(c.url + "/tables/AC-SW-02")  # never seen: said so, no 500
        assert "holds no earlier copy" in browser.page_source
        assert "500" not in browser.title
        shot(browser, "store-down-page")
        assert _health(c.url)[0] == 503
    finally:
        proxy.restore()
    wait_until("the store answers again", lambda: _health(c.url)[0] == 200, 60)


# --- ids, layout, shifts -------------------------------------------------------------------

def test_a_128_character_table_id_with_slashes_and_spaces_opens_from_the_floor(
        console: Serve, browser: Any) -> None:
    login(browser, console.url, "viewer")
    browser.get(console.url + "/floor")
    link = wait(browser).until(lambda d: d.find_element(
        "css selector", f'tr[data-table="{LONG}"] td a'))
    assert link.get_attribute("href").endswith("/tables/" + quote(LONG, safe=""))
    link.click()
    wait(browser).until(lambda d: d.find_elements("css selector", "table.rounds tbody tr"))
    assert LONG in browser.find_element("tag name", "h1").text
    browser.find_elements("css selector", "table.rounds tbody tr a")[0].click()
    wait(browser).until(lambda d: d.find_elements("css selector", "table.timeline"))
    assert LONG[:118] in browser.find_element("tag name", "h1").text
    shot(browser, "long-id")


def test_no_sideways_scroll_at_390px(console: Serve, browser: Any, site: Site) -> None:
    rid = site.store.query("SELECT round_id FROM violations FINAL "
                           "WHERE severity = 'CRITICAL' LIMIT 1")[0]["round_id"]
    login(browser, console.url, "supervisor")
    browser.set_window_size(390, 844)
    try:
        for name, path in (("feed", "/"), ("floor", "/floor"), ("table", "/tables/AC-BJ-01"),
                           ("round", f"/rounds/{quote(rid, safe='')}"),
                           ("search", "/search?severity=HIGH"), ("shift", "/shift"),
                           ("triage-log", "/triage")):
            browser.get(console.url + path)
            wait(browser).until(lambda d: d.find_elements("tag name", "h1"))
            assert no_sideways_scroll(browser), (path, browser.execute_script(
                "const W = document.documentElement.clientWidth; return [...document."
                "querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > W "
                "&& !e.closest('.scroll')).slice(0, 5).map(e => e.tagName + '.' + "
                "e.className + ' ' + e.getBoundingClientRect().right)"))
            shot(browser, f"390-{name}")
        open_feed(browser, console.url)
        css(browser, "#feed button.act")[0].click()
        dialog = wait(browser).until(lambda d: d.find_element("id", "triage-dialog"))
        width = browser.execute_script("return arguments[0].getBoundingClientRect().right",
                                       dialog)
        assert width <= browser.execute_script("return window.innerWidth")
        shot(browser, "390-dialog")
    finally:
        browser.set_window_size(1440, 900)


def test_search_counts_and_pages(console: Serve, browser: Any, site: Site) -> None:
    login(browser, console.url, "investigator")
    browser.get(console.url + "/search?limit=10")
    counts = browser.find_element("id", "search-counts").text
    total = site.store.query("SELECT count() AS n FROM violations FINAL")[0]["n"]
    assert f"1–10 of {total}" in counts
    browser.find_element("css selector", 'a[rel="next"]').click()
    wait(browser).until(lambda d: f"11–20 of {total}" in d.find_element(
        "id", "search-counts").text)
    dealer = site.store.query("SELECT dealer_id FROM rounds FINAL WHERE violations > 0 "
                              "LIMIT 1")[0]["dealer_id"]
    browser.get(console.url + f"/search?dealer={quote(dealer)}&unhandled=1")
    assert css(browser, "#results tbody tr")
    shot(browser, "search")


def test_the_shift_summary_exports_csv_and_pdf(console: Serve, browser: Any,
                                               site: Site) -> None:
    first = site.store.query("SELECT toUInt32(min(started)) AS s FROM rounds FINAL "
                             "WHERE table_id = 'AC-BJ-01'")[0]["s"]
    day, n = SiteTime().shift_of(int(first) * 1000)  # serve's defaults: UTC, 06:00
    login(browser, console.url, "supervisor")
    browser.get(console.url + f"/shift?day={day.isoformat()}&shift={n + 1}")
    text = browser.find_element("id", "shift").text
    assert "AC-BJ-01" in text
    shot(browser, "shift")
    link = browser.find_element("link text", "CSV").get_attribute("href")
    got = browser.execute_async_script(
        "fetch(arguments[0]).then(r => r.text()).then(arguments[1])", link)
    rows = list(csv.reader(io.StringIO(got)))
    assert rows[0][0].startswith("# pitwatch shift summary: gaming day")
    assert rows[1][:5] == ["table_id", "dealer_id", "jurisdiction", "rounds",
                           "incomplete_rounds"]
    assert any(r[0] == "AC-BJ-01" for r in rows[2:])
    head = browser.execute_async_script(
        "fetch(arguments[0].replace('.csv', '.pdf')).then(r => r.arrayBuffer())"
        ".then(b => arguments[1](String.fromCharCode(...new Uint8Array(b).slice(0, 5))))",
        link)
    assert head == "%PDF-"


def test_round_view_shows_the_cards_and_both_quoted_texts(console: Serve, browser: Any,
                                                          site: Site) -> None:
    rows = site.store.query(
        "SELECT round_id, violation_id, citation FROM violations FINAL "
        "WHERE citation LIKE 'N.J.A.C. 13:69F-2.%' OR citation LIKE 'NZ Gazette%' "
        "ORDER BY citation LIKE 'NZ%;%' DESC, round_id LIMIT 1")
    assert rows, "the floor has a finding that cites a regulation file"
    rid, vid, citation = rows[0]["round_id"], rows[0]["violation_id"], rows[0]["citation"]
    login(browser, console.url, "viewer")
    browser.get(f"{console.url}/rounds/{quote(rid, safe='')}")
    wait(browser).until(lambda d: d.find_elements("css selector", ".layout .card"))
    cards = css(browser, ".layout .card")
    assert len(cards) >= 4
    assert all(c.get_attribute("data-card") for c in cards)
    assert any(c.text.strip()[-1] in "♣♦♥♠" for c in cards)
    finding = browser.find_element("id", f"v-{vid}")
    quotes = finding.find_elements("css selector", "blockquote.regulation")
    assert "docs/regulations/" in quotes[0].text
    assert ";" in citation and "posted-rules.txt" in citation, \
        f"the floor's finding cites a Gazette and the posted rules: {citation}"
    assert len(quotes) == 2 and "posted-rules.txt" in quotes[1].text
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", finding)
    shot(browser, "round-finding")
    browser.execute_script("window.scrollTo(0, 0)")
    shot(browser, "round")


def test_floor_and_table_pages(console: Serve, browser: Any) -> None:
    login(browser, console.url, "viewer")
    browser.get(console.url + "/floor")
    rows = wait(browser).until(lambda d: d.find_elements("css selector", "table.floor tbody tr"))
    assert {r.get_attribute("data-table") for r in rows} == {
        "AC-BJ-01", "AC-SW-02", "PH-FB-03", "AK-BJ-04", LONG}
    text = browser.find_element("css selector", "table.floor").text
    assert "AK-BJ-04-000020" in text  # the open round
    shot(browser, "floor")
    browser.find_element("link text", "AC-BJ-01").click()
    wait(browser).until(lambda d: d.find_elements("css selector", "table.rounds tbody tr"))
    assert len(css(browser, "table.rounds tbody tr")) == 20
    assert "$" in browser.find_element("css selector", "table.dealers").text
    shot(browser, "table")



# --- single sign-on -------------------------------------------------------------------------

def test_oidc_sign_in_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """OpenID Connect in a real browser: the issuer's redirect back is a navigation from
    another site, so the SameSite=Strict session cookie must be set by a page that moves
    on by itself. The in-process issuer of tests/unit/test_console_oidc.py, the console
    over an embedded store, both on loopback in a thread of their own."""
    import asyncio

    from aiohttp import web

    from pitwatch.console.app import Settings, make_app
    from pitwatch.console.oidc import OidcConfig, parse_roles
    from pitwatch.store.embedded import EmbeddedStore
    from tests.unit.test_console_oidc import CLIENT, IdP

    store = EmbeddedStore(tmp_path / "data")
    store.setup()
    idp = IdP()
    loop = asyncio.new_event_loop()
    runners: list[web.AppRunner] = []
    port = _free_port()

    async def start() -> None:
        at_idp = web.AppRunner(idp.app())
        await at_idp.setup()
        site_ = web.TCPSite(at_idp, "127.0.0.1", 0)
        await site_.start()
        idp.issuer = f"http://127.0.0.1:{at_idp.addresses[0][1]}"
        cfg = OidcConfig(issuer=idp.issuer, client_id=CLIENT,
                         redirect_uri=f"http://127.0.0.1:{port}/login/oidc/callback",
                         roles=parse_roles(["pit-bosses=supervisor"]))
        app = make_app(store, Settings(poll_every=None, users=tmp_path / "users.json",
                                       oidc=cfg))
        console_ = web.AppRunner(app)
        await console_.setup()
        await web.TCPSite(console_, "127.0.0.1", port).start()
        runners.extend([console_, at_idp])

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(start(), loop).result(60)
        url = f"http://127.0.0.1:{port}"
        browser.delete_all_cookies()
        browser.get(url + "/floor")
        wait(browser).until(lambda d: "/login" in d.current_url)
        browser.find_element("id", "login-oidc").click()
        wait(browser).until(lambda d: d.find_elements(
            "css selector", 'meta[name="pitwatch-user"][content="ana"]')
            and d.current_url == url + "/floor")
        assert "supervisor" in browser.find_element("css selector", ".who").text
        assert idp.verified_pkce == 1
        shot(browser, "oidc-signed-in")
    finally:
        async def stop() -> None:
            for r in runners:
                await r.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
