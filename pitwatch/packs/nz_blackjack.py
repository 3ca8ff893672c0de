"""New Zealand blackjack, casino rules in the New Zealand Gazette 1996 No 7: payment of
blackjack (8.1–8.3) and insurance (9.1–9.4), in the no-hole-card deal. The text fixes
blackjack at 3 to 2 (8.1, 8.2) and gives each player insurance (9.1) and even money on
request (8.3): a table that posts otherwise is a finding on its TableOpened, and the
engine judges by the text."""

from __future__ import annotations

from ..blackjack import THREE_TO_TWO
from ..engine.rulepack import RulePack
from .base import (
    CARD,
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
    surrender_rules,
)
from .checks import even_money, insurance, posting
from .checks.limits import limit_rules

G = "NZ Gazette 1996 No 7, Blackjack"
PAYOUT = (f"{G} 8.1–8.2 (blackjack 3 to 2, stand-off against a dealer blackjack); "
          f"other wins 1 to 1 as posted, {POSTED} (b)")

PACK = RulePack(
    name="nz-blackjack", version="1996.7-3", jurisdiction="NZ", game="BLACKJACK",
    title="New Zealand blackjack, Gazette 1996 No 7 (8.1–8.3 payment, 9.1–9.4 insurance)",
    rules=(
        *early_rules(PAYOUT),
        *procedure_rules(),
        *limit_rules(),
        rule("INSURANCE_NOT_AVAILABLE", HIGH, f"{G} 9.1", insurance.not_available, WAGER),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             insurance.no_main_wager, WAGER, voids=True),
        rule("INSURANCE_TOO_EARLY", HIGH, f"{G} 9.2–9.3", insurance.too_early, WAGER),
        rule("INSURANCE_TOO_EARLY", HIGH, f"{G} 9.2–9.3", insurance.before_announcement, WAGER),
        rule("INSURANCE_TOO_LATE", HIGH, f"{G} 9.3", insurance.too_late, WAGER),
        rule("INSURANCE_OVER_LIMIT", HIGH, f"{G} 9.3", insurance.over_half, WAGER),
        rule("INSURANCE_UNDER_MINIMUM", HIGH, f"{G} 9.3, 9.4", insurance.under_minimum, CARD,
             voids=False),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{G} 9.1", insurance.settlement_wrong,
             MONEY),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{G} 9.1", insurance.never_paid, END),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, f"{G} 9.1", insurance.never_collected,
             END),
        *even_money_rules(f"{G} 8.3", f"{G} 8.3"),
        rule("BLACKJACK_PAID_EARLY", MEDIUM, f"{G} 8.2", even_money.blackjack_paid_early,
             (*MONEY, *CLEARED)),
        rule("BLACKJACK_PAID_LATE", MEDIUM, f"{G} 8.1", even_money.blackjack_paid_late, CARD),
        rule("EVEN_MONEY_CARDS_REMOVED", MEDIUM, f"{G} 8.3",
             even_money.not_removed_after_even_money, CARD),
        *surrender_rules(),
        *dealing_rules(),
        *payout_rules(PAYOUT),
    ),
    record_citations=RECORD_CITATIONS,
    posting=(
        posting_rule(f"{G} 8.1–8.2", posting.odds_fixed("blackjack_pays", "blackjack",
                                                        THREE_TO_TWO)),
        posting_rule(f"{G} 9.1", posting.right_granted("insurance", "insurance")),
        posting_rule(f"{G} 8.3", posting.right_granted("even_money", "even money")),
    ),
    fixed={"blackjack_pays": THREE_TO_TWO, "insurance": True, "even_money": True},
)
