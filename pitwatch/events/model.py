"""Typed table events: the envelope of docs/events.md and one payload each.

Plain slotted dataclasses compared by value. Events and payloads are not frozen:
constructing a frozen dataclass costs twice as much, and a million of them are made per
audit; nothing in pitwatch mutates an event once built. Closed vocabularies are string
constants (the Avro enums' JSON spellings) kept in one place here; the codec checks them
at the edge so the engine can trust them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from ..blackjack.ratio import THREE_TO_TWO, TWO_TO_ONE, Ratio

# --- vocabularies (the JSON Lines spellings) -------------------------------------

JURISDICTIONS: Final = frozenset({"NJ", "PA", "NZ", "OTHER"})
GAMES: Final = frozenset({"BLACKJACK", "BLACKJACK_SWITCH", "FREE_BET_BLACKJACK", "OTHER"})
WAGER_KINDS: Final = frozenset(
    {"MAIN", "INSURANCE", "BONUS", "MATCH", "PUSH22", "DOUBLE", "SPLIT", "FREE_DOUBLE",
     "FREE_SPLIT", "OTHER"}
)
DECISIONS: Final = frozenset(
    {"HIT", "STAND", "DOUBLE", "SPLIT", "SURRENDER", "SWITCH", "EVEN_MONEY", "OTHER"}
)
RECIPIENTS: Final = frozenset({"PLAYER", "DEALER"})
RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS: Final = ("C", "D", "H", "S")
HOLE_CARD_MODES: Final = frozenset({"READER", "PEEK", "NONE"})
DOUBLE_ON: Final = frozenset({"ANY", "NINE_TEN_ELEVEN", "TEN_ELEVEN"})
ROUNDINGS: Final = frozenset({"PLAYER", "HOUSE", "CHIP_UNIT"})
#: What a seated player's id is: a loyalty card's rated player id, or an anonymous
#: session id for an unrated player
PLAYER_KINDS: Final = frozenset({"RATED", "ANONYMOUS"})


@dataclass(frozen=True, slots=True)
class PayEntry:
    key: str
    num: int
    den: int


@dataclass(frozen=True, slots=True)
class PayTable:
    name: str
    entries: tuple[PayEntry, ...]

    def ratio(self, key: str) -> Ratio | None:
        for e in self.entries:
            if e.key == key:
                return Ratio(e.num, e.den)
        return None


@dataclass(frozen=True, slots=True)
class Rules:
    """What the layout and the casino's notices post (events.md, `rules`)."""

    decks: int = 6
    dealer_hits_soft_17: bool = False
    blackjack_pays: Ratio = THREE_TO_TWO
    insurance_pays: Ratio = TWO_TO_ONE
    hole_card: str = "READER"
    double_on: str = "ANY"
    double_after_split: bool = True
    max_split_hands: int = 4
    resplit_aces: bool = False
    hit_split_aces: bool = False
    insurance: bool = True
    even_money: bool = False
    surrender: bool = False
    bonus_wager: bool = False
    bonus_wager_max: int | None = None
    match_wager: bool = False
    push22_wager: bool = False
    progressive_wager: bool = False
    multiple_action: bool = False
    min_wager: int = 1000
    max_wager: int = 500000
    chip_unit: int = 100
    pay_tables: tuple[PayTable, ...] | None = None
    #: the other wagers N.J.A.C. 13:69F-2.25(h) bars beside the bonus wager (2.20, 2.22,
    #: 2.23, 2.24, 2.26), and the posted rounding rule (`pitwatch.blackjack.Rounding`):
    #: schema version 5 on (`POSTED_V5`), written as a `PostedTableOpened` only when one
    #: of them is not its default, so every earlier TableOpened keeps its bytes
    blackjack_bonus_wager: bool = False
    streak_wager: bool = False
    match_the_dealer_wager: bool = False
    twenty_point_bonus_wager: bool = False
    in_between_wager: bool = False
    rounding: str = "PLAYER"

    def pay_table(self, name: str) -> PayTable | None:
        for t in self.pay_tables or ():
            if t.name == name:
                return t
        return None


#: The `Rules` fields schema version 5 added, with their defaults.
POSTED_V5: Final[dict[str, object]] = {
    "blackjack_bonus_wager": False, "streak_wager": False, "match_the_dealer_wager": False,
    "twenty_point_bonus_wager": False, "in_between_wager": False, "rounding": "PLAYER",
}


def posts_v5(r: Rules) -> bool:
    """Whether `r` posts what only schema version 5 can say (a `POSTED_V5` field not at
    its default): then its TableOpened is written as a `PostedTableOpened`."""
    return any(getattr(r, k) != v for k, v in POSTED_V5.items())


# --- payloads -----------------------------------------------------------------------


@dataclass(slots=True)
class TableOpened:
    jurisdiction: str
    game: str
    rules: Rules


@dataclass(slots=True)
class ShoeLoaded:
    shoe_id: str
    decks: int


@dataclass(slots=True)
class RoundStarted:
    dealer_id: str
    seats: tuple[int, ...]


@dataclass(slots=True)
class WagerPlaced:
    seat: int
    hand: int
    kind: str
    amount: int


@dataclass(slots=True)
class CardDealt:
    to: str
    seat: int | None
    hand: int | None
    rank: str
    suit: str
    face_up: bool


@dataclass(slots=True)
class InsuranceOffered:
    pass


@dataclass(slots=True)
class SwitchOffered:
    seat: int


@dataclass(slots=True)
class HoleCardInserted:
    dealer_blackjack: bool


@dataclass(slots=True)
class HoleCardRevealed:
    pass


@dataclass(slots=True)
class HoleCardChecked:
    """The dealer's peek at a PEEK table (schema version 4 on): what it found."""

    dealer_blackjack: bool


@dataclass(slots=True)
class PlayerDecision:
    seat: int
    hand: int
    decision: str


@dataclass(slots=True)
class PayoutMade:
    seat: int
    hand: int
    kind: str
    amount: int


@dataclass(slots=True)
class WagerCollected:
    seat: int
    hand: int
    kind: str
    amount: int


@dataclass(slots=True)
class WagerReturned:
    seat: int
    hand: int
    kind: str
    amount: int


@dataclass(slots=True)
class CardsCleared:
    seat: int | None
    hand: int | None


@dataclass(slots=True)
class RoundEnded:
    pass


@dataclass(slots=True)
class Checkpoint:
    """A device signs its own chain up to `head_seq` (docs/events.md, "Signed
    checkpoints"); part of the device's record, never of a round's play. Avro writes it
    as the union's `Checkpoint` (version 2) or `SealedCheckpoint` (version 3: with
    `schema_sha256`), so a version 2 checkpoint keeps its bytes and digest."""

    head_seq: int
    head_digest: bytes
    key_id: str
    signature: bytes
    #: SHA-256 of the writer schema the device's covered events are under; set, the
    #: checkpoint is a `SealedCheckpoint` (schema version 3), which also signs `order`
    #: and `end`; None, the version 2 form, which binds neither
    schema_sha256: bytes | None = None
    #: SHA-256 of the table's order across devices since the device's previous
    #: checkpoint that signed one (`keys.order_digest`); None: it signs no order
    order: bytes | None = None
    #: the table's record ends here (end of shift)
    end: bool = False


@dataclass(slots=True)
class PlayerSeated:
    """A player takes a seat (schema version 6 on): a seat session starts. Not a round
    event: it never enters a round, its checks or the time rule."""

    seat: int
    #: a rated player's id from a loyalty card, or an anonymous session id
    player_id: str
    #: which `player_id` is (`PLAYER_KINDS`)
    player_kind: str


@dataclass(slots=True)
class PlayerLeft:
    """The player at a seat leaves it (schema version 6 on): its seat session ends."""

    seat: int


#: The seat events: table-level, kept apart from every round (`TableAuditor`)
SEAT_EVENTS: Final = (PlayerSeated, PlayerLeft)


Payload = (
    TableOpened | ShoeLoaded | RoundStarted | WagerPlaced | CardDealt | InsuranceOffered
    | SwitchOffered | HoleCardInserted | HoleCardRevealed | PlayerDecision | PayoutMade
    | WagerCollected | WagerReturned | CardsCleared | RoundEnded | Checkpoint | HoleCardChecked
    | PlayerSeated | PlayerLeft
)

PAYLOAD_TYPES: Final[dict[str, type[Payload]]] = {
    cls.__name__: cls
    for cls in (
        TableOpened, ShoeLoaded, RoundStarted, WagerPlaced, CardDealt, InsuranceOffered,
        SwitchOffered, HoleCardInserted, HoleCardRevealed, PlayerDecision, PayoutMade,
        WagerCollected, WagerReturned, CardsCleared, RoundEnded, Checkpoint, HoleCardChecked,
        PlayerSeated, PlayerLeft,
    )
}



@dataclass(slots=True)
class Event:
    """One event from a table device: the envelope and its payload."""

    event_id: str
    table_id: str
    device_id: str
    seq: int
    ts: int  # device clock, ms since the epoch; display and latency only
    round_id: str | None
    prev_digest: bytes | None
    payload: Payload
    #: The event's canonical Avro bytes when it was decoded from them (an Avro file or a
    #: Kafka message), so its digest needs no re-encoding. Not part of its value.
    raw: bytes | None = field(default=None, compare=False, repr=False)
    #: The 8-byte fingerprint of the schema `raw` was written under, when not the
    #: current one (a device on another released version). Not part of its value.
    writer: bytes | None = field(default=None, compare=False, repr=False)
    #: Why its decoder refused it, when it did for a field of its payload outside the
    #: contract's ranges while its envelope decoded cleanly: an event of its device's
    #: record all the same, which the auditor takes as refused (`TableAuditor.refused`:
    #: its place in the record kept, never applied). Not part of its value.
    refused: str | None = field(default=None, compare=False, repr=False)

    @property
    def type(self) -> str:
        return type(self.payload).__name__
