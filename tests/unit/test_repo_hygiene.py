"""The tree as a newcomer gets it: no merge left half done (a conflict inside a string,
a docstring or a README passes every other check) and imports one way only, from the
stages to the core."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("producers", "processors", "replay", "console", "bench", "tests")


def _tracked(*suffixes: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [ROOT / p for p in out if p.endswith(suffixes) and (ROOT / p).is_file()]


def test_no_merge_conflict_markers() -> None:
    marks = ("<<<<<<< ", ">>>>>>> ", "=======\n")
    found = [f"{p.relative_to(ROOT)}:{i}"
             for p in _tracked(".py", ".md", ".toml", ".sh", ".sql", ".avsc", ".txt", ".yml",
                               ".yaml", ".json", ".html", ".js", ".css", "Makefile")
             for i, line in enumerate(p.read_text(errors="replace").splitlines(True), 1)
             if line.startswith(marks[:2]) or line == marks[2]]
    assert found == []


def test_the_core_never_imports_a_stage() -> None:
    bad = []
    for p in _tracked(".py"):
        if p.relative_to(ROOT).parts[0] != "pitwatch":
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level \
                else []
            bad += [f"{p.relative_to(ROOT)}: {n}" for n in names
                    if n.split(".")[0] in STAGES]
    assert bad == []
