"""New Jersey Blackjack Switch, N.J.A.C. 13:69F-2A: insurance (2A.8)."""

from __future__ import annotations

from ..engine.rulepack import RulePack
from .base import (
    CARD,
    CRITICAL,
    END,
    HIGH,
    MEDIUM,
    MONEY,
    POSTED,
    RECORD_CITATIONS,
    WAGER,
    dealing_rules,
    payout_rules,
    procedure_rules,
    rule,
)
from .checks import insurance
from .checks.limits import limit_rules

I = "N.J.A.C. 13:69F-2A.8"  # noqa: E741

PACK = RulePack(
    name="nj-blackjack-switch", version="2024.09-1", jurisdiction="NJ", game="BLACKJACK_SWITCH",
    title="New Jersey Blackjack Switch, N.J.A.C. 13:69F-2A (2A.8 insurance)",
    rules=(
        *procedure_rules(),
        *limit_rules(),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{I}(a)", insurance.not_available, WAGER),
        rule("INSURANCE_ON_MATCH_WAGER", HIGH, f"{I}(e)", insurance.on_match_wager, WAGER),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             insurance.no_main_wager, WAGER, voids=True),
        rule("INSURANCE_TOO_EARLY", HIGH, f"{I}(a)2", insurance.too_early, WAGER),
        rule("INSURANCE_TOO_LATE", HIGH, f"{I}(a)2–3", insurance.too_late, WAGER),
        rule("INSURANCE_OVER_LIMIT", HIGH, f"{I}(b)", insurance.over_limit, WAGER),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{I}(a), (d)", insurance.settlement_wrong,
             MONEY),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{I}(d)", insurance.never_paid, END),
        rule("INSURANCE_PAID_BEFORE_COLLECTION", MEDIUM, f"{I}(d)",
             insurance.paid_before_collection, MONEY),
        rule("INSURANCE_COLLECTION_LATE", MEDIUM, f"{I}(c)", insurance.collection_late,
             (*CARD, *END)),
        *dealing_rules(f"Posted soft-17 rule of the table (Blackjack Switch hits soft 17), "
                       f"{POSTED} (c)"),
        *payout_rules(f"Posted payout odds (Blackjack Switch: blackjack 1 to 1, dealer 22 "
                      f"pushes), {POSTED} (b)"),
    ),
    record_citations=RECORD_CITATIONS,
)
