"""The seat events (`PlayerSeated`, `PlayerLeft`) as plain sentences, the same in a case
report (replay/present.py) and the console's round view. Plain text: the caller
escapes it for its page (the ids are the device's)."""

from __future__ import annotations

from typing import Final

#: how a seat event names its player's id (`PlayerSeated.player_kind`)
PLAYER_KINDS: Final = {"RATED": "rated player", "ANONYMOUS": "anonymous session"}


def seated_words(seat: object, player_id: object, player_kind: object) -> str:
    """A PlayerSeated: who sat down where, and that a seat session starts."""
    kind = PLAYER_KINDS.get(str(player_kind), f"player ({player_kind})")
    article = "An" if kind[:1] in ("a", "e", "i", "o", "u") else "A"
    return f"{article} {kind}, {player_id}, sat down at seat {seat}: a seat session starts."


def left_words(seat: object) -> str:
    """A PlayerLeft: the seat session there ends."""
    return f"The player at seat {seat} left: the seat session there ends."
