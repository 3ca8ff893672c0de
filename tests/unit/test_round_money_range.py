"""A round's summed money against the `rounds` columns' range (Int64): each payout may
be as large as `MAX_PAYOUT` (10^18 cents), so ten of them in one round pass the column's
top. Such a round is judged and its row stored all the same, its `paid` at the column's
top (the exact amounts stay in its events' rows); a round within the range keeps its
exact sum."""

from __future__ import annotations

from pathlib import Path

from pitwatch.audit.run import audit_events
from pitwatch.events.limits import MAX_PAYOUT
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.rows import MONEY_TOP
from tests.rounds import TableScript


def _round(payouts: int, amount: int) -> TableScript:
    """Seat 1 wins its main wager and is paid `payouts` times `amount` (every payout but
    the first is one too many: the audit's findings, not the row's concern)."""
    sc = TableScript.opened("nj_blackjack", "NJ-BJ-M1")
    sc.start(1, [1])
    sc.wager(1, "MAIN", 2000)
    sc.deal({1: ("10", "9")}, up="9", hole="8")
    sc.insert_hole(False)
    sc.decide(1, "STAND")
    sc.reveal()
    for _ in range(payouts):
        sc.pay(1, "MAIN", amount)
    sc.clear(1)
    sc.clear()
    sc.end()
    return sc


def _paid(tmp_path: Path, sc: TableScript) -> tuple[int, int]:
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        rep = audit_events(sc.events, store=store)
        assert rep.engine_errors == []
        store.sync()
        rows = store.query("SELECT paid, violations FROM rounds FINAL")
    finally:
        store.close()
    assert len(rows) == 1
    return int(rows[0]["paid"]), int(rows[0]["violations"])


def test_ten_payouts_at_the_ceiling_store_the_round_at_the_columns_top(
        tmp_path: Path) -> None:
    assert 10 * MAX_PAYOUT > MONEY_TOP == 2**63 - 1
    paid, violations = _paid(tmp_path, _round(10, MAX_PAYOUT))
    assert paid == MONEY_TOP
    assert violations > 0  # judged: the payouts are wrong


def test_a_round_within_the_range_keeps_its_exact_sum(tmp_path: Path) -> None:
    paid, violations = _paid(tmp_path, _round(1, 2000))
    assert (paid, violations) == (2000, 0)
