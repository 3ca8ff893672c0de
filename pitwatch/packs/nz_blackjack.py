"""New Zealand blackjack, casino rules in the New Zealand Gazette 1996 No 7: payment of
blackjack (8.1–8.3) and insurance (9.1–9.4), in the no-hole-card deal."""

from __future__ import annotations

from ..engine.rulepack import RulePack
from .base import (
    CARD,
    CLEARED,
    CRITICAL,
    DECISION,
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
from .checks import even_money, insurance
from .checks.limits import limit_rules

G = "NZ Gazette 1996 No 7, Blackjack"

PACK = RulePack(
    name="nz-blackjack", version="1996.7-1", jurisdiction="NZ", game="BLACKJACK",
    title="New Zealand blackjack, Gazette 1996 No 7 (8.1–8.3 payment, 9.1–9.4 insurance)",
    rules=(
        *procedure_rules(),
        *limit_rules(),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{G} 9.1", insurance.not_available, WAGER),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             insurance.no_main_wager, WAGER, voids=True),
        rule("INSURANCE_TOO_EARLY", HIGH, f"{G} 9.2–9.3", insurance.too_early, WAGER),
        rule("INSURANCE_TOO_LATE", HIGH, f"{G} 9.3", insurance.too_late, WAGER),
        rule("INSURANCE_OVER_LIMIT", HIGH, f"{G} 9.3", insurance.over_half, WAGER),
        rule("INSURANCE_UNDER_MINIMUM", HIGH, f"{G} 9.3, 9.4", insurance.under_minimum, WAGER),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{G} 9.1", insurance.settlement_wrong,
             MONEY),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{G} 9.1", insurance.never_paid, END),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{G} 9.1", insurance.never_collected,
             END),
        rule("EVEN_MONEY_NOT_AVAILABLE", HIGH, f"{G} 8.3", even_money.not_available, DECISION),
        rule("EVEN_MONEY_SETTLEMENT_WRONG", CRITICAL, f"{G} 8.3", even_money.settlement_wrong,
             MONEY),
        rule("BLACKJACK_PAID_EARLY", MEDIUM, f"{G} 8.2", even_money.blackjack_paid_early,
             (*MONEY, *CLEARED)),
        rule("BLACKJACK_PAID_LATE", MEDIUM, f"{G} 8.1", even_money.blackjack_paid_late, CARD),
        *dealing_rules(f"Posted soft-17 rule of the table, {POSTED} (c)"),
        *payout_rules(f"{G} 8.1–8.2 (blackjack 3 to 2, stand-off against a dealer blackjack); "
                      f"other wins 1 to 1 as posted, {POSTED} (b)"),
    ),
    record_citations=RECORD_CITATIONS,
)
