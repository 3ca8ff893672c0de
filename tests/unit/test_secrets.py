"""No password in argv anywhere (issue 35, item 10): "`deploy/kafka.sh` passes SCRAM
passwords in argv; compose passes `--password` in argv". A process's argv is in every
local user's process list (ps, /proc/PID/cmdline)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SCRIPTS = [*sorted(DEPLOY.glob("*.sh")), DEPLOY / "docker-compose.yml"]


def _code(path: Path) -> list[tuple[int, str]]:
    """The file's lines that are not comments."""
    return [(n, ln) for n, ln in enumerate(path.read_text().splitlines(), 1)
            if not ln.lstrip().startswith("#")]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_script_puts_a_password_on_a_command_line(path: Path) -> None:
    for n, line in _code(path):
        assert not re.search(r"--password\b(?!-file)", line), f"{path.name}:{n}: {line}"
        # a statement with a password in it goes through stdin (printf is a builtin)
        if re.search(r"IDENTIFIED\b.*\bBY\b", line):
            assert "--query" not in line and line.lstrip().startswith("printf"), \
                f"{path.name}:{n}: {line}"


def test_kafka_sh_formats_its_scram_users_through_an_argument_file() -> None:
    lines = _code(DEPLOY / "kafka.sh")
    scram = [ln for _, ln in lines if "--add-scram" in ln]
    assert scram, "the SCRAM credentials are still made at format time"
    calls = [ln for _, ln in lines if re.search(r"\brun_tool\b.*\bformat\b", ln)]
    assert calls == [], calls  # format runs through run_tool_secret only
    assert any("run_tool_secret" in ln and "format" in ln for _, ln in lines)


def _function(name: str) -> str:
    text = (DEPLOY / "kafka.sh").read_text()
    m = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", text, re.DOTALL | re.MULTILINE)
    assert m, name
    return m.group(0)


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _argv(pid: int) -> list[str]:
    """A process's argv as every local user can read it."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")


@pytest.mark.skipif(shutil.which("java") is None or shutil.which("javac") is None,
                    reason="needs a JDK")
def test_the_java_tool_gets_its_arguments_and_argv_holds_no_password(tmp_path: Path) -> None:
    password = "s3cr3t+/=Pass~word"
    (tmp_path / "Show.java").write_text(
        "public class Show { public static void main(String[] a) throws Exception {"
        " for (String s : a) System.out.println(\"[\" + s + \"]\");"
        " while (!new java.io.File(\"stop\").exists()) Thread.sleep(20); } }")
    subprocess.run(["javac", "Show.java"], cwd=tmp_path, check=True, timeout=120)
    script = tmp_path / "t.sh"
    script.write_text(
        "set -euo pipefail\nRUN_DIR=$PWD\n"
        'tool_cmd() { TOOL_CMD=(java -Xmx64m -cp "$PWD" "$1"); }\n'
        + _function("run_tool_secret")
        + f'run_tool_secret Show format -c "/a b/x.conf" --add-scram '
        f'"SCRAM-SHA-512=[name=admin,password={password}]"\n')
    p = subprocess.Popen(["bash", str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                         text=True)
    try:
        args = tmp_path / "tool.args"
        deadline = time.monotonic() + 60
        seen: list[str] = []
        while time.monotonic() < deadline and not seen:
            seen = [" ".join(argv) for argv in map(_argv, _pids())
                    if any(str(args) in a for a in argv)]
            time.sleep(0.05)
        assert seen and all(password not in a for a in seen), seen
        (tmp_path / "stop").touch()
        out, _ = p.communicate(timeout=60)
    finally:
        p.kill()
    assert out.splitlines() == ["[format]", "[-c]", "[/a b/x.conf]", "[--add-scram]",
                                f"[SCRAM-SHA-512=[name=admin,password={password}]]"]
    assert p.returncode == 0
    assert not (tmp_path / "tool.args").exists()
