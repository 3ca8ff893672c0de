"""Pennsylvania Free Bet Blackjack, 58 Pa. Code Chapter 672a: insurance and even money
(§ 672a.8)."""

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

P = "58 Pa. Code § 672a.8"

PACK = RulePack(
    name="pa-free-bet-blackjack", version="2024.09-1", jurisdiction="PA",
    game="FREE_BET_BLACKJACK",
    title="Pennsylvania Free Bet Blackjack, 58 Pa. Code 672a (672a.8 insurance, even money)",
    rules=(
        *procedure_rules(),
        *limit_rules(),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{P}(a)", insurance.not_available, WAGER),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{P}(a)", insurance.before_up_card, WAGER),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             insurance.no_main_wager, WAGER, voids=True),
        rule("INSURANCE_TOO_LATE", HIGH, f"{P}(b)", insurance.too_late, WAGER),
        rule("INSURANCE_OVER_LIMIT", HIGH, f"{P}(b)", insurance.over_limit, WAGER),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{P}(c); odds as posted, {POSTED} (b)",
             insurance.settlement_wrong, MONEY),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{P}(c)", insurance.never_paid, END),
        rule("INSURANCE_COLLECTION_LATE", MEDIUM, f"{P}(d)", insurance.collection_late,
             (*CARD, *END)),
        rule("EVEN_MONEY_NOT_AVAILABLE", HIGH, f"{P}(e)", even_money.not_available, DECISION),
        rule("EVEN_MONEY_SETTLEMENT_WRONG", CRITICAL, f"{P}(e)", even_money.settlement_wrong,
             MONEY),
        rule("EVEN_MONEY_CARDS_REMOVED", MEDIUM, f"{P}(e)", even_money.cards_removed, CLEARED),
        *dealing_rules(f"Posted soft-17 rule of the table (Free Bet Blackjack stands on all "
                       f"17s), {POSTED} (c)"),
        *payout_rules(f"Posted payout odds (Free Bet Blackjack: blackjack 3 to 2, dealer 22 "
                      f"pushes), {POSTED} (b)"),
    ),
    record_citations=RECORD_CITATIONS,
)
