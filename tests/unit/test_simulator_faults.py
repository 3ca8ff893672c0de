"""The floor simulator's fault injection (producers/inject.py).

Floors of each game dealt with every round carrying a fault: every code of the
catalogue is injected, each truth record names an event of the stream of the kind the
fault is seen on, the record faults are the only breaks in the devices' records, and
the engine (pitwatch.engine with the packs) finds exactly the faults of truth.jsonl:
each one, and nothing else.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from pitwatch.engine.auditor import Auditor
from pitwatch.engine.violation import Violation
from pitwatch.events.avro import digest
from pitwatch.events.model import (
    CardDealt,
    CardsCleared,
    Event,
    HoleCardInserted,
    HoleCardRevealed,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select
from pitwatch.producers.inject import CATALOGUE, CODES, NOT_INJECTED
from pitwatch.producers.simulate import floor_registry, simulate_floor

#: (tables, rounds, jurisdiction, game) of the floors dealt with a fault in every round.
#: Free Bet gets more rounds: EVEN_MONEY_CARDS_REMOVED needs a Push 22 wager at a seat
#: that takes even money on a blackjack against an ace.
FLOORS = ((2, 100, "NJ", "BLACKJACK"), (2, 150, "NJ", "BLACKJACK_SWITCH"),
          (4, 300, "PA", None), (2, 100, "NZ", None))
SEED = 3

Floor = tuple[list[Event], list[dict[str, Any]]]


@pytest.fixture(scope="module")
def floors() -> list[Floor]:
    return [simulate_floor(t, r, SEED, 1.0, jurisdiction=j, game=g) for t, r, j, g in FLOORS]


def _audit(events: list[Event], seed: int = SEED) -> list[Violation]:
    """With the floor's keys: the forgery fault is found by its signatures."""
    found: list[Violation] = []
    keys = floor_registry(seed, {ev.device_id for ev in events})
    auditor = Auditor(select, found.append, lambda _: None, keys=keys, released=released_writers())
    for ev in events:
        auditor.feed(ev)
    auditor.finish()
    return found


def test_catalogue() -> None:
    assert len(CODES) == len(set(CODES)) == 35
    assert "INSURANCE_PAID_BEFORE_COLLECTION" in NOT_INJECTED
    assert not set(NOT_INJECTED) & set(CODES)
    packs = {(p.jurisdiction, p.game): p for p in
             (select("NJ", "BLACKJACK"), select("NJ", "BLACKJACK_SWITCH"),
              select("PA", "FREE_BET_BLACKJACK"), select("NZ", "BLACKJACK"))}
    for fault in CATALOGUE:  # injected only where a pack judges the code
        for key in fault.tables or packs:
            assert fault.code in packs[key].codes(), (fault.code, key)


def test_every_code_injected(floors: list[Floor]) -> None:
    counts = Counter(t["code"] for _, truth in floors for t in truth)
    assert set(counts) == set(CODES), set(CODES) - set(counts)
    for code in CODES:
        assert counts[code] >= 3, code


def test_one_fault_per_round(floors: list[Floor]) -> None:
    for events, truth in floors:
        rounds = {ev.round_id for ev in events if ev.round_id is not None}
        per_round = Counter(t["round_id"] for t in truth)
        assert set(per_round) == rounds  # at rate 1.0 every round carries one
        assert max(per_round.values()) == 1


def test_rate() -> None:
    _, truth = simulate_floor(3, 80, 3, 0.1)
    assert 8 <= len(truth) <= 45  # 240 rounds at 10 %


#: The event each fault is seen on: payload type, and the wager kind or decision.
SEEN_ON: dict[str, tuple[type | tuple[type, ...], str | None]] = {
    "INSURANCE_NOT_AVAILABLE": (WagerPlaced, "INSURANCE"),
    "INSURANCE_OVER_LIMIT": (WagerPlaced, "INSURANCE"),
    "INSURANCE_UNDER_MINIMUM": (CardDealt, None),  # insurance closes: 9.3
    "INSURANCE_TOO_EARLY": (WagerPlaced, "INSURANCE"),
    "INSURANCE_TOO_LATE": (WagerPlaced, "INSURANCE"),
    "INSURANCE_ON_MATCH_WAGER": (WagerPlaced, "INSURANCE"),
    "INSURANCE_SETTLEMENT_WRONG": (PayoutMade, "INSURANCE"),
    "EVEN_MONEY_NOT_AVAILABLE": (PlayerDecision, "EVEN_MONEY"),
    # paid at other odds, or never paid (seen when the round ends)
    "EVEN_MONEY_SETTLEMENT_WRONG": ((PayoutMade, RoundEnded), None),
    # PA: removed with a Push 22 open; NZ 8.3: still there at the next card
    "EVEN_MONEY_CARDS_REMOVED": ((CardsCleared, CardDealt), None),
    "BLACKJACK_PAID_EARLY": (PayoutMade, "MAIN"),
    "BLACKJACK_PAID_LATE": (CardDealt, None),
    "SURRENDER_NOT_AVAILABLE": (PlayerDecision, "SURRENDER"),
    "SURRENDER_TOO_EARLY": (PlayerDecision, "SURRENDER"),
    "SURRENDER_TOO_LATE": (PlayerDecision, "SURRENDER"),
    "BONUS_WAGER_NOT_AVAILABLE": (WagerPlaced, "BONUS"),
    "BONUS_WAGER_TOO_LATE": (WagerPlaced, "BONUS"),
    "BONUS_WAGER_WITHOUT_MAIN": (WagerPlaced, "BONUS"),
    "BONUS_WAGER_AMOUNT": (WagerPlaced, "BONUS"),
    "DEALER_DREW_WRONG": (CardDealt, "DEALER"),
    "CARD_COUNT_EXCEEDED": (CardDealt, None),
    "PROCEDURE_OUT_OF_ORDER": (PlayerDecision, None),
}
MONEY = (PayoutMade, WagerCollected, WagerReturned)


def _detail(p: object) -> str | None:
    for name in ("kind", "decision", "to"):
        value = getattr(p, name, None)
        if isinstance(value, str):
            return value
    return None


def test_truth_names_events_of_the_stream(floors: list[Floor]) -> None:
    for events, truth in floors:
        by_id = {ev.event_id: ev for ev in events}
        ended = {ev.round_id for ev in events if isinstance(ev.payload, RoundEnded)}
        for t in truth:
            ev = by_id[t["event_id"]]
            assert ev.table_id == t["table_id"]
            code, p = t["code"], ev.payload
            if code == "ROUND_INCOMPLETE":  # cited on the round's last event, always
                assert isinstance(p, CardsCleared) and ev.round_id == t["round_id"]
                assert ev.event_id == [e for e in events if e.round_id == t["round_id"]
                                       and e.type != "Checkpoint"][-1].event_id
                assert t["round_id"] not in ended
                continue
            assert ev.round_id == t["round_id"], t
            if code in SEEN_ON:
                kind, detail = SEEN_ON[code]
                assert isinstance(p, kind), (t, p)
                assert detail is None or _detail(p) == detail, (t, p)
            elif code == "SURRENDER_SETTLEMENT_WRONG":  # wrong, early, or not "immediately"
                before = events[events.index(ev) - 1].payload
                assert (isinstance(p, WagerCollected) and p.kind == "MAIN") or (
                    isinstance(before, PlayerDecision) and before.decision == "SURRENDER"), t
            elif code == "PAYOUT_WRONG":
                assert isinstance(p, MONEY) and p.kind in ("MAIN", "DOUBLE", "SPLIT")
            elif code == "SIDE_WAGER_SETTLEMENT_WRONG":
                assert isinstance(p, MONEY) and p.kind in ("MATCH", "PUSH22")
            elif code == "WAGER_OUTSIDE_LIMITS":
                assert isinstance(p, WagerPlaced) and (p.kind, p.amount) == ("MAIN", 0)
            elif code == "BONUS_SETTLEMENT_WRONG":
                assert isinstance(p, MONEY) and p.kind == "BONUS"
            elif code == "BONUS_THIRD_CARD_NOT_DRAWN":  # the first event after the reveal
                assert isinstance(p, (*MONEY, CardsCleared))
            elif code == "INSURANCE_COLLECTION_LATE":  # "immediately": the next event
                assert not (isinstance(p, MONEY) and p.kind == "INSURANCE"), (t, p)
                before = events[events.index(ev) - 1].payload
                assert isinstance(before, HoleCardInserted | HoleCardRevealed) or (
                    isinstance(before, MONEY) and before.kind == "INSURANCE"), (t, before)
            elif code == "BONUS_SETTLEMENT_ORDER":
                assert isinstance(p, MONEY) and p.kind != "BONUS"


def test_record_faults_are_the_only_breaks(floors: list[Floor]) -> None:
    """Walking each device's record finds a gap, a conflict or a wrong digest exactly
    where truth.jsonl says, and nowhere else."""
    for events, truth in floors[:2]:
        found: set[tuple[str, str]] = set()
        last: dict[str, Event] = {}
        seen: dict[tuple[str, int], str] = {}
        for ev in events:
            dev = ev.device_id
            prev = last.get(dev)
            if (dev, ev.seq) in seen:
                found.add(("SEQUENCE_CONFLICT", ev.event_id))
                continue
            seen[(dev, ev.seq)] = ev.event_id
            if ev.seq != (prev.seq + 1 if prev else 1):
                found.add(("EVENTS_LOST", ev.event_id))
            if ev.prev_digest != (digest(prev) if prev else None):
                found.add(("DIGEST_MISMATCH", ev.event_id))
            last[dev] = ev
        record = {"EVENTS_LOST", "SEQUENCE_CONFLICT", "DIGEST_MISMATCH"}
        assert found == {(t["code"], t["event_id"]) for t in truth if t["code"] in record}


def test_clean_floor_passes_the_audit() -> None:
    events, truth = simulate_floor(4, 30, 5)
    assert truth == [] and _audit(events, seed=5) == []


def test_audit_finds_exactly_the_faults(floors: list[Floor]) -> None:
    for events, truth in floors:
        found = _audit(events)
        got = Counter((v.code, v.round_id, v.event_id) for v in found)
        want = Counter((t["code"], t["round_id"], t["event_id"]) for t in truth)
        missing, extra = want - got, got - want
        unexpected = [(v.code, v.round_id, v.message) for v in found
                      if (v.code, v.round_id, v.event_id) in extra]
        assert not missing and not extra, f"missing {sorted(missing)[:5]}, extra {unexpected[:5]}"


def test_faults_by_table_and_game(floors: list[Floor]) -> None:
    """Each code only at tables whose pack judges it (insurance at Switch, Free Bet and
    New Zealand tables; surrender and bonus at New Jersey blackjack; ...)."""
    where: dict[str, set[str]] = defaultdict(set)
    for _, truth in floors:
        for t in truth:
            where[t["code"]].add(t["table_id"][:5])
    assert where["INSURANCE_ON_MATCH_WAGER"] == {"AC-SW"}
    assert where["EVEN_MONEY_CARDS_REMOVED"] == {"PH-FB", "AK-BJ"}  # 672a.8(e), NZ 8.3
    assert where["BLACKJACK_PAID_LATE"] == where["INSURANCE_UNDER_MINIMUM"] == {"AK-BJ"}
    assert where["SURRENDER_TOO_EARLY"] == where["BONUS_WAGER_AMOUNT"] == {"AC-BJ"}
    assert where["EVENTS_LOST"] == {"AC-BJ", "AC-SW", "PH-FB", "AK-BJ"}
