"""Linux Landlock: a process takes away its own access to files and the network, for
good (the kernel holds it to that, and its children after it).

`confine` lets the calling process read only the directories named, write only the
ones named, and neither connect nor bind a TCP socket. It must run before the process
starts a thread: Landlock binds the calling thread (and the threads and processes it
starts later), not the threads already running.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from typing import Final

_SYS_CREATE_RULESET: Final = 444
_SYS_ADD_RULE: Final = 445
_SYS_RESTRICT_SELF: Final = 446
_CREATE_RULESET_VERSION: Final = 1
_RULE_PATH_BENEATH: Final = 1
_PR_SET_NO_NEW_PRIVS: Final = 38

EXECUTE: Final = 1 << 0
WRITE_FILE: Final = 1 << 1
READ_FILE: Final = 1 << 2
READ_DIR: Final = 1 << 3
TRUNCATE: Final = 1 << 14
#: what a file (not a directory) can be granted
FILE_RIGHTS: Final = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | (1 << 15)
READ: Final = EXECUTE | READ_FILE | READ_DIR
#: every file-system right of each ABI version (1: 13 rights; 2: REFER; 3: TRUNCATE;
#: 5: IOCTL_DEV)
_FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
              5: (1 << 16) - 1}
_NET_BIND_TCP: Final = 1 << 0
_NET_CONNECT_TCP: Final = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET: Final = 1 << 0
_SCOPE_SIGNAL: Final = 1 << 1


class ConfineError(OSError):
    """The kernel cannot confine this process (no Landlock, or it refused a rule)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is turned off)."""
    libc = _libc()
    v = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                     ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(v), 0)


def confine(read: Iterable[str], write: Iterable[str], write_files: Iterable[str] = ()
            ) -> int:
    """From now on this process (and what it starts) reads only beneath `read` and
    `write`, writes (creates, removes, renames) only beneath `write` and to the files
    `write_files`, and connects or binds no TCP socket (ABI 4 on; on older kernels the
    network is not restricted: the caller reads the ABI returned). A path that does not
    exist is skipped. Raises ConfineError when the kernel has no Landlock."""
    version = abi()
    if version < 1:
        raise ConfineError("this kernel has no Landlock (Linux 5.13 or later, with "
                           "landlock in its lsm= list)")
    fs = _FS_RIGHTS[min(version, 5)]
    attr = _RulesetAttr(fs, (_NET_BIND_TCP | _NET_CONNECT_TCP) if version >= 4 else 0,
                        (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if version >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else (
        16 if version >= 4 else 8)
    libc = _libc()
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfineError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        grants = ((read, READ), (write, fs), (write_files, READ | WRITE_FILE | TRUNCATE))
        for paths, rights in grants:
            for path in paths:
                _allow(libc, int(ruleset), path, rights & fs)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise ConfineError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise ConfineError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return version


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset),
                        ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                        ctypes.c_uint32(0)) != 0:
            raise ConfineError(ctypes.get_errno(), f"landlock_add_rule({path}) failed")
    finally:
        os.close(fd)
