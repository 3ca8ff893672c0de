"""New Jersey Blackjack Switch, N.J.A.C. 13:69F-2A: insurance (2A.8). 2A.8(a) gives each
player the right to insure and 2A.8(d) fixes its odds at 2 to 1: a table that posts
otherwise is a finding on its TableOpened, and insurance is judged by the text."""

from __future__ import annotations

from ..blackjack import TWO_TO_ONE
from ..engine.rulepack import RulePack
from .base import (
    AFTER,
    CRITICAL,
    DECISION,
    END,
    HIGH,
    MEDIUM,
    MONEY,
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
from .checks import dealing, insurance, posting
from .checks.limits import limit_rules

INSURANCE_SECTION = "N.J.A.C. 13:69F-2A.8"

PACK = RulePack(
    name="nj-blackjack-switch", version="2024.09-3", jurisdiction="NJ", game="BLACKJACK_SWITCH",
    title="New Jersey Blackjack Switch, N.J.A.C. 13:69F-2A (2A.8 insurance)",
    rules=(
        *early_rules(),
        *procedure_rules(),
        *limit_rules(),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             dealing.unannounced_switch, DECISION, voids=False),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{INSURANCE_SECTION}(a)", insurance.not_available,
             WAGER),
        rule("INSURANCE_ON_MATCH_WAGER", HIGH, f"{INSURANCE_SECTION}(e)", insurance.on_match_wager,
             WAGER),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             insurance.no_main_wager, WAGER, voids=True),
        rule("INSURANCE_TOO_EARLY", HIGH, f"{INSURANCE_SECTION}(a)2", insurance.too_early, WAGER),
        rule("INSURANCE_TOO_LATE", HIGH, f"{INSURANCE_SECTION}(a)2–3", insurance.too_late, WAGER),
        rule("INSURANCE_OVER_LIMIT", HIGH, f"{INSURANCE_SECTION}(b)", insurance.over_limit, WAGER),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{INSURANCE_SECTION}(a), (d)",
             insurance.settlement_wrong,
             MONEY),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{INSURANCE_SECTION}(d)",
             insurance.never_paid, END),
        rule("INSURANCE_PAID_BEFORE_COLLECTION", MEDIUM, f"{INSURANCE_SECTION}(d)",
             insurance.paid_before_collection, MONEY),
        rule("INSURANCE_COLLECTION_LATE", MEDIUM, f"{INSURANCE_SECTION}(c)",
             insurance.collection_late, AFTER),
        *surrender_rules(),
        *even_money_rules(),
        *side_rules(),
        *dealing_rules(),
        *payout_rules(),
    ),
    record_citations=RECORD_CITATIONS,
    posting=(
        posting_rule(f"{INSURANCE_SECTION}(a)", posting.right_granted("insurance", "insurance")),
        posting_rule(f"{INSURANCE_SECTION}(d)",
                     posting.odds_fixed("insurance_pays", "insurance", TWO_TO_ONE)),
    ),
    fixed={"insurance": True, "insurance_pays": TWO_TO_ONE},
)
