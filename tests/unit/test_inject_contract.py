"""The simulator's contract floor (`pitwatch simulate --contract`, and `pitwatch demo`):
the faults the contract's later versions let a record show are injected, listed in the
truth and found by the audit, nothing else; a floor dealt without the option is dealt as
it always was (issue 36, class 8)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import to_datum
from pitwatch.events.files import read_files
from pitwatch.events.jsonl import dumps, loads
from pitwatch.events.keys import KEYS_FILE, KeyRegistry
from pitwatch.events.model import Event, TableOpened, WagerPlaced
from pitwatch.producers.floor import floor_tables
from pitwatch.producers.inject import CONTRACT_FAULTS, refused_as_decoded
from pitwatch.producers.simulate import Floor, write_floor
from tests.rounds import quotes, regulation_text

#: AC-BJ-01 peeks, AC-BJ-05 posts the streak wager beside the bonus wager, AC-BJ-09 the
#: bonus wager at four decks (5 tables hold the first two).
TABLES, ROUNDS, SEED, RATE = 5, 100, 2026, 0.04
PEEK, POSTED, FOUR_DECKS = "AC-BJ-01", "AC-BJ-05", "AC-BJ-09"

Dealt = tuple[list[Event], list[dict[str, Any]], KeyRegistry | None]


@pytest.fixture(scope="module")
def contract() -> Dealt:
    floor = Floor(TABLES, ROUNDS, SEED, RATE, contract=True)
    events = list(floor.events())
    return events, floor.truth, floor.registry()


def _found(events: list[Event], keys: KeyRegistry | None) -> Counter[tuple[str, str, str]]:
    rep = audit_events(events, keys=keys)
    assert rep.engine_errors == []
    return Counter((v.code, v.round_id, v.event_id) for v in rep.violations)


def _truth(truth: list[dict[str, Any]]) -> Counter[tuple[str, str, str]]:
    return Counter((t["code"], t["round_id"], t["event_id"]) for t in truth)


def test_every_contract_fault_is_injected_and_found_with_nothing_else(
        contract: Dealt) -> None:
    events, truth, keys = contract
    where = {(t["code"], t["table_id"]) for t in truth}
    assert {("INSURANCE_TOO_LATE", PEEK), ("INSURANCE_COLLECTION_LATE", PEEK),
            ("POSTED_RULES_CONTRADICT_REGULATION", POSTED)} <= where
    refused_at = {tid for code, tid in where if code == "EVENT_REFUSED"}
    assert refused_at == {c.table_id for c in floor_tables(TABLES)}  # each table once
    assert _found(events, keys) == _truth(truth)


def test_the_peek_table_peeks_and_the_posted_table_posts_version_5(contract: Dealt) -> None:
    events = contract[0]
    peeks = Counter(e.table_id for e in events if e.type == "HoleCardChecked")
    assert set(peeks) == {PEEK}
    opened = {e.table_id: e for e in events if isinstance(e.payload, TableOpened)}
    assert to_datum(opened[POSTED])["payload"][0] == "pitwatch.events.PostedTableOpened"
    assert {t for t, e in opened.items()
            if to_datum(e)["payload"][0] != "pitwatch.events.TableOpened"} == {POSTED}


def test_a_bonus_wager_beside_the_streak_wager_is_the_postings_finding_alone(
        contract: Dealt) -> None:
    """N.J.A.C. 13:69F-2.25(h):

    > The optional bonus wager authorized by this section may not be offered at a
    > blackjack table that offers multiple action blackjack wagers

    ... nor one that offers a streak wager (2.22). The table posting both is one finding
    on its TableOpened, and its dealer takes no bonus wager (a bonus there is a fault of
    its own, BONUS_WAGER_NOT_AVAILABLE); the table posting the bonus wager alone on the
    floor without the option takes them, and its posting is no finding."""
    events, truth, _ = contract
    posted = [t for t in truth if t["code"] == "POSTED_RULES_CONTRADICT_REGULATION"]
    assert [(t["table_id"], t["round_id"]) for t in posted] == [(POSTED, "")]
    injected = {t["event_id"] for t in truth}
    bonus = [e for e in events if e.table_id == POSTED and isinstance(e.payload, WagerPlaced)
             and e.payload.kind == "BONUS"]
    assert all(e.event_id in injected for e in bonus)
    plain = Floor(TABLES, 20, SEED)
    plain_events = list(plain.events())
    assert any(isinstance(e.payload, WagerPlaced) and e.payload.kind == "BONUS"
               and e.table_id == POSTED for e in plain_events)
    assert plain.truth == [] and _found(plain_events, plain.registry()) == Counter()


def test_the_quotes_are_the_regulation_text() -> None:
    text = regulation_text()
    assert text is not None
    found = [q for t in (test_a_bonus_wager_beside_the_streak_wager_is_the_postings_finding_alone,
                         test_a_bonus_table_under_six_decks_is_the_postings_finding_and_takes_no_bonus)
             for q in quotes(t.__doc__ or "")]
    assert len(found) == 2
    for q in found:
        assert q in text, q


def test_the_refused_event_is_refused_by_the_decoder_and_only_so(contract: Dealt) -> None:
    """docs/events.md: a wager of less than zero is refused at decode; the record keeps its
    place and the audit says what it is (EVENT_REFUSED), not a gap."""
    events, truth, _ = contract
    by_id = {e.event_id: e for e in events}
    refused = [by_id[t["event_id"]] for t in truth if t["code"] == "EVENT_REFUSED"]
    assert refused
    for ev in refused:
        p = ev.payload
        assert isinstance(p, WagerPlaced) and p.amount < 0
        assert ev.refused is not None and "amount" in ev.refused
    assert sum(1 for e in events if e.refused is not None) == len(refused)
    ok = next(e for e in events if isinstance(e.payload, WagerPlaced))
    with pytest.raises(ValueError, match="takes"):
        refused_as_decoded(ok)
    assert loads(dumps(ok)) == ok


def test_the_floor_read_back_from_its_files_is_audited_alike(tmp_path: Path) -> None:
    """As `pitwatch demo` reads it: the refused events refused by the file's decoder."""
    floor = Floor(TABLES, 30, SEED, RATE, contract=True)
    write_floor(floor, tmp_path)
    events = read_files([tmp_path / "events.jsonl"], lambda r: None)
    keys = KeyRegistry.load(tmp_path / KEYS_FILE)
    rep = audit_events(events, keys=keys)
    found = Counter((v.code, v.round_id, v.event_id) for v in rep.violations)
    assert found == _truth(floor.truth)
    assert {t["code"] for t in floor.truth} >= {"EVENT_REFUSED",
                                                "POSTED_RULES_CONTRADICT_REGULATION"}


def test_without_faults_the_option_changes_only_the_nj_blackjack_tables() -> None:
    """With no faults injected, a contract floor's other tables deal what they deal on a
    floor without it, byte for byte (each table's random sources are its own)."""
    def by_table(floor: Floor) -> dict[str, list[bytes]]:
        out: dict[str, list[bytes]] = {}
        for e in floor.events():
            out.setdefault(e.table_id, []).append(dumps(e))
        return out

    with_, without = by_table(Floor(8, 15, 3, contract=True)), by_table(Floor(8, 15, 3))
    assert with_.keys() == without.keys()
    assert {t for t in with_ if with_[t] != without[t]} == {PEEK, POSTED}


def test_a_floor_without_the_option_carries_none_of_its_faults() -> None:
    floor = Floor(8, 40, 5, 0.5)
    events = list(floor.events())
    assert not {t["code"] for t in floor.truth} & {f.code for f in CONTRACT_FAULTS}
    assert not any(e.refused is not None or e.type == "HoleCardChecked" for e in events)
    assert all(to_datum(e)["payload"][0] == "pitwatch.events.TableOpened"
               for e in events if isinstance(e.payload, TableOpened))
    assert {"POSTED_RULES_CONTRADICT_REGULATION"}.isdisjoint(t["code"] for t in floor.truth)



def test_a_contract_floor_without_faults_has_the_postings_finding_alone() -> None:
    """The table that peeks, and the one posting the streak wager, deal clean rounds: the
    only finding is the posting's, and no event is refused."""
    floor = Floor(TABLES, 60, 11, contract=True)
    events = list(floor.events())
    assert not any(e.refused is not None for e in events)
    assert [(t["code"], t["table_id"]) for t in floor.truth] == [
        ("POSTED_RULES_CONTRADICT_REGULATION", POSTED)]
    assert _found(events, floor.registry()) == _truth(floor.truth)


def test_simulate_contract_writes_the_faults_to_the_truth(tmp_path: Path) -> None:
    from pitwatch.producers.simulate import main

    assert main(["--tables", str(TABLES), "--rounds", "30", "--seed", str(SEED),
                 "--inject", str(RATE), "--contract", "--quiet", "--out", str(tmp_path)]) == 0
    lines = (tmp_path / "truth.jsonl").read_bytes().splitlines()
    codes = {orjson.loads(line)["code"] for line in lines}
    assert {"EVENT_REFUSED", "POSTED_RULES_CONTRADICT_REGULATION"} <= codes
    assert main(["--synthetic", "--contract", "--quiet", "--out", str(tmp_path / "s")]) == 2


def test_a_bonus_table_under_six_decks_is_the_postings_finding_and_takes_no_bonus() -> None:
    """N.J.A.C. 13:69F-2.2(a)4: the fewest decks a table may use are

    > 4. six or eight, where the match-the-dealer wager (13:69F-2.23) or the optional
    > bonus wager (13:69F-2.25) is offered.

    The contract floor's third NJ blackjack table posts the bonus wager at a four-deck
    shoe: one finding on its posting; a bonus wager there (injected) is not available,
    as at the table posting the streak wager beside it (2.25(h)); the bonus tables of six
    and eight decks take them."""
    floor = Floor(9, 40, 3, 1.0, contract=True)
    events = list(floor.events())
    decks = {e.table_id: getattr(e.payload, "decks", 0) for e in events
             if e.type == "ShoeLoaded"}
    assert decks[FOUR_DECKS] == 4
    where = Counter((t["code"], t["table_id"]) for t in floor.truth)
    assert where[("POSTED_RULES_CONTRADICT_REGULATION", FOUR_DECKS)] == 1
    assert where[("BONUS_WAGER_NOT_AVAILABLE", FOUR_DECKS)] >= 1
    assert where[("BONUS_WAGER_NOT_AVAILABLE", POSTED)] >= 1
    rep = audit_events(events, keys=floor.registry())
    found = Counter((v.code, v.round_id, v.event_id) for v in rep.violations)
    assert found == _truth(floor.truth)
    cited = {v.citation for v in rep.violations
             if v.table_id == FOUR_DECKS and v.code.startswith(("POSTED", "BONUS_WAGER_NOT"))}
    assert cited == {"N.J.A.C. 13:69F-2.2(a)4"}
    plain = Floor(9, 1, 3)
    assert {c.table_id: c.bonus_offered for c in plain.configs if "BJ" in c.table_id
            and c.rules.bonus_wager} == {POSTED: True}
