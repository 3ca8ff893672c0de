"""New Jersey blackjack, N.J.A.C. 13:69F-2: late surrender (2.8) and the dealer-bust
bonus wager (2.25)."""

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
    STOPPED,
    WAGER,
    dealing_rules,
    payout_rules,
    procedure_rules,
    rule,
)
from .checks import bonus, surrender
from .checks.limits import limit_rules

S = "N.J.A.C. 13:69F-2.8"
B = "N.J.A.C. 13:69F-2.25"

PACK = RulePack(
    name="nj-blackjack", version="2024.09-1", jurisdiction="NJ", game="BLACKJACK",
    title="New Jersey blackjack, N.J.A.C. 13:69F-2 (2.8 surrender, 2.25 bonus wager)",
    rules=(
        *procedure_rules(),
        *limit_rules(),
        rule("SURRENDER_NOT_AVAILABLE", HIGH, f"{S}(c)", surrender.not_available, DECISION),
        rule("SURRENDER_TOO_EARLY", HIGH, f"{S}(a)", surrender.too_early, DECISION),
        rule("SURRENDER_TOO_LATE", HIGH, f"{S}(a)", surrender.too_late, DECISION),
        rule("SURRENDER_SETTLEMENT_WRONG", CRITICAL, f"{S}(a)1–2", surrender.settlement_wrong,
             MONEY),
        rule("SURRENDER_SETTLEMENT_WRONG", CRITICAL, f"{S}(a)1–2",
             surrender.not_settled_at_once, (*CARD, *DECISION, *END)),
        rule("BONUS_WAGER_NOT_AVAILABLE", HIGH, f"{B}(a), (h)", bonus.not_available, WAGER),
        rule("BONUS_WAGER_TOO_LATE", HIGH, f"{B}(b)", bonus.too_late, WAGER),
        rule("BONUS_WAGER_WITHOUT_MAIN", HIGH, f"{B}(b)", bonus.without_main, WAGER),
        rule("BONUS_WAGER_AMOUNT", HIGH, f"{B}(c)", bonus.amount, WAGER),
        rule("BONUS_THIRD_CARD_NOT_DRAWN", MEDIUM, f"{B}(d)", bonus.third_card_not_drawn,
             (*STOPPED, *CLEARED)),
        rule("BONUS_SETTLEMENT_ORDER", MEDIUM, f"{B}(e)", bonus.settlement_order, MONEY),
        rule("BONUS_SETTLEMENT_WRONG", CRITICAL,
             f"{B}(d)–(f) (three eights: the table's posted pay table, (f)'s is not in the text)",
             bonus.settlement_wrong, MONEY),
        rule("BONUS_SETTLEMENT_WRONG", CRITICAL, f"{B}(e)", bonus.never_settled, END),
        *dealing_rules(f"Posted soft-17 rule of the table, {POSTED} (c)"),
        *payout_rules(f"Posted payout odds (blackjack as posted, wins 1 to 1), {POSTED} (b)"),
    ),
    record_citations=RECORD_CITATIONS,
)
