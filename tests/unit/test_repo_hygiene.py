"""The tree as a newcomer gets it: no merge left half done (a conflict inside a string,
a docstring or a README passes every other check) and imports one way only, from the
stages to the core."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


#: the stages a user runs: folders at the top of the repository, linked into the package
#: as pitwatch.<stage>
RUN_STAGES = ("producers", "processors", "replay", "console")
#: what only the repository holds, never imported by what is installed
REPO_ONLY = ("bench", "tests", "scripts")


def _stage(module: str) -> str | None:
    """The stage `module` belongs to (`pitwatch.replay.case` is replay's), or None for
    the core and everything else."""
    parts = module.split(".")
    return parts[1] if parts[0] == "pitwatch" and parts[1:2] and parts[1] in RUN_STAGES \
        else None


def test_the_stages_are_linked_into_the_package() -> None:
    for stage in RUN_STAGES:
        link = ROOT / "pitwatch" / stage
        assert link.is_symlink() and link.resolve() == (ROOT / stage).resolve(), stage


def test_the_core_never_imports_a_stage() -> None:
    bad = [f"{p.relative_to(ROOT)}: {n}" for p in _tracked(".py")
           if p.relative_to(ROOT).parts[0] == "pitwatch"
           for n in _imports(p) if _stage(n) or n.split(".")[0] in REPO_ONLY]
    assert bad == []


def test_no_stage_imports_another_stage() -> None:
    """producers/, processors/, replay/ and console/ import only pitwatch's core and
    themselves: what two stages share lives in the core."""
    bad = []
    for p in _tracked(".py"):
        stage = p.relative_to(ROOT).parts[0]
        if stage not in RUN_STAGES:
            continue
        bad += [f"{p.relative_to(ROOT)}: {n}" for n in _imports(p)
                if _stage(n) not in (None, stage) or n.split(".")[0] in REPO_ONLY]
    assert bad == []


def test_a_stage_is_imported_by_its_one_name() -> None:
    """Imported by its folder's bare name (processors.app), a stage's module would be a
    second module of one file beside pitwatch.processors.app, each with its own state:
    every import says pitwatch.<stage>."""
    bad = [f"{p.relative_to(ROOT)}: {n}" for p in _tracked(".py")
           for n in _imports(p) if n.split(".")[0] in RUN_STAGES]
    assert bad == []


def test_the_import_rules_see_a_crossing(tmp_path: Path) -> None:
    """The walk the rules above use finds an absolute import of another stage at
    any depth, and leaves relative imports alone."""
    src = tmp_path / "m.py"
    src.write_text("import os\nfrom pitwatch.processors.topics import x\nfrom . import y\n"
                   "def f() -> None:\n    import pitwatch.replay.case\n")
    assert _imports(src) == ["os", "pitwatch.processors.topics", "pitwatch.replay.case"]
    assert [_stage(n) for n in _imports(src)] == [None, "processors", "replay"]
