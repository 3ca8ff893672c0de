"""The search and table pages say what a bounded read covers: "whatever you choose, say
it on the page (no false exact count)". A search no index selects that stopped on its
budget of violations examined shows "N+", since when it counted, and a link to the
search before that second, which reads on; a table's dealers are said to be those of
the last 24 hours of its record."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from pitwatch.store import lookup

from .test_console_views import serve, store_dir

__all__ = ["store_dir"]  # the fixture, used here


def test_a_search_past_its_budget_says_how_far_it_counted_and_reads_on(
        store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lookup, "BUDGET", 1)

    async def check(client: TestClient[Any, Any]) -> None:
        html = await (await client.get("/search")).text()
        counts = re.search(r'id="search-counts"><b>([^<]*)</b>', html)
        assert counts is not None and counts.group(1).endswith("+"), counts
        assert "Counted among the violations detected since" in html
        link = re.search(r'href="/search\?([^"]*until=(\d+)[^"]*)" rel="next">earlier than '
                         r'this', html)
        assert link is not None
        until = int(link.group(2))
        counted = int(unescape(counts.group(1)).split(" of ")[-1].rstrip("+"))
        # what it counted is what the store holds since `until`: with the budget over
        # the whole store, the search before `until` counts the rest, exactly
        monkeypatch.setattr(lookup, "BUDGET", 10**9)
        whole = await (await client.get("/api/search")).json()
        before = await (await client.get("/api/search", params={"until": str(until)})).json()
        assert whole["exact"] and before["exact"] and whole["reached"] is None
        assert counted + before["total"] == whole["total"]
        assert all(a["detected_at"] < until for a in before["alerts"])

    serve(store_dir, check)


def test_the_table_page_says_its_dealers_are_of_the_last_day_of_its_record(
        store_dir: Path) -> None:
    async def check(client: TestClient[Any, Any]) -> None:
        html = await (await client.get("/tables/AC-BJ-01")).text()
        assert "Rounds started in the last 24 hours of the table&#x27;s record" in html \
            or "Rounds started in the last 24 hours of the table's record" in html

    serve(store_dir, check)
