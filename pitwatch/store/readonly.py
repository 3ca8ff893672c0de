"""What `pitwatch query` lets through: one statement that reads the store, and nothing
that writes, changes the schema, or reaches the machine's files or the network. The
session is read-only besides (`EmbeddedStore.read_only`); this check gives the clear
one-line reason first."""

from __future__ import annotations

import re

READ_STATEMENTS = ("SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXISTS", "EXPLAIN")
#: Table functions that read or write outside the store.
OUTSIDE = ("file", "fileCluster", "url", "urlCluster", "s3", "s3Cluster", "gcs", "hdfs",
           "hdfsCluster", "azureBlobStorage", "remote", "remoteSecure", "cluster",
           "clusterAllReplicas", "mysql", "postgresql", "sqlite", "mongodb", "redis", "jdbc",
           "odbc", "executable", "python", "input", "deltaLake", "iceberg", "hudi")
_OUTSIDE = re.compile(r"\b(" + "|".join(OUTSIDE) + r")\s*\(", re.IGNORECASE)
_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`\\]|\\.)*`")
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


class NotReadOnly(ValueError):
    """The statement would do more than read the store."""


def check_read_only(sql: str) -> None:
    """Raise `NotReadOnly` with the reason unless `sql` is one statement that only reads."""
    bare = _STRINGS.sub("''", _COMMENTS.sub(" ", sql)).strip().rstrip(";").strip()
    if not bare:
        raise NotReadOnly("no statement given")
    if ";" in bare:
        raise NotReadOnly("one statement at a time")
    first = bare.split(None, 1)[0].upper()
    if first not in READ_STATEMENTS:
        raise NotReadOnly(f"{first} refused: pitwatch query only reads "
                          f"({', '.join(READ_STATEMENTS)})")
    m = _OUTSIDE.search(bare)
    if m:
        raise NotReadOnly(f"table function {m.group(1)}() refused: pitwatch query reads "
                          "the store only, not files or other servers")
    if re.search(r"\bINTO\s+OUTFILE\b", bare, re.IGNORECASE):
        raise NotReadOnly("INTO OUTFILE refused: use --format csv or json and redirect")
