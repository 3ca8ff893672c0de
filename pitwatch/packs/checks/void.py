"""A void wager's money: VOID_WAGER_SETTLED, in every pack.

A wager that should not stand (a HIGH finding, or one the round cannot admit) is void:
it is to be handed back whole (`WagerReturned`). Paying it, collecting it, or keeping it
to the end of the round moves money that should not have moved.
"""

from __future__ import annotations

from ...engine.rulepack import Finding
from ...engine.state import Round
from ...events.model import Event, PayoutMade, WagerCollected
from ...money import dollars
from ._common import money


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
        did = f"paid {dollars(p.amount)}"
    elif type(p) is WagerCollected:
        did = f"collected {dollars(p.amount)} (kept by the house)"
    else:
        did = f"returned {dollars(p.amount)}, more than the {dollars(left)} still out"
    return Finding(f"void {p.kind} {dollars(left)} ({_cause(r, key)}) {did}, expected handed back "
                   f"{dollars(left)}", p.seat, p.hand)


def never_handed_back(r: Round, ev: Event) -> Finding | None:
    """At RoundEnded: a void wager still out, kept instead of handed back."""
    for key, left in r.voided.items():
        if left > 0:
            seat, hand, kind = key
            return Finding(f"void {kind} {dollars(left)} ({_cause(r, key)}) kept to the end of the "
                           f"round, expected handed back {dollars(left)}", seat, hand)
    return None
