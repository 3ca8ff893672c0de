"""Helpers the checks share: money for people, settlement comparison."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...blackjack import Ratio, Rounding, Settlement
from ...engine.rulepack import Undecidable
from ...engine.state import Round, Wager
from ...events.model import Event, PayoutMade, WagerCollected, WagerReturned
from ...money import dollars

Money = PayoutMade | WagerCollected | WagerReturned


def odds(r: Ratio) -> str:
    return f"{r.num} to {r.den}"


def verb(p: Money) -> str:
    return {PayoutMade: "paid", WagerCollected: "collected", WagerReturned: "returned"}[type(p)]


def rounding(r: Round) -> Rounding:
    """The table's posted rounding rule (`rules.rounding`, schema version 5 on; PLAYER,
    the stated default, where none is posted: docs/procedure.md, "Rounding")."""
    return Rounding(r.rules.rounding, r.rules.chip_unit)


def expected_text(exp: Settlement) -> str:
    if exp.payout:
        return f"paid {dollars(exp.payout)}"
    parts = []
    if exp.collected:
        parts.append(f"collected {dollars(exp.collected)}")
    if exp.returned:
        parts.append(f"returned {dollars(exp.returned)}")
    return " and ".join(parts) or "no money moved"


def mismatch(p: Money, w: Wager, exp: Settlement) -> bool:
    """Whether one settlement event disagrees with the expected settlement of `w`."""
    t = type(p)
    if t is PayoutMade:
        return exp.payout == 0 or p.amount != exp.payout - w.paid
    if t is WagerCollected:
        return exp.collected == 0 or p.amount != exp.collected - w.collected
    return exp.returned == 0 or p.amount != exp.returned - w.returned


def decided(settle: Callable[..., Settlement], *args: Any, **kwargs: Any) -> Settlement:
    """`settle(...)` of pitwatch.blackjack, where a ValueError means the cards of the
    record do not decide the wager (a card event lost): Undecidable, not a bug."""
    try:
        return settle(*args, **kwargs)
    except ValueError as e:
        raise Undecidable(f"the record's cards do not decide it: {e}") from e


def money(ev: Event) -> Money:
    p = ev.payload
    assert isinstance(p, PayoutMade | WagerCollected | WagerReturned)
    return p
