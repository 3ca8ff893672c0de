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


def _imports(path: Path) -> list[str]:
    """The absolute module names `path` imports (a relative import stays in its own
    package)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append(node.module or "")
    return out


def test_the_core_never_imports_a_stage() -> None:
    bad = [f"{p.relative_to(ROOT)}: {n}" for p in _tracked(".py")
           if p.relative_to(ROOT).parts[0] == "pitwatch"
           for n in _imports(p) if n.split(".")[0] in STAGES]
    assert bad == []


#: the stages a user runs: each imports only the core and itself
RUN_STAGES = ("producers", "processors", "replay", "console")


def test_no_stage_imports_another_stage() -> None:
    """producers/, processors/, replay/ and console/ import only pitwatch and
    themselves: what two stages share lives in the core."""
    bad = []
    for p in _tracked(".py"):
        stage = p.relative_to(ROOT).parts[0]
        if stage not in RUN_STAGES:
            continue
        bad += [f"{p.relative_to(ROOT)}: {n}" for n in _imports(p)
                if n.split(".")[0] in RUN_STAGES and n.split(".")[0] != stage]
    assert bad == []


def test_the_import_rules_see_a_crossing(tmp_path: Path) -> None:
    """The walk the two rules above use finds an absolute import of another stage at
    any depth, and leaves relative imports alone."""
    src = tmp_path / "m.py"
    src.write_text("import os\nfrom processors.topics import x\nfrom . import y\n"
                   "def f() -> None:\n    import replay.case\n")
    assert _imports(src) == ["os", "processors.topics", "replay.case"]
