"""Game protection in the console, in a real browser (issue 37: "The console's new pages
are covered by browser tests"): over the test ClickHouse server, a floor with a Hi-Lo
counter and a hole-card player audited into the store with its observations; an
operator opens the protection list from the nav, the counter's seat-session page (its
bet-against-count chart names the session) and a dealer's page (hold against
theoretical with its band). The site, console and browser are test_console_browser.py's
fixtures; screenshots go to .run/artifacts/console-protection-*.png (the session page's
is docs/console-protection.png, the README's, copied by hand)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.producers.players import SimTable, events, make_player
from pitwatch.protect.run import protect
from pitwatch.protect.stored import store_observations

from .test_console_browser import (  # noqa: F401 (fixtures, used by name)
    Serve,
    Site,
    browser,
    console,
    login,
    no_sideways_scroll,
    shot,
    site,
    wait,
)

pytestmark = pytest.mark.integration

TABLE = "SIM-BJ-00000"
COUNTER = f"{TABLE}/1/{TABLE}-000001"


@pytest.fixture(scope="module")
def protected(site: Site) -> Site:  # noqa: F811
    """The site's store with one more table: a counter with a 1-8 ramp at seat 1, a flat
    bettor at 3 and a hole-card player at 5 at a flashing table, 150 rounds, seated by
    seat events; audited, and its observations stored as `pitwatch protect` stores them."""
    players = {s: make_player(p, 5, s, 0)
               for s, p in {1: "counter-8", 3: "flat", 5: "holecard"}.items()}
    evs = events(SimTable(0, 5, players, flash=0.3, seated=True), 150, 5)
    audit_events(evs, store=site.store)
    store_observations(site.store, protect(evs))
    return site


def test_an_operator_opens_the_protection_list_a_counters_session_and_a_dealer(
        protected: Site, console: Serve, browser: Any) -> None:  # noqa: F811
    login(browser, console.url, "operator")
    browser.get(console.url + "/floor")
    browser.find_element("css selector", 'nav a[href="/protection"]').click()
    rows = wait(browser).until(lambda d: d.find_elements(
        "css selector", "table.observations tr.obs"))
    codes = {r.get_attribute("data-code") for r in rows}
    assert {"COUNT_CORRELATED_BETTING", "HOLE_CARD_PLAY"} <= codes
    shot(browser, "protection-list")

    link = browser.find_element("css selector", f'a[href="/sessions/{quote(COUNTER, safe="")}"]')
    link.click()
    chart = wait(browser, 60).until(lambda d: d.find_elements("css selector", "svg#bet-chart"))
    title = chart[0].find_element("css selector", "title").get_attribute("textContent")
    assert title == f"Bet against true count: seat session {COUNTER}"
    dots = browser.find_elements("css selector", "svg#bet-chart circle.pt")
    heavy = browser.find_elements("css selector", "svg#bet-chart circle.weight")
    assert len(dots) >= 100 and 1 <= len(heavy) <= 10
    page = browser.find_element("id", "main").text
    assert "rated player LOYAL-00000-1" in page and "UTC" in page
    browser.set_window_size(1440, 1500)  # who, the observations and the chart at once
    try:
        shot(browser, "protection-session")
    finally:
        browser.set_window_size(1440, 900)

    # followed, not clicked: the standing CRITICAL banner may lie over it once scrolled
    browser.get(browser.find_element("css selector", 'a[href="/dealers/SD00000-001"]')
                .get_attribute("href"))
    wait(browser, 60).until(lambda d: d.find_elements("css selector",
                                                      "svg#hold-chart polygon.band"))
    desc = browser.find_element("css selector", "svg#hold-chart desc").get_attribute(
        "textContent")
    assert desc.startswith("40 rounds: house result ") and "3 standard deviations" in desc
    text = browser.find_element("id", "main").text
    assert "Error rate against the floor" in text and TABLE in text
    shot(browser, "protection-dealer")

    browser.set_window_size(390, 844)  # a phone: the pages fit, the charts shrink
    try:
        for path in ("/protection", f"/sessions/{quote(COUNTER, safe='')}",
                     "/dealers/SD00000-001"):
            browser.get(console.url + path)
            wait(browser, 60).until(lambda d: d.find_elements("css selector", "main h1"))
            assert no_sideways_scroll(browser), path
        shot(browser, "protection-dealer-390")
    finally:
        browser.set_window_size(1440, 900)
