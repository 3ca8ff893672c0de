"""The process that answers `pitwatch query` on the embedded store, confined: it can
write no file but those of its own scratch directory, read no file but the store's,
Python's and the system's libraries, and open no TCP connection (`landlock.confine`).

Run by `readonly.run_read_only` as `python -m pitwatch.store.query_process`, with one
JSON object on stdin: {"root": the scratch store (its own lock and temporary files, and
links to the real store's tables), "store": the real store's directory, "scratch": the
scratch directory, "sql": the statement}. It writes the rows as JSON Lines on stdout;
on an error, exit status 2 and, as its last line on stderr, {"kind": "not_read_only",
"not_confined" or "store", "message": ...}. It confines itself first, while it
is the only thread, and only then loads chDB.
"""

from __future__ import annotations

import importlib
import sys
import sysconfig
from typing import Any

import orjson

from .landlock import ConfineError, confine
from .readonly import NotReadOnly, check_read_only

#: System paths chDB and Python read: shared libraries, time zones, the kernel's
#: figures for memory and CPUs, /dev/urandom. Of /proc, the process's own directory
#: and the machine's figures only: never another process's (its environment).
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/etc/localtime",
               "/etc/timezone", "/sys", "/dev", "/proc/self", "/proc/meminfo",
               "/proc/cpuinfo", "/proc/stat", "/proc/loadavg", "/proc/sys", "/proc/mounts",
               "/proc/filesystems", "/proc/pressure")
#: Where chDB writes what it throws away (its logs go nowhere).
DEVICES_WRITE = ("/dev/null",)


def python_paths() -> list[str]:
    """The interpreter's own directories (its standard library and site-packages)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    paths.update(v for k, v in sysconfig.get_paths().items() if k != "scripts")
    return sorted(paths)


def _fail(kind: str, message: str) -> int:
    sys.stderr.flush()
    sys.stderr.buffer.write(b"\n" + orjson.dumps({"kind": kind, "message": message}) + b"\n")
    sys.stderr.flush()
    return 2


def main() -> int:
    job = orjson.loads(sys.stdin.buffer.read())
    try:
        version = confine(read=[*SYSTEM_READ, *python_paths(), job["store"]],
                          write=[job["scratch"]], write_files=DEVICES_WRITE)
    except ConfineError as e:
        return _fail("not_confined", str(e))
    if version < 4:  # files confined, the network not: refused as unconfined
        return _fail("not_confined", f"this kernel's Landlock (ABI {version}) cannot keep "
                     "the query off the network (ABI 4, Linux 6.7 or later)")
    # only now: chDB starts threads as it loads
    session: Any = importlib.import_module("chdb.session")

    try:
        s = session.Session(job["root"] + "?readonly=1")
        # every table function this chDB has but those known to read nothing outside
        names = s.query("SELECT name FROM system.table_functions", "CSV").bytes()
        check_read_only(job["sql"], table_functions=[
            n.strip('"') for n in names.decode().split()])
        out = s.query(job["sql"], "JSONEachRow").bytes()
    except NotReadOnly as e:
        return _fail("not_read_only", str(e))
    except Exception as e:  # chDB raises its own error types
        lines = str(e).strip().splitlines()
        return _fail("store", lines[0] if lines else type(e).__name__)
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
