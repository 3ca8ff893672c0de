"""What `pitwatch query` lets through, and where it runs.

The check (`check_read_only`): one statement that reads the store, and nothing that
writes, changes the schema, or reaches the machine's files or the network. It reads the
statement's tokens as ClickHouse does (`sql_lexer`: a `--` inside a literal is text, a
comment is not code), so nothing hides from it. It refuses, with the reason in one line:
a statement that does not start with a reading keyword; a second statement; `INTO`
(`INTO OUTFILE` writes a file on the client's side, where `readonly` does not reach);
`SETTINGS` and `FORMAT` clauses; and a call of any table function but those known to
read nothing outside the store (`HARMLESS`), and of the scalar `file()`, quoted or not.

Where it runs (`run_read_only`): the embedded statement is answered by a process of its
own (`query_process`) that confines itself with Landlock: it writes no file but its own
scratch directory, reads no file but the store's and the libraries', and opens no TCP
connection. It opens the store in chDB's read-only mode (`readonly=1`: no statement
writes and no setting changes), through a scratch directory that holds its own lock and
temporary files and links to the store's tables, so even chDB's lock file is not the
store's. Where the kernel has no Landlock, the query is refused, not run unconfined.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import orjson

from .base import StoreError
from .sql_lexer import Kind, LexError, Token, tokens

READ_STATEMENTS = ("SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXISTS", "EXPLAIN")
#: Table functions that read nothing but their arguments or the store itself.
HARMLESS: Final = frozenset(n.lower() for n in (
    "values", "SQLStandardValues", "view", "viewExplain", "viewIfPermitted", "numbers",
    "numbers_mt", "zeros", "zeros_mt", "generate_series", "generateSeries",
    "generateRandom", "null", "merge", "loop", "format", "primes"))
#: Functions that read or write outside the store: the table functions chDB 26.9 has
#: but the harmless ones, and the scalar `file()`. The confined process refuses every
#: table function its chDB has but the harmless ones besides (`check_read_only`'s
#: `table_functions`), so one added later is refused too.
OUTSIDE: Final = frozenset(n.lower() for n in (
    "file", "fileCluster", "filesystem", "url", "urlCluster", "s3", "s3Cluster", "gcs",
    "oss", "cosn", "hdfs", "hdfsCluster", "azureBlobStorage", "azureBlobStorageCluster",
    "remote", "remoteSecure", "cluster", "clusterAllReplicas", "mysql", "postgresql",
    "sqlite", "mongodb", "redis", "jdbc", "odbc", "executable", "python", "input",
    "arrowstream", "bigquery", "dictionary", "eval", "ytsaurus", "deltaLake",
    "deltaLakeAzure", "deltaLakeAzureCluster", "deltaLakeCluster", "deltaLakeLocal",
    "deltaLakeS3", "deltaLakeS3Cluster", "hudi", "hudiCluster", "iceberg", "icebergAzure",
    "icebergAzureCluster", "icebergCluster", "icebergHDFS", "icebergHDFSCluster",
    "icebergLocal", "icebergLocalCluster", "icebergS3", "icebergS3Cluster", "paimon",
    "paimonAzure", "paimonAzureCluster", "paimonCluster", "paimonHDFS",
    "paimonHDFSCluster", "paimonLocal", "paimonS3", "paimonS3Cluster", "prometheusQuery",
    "prometheusQueryRange", "timeSeriesData", "timeSeriesMetricFamilies",
    "timeSeriesMetrics", "timeSeriesSamples", "timeSeriesSelector", "timeSeriesTags",
    "fuzzJSON", "fuzzQuery", "mergeTreeAnalyzeIndexes", "mergeTreeAnalyzeIndexesUUID",
    "mergeTreeCodecBlockCounts", "mergeTreeIndex", "mergeTreeProjection",
    "mergeTreeTextIndex"))
#: How long the confined process may take, in seconds.
TIMEOUT: Final = 600.0


class NotReadOnly(ValueError):
    """The statement would do more than read the store."""


class NotConfined(StoreError):
    """The query process could not be confined, so the query did not run."""


def check_read_only(sql: str, table_functions: Iterable[str] = ()) -> None:
    """Raise `NotReadOnly` with the reason unless `sql` is one statement that only reads.
    `table_functions`: every table function the engine has; each but the `HARMLESS`
    is refused too."""
    try:
        toks = tokens(sql)
    except LexError as e:
        raise NotReadOnly(str(e)) from None
    while toks and toks[-1].kind is Kind.PUNCT and toks[-1].text == ";":
        toks.pop()
    if not toks:
        raise NotReadOnly("no statement given")
    if any(t.kind is Kind.PUNCT and t.text == ";" for t in toks):
        raise NotReadOnly("one statement at a time")
    first = toks[0]
    if first.kind is not Kind.WORD or first.text.upper() not in READ_STATEMENTS:
        what = first.text.upper() if first.kind is Kind.WORD else repr(first.text)
        raise NotReadOnly(f"{what} refused: pitwatch query only reads "
                          f"({', '.join(READ_STATEMENTS)})")
    outside = OUTSIDE | {n.lower() for n in table_functions if n.lower() not in HARMLESS}
    for i, t in enumerate(toks):
        after = toks[i + 1] if i + 1 < len(toks) else None
        before = toks[i - 1] if i else None
        called = after is not None and after.kind is Kind.PUNCT and after.text == "("
        if called and t.kind in (Kind.WORD, Kind.QUOTED) and t.text.lower() in outside:
            raise NotReadOnly(f"function {t.text}() refused: pitwatch query reads the "
                              "store only, not files or other servers")
        if t.kind is not Kind.WORD or _qualified(before):
            continue
        word = t.text.upper()
        if word == "INTO":
            into = "INTO OUTFILE" if after and after.text.upper() == "OUTFILE" else "INTO"
            raise NotReadOnly(f"{into} refused: pitwatch query writes no file (use "
                              "--format csv or json and redirect)")
        if word == "SETTINGS":
            raise NotReadOnly("SETTINGS refused: the query runs with the store's "
                              "read-only settings")
        if word == "FORMAT" and not called:
            raise NotReadOnly("FORMAT refused: choose the output with --format")


def _qualified(before: Token | None) -> bool:
    """Whether a word is a name after a dot (`system.settings`), not a keyword."""
    return before is not None and before.kind is Kind.PUNCT and before.text == "."


# --- the confined process -------------------------------------------------------------

def _scratch_store(real: Path, scratch: Path) -> Path:
    """A store directory in `scratch` for chDB to open: links to the real store's
    directories (read through, never written: the process may write only `scratch`),
    beside its own lock file and temporary files."""
    root = scratch / "store"
    root.mkdir()
    for entry in sorted(real.iterdir()):
        if entry.name in ("status", "tmp"):
            continue
        (root / entry.name).symlink_to(entry.resolve())
    return root


def _child_env(scratch: Path) -> dict[str, str]:
    """The confined process's environment: no secrets (no PITWATCH_* password), its
    temporary files in its scratch directory."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "JE_MALLOC_CONF")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return env | {"TMPDIR": str(scratch / "tmp"), "HOME": str(scratch),
                  "PYTHONDONTWRITEBYTECODE": "1"}


def _failure(code: int, stderr: bytes) -> Exception:
    """The error the confined process reported: its last line on stderr is
    {"kind": ..., "message": ...} (chDB may have written lines of its own before)."""
    lines = stderr.decode(errors="replace").strip().splitlines()
    try:
        said = orjson.loads(lines[-1])
        kind, message = str(said["kind"]), str(said["message"])
    except (IndexError, orjson.JSONDecodeError, KeyError, TypeError):
        return StoreError(f"the query process failed (exit status {code})")
    if kind == "not_read_only":
        return NotReadOnly(message)
    if kind == "not_confined":
        return NotConfined(f"cannot confine the query process ({message}), so the query "
                           "was not run: query a ClickHouse server as a read-only user "
                           "instead (--clickhouse)")
    return StoreError(f"chDB: {message}")


def run_read_only(data: str | Path, sql: str, timeout: float = TIMEOUT
                  ) -> list[dict[str, Any]]:
    """The rows `sql` reads from the embedded store in `data`, answered by a confined
    process (the module's doc). Raises NotReadOnly for a statement that would do more
    than read, NotConfined where the kernel cannot confine the process, StoreError when
    the store is open elsewhere or chDB refuses the statement."""
    check_read_only(sql)
    real = Path(data) / "chdb"
    try:
        lock = os.open(real / "status", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise StoreError(f"chDB: cannot open the store {data}: {e.strerror}") from None
    made = os.fstat(lock).st_size == 0
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"chDB: the store {data} is open in another process (an "
                             "audit, the console or a demo using it): wait for it to "
                             "end, or give another data directory") from None
        with tempfile.TemporaryDirectory(prefix="pitwatch-query-") as tmp:
            scratch = Path(tmp)
            (scratch / "tmp").mkdir()
            job = {"root": str(_scratch_store(real, scratch)), "store": str(real.resolve()),
                   "scratch": str(scratch), "sql": sql}
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "pitwatch.store.query_process"],
                    input=orjson.dumps(job), capture_output=True, env=_child_env(scratch),
                    cwd=scratch, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                raise StoreError(f"the query took more than {timeout:.0f} s") from None
        if done.returncode != 0:
            raise _failure(done.returncode, done.stderr)
        return [orjson.loads(line) for line in done.stdout.splitlines() if line.strip()]
    finally:
        if made:
            (real / "status").unlink(missing_ok=True)
        os.close(lock)
