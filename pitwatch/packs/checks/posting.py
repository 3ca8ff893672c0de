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


def bonus_bar(rules: Rules) -> str | None:
    """N.J.A.C. 13:69F-2.25(h): the first of the seven wagers the bonus wager may not be
    offered beside that the table posts, or None (five of them posted from schema
    version 5 on)."""
    for posted, what in ((rules.multiple_action, "multiple action blackjack (13:69E-2.18)"),
                         (rules.progressive_wager, "a progressive wager (2.19)"),
                         (rules.blackjack_bonus_wager, "a blackjack bonus wager (2.20)"),
                         (rules.streak_wager, "a streak wager (2.22)"),
                         (rules.match_the_dealer_wager, "a match-the-dealer wager (2.23)"),
                         (rules.twenty_point_bonus_wager, "a 20 point bonus wager (2.24)"),
                         (rules.in_between_wager, "the in-between wager (2.26)")):
        if posted:
            return what
    return None


def bonus_barred(rules: Rules) -> str | None:
    """N.J.A.C. 13:69F-2.25(h): no bonus wager beside any of seven other wagers."""
    if not rules.bonus_wager:
        return None
    what = bonus_bar(rules)
    return None if what is None else (f"the table posts the bonus wager but offers {what}, "
                                      "beside which it may not be offered")


#: N.J.A.C. 13:69F-2.2(a)4: the fewest decks where the bonus wager (or match-the-dealer)
#: is offered
BONUS_DECKS = 6


def bonus_decks(rules: Rules) -> str | None:
    """N.J.A.C. 13:69F-2.2(a)4: six or eight decks where the optional bonus wager or the
    match-the-dealer wager is offered (read as at least six: "the fewest decks")."""
    wager = ("the bonus wager" if rules.bonus_wager
             else "the match-the-dealer wager" if rules.match_the_dealer_wager else None)
    if wager is None or rules.decks >= BONUS_DECKS:
        return None
    return (f"the table posts {wager} with {rules.decks} deck(s); where it is offered the "
            "fewest decks are six or eight")
