"""`pitwatch query` reads the store and nothing else (issue 35, item 7).

The check: "a `--` inside a string literal must not hide the rest; comments, quoted
identifiers, backquotes", "no `INTO OUTFILE`, no `file()`/table functions that read or
write files", "no multi-statements, no SETTINGS that lift readonly". The process: "the
embedded query runs in a process that cannot write the store or any file": each attack
is run again in the confined process with the check switched off, and fails there too.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest

from pitwatch.store import landlock, readonly
from pitwatch.store.base import StoreError
from pitwatch.store.embedded import EmbeddedStore
from pitwatch.store.readonly import NotReadOnly, check_read_only, run_read_only

needs_landlock = pytest.mark.skipif(landlock.abi() < 4, reason="kernel without Landlock 4")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("q") / "data"
    s = EmbeddedStore(data)
    s.setup()
    s.close()
    return data


def _fingerprint(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and not p.is_symlink()}


# --- the check --------------------------------------------------------------------------

@pytest.mark.parametrize(("sql", "reason"), [
    # a `--` inside a literal hid the rest of the line from the old pre-check
    ("SELECT '--' AS a, file('/etc/hostname') AS b", "function file() refused"),
    ("SELECT '--' AS a INTO OUTFILE '/tmp/x.csv'", "INTO OUTFILE refused"),
    ("SELECT '--' AS a; DROP TABLE events", "one statement at a time"),
    # quoted and backquoted names call the same function
    ("SELECT `file`('/etc/hostname')", "function file() refused"),
    ('SELECT "file"(\'/etc/hostname\')', "function file() refused"),
    ("SELECT * FROM `url`('http://x/', 'CSV', 'a String')", "function url() refused"),
    # a quote inside a # comment, or a heredoc, hid what followed
    ("SELECT 1 # it's\n, file('/etc/hostname')", "function file() refused"),
    ("SELECT $$'$$ AS a, file('/etc/hostname') AS b", "function file() refused"),
    ("SELECT 1 /* a /* nested */ still a comment */ ; SELECT 2", "one statement at a time"),
    ("SELECT * FROM filesystem('/')", "function filesystem() refused"),
    ("SELECT * FROM executable('x.sh', 'CSV', 'a String')", "function executable() refused"),
    ("SELECT * FROM input('a String')", "function input() refused"),
    ("SELECT * FROM hdfs('hdfs://x/y', 'CSV', 'a String')", "function hdfs() refused"),
    ("SELECT * FROM s3('http://x/y', 'CSV', 'a String')", "function s3() refused"),
    ("SELECT 1 INTO OUTFILE 'x.csv' TRUNCATE", "INTO OUTFILE refused"),
    ("SELECT 1 SETTINGS readonly = 0", "SETTINGS refused"),
    ("SELECT 1 FORMAT TSV", "FORMAT refused"),
    ("SELECT 'unterminated", "unterminated string literal"),
    ("SELECT 1 /* unterminated", "unterminated /* comment"),
    ("INSERT INTO violations SELECT * FROM violations", "INSERT refused"),
    ("SET readonly = 0", "SET refused"),
    ("", "no statement given"),
])
def test_query_refuses_what_does_more_than_read(sql: str, reason: str) -> None:
    with pytest.raises(NotReadOnly, match=re.escape(reason)):
        check_read_only(sql)


def test_a_table_function_the_engine_adds_is_refused_unless_named_harmless() -> None:
    check_read_only("SELECT * FROM newSource('x')")
    with pytest.raises(NotReadOnly, match=r"newSource\(\) refused"):
        check_read_only("SELECT * FROM newSource('x')", table_functions=["newSource"])
    check_read_only("SELECT * FROM numbers(3)", table_functions=["numbers"])


def test_query_lets_reads_through() -> None:
    check_read_only("SELECT 'DROP TABLE x; file(' AS s -- DELETE; INTO OUTFILE\n FROM events")
    check_read_only("SELECT name, value FROM system.settings WHERE name = 'readonly';")
    check_read_only("SELECT format('{}', 1), `table_id` FROM events FINAL")
    check_read_only("WITH 1 AS a SELECT a /* ; file('x') */")


# --- the confined process ------------------------------------------------------------------

def _unchecked(data: Path, sql: str) -> tuple[int, str]:
    """`sql` run by the confined query process with its check switched off: what the
    process's confinement and chDB's read-only mode hold on their own."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "tmp").mkdir()
        real = data / "chdb"
        job = {"root": str(readonly._scratch_store(real, scratch)), "store": str(real),
               "scratch": tmp, "sql": sql}
        code = ("import pitwatch.store.query_process as q\n"
                "q.check_read_only = lambda *a, **k: None\n"
                "raise SystemExit(q.main())")
        env = readonly._child_env(scratch)
        r = subprocess.run([sys.executable, "-c", code], input=orjson.dumps(job),
                           capture_output=True, env=env, cwd=tmp, timeout=300, check=False)
    lines = r.stderr.decode(errors="replace").strip().splitlines()
    return r.returncode, (lines[-1] if lines else "") + r.stdout.decode(errors="replace")


@needs_landlock
def test_the_query_answers_and_leaves_the_store_as_it_was(store: Path) -> None:
    before = _fingerprint(store)
    rows = run_read_only(store, "SELECT 'a -- b' AS s, count() AS n FROM violations")
    assert rows == [{"s": "a -- b", "n": 0}]
    assert _fingerprint(store) == before
    assert not (store / "chdb" / "status").exists()


@needs_landlock
def test_the_process_reads_no_file_outside_the_store(store: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t\n")
    code, said = _unchecked(store, f"SELECT file('{secret}') AS x")
    assert code == 2 and "Permission denied" in said and "s3cr3t" not in said
    code, said = _unchecked(store, f"SELECT file('/proc/{os.getpid()}/environ') AS x")
    assert code == 2 and "Permission denied" in said


@needs_landlock
def test_the_process_writes_no_file(store: Path, tmp_path: Path) -> None:
    before = _fingerprint(store)
    for target in (tmp_path / "out.csv", store / "chdb" / "out.csv"):
        code, said = _unchecked(store, f"SELECT 1 AS x INTO OUTFILE '{target}'")
        assert code == 2 and "Permission denied" in said
        assert not target.exists()
    code, said = _unchecked(store, "SELECT 1; INSERT INTO violations (violation_id) "
                            "VALUES ('forged')")
    assert code == 2 and "readonly" in said.lower()
    code, said = _unchecked(store, "SELECT 1 SETTINGS readonly = 0")
    assert code == 2 and "readonly" in said.lower()
    assert _fingerprint(store) == before
    assert run_read_only(store, "SELECT count() AS n FROM violations") == [{"n": 0}]


@needs_landlock
def test_the_process_opens_no_tcp_connection(store: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        code, _ = _unchecked(store, f"SELECT * FROM url('http://127.0.0.1:{port}/', "
                             "'LineAsString')")
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected
    assert code == 2


@needs_landlock
def test_the_process_holds_no_secret_of_the_environment(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITWATCH_CLICKHOUSE_PASSWORD", "hunter2")
    _, said = _unchecked(store, "SELECT file('/proc/self/environ') AS x")
    assert "hunter2" not in said
    assert "PITWATCH" not in str(readonly._child_env(Path("/x")))


@needs_landlock
def test_the_command_refuses_an_attack_in_one_line_and_writes_nothing(
        store: Path, tmp_path: Path) -> None:
    target = tmp_path / "owned.csv"
    r = subprocess.run([sys.executable, "-m", "pitwatch.cli", "query", "--data", str(store),
                        f"SELECT '--' AS a INTO OUTFILE '{target}'"],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 2 and r.stderr.startswith("pitwatch query: INTO OUTFILE refused")
    assert len(r.stderr.strip().splitlines()) == 1
    assert not target.exists()


def test_a_store_open_elsewhere_is_refused_with_the_reason(tmp_path: Path) -> None:
    s = EmbeddedStore(tmp_path / "d")
    try:
        with pytest.raises(StoreError, match="open in another process"):
            run_read_only(tmp_path / "d", "SELECT 1")
    finally:
        s.close()


def test_a_kernel_that_cannot_keep_the_query_off_the_network_is_refused(
        monkeypatch: pytest.MonkeyPatch, capfdbinary: pytest.CaptureFixture[bytes],
        tmp_path: Path) -> None:
    """"The embedded query runs in a process that cannot write the store or any file" -
    and reaches no server: a Landlock too old to refuse TCP leaves the query unrun."""
    import io

    from pitwatch.store import query_process

    monkeypatch.setattr(query_process, "confine", lambda **_: 3)
    job = {"store": str(tmp_path), "scratch": str(tmp_path), "root": str(tmp_path),
           "sql": "SELECT 1"}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(orjson.dumps(job))))
    assert query_process.main() == 2
    said = orjson.loads(capfdbinary.readouterr().err.strip().splitlines()[-1])
    assert said["kind"] == "not_confined" and "ABI 3" in said["message"]
