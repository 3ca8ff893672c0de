"""The Avro contract: every field documented, and the current schema still reads data
written under each released version (checked with the avro package's checker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from avro.schema import parse

from pitwatch.events.schema import fingerprint, parsed_schema, raw_schema, schemas_dir

RELEASED = sorted((schemas_dir() / "avro" / "released").glob("v*/TableEvent.avsc"))
ALL_RELEASED = sorted((schemas_dir() / "avro" / "released").glob("v*/*.avsc"))


def _compatible(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    result = ReaderWriterCompatibilityChecker().get_compatibility(
        parse(json.dumps(reader)), parse(json.dumps(writer)))
    return result.compatibility is SchemaCompatibilityType.compatible


def _walk(node: Any, path: str = "") -> list[str]:
    """Paths of named types and fields that lack a doc."""
    missing = []
    if isinstance(node, dict):
        if node.get("type") in ("record", "enum") and not node.get("doc"):
            missing.append(path or node.get("name", "?"))
        for f in node.get("fields", []):
            if not f.get("doc"):
                missing.append(f"{path}.{f['name']}")
            missing += _walk(f["type"], f"{path}.{f['name']}")
        if node.get("type") == "array":
            missing += _walk(node["items"], path + "[]")
    elif isinstance(node, list):
        for branch in node:
            missing += _walk(branch, path)
    return missing


def test_released_versions_are_kept() -> None:
    assert RELEASED, "schemas/avro/released/v1 must hold the released schema"


@pytest.mark.parametrize("released", ALL_RELEASED,
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_current_schema_reads_every_released_version(released: Path) -> None:
    """Every contract file (table events, alerts) still reads its released versions."""
    current = json.loads((schemas_dir() / "avro" / released.name).read_text())
    assert _compatible(current, json.loads(released.read_text()))
    assert _walk(current) == []


def test_checker_catches_a_breaking_change() -> None:
    """The check can fail: a new required field with no default breaks old data."""
    broken = json.loads(json.dumps(raw_schema()))
    broken["fields"].append({"name": "operator", "type": "string", "doc": "x"})
    assert not _compatible(broken, raw_schema())
    renamed_enum = json.loads(json.dumps(raw_schema()))
    card = next(b for b in renamed_enum["fields"][-1]["type"] if b["name"] == "CardDealt")
    suit = next(f for f in card["fields"] if f["name"] == "suit")
    suit["type"]["symbols"] = ["C", "D", "H"]  # a reader that lost a symbol
    assert not _compatible(renamed_enum, raw_schema())


def test_every_field_and_type_has_a_doc() -> None:
    assert _walk(raw_schema()) == []


def test_schema_has_namespace_and_version() -> None:
    s = raw_schema()
    assert s["namespace"] == "pitwatch.events"
    assert isinstance(s["version"], int)


def test_every_payload_of_the_vocabulary_is_in_the_union() -> None:
    union = {b["name"] for b in raw_schema()["fields"][-1]["type"]}
    assert union == {
        "TableOpened", "ShoeLoaded", "RoundStarted", "WagerPlaced", "CardDealt",
        "InsuranceOffered", "SwitchOffered", "HoleCardInserted", "HoleCardRevealed",
        "PlayerDecision", "PayoutMade", "WagerCollected", "WagerReturned", "CardsCleared",
        "RoundEnded", "Checkpoint", "SealedCheckpoint", "HoleCardChecked",
        "PostedTableOpened", "PlayerSeated", "PlayerLeft",
    }


def test_fingerprint_is_stable_for_the_released_version() -> None:
    """The single-object header of the newest released version is the current one's;
    changing the contract changes it (v1, before Checkpoint, has another)."""
    import fastavro

    newest = max(RELEASED, key=lambda p: int(p.parent.name[1:]))
    assert fingerprint(fastavro.parse_schema(json.loads(newest.read_text()))) \
        == fingerprint(parsed_schema())
    v1 = fastavro.parse_schema(json.loads(RELEASED[0].read_text()))
    assert fingerprint(v1) != fingerprint(parsed_schema())
