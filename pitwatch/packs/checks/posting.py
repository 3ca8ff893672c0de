"""The posted rules against the texts: where a regulation fixes the odds or grants the
player a right, a table that posts otherwise is a finding on its TableOpened (and the
engine judges its money by the text, `RulePack.fixed`)."""

from __future__ import annotations

from collections.abc import Callable

from ...blackjack import SIX_TO_FIVE, Ratio, same_odds
from ...events.model import Rules

PostingCheck = Callable[[Rules], str | None]


def _odds(r: Ratio) -> str:
    return f"{r.num} to {r.den}"


def odds_fixed(field: str, what: str, ratio: Ratio) -> PostingCheck:
    """The text fixes `what` at `ratio`."""
    def check(rules: Rules) -> str | None:
        posted: Ratio = getattr(rules, field)
        if same_odds(posted, ratio):  # 6 to 4 is 3 to 2
            return None
        return (f"the table posts {what} at {_odds(posted)}; the text fixes "
                f"{_odds(ratio)}, and payouts are judged at {_odds(ratio)}")
    return check


def right_granted(field: str, what: str) -> PostingCheck:
    """The text grants the player `what`: a table may not post it off."""
    def check(rules: Rules) -> str | None:
        if getattr(rules, field):
            return None
        return (f"the table posts {what} off; the text gives each player the right to it, "
                f"so {what} is judged as offered")
    return check


def surrender_barred(rules: Rules) -> str | None:
    """N.J.A.C. 13:69F-2.8(c): no surrender at a 6 to 5, progressive or multiple-action
    table."""
    if not rules.surrender:
        return None
    bj = rules.blackjack_pays
    six_five = "" if tuple(bj) == tuple(SIX_TO_FIVE) else f" ({_odds(bj)} is 6 to 5)"
    why = (f"pays blackjack 6 to 5{six_five}" if same_odds(bj, SIX_TO_FIVE)
           else "offers a progressive wager" if rules.progressive_wager
           else "offers multiple action blackjack" if rules.multiple_action else None)
    return None if why is None else (f"the table posts surrender but {why}, where surrender "
                                     "shall not be available")


def bonus_barred(rules: Rules) -> str | None:
    """N.J.A.C. 13:69F-2.25(h): no bonus wager beside multiple action or a progressive."""
    if not rules.bonus_wager:
        return None
    why = ("offers multiple action blackjack" if rules.multiple_action
           else "offers a progressive wager" if rules.progressive_wager else None)
    return None if why is None else (f"the table posts the bonus wager but {why}, beside "
                                     "which it may not be offered")
