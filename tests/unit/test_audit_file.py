"""`pitwatch.audit.run.audit_paths` over tests/data/rounds.jsonl: hand-written rounds of
all four games, compliant ones and one round per fault for every code the packs
implement (tests/data/make_rounds.py writes them).

A round's id says what it must raise: `<TABLE>-OK-<what>` nothing at all,
`<TABLE>-<CODE>[+<CODE>...][~<variant>]` exactly those codes. tests/data/expected.jsonl
names, for each expected violation, the event that shows it and its seat and hand.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

import pytest

from pitwatch.audit.run import AuditReport, audit_paths
from pitwatch.events.files import Rejected
from pitwatch.events.jsonl import dumps
from pitwatch.packs.registry import PACKS, select
from tests.data import make_rounds

DATA = Path(__file__).resolve().parents[1] / "data"
ROUNDS = DATA / "rounds.jsonl"
EXPECTED = DATA / "expected.jsonl"


@cache
def lines() -> list[dict[str, object]]:
    return [json.loads(line) for line in ROUNDS.read_text(encoding="utf-8").splitlines()]


@cache
def rounds() -> dict[str, str]:
    """round_id -> table_id, in file order."""
    out: dict[str, str] = {}
    for d in lines():
        if d["round_id"] is not None:
            out.setdefault(str(d["round_id"]), str(d["table_id"]))
    return out


def codes_of(round_id: str, table_id: str) -> set[str]:
    """What a round must raise, read from its id."""
    label = round_id[len(table_id) + 1:].split("~")[0]
    return set() if label.startswith("OK-") else set(label.split("+"))


@cache
def report() -> AuditReport:
    return audit_paths([ROUNDS])


def test_the_file_is_whole() -> None:
    rep = report()
    assert rep.rejected == 0
    assert rep.events == len(lines())
    assert rep.rounds == len(rounds())
    assert rep.tables == {"NJ-BJ-01", "NJ-BJ-02", "NJ-SW-01", "PA-FB-01", "NZ-BJ-01"}
    assert sum(rep.games.values()) == rep.rounds
    # no RoundEnded, or a break in the record cut through the round
    assert rep.incomplete == sum(bool({"ROUND_INCOMPLETE", "EVENTS_LOST"} & codes_of(r, t))
                                 for r, t in rounds().items())


def test_every_round_raises_exactly_the_codes_its_id_names() -> None:
    raised: dict[str, set[str]] = defaultdict(set)
    for v in report().violations:
        if v.round_id:  # a posting's finding is the table's (expected.jsonl names it)
            raised[v.round_id].add(v.code)
    assert set(raised) <= set(rounds()), set(raised) - set(rounds())
    wrong = {r: (sorted(codes_of(r, t)), sorted(raised.get(r, ())))
             for r, t in rounds().items() if codes_of(r, t) != raised.get(r, set())}
    assert wrong == {}, "round: (expected, raised)\n" + "\n".join(
        f"{r}: {e} {g}" for r, (e, g) in wrong.items())


def test_every_violation_is_the_expected_one_on_its_evidence_event() -> None:
    """Each expected violation once, on the event that shows it, with its seat and
    hand; nothing else (no double report)."""
    expected = Counter(
        (d["round_id"], d["code"], d["event_id"], d["seat"], d["hand"])
        for d in map(json.loads, EXPECTED.read_text(encoding="utf-8").splitlines()))
    raised = Counter((v.round_id, v.code, v.event_id, v.seat, v.hand)
                     for v in report().violations)
    assert raised == expected, (sorted((raised - expected).elements()),
                                sorted((expected - raised).elements()))


def test_expected_file_and_round_ids_agree() -> None:
    by_round: dict[str, set[str]] = defaultdict(set)
    for d in map(json.loads, EXPECTED.read_text(encoding="utf-8").splitlines()):
        if d["round_id"]:  # postings (on a TableOpened) have none
            by_round[d["round_id"]].add(d["code"])
    assert {r: codes_of(r, t) for r, t in rounds().items() if codes_of(r, t)} == by_round


def test_violations_carry_the_table_pack_and_its_citation() -> None:
    tables = {str(d["table_id"]): (str(d["jurisdiction"]), str(d["game"])) for d in lines()
              if d["type"] == "TableOpened"}
    for v in report().violations:
        pack = select(*tables[v.table_id])
        assert (v.pack, v.pack_version) == (pack.name, pack.version), v
        if not v.round_id:  # a posting's finding cites each paragraph it contradicts
            assert set(v.citation.split("; ")) <= {r.citation for r in pack.posting}, v
            continue
        assert v.citation in {r.citation for r in pack.rules if r.code == v.code} | {
            pack.record_citations.get(v.code, (None, None))[1]}, v


def test_every_code_of_every_pack_has_a_fault_round() -> None:
    """The file covers, for each pack, every code the pack can raise (its rules and the
    auditor's record checks). SIGNATURE_INVALID needs a key registry, which this
    unsigned file is audited without, TABLE_NOT_OPENED a table that never opened,
    DEVICE_LIMIT_EXCEEDED a 33rd device and EVENT_REFUSED an event out of the ranges:
    tests/unit/test_signatures.py, tests/unit/test_hostile_input.py and
    tests/unit/test_refused_events.py cover them."""
    tables = {str(d["table_id"]): (str(d["jurisdiction"]), str(d["game"])) for d in lines()
              if d["type"] == "TableOpened"}
    covered: dict[str, set[str]] = defaultdict(set)
    for r, t in rounds().items():
        covered[select(*tables[t]).name] |= codes_of(r, t)
    for d in map(json.loads, EXPECTED.read_text(encoding="utf-8").splitlines()):
        if not d["round_id"]:  # a posting's finding, on its table's TableOpened
            covered[select(*tables[d["table_id"]]).name].add(d["code"])
    for pack in PACKS.values():
        apart = {"SIGNATURE_INVALID", "TABLE_NOT_OPENED", "DEVICE_LIMIT_EXCEEDED",
                 "EVENT_REFUSED"}
        assert pack.codes() - covered[pack.name] - apart == set(), pack.name


def test_a_malformed_line_is_reported_with_its_line_number_and_the_rest_audited(
        tmp_path: Path) -> None:
    """docs/events.md: a line that does not parse, or names an unknown type, is
    reported with its line number and kept aside; it never stops the rest of the
    file."""
    text = ROUNDS.read_text(encoding="utf-8").splitlines(keepends=True)
    bad_card = dict(lines()[200], rank="Z", event_id="00000000-0000-0000-0000-000000000000")
    inserted = {
        5: '{"type": "WagerPlaced", "seat": 1,\n',  # not JSON
        60: json.dumps(dict(lines()[59], type="CoffeeServed")) + "\n",  # unknown type
        300: json.dumps(bad_card) + "\n",  # a known type with a bad field
        301: "\n",  # blank lines are skipped, not rejected
    }
    out: list[str] = []
    for line in text:
        while len(out) + 1 in inserted:
            out.append(inserted[len(out) + 1])
        out.append(line)
    copy = tmp_path / "rounds.jsonl"
    copy.write_text("".join(out), encoding="utf-8")
    rejects: list[Rejected] = []
    rep = audit_paths([copy], on_reject=rejects.append)
    assert [(r.line, r.source) for r in rejects] == [(5, str(copy)), (60, str(copy)),
                                                    (300, str(copy))]
    assert rejects[0].reason.startswith("not JSON")
    assert rejects[1].reason == "unknown type 'CoffeeServed'"
    assert "rank" in rejects[2].reason
    assert rejects[1].raw == inserted[60].rstrip("\n")
    assert rep.rejected == 3
    assert rep.events == report().events
    assert [v.to_json() for v in rep.violations] == [v.to_json() for v in report().violations]


def test_the_data_file_is_what_make_rounds_writes() -> None:
    """The committed data is the script's output, byte for byte (so the rounds can be
    read, changed and rebuilt from tests/data/make_rounds.py)."""
    events, expected = make_rounds.build()
    assert b"".join(dumps(e) + b"\n" for e in events) == ROUNDS.read_bytes()
    assert "".join(json.dumps(r) + "\n" for r in expected) == EXPECTED.read_text("utf-8")


@pytest.mark.parametrize("code", ["INSURANCE_PAID_BEFORE_COLLECTION"])
def test_a_code_that_cannot_stand_alone_is_paired_in_its_round_id(code: str) -> None:
    """INSURANCE_PAID_BEFORE_COLLECTION (2A.8(d)) always comes with
    INSURANCE_SETTLEMENT_WRONG: one hole card decides every insurance bet of a round, so
    paying one while a losing one is still up is paying a losing bet."""
    ids = [r for r, t in rounds().items() if code in codes_of(r, t)]
    assert ids and all(codes_of(r, rounds()[r]) == {code, "INSURANCE_SETTLEMENT_WRONG"}
                       for r in ids)


def test_the_audit_collects_cycles_less_often_and_puts_the_thresholds_back() -> None:
    """An audit makes millions of short-lived objects and next to no cycles: while it
    runs, the cyclic collector's thresholds are `AUDIT_GC_THRESHOLDS`; after it (or after
    it failed), they are the caller's again."""
    import gc

    from pitwatch.audit import run

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    audit_paths([ROUNDS], on_violation=lambda v: seen.append(gc.get_threshold()))
    assert seen and set(seen) == {run.AUDIT_GC_THRESHOLDS} != {before}
    assert gc.get_threshold() == before

    def failing(v: object) -> None:
        raise RuntimeError("the caller's own failure")

    with pytest.raises(RuntimeError, match="own failure"):
        audit_paths([ROUNDS], on_violation=failing)
    assert gc.get_threshold() == before
