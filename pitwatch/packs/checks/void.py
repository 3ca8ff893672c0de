"""A void wager's money: VOID_WAGER_SETTLED, in every pack.

A wager that should not stand (a HIGH finding, or one the round cannot admit) is void:
it is to be handed back whole (`WagerReturned`). Paying it, collecting it, or keeping it
to the end of the round moves money that should not have moved.
"""

from __future__ import annotations

from ...engine.rulepack import Finding
from ...engine.state import Round
from ...events.model import Event, PayoutMade, WagerCollected
from ._common import c, money


def _cause(r: Round, key: tuple[int, int, str]) -> str:
    code, vid = r.void_cause.get(key, ("PROCEDURE_OUT_OF_ORDER", "unknown"))
    return f"voided by {code} {vid}"


def settled(r: Round, ev: Event) -> Finding | None:
    """Money on a spot that holds only a void wager, other than its hand-back."""
    p = money(ev)
    if not r.is_void_settlement(p):
        return None
    key = (p.seat, p.hand, p.kind)
    left = r.voided[key]
    if type(p) is PayoutMade:
        did = f"paid {c(p.amount)}"
    elif type(p) is WagerCollected:
        did = f"collected {c(p.amount)} (kept by the house)"
    else:
        did = f"returned {c(p.amount)}, more than the {c(left)} still out"
    return Finding(f"void {p.kind} {c(left)} ({_cause(r, key)}) {did}, expected handed back "
                   f"{c(left)}", p.seat, p.hand)


def never_handed_back(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: a void wager still out, kept instead of handed back."""
    for key, left in r.voided.items():
        if left > 0:
            seat, hand, kind = key
            return Finding(f"void {kind} {c(left)} ({_cause(r, key)}) kept to the end of the "
                           f"round, expected handed back {c(left)}", seat, hand)
    return None
