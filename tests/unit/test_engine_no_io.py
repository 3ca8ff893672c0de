""""no clocks/randomness/I/O inside pitwatch/engine": the released writer schemas a
signed checkpoint is held to are read by the caller (`released_writers()`) and given
to the engine as data; building an auditor opens no file."""

from __future__ import annotations

import ast
import builtins
import io
import os
import pathlib
from pathlib import Path
from typing import Any

import pytest

from pitwatch.engine.auditor import Auditor, TableAuditor
from pitwatch.events.schema import released_writers
from pitwatch.packs.registry import select

ENGINE = Path(__file__).resolve().parents[2] / "pitwatch" / "engine"
#: what reads a file, the environment or the schema files, by name
READS = {"open", "read_text", "read_bytes", "released_writers", "writer_schemas",
         "released_dirs", "schemas_dir", "getenv", "environ", "listdir", "scandir", "glob",
         "iterdir"}


def test_the_engine_names_nothing_that_reads_a_file() -> None:
    found = []
    for f in sorted(ENGINE.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            name = (node.id if isinstance(node, ast.Name) else
                    node.attr if isinstance(node, ast.Attribute) else
                    None)
            if name in READS:
                found.append(f"{f.name}:{node.lineno} {name}")
            if isinstance(node, ast.ImportFrom):
                found += [f"{f.name}:{node.lineno} imports {a.name}" for a in node.names
                          if a.name in READS]
    assert found == []


def test_building_auditors_opens_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    released = released_writers()  # the caller's read, before the engine is built

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the engine opened a file: {args!r}")

    for owner, name in ((builtins, "open"), (io, "open"), (os, "open"),
                        (pathlib.Path, "open"), (pathlib.Path, "read_text"),
                        (pathlib.Path, "read_bytes")):
        monkeypatch.setattr(owner, name, refused)
    a = Auditor(select, lambda v: None, lambda s: None, released=released)
    t = TableAuditor("AC-BJ-01", select, lambda v: None, lambda s: None, released=released)
    assert a.released is released and t.released is released


def test_an_auditor_without_the_released_schemas_is_refused() -> None:
    with pytest.raises(TypeError, match="released"):
        Auditor(select, lambda v: None, lambda s: None)  # type: ignore[call-arg]
