"""The rule packs, chosen by a table's `TableOpened` (jurisdiction, game), each kept in
every version still selectable for a re-audit.

A version is selectable while its composition can be rebuilt from the current checks
(nj-blackjack@2024.09-1: the pack without the insurance checks). A version whose checks
themselves differ from the current code is not kept; `pitwatch reaudit --pack
<name>@<newest>` compares the newest with the findings stored under it."""

from __future__ import annotations

from ..engine.rulepack import RulePack
from . import nj_blackjack, nj_switch, nz_blackjack, pa_free_bet
from .base import RECORD_CITATIONS, procedure_rules

#: The newest pack of each (jurisdiction, game).
PACKS: dict[tuple[str, str], RulePack] = {
    (p.jurisdiction, p.game): p
    for p in (nj_blackjack.PACK, nj_switch.PACK, pa_free_bet.PACK, nz_blackjack.PACK)
}

#: For a table whose game or jurisdiction no pack covers (or that never posted its
#: rules): the record and procedure checks only, so nothing is judged by a guess.
RECORD_ONLY = RulePack(
    name="record-only", version="2", jurisdiction="OTHER", game="OTHER",
    title="Record checks only: no pack for this table's jurisdiction and game",
    rules=tuple(procedure_rules()), record_citations=RECORD_CITATIONS,
)

#: Every selectable version, oldest first within a name.
VERSIONS: dict[tuple[str, str], RulePack] = {
    (p.name, p.version): p
    for p in (nj_blackjack.PREVIOUS, *PACKS.values(), RECORD_ONLY)
}


def select(jurisdiction: str, game: str) -> RulePack:
    """The newest pack for a table's (jurisdiction, game), or the record checks only."""
    return PACKS.get((jurisdiction, game), RECORD_ONLY)


def get(name: str, version: str | None = None) -> RulePack:
    """A pack by name, in `version` (the newest when None). KeyError names what exists."""
    if version is None:
        for p in PACKS.values():
            if p.name == name:
                return p
        if name == RECORD_ONLY.name:
            return RECORD_ONLY
    else:
        found = VERSIONS.get((name, version))
        if found is not None:
            return found
    known = ", ".join(f"{n}@{v}" for n, v in versions())
    raise KeyError(f"no rule pack {name}{'' if version is None else '@' + version}; "
                   f"known: {known}")


def versions() -> list[tuple[str, str]]:
    """Every selectable (name, version), sorted."""
    return sorted(VERSIONS)


def all_packs() -> list[RulePack]:
    """The newest pack of each game, and the record checks only."""
    return [*PACKS.values(), RECORD_ONLY]
