"""`pitwatch reaudit`: a simulated New Jersey floor, audited under nj-blackjack@2024.09-3
(which judges insurance against the table's posting), re-audited under 2024.09-1 (the
composition before the insurance checks): the over-limit insurance findings (and the
settlement of the wagers they voided) vanish, nothing else changes; and the other way
round they are new."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from pitwatch.audit.run import audit_events
from pitwatch.events.avro import digest
from pitwatch.events.model import Event, WagerPlaced
from pitwatch.packs.registry import get
from pitwatch.producers.simulate import Floor, simulate_floor
from pitwatch.replay.case import Selection
from pitwatch.replay.reaudit import diff, reaudit
from pitwatch.store.embedded import EmbeddedStore

OLD, NEW = "2024.09-1", "2024.09-3"


def _over_insured(events: list[Event], rounds: int) -> tuple[list[Event], set[str]]:
    """The floor with the first insurance wager of `rounds` rounds doubled past the
    main wager: an over-limit insurance the dealer let stand. The sensor's chain is
    signed again from there on, as a consistent (dishonest) device would send it."""
    out: list[Event] = []
    tampered: set[str] = set()
    sent: dict[str, Event] = {}  # device re-signed from its tampered event on -> its last
    for ev in events:
        last = sent.get(ev.device_id)
        if last is not None and ev.seq == last.seq + 1:
            ev = replace(ev, prev_digest=digest(last))
        p = ev.payload
        if (isinstance(p, WagerPlaced) and p.kind == "INSURANCE" and len(tampered) < rounds
                and ev.round_id not in tampered):
            ev = replace(ev, payload=replace(p, amount=p.amount * 4))
            tampered.add(ev.round_id or "")
            last = ev
        if (last is not None and ev.seq > last.seq) or last is ev:
            sent[ev.device_id] = ev
        out.append(ev)
    return out, tampered


@pytest.fixture(scope="module")
def floor() -> tuple[list[Event], set[str]]:
    events, _ = simulate_floor(4, 40, 9, 0.2, jurisdiction="NJ", game="BLACKJACK")
    tampered_events, rounds = _over_insured(events, 3)
    assert len(rounds) == 3
    return tampered_events, rounds


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory,
         floor: tuple[list[Event], set[str]]) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("reaudit") / "data"
    store = EmbeddedStore(d)
    store.setup()
    audit_events(floor[0], store=store)  # the registry's newest: nj-blackjack@2024.09-3
    store.close()
    yield d


def test_the_stored_audit_used_the_new_version(data: Path) -> None:
    store = EmbeddedStore(data)
    try:
        rows = store.query("SELECT DISTINCT pack, pack_version FROM rounds FINAL")
    finally:
        store.close()
    assert rows == [{"pack": "nj-blackjack", "pack_version": NEW}]


def test_under_the_old_version_the_insurance_findings_vanish(
        data: Path, floor: tuple[list[Event], set[str]]) -> None:
    store = EmbeddedStore(data)
    try:
        rounds, changes = reaudit(store, Selection(), get("nj-blackjack", OLD))
        assert len(rounds) == 160
        assert all(rb.pack == f"nj-blackjack@{OLD}" for rb in rounds)
        vanished = [c for c in changes if c.change == "vanished"]
        # the over-limit insurance, and the settlement of the wager it voided
        assert sorted((c.violation.round_id, c.violation.code) for c in vanished) == sorted(
            (r, code) for r in floor[1] for code in ("INSURANCE_OVER_LIMIT",
                                                     "VOID_WAGER_SETTLED"))
        assert [c for c in changes if c.change != "vanished"] == []
        # and back: against the old version as the base, the same findings are new
        _, back = reaudit(store, Selection(), get("nj-blackjack", NEW),
                          base=get("nj-blackjack", OLD))
        assert sorted(c.violation.violation_id for c in back if c.change == "new") == \
            sorted(c.violation.violation_id for c in vanished)
        assert [c for c in back if c.change != "new"] == []
        # the same version changes nothing
        assert reaudit(store, Selection(), get("nj-blackjack", NEW))[1] == []
    finally:
        store.close()


def test_a_changed_severity_is_a_change_of_its_own(floor: tuple[list[Event], set[str]]
                                                   ) -> None:
    rep = audit_events(floor[0])
    v = rep.violations[0]
    changes = diff([replace(v, severity="LOW")], [v])
    assert [(c.change, c.was, c.violation.severity) for c in changes] == \
        [("severity", "LOW", v.severity)]


def test_the_command_prints_the_diff_as_a_table_and_as_json_lines(data: Path,
                                                                   tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pitwatch.cli", "reaudit", "--data",
                               str(data), *args], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)

    t = run("--pack", f"nj-blackjack@{OLD}")
    assert t.returncode == 0, t.stderr
    assert "re-audit of 160 round(s) under nj-blackjack@2024.09-1" in t.stdout
    assert "vanished" in t.stdout and "INSURANCE_OVER_LIMIT" in t.stdout
    j = run("--pack", f"nj-blackjack@{OLD}", "--format", "jsonl")
    lines = [json.loads(x) for x in j.stdout.splitlines()]
    assert lines and {x["change"] for x in lines} == {"vanished"}
    assert all(x["pack"] == f"nj-blackjack@{NEW}" for x in lines)
    bad = run("--pack", "nj-blackjack@1999")
    assert bad.returncode == 2 and "no rule pack nj-blackjack@1999" in bad.stderr


def test_with_the_key_registry_the_signatures_are_judged_again(tmp_path: Path) -> None:
    """A floor audited with its devices' key registry stores SIGNATURE_INVALID for the
    checkpoints a tampered chain no longer matches. Re-audited under the same pack with
    the same registry, nothing changes; without it, those findings show as vanished and
    the command says the signatures were not checked."""
    floor = Floor(2, 20, 9, 0.0, jurisdiction="NJ", game="BLACKJACK")
    keys = floor.registry()
    assert keys is not None
    events, _ = _over_insured(list(floor.events()), 2)
    store = EmbeddedStore(tmp_path / "data")
    try:
        store.setup()
        stored = audit_events(events, store=store, keys=keys)
        assert any(v.code == "SIGNATURE_INVALID" for v in stored.violations)
        assert reaudit(store, Selection(), get("nj-blackjack", NEW), keys=keys)[1] == []
        _, unsigned = reaudit(store, Selection(), get("nj-blackjack", NEW))
        assert unsigned and {(c.change, c.violation.code) for c in unsigned} == \
            {("vanished", "SIGNATURE_INVALID")}
    finally:
        store.close()
    keys.write(tmp_path / "keys.json")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pitwatch.cli", "reaudit", "--data",
                               str(tmp_path / "data"), "--pack", f"nj-blackjack@{NEW}",
                               *args], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)

    signed = run("--keys", str(tmp_path / "keys.json"))
    assert signed.returncode == 0, signed.stderr
    assert "0 new, 0 vanished" in signed.stdout and "signatures FAIL" in signed.stdout
    plain = run()
    assert "signatures NOT CHECKED" in plain.stdout and "SIGNATURE_INVALID" in plain.stdout
    bad = run("--keys", str(tmp_path / "nowhere.json"))
    assert bad.returncode == 2 and "pitwatch reaudit:" in bad.stderr
