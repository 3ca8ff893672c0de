"""New Jersey blackjack, N.J.A.C. 13:69F-2: late surrender (2.8), the dealer-bust bonus
wager (2.25) and insurance.

Insurance: the text of 13:69F-2.9 was not retrieved (docs/regulations/
nj-13-69F-2.9-insurance.txt), so insurance is judged against the table's posting as
read in docs/regulations/posted-rules.txt (d), with the words of the sibling section
13:69F-2A.8, and cited there. Version 2024.09-1, the composition before insurance was
checked at this table, stays selectable for re-audits (`registry.get`).
"""

from __future__ import annotations

from ..engine.rulepack import Rule, RulePack
from .base import (
    AFTER,
    CARD,
    CLEARED,
    CRITICAL,
    END,
    HIGH,
    MEDIUM,
    MONEY,
    OPTION_POSTED,
    PAYOUT_POSTED,
    RECORD_CITATIONS,
    STOPPED,
    WAGER,
    dealing_rules,
    early_rules,
    even_money_rules,
    payout_rules,
    posted,
    posting_rule,
    procedure_rules,
    rule,
    surrender_rules,
)
from .checks import bonus, insurance, posting
from .checks.limits import limit_rules

SURRENDER_SECTION = "N.J.A.C. 13:69F-2.8"
BONUS_WAGER_SECTION = "N.J.A.C. 13:69F-2.25"
NAME = "nj-blackjack"
TITLE = "New Jersey blackjack, N.J.A.C. 13:69F-2 (2.8 surrender, 2.25 bonus wager{})"


def _insurance(n: int) -> str:
    return posted("d", "insurance at a New Jersey blackjack table (13:69F-2.9 not retrieved)",
                  item=n)


def insurance_rules() -> list[Rule]:
    return [
        rule("INSURANCE_NOT_AVAILABLE", HIGH, _insurance(1), insurance.not_available, WAGER),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1],
             insurance.no_main_wager, WAGER, voids=True),
        rule("INSURANCE_TOO_EARLY", HIGH, _insurance(3), insurance.too_early, WAGER),
        rule("INSURANCE_TOO_LATE", HIGH, _insurance(3), insurance.too_late, WAGER),
        rule("INSURANCE_OVER_LIMIT", HIGH, _insurance(2), insurance.over_limit, WAGER),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, _insurance(5), insurance.settlement_wrong,
             MONEY),
        rule("INSURANCE_SETTLEMENT_WRONG", CRITICAL, _insurance(5), insurance.never_paid, END),
        rule("INSURANCE_PAID_BEFORE_COLLECTION", MEDIUM, _insurance(5),
             insurance.paid_before_collection, MONEY),
        rule("INSURANCE_COLLECTION_LATE", MEDIUM, _insurance(4),
             insurance.collection_late_after_reader, AFTER),
    ]


def _rules(with_insurance: bool) -> tuple[Rule, ...]:
    return (
        *early_rules(PAYOUT_POSTED),
        *procedure_rules(),
        *limit_rules(),
        *surrender_rules(f"{SURRENDER_SECTION}(c)", f"{SURRENDER_SECTION}(a)",
                         f"{SURRENDER_SECTION}(a)1–2"),
        *(insurance_rules() if with_insurance else []),
        *even_money_rules(OPTION_POSTED, OPTION_POSTED),
        rule("BONUS_WAGER_NOT_AVAILABLE", HIGH, f"{BONUS_WAGER_SECTION}(a), (h)",
             bonus.not_available, WAGER),
        rule("BONUS_WAGER_NOT_AVAILABLE", HIGH, "N.J.A.C. 13:69F-2.2(a)4",
             bonus.too_few_decks, WAGER),
        rule("BONUS_WAGER_TOO_LATE", HIGH, f"{BONUS_WAGER_SECTION}(b)", bonus.too_late, WAGER),
        rule("BONUS_WAGER_WITHOUT_MAIN", HIGH, f"{BONUS_WAGER_SECTION}(b)", bonus.without_main,
             WAGER),
        rule("BONUS_WAGER_AMOUNT", HIGH, f"{BONUS_WAGER_SECTION}(c)", bonus.amount, WAGER),
        rule("BONUS_WAGER_AMOUNT", HIGH, f"{BONUS_WAGER_SECTION}(c)", bonus.at_close, CARD,
             voids=False),
        rule("BONUS_THIRD_CARD_NOT_DRAWN", MEDIUM, f"{BONUS_WAGER_SECTION}(d)",
             bonus.third_card_not_drawn, (*STOPPED, *CLEARED)),
        rule("BONUS_SETTLEMENT_ORDER", MEDIUM, f"{BONUS_WAGER_SECTION}(e)", bonus.settlement_order,
             MONEY),
        rule("BONUS_SETTLEMENT_ORDER", MEDIUM, f"{BONUS_WAGER_SECTION}(e)", bonus.left_up, CARD),
        rule("BONUS_SETTLEMENT_WRONG", CRITICAL,
             f"{BONUS_WAGER_SECTION}(d)–(f) (three eights: the table's posted pay table, "
             "(f)'s is not in the text)",
             bonus.settlement_wrong, MONEY),
        rule("BONUS_SETTLEMENT_WRONG", CRITICAL, f"{BONUS_WAGER_SECTION}(e)", bonus.never_settled,
             END),
        *dealing_rules(),
        *payout_rules(PAYOUT_POSTED),
    )


POSTING = (
    posting_rule(f"{SURRENDER_SECTION}(c)", posting.surrender_barred),
    posting_rule(f"{BONUS_WAGER_SECTION}(h)", posting.bonus_barred),
    posting_rule("N.J.A.C. 13:69F-2.2(a)4", posting.bonus_decks),
)

PACK = RulePack(
    name=NAME, version="2024.09-3", jurisdiction="NJ", game="BLACKJACK",
    title=TITLE.format(", insurance as posted"), rules=_rules(with_insurance=True),
    record_citations=RECORD_CITATIONS, posting=POSTING,
)

#: The composition before insurance was checked at a New Jersey blackjack table.
PREVIOUS = RulePack(
    name=NAME, version="2024.09-1", jurisdiction="NJ", game="BLACKJACK",
    title=TITLE.format(""), rules=_rules(with_insurance=False),
    record_citations=RECORD_CITATIONS, posting=POSTING,
)

__all__ = ["PACK", "PREVIOUS"]
