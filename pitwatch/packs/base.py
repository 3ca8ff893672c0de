"""What every pack holds: the record checks the auditor makes, and the checks of the
cards, the dealer's play, the procedure, void wagers, the decisions a table offers and
the money of every wager it posts."""

from __future__ import annotations

from collections.abc import Iterable

from ..engine.rulepack import Check, PostingRule, Rule
from ..engine.violation import Severity
from ..events.model import (
    CardDealt,
    CardsCleared,
    HoleCardChecked,
    HoleCardInserted,
    HoleCardRevealed,
    InsuranceOffered,
    Payload,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    RoundStarted,
    SwitchOffered,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from .checks import dealing, even_money, hands, posting, side, surrender, void

#: what a table posts, read where no regulation text in docs/regulations fixes a rule
POSTED = "docs/regulations/posted-rules.txt"
CRITICAL, HIGH, MEDIUM, LOW = Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW
MONEY: tuple[type[Payload], ...] = (PayoutMade, WagerCollected, WagerReturned)
WAGER: tuple[type[Payload], ...] = (WagerPlaced,)
CARD: tuple[type[Payload], ...] = (CardDealt,)
DECISION: tuple[type[Payload], ...] = (PlayerDecision,)
CLEARED: tuple[type[Payload], ...] = (CardsCleared,)
END: tuple[type[Payload], ...] = (RoundEnded,)
#: Events that show the dealer has stopped drawing.
STOPPED: tuple[type[Payload], ...] = (*MONEY, CardsCleared, RoundEnded)
#: Every event of the play after the deal (what "immediately" is measured against).
AFTER: tuple[type[Payload], ...] = (CardDealt, PlayerDecision, SwitchOffered,
                                    HoleCardRevealed, *MONEY, CardsCleared, RoundEnded)
#: Every event of a round.
PLAY: tuple[type[Payload], ...] = (*AFTER, RoundStarted, WagerPlaced, InsuranceOffered,
                                   HoleCardInserted, HoleCardChecked)

RECORD = "pitwatch record rule, docs/events.md §"
RECORD_CITATIONS: dict[str, tuple[Severity, str]] = {
    "EVENTS_LOST": (HIGH, f"{RECORD} The record (a break in the record: events lost)"),
    "DEVICE_RESTARTED": (MEDIUM, f"{RECORD} The record (a device that restarts starts a "
                         "new chain at seq 1)"),
    "SEQUENCE_CONFLICT": (HIGH, f"{RECORD} The record (one seq, one event)"),
    "DIGEST_MISMATCH": (LOW, f"{RECORD} The record (prev_digest: SHA-256 of the previous "
                        "event)"),
    "ROUND_INCOMPLETE": (LOW, f"{RECORD} Rounds (every round ends with RoundEnded)"),
    "EVENT_REFUSED": (HIGH, f"{RECORD} Ranges (an event outside them is refused where it "
                      "is decoded)"),
    "DEVICE_LIMIT_EXCEEDED": (MEDIUM, f"{RECORD} Ranges (a table has at most 32 devices)"),
    "TABLE_NOT_OPENED": (MEDIUM, f"{RECORD} Rounds (a table's TableOpened comes before its "
                         "rounds)"),
    "SIGNATURE_INVALID": (HIGH, f"{RECORD} Signed checkpoints (a device in the key registry "
                          "signs its chain)"),
    "PROCEDURE_OUT_OF_ORDER": (MEDIUM, "pitwatch record rule, docs/procedure.md § A round, "
                               "in order"),
}
VOID_CITATION = f"{RECORD} Wagers (a void wager is handed back whole)"
#: A posting that contradicts a text: a finding on the table's TableOpened.
POSTING_CODE = "POSTED_RULES_CONTRADICT_REGULATION"


def posted(paragraph: str, what: str, item: int | None = None) -> str:
    """A citation of the posted rules, where no text in docs/regulations fixes the rule:
    pitwatch's reading in posted-rules.txt, by paragraph (and item)."""
    return f"Posted {what}, {POSTED} ({paragraph}){'' if item is None else item}"


PAYOUT_POSTED = posted("b", "payout odds")
DEALER_POSTED = posted("c", "dealer's draw")
SHOE_POSTED = posted("e", "shoe (ShoeLoaded.decks copies of each card)")
OPTION_POSTED = posted("f", "options and side wagers")


def rule(code: str, severity: Severity, citation: str, check: Check,
         on: Iterable[type[Payload]], voids: bool | None = None) -> Rule:
    """A rule; HIGH findings void their event unless told otherwise."""
    return Rule(code, severity, citation, check, tuple(on),
                severity is HIGH if voids is None else voids)


def posting_rule(citation: str, check: posting.PostingCheck) -> PostingRule:
    return PostingRule(POSTING_CODE, HIGH, citation, check)


def procedure_rules() -> list[Rule]:
    """Run first: an event the round cannot admit is void before anything else looks;
    a void wager's money is judged before any check of a standing wager."""
    cite = RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1]
    code = "PROCEDURE_OUT_OF_ORDER"
    return [
        rule("VOID_WAGER_SETTLED", CRITICAL, VOID_CITATION, void.settled, MONEY),
        rule("VOID_WAGER_SETTLED", CRITICAL, VOID_CITATION, void.never_handed_back, END),
        rule(code, MEDIUM, cite, dealing.card_to_unknown_hand, CARD, voids=True),
        rule(code, MEDIUM, cite, dealing.decision_for_unknown_hand, DECISION, voids=True),
        rule(code, MEDIUM, cite, dealing.wager_out_of_order, WAGER, voids=True),
        rule(code, MEDIUM, cite, dealing.settlement_of_unknown_wager, MONEY),
    ]


def dealing_rules(dealer_citation: str = DEALER_POSTED) -> list[Rule]:
    cite = RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1]
    return [
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, cite, dealing.unannounced_reveal, CARD,
             voids=False),
        rule("CARD_COUNT_EXCEEDED", MEDIUM, SHOE_POSTED, dealing.card_count_exceeded, CARD),
        rule("DEALER_DREW_WRONG", MEDIUM, dealer_citation, dealing.dealer_drew, CARD),
        rule("DEALER_DREW_WRONG", MEDIUM, dealer_citation, dealing.dealer_stood, STOPPED),
    ]


def early_rules(citation: str = PAYOUT_POSTED) -> list[Rule]:
    """Money settled on a hand before its outcome was known, judged once the record
    decides it, on whatever event comes then. They run first: they judge earlier
    events, so a finding that voids this one must not keep them from it."""
    cite = RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1]
    return [
        rule("PAYOUT_WRONG", CRITICAL, citation, hands.early_settlement_wrong, PLAY),
        rule("PROCEDURE_OUT_OF_ORDER", MEDIUM, cite, hands.early_settlement_order, PLAY,
             voids=False),
    ]


def payout_rules(citation: str = PAYOUT_POSTED) -> list[Rule]:
    return [
        rule("PAYOUT_WRONG", CRITICAL, citation, hands.payout_wrong, MONEY),
        rule("PAYOUT_WRONG", CRITICAL, citation, hands.never_settled, END),
    ]


def surrender_rules(offered: str = OPTION_POSTED, timing: str = OPTION_POSTED,
                    settlement: str = OPTION_POSTED) -> list[Rule]:
    """Surrender: where a table does not offer it the decision is void; where it is
    taken, its money is judged (so no pack lets a surrendered hand's money pass)."""
    return [
        rule("SURRENDER_NOT_AVAILABLE", HIGH, offered, surrender.not_available, DECISION),
        rule("SURRENDER_TOO_EARLY", HIGH, timing, surrender.too_early, DECISION),
        rule("SURRENDER_TOO_LATE", HIGH, timing, surrender.too_late, DECISION),
        rule("SURRENDER_SETTLEMENT_WRONG", CRITICAL, settlement, surrender.settlement_wrong,
             MONEY),
        rule("SURRENDER_SETTLEMENT_WRONG", CRITICAL, settlement,
             surrender.not_settled_at_once, PLAY),
    ]


def even_money_rules(offered: str = OPTION_POSTED, settlement: str = OPTION_POSTED
                     ) -> list[Rule]:
    """Even money: void where the table does not offer it (or too late, or on an insured
    hand); where taken, its money is judged."""
    return [
        rule("EVEN_MONEY_NOT_AVAILABLE", HIGH, offered, even_money.not_available, DECISION),
        rule("EVEN_MONEY_SETTLEMENT_WRONG", CRITICAL, settlement, even_money.settlement_wrong,
             MONEY),
        rule("EVEN_MONEY_SETTLEMENT_WRONG", CRITICAL, settlement, even_money.never_paid, END),
    ]


def side_rules(citation: str = OPTION_POSTED) -> list[Rule]:
    """The match and Push 22 wagers' money."""
    code = "SIDE_WAGER_SETTLEMENT_WRONG"
    return [
        rule(code, CRITICAL, citation, side.settlement_wrong, MONEY),
        rule(code, CRITICAL, citation, side.never_settled, END),
    ]
