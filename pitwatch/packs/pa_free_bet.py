"""Pennsylvania Free Bet Blackjack, 58 Pa. Code Chapter 672a: insurance and even money
(§ 672a.8). 672a.8(a) lets each player insure: a table that posts insurance off is a
finding on its TableOpened, and insurance is judged as offered. Even money is the
certificate holder's option (672a.8(e)), so the posting decides it."""

from __future__ import annotations

from ..engine.rulepack import RulePack
from .base import (
    AFTER,
    CLEARED,
    CRITICAL,
    END,
    HIGH,
    MEDIUM,
    MONEY,
    POSTED,
    RECORD_CITATIONS,
    WAGER,
    dealing_rules,
    early_rules,
    even_money_rules,
    payout_rules,
    posting_rule,
    procedure_rules,
    rule,
    side_rules,
    surrender_rules,
)
from .checks import even_money, insurance, posting
from .checks.limits import limit_rules

INSURANCE_SECTION = "58 Pa. Code § 672a.8"

PACK = RulePack(
    name="pa-free-bet-blackjack", version="2024.09-3", jurisdiction="PA",
    game="FREE_BET_BLACKJACK",
    title="Pennsylvania Free Bet Blackjack, 58 Pa. Code 672a (672a.8 insurance, even money)",
    rules=(
        *early_rules(),
        *procedure_rules(),
        *limit_rules(),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{INSURANCE_SECTION}(a)", insurance.not_available,
             WAGER),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{INSURANCE_SECTION}(a)", insurance.before_up_card,
             WAGER),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             insurance.no_main_wager, WAGER, voids=True),
        rule("INSURANCE_TOO_LATE", HIGH, f"{INSURANCE_SECTION}(b)", insurance.too_late, WAGER),
        rule("INSURANCE_OVER_LIMIT", HIGH, f"{INSURANCE_SECTION}(b)", insurance.over_limit, WAGER),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL,
             f"{INSURANCE_SECTION}(c); odds as posted, {POSTED} (b)",
             insurance.settlement_wrong, MONEY),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{INSURANCE_SECTION}(c)",
             insurance.never_paid, END),
        rule("INSURANCE_COLLECTION_LATE", MEDIUM, f"{INSURANCE_SECTION}(d)",
             insurance.collection_late_after_reader, AFTER),
        *even_money_rules(f"{INSURANCE_SECTION}(e)", f"{INSURANCE_SECTION}(e)"),
        rule("EVEN_MONEY_CARDS_REMOVED", MEDIUM, f"{INSURANCE_SECTION}(e)",
             even_money.cards_removed, CLEARED),
        *surrender_rules(),
        *side_rules(),
        *dealing_rules(),
        *payout_rules(),
    ),
    record_citations=RECORD_CITATIONS,
    posting=(posting_rule(f"{INSURANCE_SECTION}(a)",
                          posting.right_granted("insurance", "insurance")),),
    fixed={"insurance": True},
)
