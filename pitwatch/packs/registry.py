"""The rule packs, chosen by a table's `TableOpened` (jurisdiction, game)."""

from __future__ import annotations

from ..engine.rulepack import RulePack
from . import nj_blackjack, nj_switch, nz_blackjack, pa_free_bet
from .base import RECORD_CITATIONS, procedure_rules

PACKS: dict[tuple[str, str], RulePack] = {
    (p.jurisdiction, p.game): p
    for p in (nj_blackjack.PACK, nj_switch.PACK, pa_free_bet.PACK, nz_blackjack.PACK)
}

#: For a table whose game or jurisdiction no pack covers (or that never posted its
#: rules): the record and procedure checks only, so nothing is judged by a guess.
RECORD_ONLY = RulePack(
    name="record-only", version="1", jurisdiction="OTHER", game="OTHER",
    title="Record checks only: no pack for this table's jurisdiction and game",
    rules=tuple(procedure_rules()), record_citations=RECORD_CITATIONS,
)


def select(jurisdiction: str, game: str) -> RulePack:
    return PACKS.get((jurisdiction, game), RECORD_ONLY)


def all_packs() -> list[RulePack]:
    return [*PACKS.values(), RECORD_ONLY]
