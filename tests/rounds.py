"""A round builder for tests: hand-written table streams with a correct record.

`TableScript` emits the events of one table the way docs/procedure.md has a table emit
them: four devices (`T-console`, `T-shoe`, `T-reader`, `T-rfid`), each with its own
`seq` from 1 and its `prev_digest` chain (SHA-256 of the device's previous event in
canonical Avro form), deterministic event ids (uuid5 of table, device and seq) and a
device clock that rises by 100 ms per event. The helpers are named after what the
dealer does; what they emit is exactly one event each (`deal` emits an initial deal).

`audit(events)` runs the real engine (`Auditor` with the registry's pack selector) and
returns the violations it raised, in order.
"""

from __future__ import annotations

import inspect
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from pitwatch.blackjack import Ratio
from pitwatch.engine.auditor import Auditor, RoundSummary
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import digest
from pitwatch.events.model import (
    CardDealt,
    CardsCleared,
    Event,
    HoleCardChecked,
    HoleCardInserted,
    HoleCardRevealed,
    InsuranceOffered,
    Payload,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    RoundStarted,
    Rules,
    ShoeLoaded,
    SwitchOffered,
    TableOpened,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select

#: 2025-11-30 00:00:00 UTC: the device clock of every script starts here.
T0: Final = 1_764_460_800_000
STEP_MS: Final = 100
ID_NAMESPACE: Final = uuid.UUID("5c1d2a57-6f0e-4d55-9a43-7069747761a1")

#: Which device emits which payload (docs/procedure.md, "Devices of a table").
DEVICE_OF: Final[dict[type, str]] = {
    TableOpened: "console", RoundStarted: "console", InsuranceOffered: "console",
    SwitchOffered: "console", HoleCardRevealed: "console", PlayerDecision: "console",
    CardsCleared: "console", RoundEnded: "console", HoleCardChecked: "console",
    ShoeLoaded: "shoe", CardDealt: "shoe",
    HoleCardInserted: "reader",
    WagerPlaced: "rfid", PayoutMade: "rfid", WagerCollected: "rfid", WagerReturned: "rfid",
}

# --- the posted rules of the four tables the simulator deals (docs/procedure.md) ---------

NJ_BLACKJACK: Final = Rules(
    decks=6, dealer_hits_soft_17=False, blackjack_pays=Ratio(3, 2), hole_card="READER",
    insurance=True, surrender=True, bonus_wager=True, bonus_wager_max=5000,
    min_wager=1000, max_wager=500000, chip_unit=100,
)
NJ_SWITCH: Final = Rules(
    decks=6, dealer_hits_soft_17=True, blackjack_pays=Ratio(1, 1), hole_card="READER",
    insurance=True, surrender=False, match_wager=True, min_wager=1000, chip_unit=500,
)
PA_FREE_BET: Final = Rules(
    decks=6, dealer_hits_soft_17=False, blackjack_pays=Ratio(3, 2),
    insurance_pays=Ratio(2, 1), hole_card="READER", insurance=True, even_money=True,
    surrender=False, push22_wager=True, min_wager=1000, chip_unit=100,
)
NZ_BLACKJACK: Final = Rules(
    decks=6, dealer_hits_soft_17=False, blackjack_pays=Ratio(3, 2), hole_card="NONE",
    insurance=True, even_money=True, surrender=False, min_wager=1000, chip_unit=100,
)

#: (jurisdiction, game, rules) of each table kind.
GAMES: Final[dict[str, tuple[str, str, Rules]]] = {
    "nj_blackjack": ("NJ", "BLACKJACK", NJ_BLACKJACK),
    "nj_switch": ("NJ", "BLACKJACK_SWITCH", NJ_SWITCH),
    "pa_free_bet": ("PA", "FREE_BET_BLACKJACK", PA_FREE_BET),
    "nz_blackjack": ("NZ", "BLACKJACK", NZ_BLACKJACK),
}

_CHAIN: Final[Any] = object()  # "chain to the device's previous event"
_CURRENT: Final[Any] = object()  # "the script's current round"


class TableScript:
    """The events of one table, in the order of record."""

    def __init__(self, table_id: str, jurisdiction: str, game: str, rules: Rules,
                 *, t0: int = T0, dealer_id: str = "D-0001") -> None:
        self.table_id = table_id
        self.jurisdiction = jurisdiction
        self.game = game
        self.rules = rules
        self.dealer_id = dealer_id
        self.events: list[Event] = []
        self.round_id: str | None = None
        self.ts = t0
        self._seq: dict[str, int] = {}
        self._last: dict[str, Event] = {}
        self._corrupt: set[str] = set()
        self._boots: dict[str, int] = {}

    @classmethod
    def of(cls, kind: str, table_id: str, **rule_changes: Any) -> TableScript:
        """A script for one of the four tables of `GAMES`, its rules changed as given."""
        jurisdiction, game, rules = GAMES[kind]
        return cls(table_id, jurisdiction, game, replace(rules, **rule_changes))

    @classmethod
    def opened(cls, kind: str, table_id: str = "T-01", **rule_changes: Any) -> TableScript:
        """`of(...)` with the table opened (its rules posted) and a shoe loaded."""
        sc = cls.of(kind, table_id, **rule_changes)
        sc.open()
        sc.shoe()
        return sc

    # --- the envelope --------------------------------------------------------------------

    def device(self, kind: str) -> str:
        return f"{self.table_id}-{kind}"

    def event_id(self, device_id: str, seq: int, salt: str = "") -> str:
        return str(uuid.uuid5(ID_NAMESPACE, f"{device_id}/{seq}{salt}"))

    def emit(self, payload: Payload, *, device: str | None = None,
             round_id: Any = _CURRENT, seq: int | None = None, prev_digest: Any = _CHAIN,
             event_id: str | None = None, record: bool = True) -> Event:
        """Emit one event. By default the envelope is what an honest device writes;
        `seq`, `prev_digest`, `event_id` override it (a record fault). With
        `record=False` the device's chain does not move on (a conflicting copy)."""
        dev = device or self.device(DEVICE_OF[type(payload)])
        n = self._seq.get(dev, 0) + 1 if seq is None else seq
        if prev_digest is _CHAIN:
            last = self._last.get(dev)
            prev_digest = None if last is None else digest(last)
            if dev in self._corrupt:
                self._corrupt.discard(dev)
                prev_digest = bytes(32)
        if round_id is _CURRENT:
            round_id = None if isinstance(payload, TableOpened | ShoeLoaded) else self.round_id
        boot = self._boots.get(dev, 0)
        ev = Event(event_id or self.event_id(dev, n, f"@{boot}" if boot else ""),
                   self.table_id, dev, n, self.ts,
                   round_id, prev_digest, payload)
        self.ts += STEP_MS
        self.events.append(ev)
        if record:
            self._seq[dev] = n
            self._last[dev] = ev
        return ev

    def skip(self, kind: str, n: int = 1) -> None:
        """The next `n` seq numbers of a device are never seen (a gap; chain intact)."""
        dev = self.device(kind)
        self._seq[dev] = self._seq.get(dev, 0) + n

    def restart(self, kind: str) -> None:
        """The device loses its counter: its next event is seq 1 with prev_digest null,
        a new chain (its event ids stay unique: they name the boot)."""
        dev = self.device(kind)
        self._seq[dev] = 0
        self._last.pop(dev, None)
        self._boots[dev] = self._boots.get(dev, 0) + 1

    def corrupt_next(self, kind: str) -> None:
        """The device's next event carries a zeroed prev_digest (the chain then goes on
        from that event as sent)."""
        self._corrupt.add(self.device(kind))

    # --- table events ----------------------------------------------------------------------

    def open(self, rules: Rules | None = None, *, jurisdiction: str | None = None,
             game: str | None = None) -> Event:
        if rules is not None:
            self.rules = rules
        return self.emit(TableOpened(jurisdiction or self.jurisdiction, game or self.game,
                                     self.rules))

    def shoe(self, decks: int | None = None, shoe_id: str | None = None) -> Event:
        n = sum(1 for e in self.events if isinstance(e.payload, ShoeLoaded)) + 1
        return self.emit(ShoeLoaded(shoe_id or f"{self.table_id}-shoe-{n}",
                                    decks or self.rules.decks))

    # --- a round ---------------------------------------------------------------------------

    def round_name(self, round_no: int | str) -> str:
        """`T-000001` for a number (docs/procedure.md); `T-<label>` for a string."""
        if isinstance(round_no, int):
            return f"{self.table_id}-{round_no:06d}"
        return f"{self.table_id}-{round_no}"

    def start(self, round_no: int | str, seats: Iterable[int],
              dealer_id: str | None = None) -> Event:
        self.round_id = self.round_name(round_no)
        return self.emit(RoundStarted(dealer_id or self.dealer_id, tuple(seats)))

    def wager(self, seat: int, kind: str, amount: int, hand: int = 0) -> Event:
        return self.emit(WagerPlaced(seat, hand, kind, amount))

    def card(self, seat: int | None, rank: str, suit: str = "S", hand: int = 0,
             face_up: bool = True) -> Event:
        if seat is None:
            return self.dealer(rank, suit, face_up)
        return self.emit(CardDealt("PLAYER", seat, hand, rank, suit, face_up))

    def dealer(self, rank: str, suit: str = "S", face_up: bool = True) -> Event:
        return self.emit(CardDealt("DEALER", None, None, rank, suit, face_up))

    def offer_insurance(self) -> Event:
        return self.emit(InsuranceOffered())

    def offer_switch(self, seat: int) -> Event:
        return self.emit(SwitchOffered(seat))

    def insert_hole(self, bj: bool) -> Event:
        return self.emit(HoleCardInserted(bj))

    def peek(self, bj: bool) -> Event:
        """The dealer's peek at a PEEK table (HoleCardChecked), on the console."""
        return self.emit(HoleCardChecked(bj))

    def reveal(self) -> Event:
        return self.emit(HoleCardRevealed())

    def decide(self, seat: int, decision: str, hand: int = 0) -> Event:
        return self.emit(PlayerDecision(seat, hand, decision))

    def pay(self, seat: int, kind: str, amount: int, hand: int = 0) -> Event:
        return self.emit(PayoutMade(seat, hand, kind, amount))

    def collect(self, seat: int, kind: str, amount: int, hand: int = 0) -> Event:
        return self.emit(WagerCollected(seat, hand, kind, amount))

    def give_back(self, seat: int, kind: str, amount: int, hand: int = 0) -> Event:
        return self.emit(WagerReturned(seat, hand, kind, amount))

    def clear(self, seat: int | None = None, hand: int | None = None) -> Event:
        """`CardsCleared` of a hand (hand 0 unless given), or the dealer's (no seat)."""
        if seat is not None and hand is None:
            hand = 0
        return self.emit(CardsCleared(seat, hand))

    def end(self) -> Event:
        return self.emit(RoundEnded())

    # --- a few steps in one call -------------------------------------------------------------

    def deal(self, hands: Mapping[Any, tuple[str, str]], up: str, hole: str | None = None,
             *, suits: str = "SHDC") -> None:
        """The initial deal (procedure step 3): a first card to each hand (seats and hands
        ascending), the dealer's up card, a second card to each hand, then the hole card
        face down (none for `hole_card: NONE`). `hands` maps a seat (hand 0) or a
        (seat, hand) pair to its two ranks; suits rotate through `suits` so that a round
        never strains a shoe's card counts."""
        keyed = sorted(((k, 0) if isinstance(k, int) else tuple(k), v)
                       for k, v in hands.items())
        i = 0

        def suit() -> str:
            nonlocal i
            s = suits[i % len(suits)]
            i += 1
            return s

        for (seat, hand), ranks in keyed:
            self.card(seat, ranks[0], suit(), hand)
        self.dealer(up, suit())
        for (seat, hand), ranks in keyed:
            self.card(seat, ranks[1], suit(), hand)
        if hole is not None:
            self.dealer(hole, suit(), face_up=False)

    def finish_round(self) -> None:
        """The dealer's cards cleared and the round ended (procedure step 12)."""
        self.clear()
        self.end()


# --- running the engine ---------------------------------------------------------------------


class Audit:
    """The engine's output for a stream: violations in order, and the round summaries."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.rounds: list[RoundSummary] = []
        self.auditor = Auditor(select, self.violations.append, self.rounds.append,
                               released=released_writers())

    def feed(self, events: Iterable[Event]) -> Audit:
        for ev in events:
            self.auditor.feed(ev)
        return self


def audit(events: Iterable[Event], *, now: int | None = None, timeout: int | None = None,
          finish: bool = True) -> list[Violation]:
    """Run the events through `Auditor(registry.select, ...)`; with `now` (and
    `timeout`, ms) call `expire(now, timeout)` after the last event; then `finish()`."""
    a = Audit().feed(events)
    if now is not None:
        a.auditor.expire(now, timeout if timeout is not None else 0)
    if finish:
        a.auditor.finish()
    return a.violations


def never_sent(events: Iterable[Event], gone: Callable[[Event], bool]) -> list[Event]:
    """The stream as if its devices never sent the events `gone` picks: each device's
    later events take its seqs and chain on from its last event sent (an event deleted
    from the stream instead would be events lost, docs/events.md "The record")."""
    out: list[Event] = []
    last: dict[str, Event] = {}
    dropped: dict[str, int] = {}
    for e in events:
        if gone(e):
            dropped[e.device_id] = dropped.get(e.device_id, 0) + 1
            continue
        n = dropped.get(e.device_id, 0)
        if n:
            prev = last.get(e.device_id)
            e = replace(e, seq=e.seq - n, raw=None,
                        prev_digest=None if prev is None else digest(prev))
        last[e.device_id] = e
        out.append(e)
    return out


def codes(violations: Iterable[Violation]) -> list[str]:
    return sorted(v.code for v in violations)


def only(violations: list[Violation], code: str) -> Violation:
    """The one violation of a stream, which must carry `code`."""
    assert [v.code for v in violations] == [code], [
        (v.code, v.round_id, v.message) for v in violations]
    return violations[0]


# --- the regulation texts the tests quote -------------------------------------------------

#: the rule texts, kept verbatim in the repo (copied from shared/regulations)
REGULATIONS: Final = Path(__file__).resolve().parents[1] / "docs" / "regulations"


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def regulation_text() -> str | None:
    """All regulation files, whitespace squashed; None where they are not at hand."""
    if not REGULATIONS.is_dir():
        return None
    return _squash(" ".join(p.read_text(encoding="utf-8")
                            for p in sorted(REGULATIONS.glob("*.txt"))))


def quotes(doc: str) -> list[str]:
    """The quotations of a test docstring: each run of lines starting with `> `."""
    out: list[list[str]] = []
    previous = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.startswith("> "):
            if not previous:
                out.append([])
            out[-1].append(stripped[2:])
            previous = True
        else:
            previous = False
    return [_squash(" ".join(q)) for q in out]


def regulation_tests(module: ModuleType) -> dict[str, str]:
    """The test functions of a module that quote a regulation, name -> docstring."""
    return {name: inspect.getdoc(f) or "" for name, f in vars(module).items()
            if name.startswith("test_") and callable(f) and quotes(inspect.getdoc(f) or "")}


_PARAGRAPH: Final = re.compile(
    r"N\.J\.A\.C\. 13:69F-[\dA.]+\([a-z]\)(?:\d(?:–\d)?)?(?:, \([a-z]\)|–\([a-z]\))?"
    r"|58 Pa\. Code § 672a\.8\([a-z]\)"
    r"|NZ Gazette 1996 No 7, Blackjack \d\.\d(?:–\d\.\d|, \d\.\d)?")


def cited_paragraphs(pack: Any) -> set[str]:
    """The regulation paragraphs a rule pack cites (posted rules and pitwatch's own
    record rules left out)."""
    return {m.group(0) for r in pack.rules for m in [_PARAGRAPH.match(r.citation)] if m}


def check_quotes_and_coverage(module: ModuleType, pack: Any) -> None:
    """Every quotation in the module's test docstrings is verbatim regulation text, and
    every paragraph the pack cites is named by a test that quotes it."""
    import pytest

    tests = regulation_tests(module)
    text = regulation_text()
    if text is None:
        pytest.skip(f"{REGULATIONS} is not at hand")
    for name, doc in tests.items():
        for q in quotes(doc):
            assert q in text, f"{name} quotes text that is not in the regulations: {q!r}"
    for paragraph in sorted(cited_paragraphs(pack)):
        assert any(paragraph in doc for doc in tests.values()), (
            f"no test quotes {paragraph}")


def expect(v: Violation, *, code: str, severity: str, citation: str, event: Event,
           seat: int | None, hand: int | None, pack: str, round_id: str | None = None) -> None:
    """A violation's fields: what it is, where it cites, and the event that shows it (in
    that event's round unless `round_id` says otherwise)."""
    assert (v.code, v.severity, v.citation) == (code, severity, citation), v
    assert (v.seat, v.hand) == (seat, hand), v
    assert v.event_id == event.event_id, (v, event)
    rid = event.round_id or "" if round_id is None else round_id
    assert (v.table_id, v.round_id) == (event.table_id, rid), v
    assert v.detected_at == event.ts, v
    assert v.pack == pack, v
    assert v.message and "\n" not in v.message, v
