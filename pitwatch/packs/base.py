"""What every pack holds: the record checks the auditor makes, and the checks of the
cards, the dealer's play, the procedure and main-wager payouts."""

from __future__ import annotations

from collections.abc import Iterable

from ..engine.rulepack import Check, Rule
from ..engine.violation import Severity
from ..events.model import (
    CardDealt,
    CardsCleared,
    Payload,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from .checks import dealing, hands

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

RECORD = "pitwatch record rule, docs/events.md §"
RECORD_CITATIONS: dict[str, tuple[Severity, str]] = {
    "SEQUENCE_GAP": (LOW, f"{RECORD} The record (seq rises by 1 per device)"),
    "SEQUENCE_CONFLICT": (LOW, f"{RECORD} The record (one seq, one event)"),
    "DIGEST_MISMATCH": (LOW, f"{RECORD} The record (prev_digest: SHA-256 of the previous "
                        "event)"),
    "ROUND_INCOMPLETE": (LOW, f"{RECORD} Rounds (every round ends with RoundEnded)"),
    "PROCEDURE_OUT_OF_ORDER": (MEDIUM, "pitwatch record rule, docs/procedure.md § A round, "
                               "in order"),
}


def rule(code: str, severity: Severity, citation: str, check: Check,
         on: Iterable[type[Payload]], voids: bool | None = None) -> Rule:
    """A rule; HIGH findings void their event unless told otherwise."""
    return Rule(code, severity, citation, check, tuple(on),
                severity is HIGH if voids is None else voids)


def procedure_rules() -> list[Rule]:
    """Run first: an event the round cannot admit is void before anything else looks."""
    cite = RECORD_CITATIONS["PROCEDURE_OUT_OF_ORDER"][1]
    code = "PROCEDURE_OUT_OF_ORDER"
    return [
        rule(code, MEDIUM, cite, dealing.card_to_unknown_hand, CARD, voids=True),
        rule(code, MEDIUM, cite, dealing.decision_for_unknown_hand, DECISION, voids=True),
        rule(code, MEDIUM, cite, dealing.wager_out_of_order, WAGER, voids=True),
        rule(code, MEDIUM, cite, dealing.settlement_of_unknown_wager, MONEY),
    ]


def dealing_rules(dealer_citation: str) -> list[Rule]:
    return [
        rule("CARD_COUNT_EXCEEDED", MEDIUM, "Posted shoe (ShoeLoaded.decks copies of each "
             f"card), {POSTED} (e)", dealing.card_count_exceeded, CARD),
        rule("DEALER_DREW_WRONG", MEDIUM, dealer_citation, dealing.dealer_drew, CARD),
        rule("DEALER_DREW_WRONG", MEDIUM, dealer_citation, dealing.dealer_stood, STOPPED),
    ]


def payout_rules(citation: str) -> list[Rule]:
    return [
        rule("PAYOUT_WRONG", CRITICAL, citation, hands.payout_wrong, MONEY),
        rule("PAYOUT_WRONG", CRITICAL, citation, hands.never_settled, END),
    ]
