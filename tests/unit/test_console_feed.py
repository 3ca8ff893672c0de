"""The live feed's hub and the alerts-topic reader, without a broker: what a bad
message does, what a good one does, and that pages only get what they asked for."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pitwatch.console.data import Filters, alert, pack_jurisdictions
from pitwatch.console.feed import Hub, KafkaAlerts, StorePoller
from pitwatch.console.feed_types import Polled
from pitwatch.engine.violation import Violation
from pitwatch.events.violation_avro import encode_violation


def violation(code: str = "PAYOUT_WRONG", severity: str = "CRITICAL",
              event_id: str = "e1") -> Violation:
    return Violation(code, severity, "PH-FB-03", "PH-FB-03-000004", 2, 0, event_id, (),
                     "58 Pa. Code § 672a.8(c)", "PUSH22 $5.00 paid $50.00; expected $55.00",
                     "pa-free-bet-blackjack", "2024.09-1", 1796064572723)


def test_bad_messages_are_counted_and_announced_and_the_feed_goes_on() -> None:
    async def main() -> None:
        hub = Hub()
        page = hub.subscribe()
        reader = KafkaAlerts(hub, "unused:9092", "alerts", pack_jurisdictions())
        good = violation()
        reader._one("alerts[0]@7", b"\x00not avro")
        reader._one("alerts[1]@3", None)
        reader._one("alerts[0]@8", encode_violation(good)[:-3])  # truncated
        reader._one("alerts[0]@9", encode_violation(good))
        got = [page.get_nowait() for _ in range(4)]
        assert [m["type"] for m in got] == ["bad", "bad", "bad", "alert"]
        assert got[0]["where"] == "alerts[0]@7" and "single-object header" in got[0]["reason"]
        assert "tombstone" in got[1]["reason"]
        assert hub.bad_messages == 3 and hub.status()["bad_messages"] == 3
        a = got[3]["alert"]
        assert a["violation_id"] == good.violation_id
        assert (a["jurisdiction"], a["seat"], a["hand"]) == ("PA", 2, 0)
        assert a["detected_at"] == 1796064572723

    asyncio.run(main())


def test_an_alert_is_published_once() -> None:
    async def main() -> None:
        hub = Hub()
        page = hub.subscribe()
        reader = KafkaAlerts(hub, "unused:9092", "alerts", pack_jurisdictions())
        msg = encode_violation(violation())
        reader._one("alerts[0]@1", msg)
        reader._one("alerts[0]@1", msg)  # redelivered
        assert page.qsize() == 1 and len(hub.recent) == 1
        hub.unsubscribe(page)
        reader._one("alerts[0]@2", encode_violation(violation(event_id="e2")))
        assert page.qsize() == 1  # an unsubscribed page gets nothing more

    asyncio.run(main())


def test_filters_match_what_they_name() -> None:
    a = {"severity": "HIGH", "code": "BONUS_WAGER_AMOUNT", "table_id": "AC-BJ-01",
         "jurisdiction": "NJ"}
    assert Filters().matches(a)
    assert Filters.parse({"severity": "high", "jurisdiction": "nj"}).matches(a)
    assert not Filters.parse({"severity": "CRITICAL"}).matches(a)
    assert not Filters.parse({"table": "AC-BJ-05"}).matches(a)
    assert not Filters.parse({"code": "PAYOUT_WRONG"}).matches(a)
    assert not Filters.parse({"jurisdiction": "PA"}).matches(a)
    where, params = Filters.parse({"jurisdiction": "PA", "code": "PAYOUT_WRONG"}).where()
    # a code's rounds from its index table, then `violations` by its sort key
    assert where == ("1 AND (table_id, round_id) IN (SELECT table_id, round_id FROM "
                     "violation_codes WHERE severity IN {sevs:Array(String)} AND code = "
                     "{code:String}) AND code = {code:String} AND "
                     "has({packs:Array(String)}, pack)")
    assert params == {"code": "PAYOUT_WRONG", "packs": ["pa-free-bet-blackjack"],
                      "sevs": ("CRITICAL", "HIGH", "MEDIUM", "LOW")}


def test_the_store_poller_reads_what_arrived_since_its_last_read() -> None:
    """After the first read, the poller asks for what the store received since (its own
    clock, a few seconds of overlap), whatever the findings' device time: a finding that
    lands late still reaches the feed."""
    async def main() -> None:
        hub = Hub()
        asked: list[int | None] = []
        first = [alert_of(violation(event_id="a")), alert_of(violation(event_id="b"))]
        late = alert_of(violation(event_id="c"))
        late["detected_at"] -= 86_400_000  # a day behind on the device's clock

        async def fetch(since: int | None, after: int | None) -> Polled:
            asked.append(since)
            if len(asked) == 3:
                raise asyncio.CancelledError
            return Polled(first if since is None else [late], [], 5000 + len(asked))

        poller = StorePoller(hub, fetch, every=0.001)
        with pytest.raises(asyncio.CancelledError):  # how the fake ends the loop
            await poller.run()
        assert asked == [None, 5001 - StorePoller.OVERLAP_S, 5002 - StorePoller.OVERLAP_S]
        assert len(hub.recent) == 3 and late["violation_id"] in hub.recent

    asyncio.run(main())


def alert_of(v: Violation) -> dict[str, Any]:
    return alert(v.to_json(), pack_jurisdictions())
