r"""Text for a terminal that shows what it says and does nothing else.

A device chooses its ids and the strings that reach messages; an escape sequence in one
(`\x1b[2J`, a title change, a hyperlink, a cursor move that paints over the line above),
a carriage return or a newline would make the terminal do or show something the record
does not say. `printable` writes each control character (C0, DEL, C1), and each Unicode
mark that reorders text on the screen (bidirectional overrides and isolates), as a
visible escape (`\x1b`, `\n`, `\u202e`). Every line pitwatch prints with such data in
it goes through `printable`, whole, before its own newline is added; so does every log
message (`escape_logs`), whatever handler or format writes it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import IO, Final

#: C0 controls, DEL, C1 controls, and the bidirectional formatting characters.
_UNSAFE: Final = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                            "\u2066-\u2069]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def printable(text: str) -> str:
    """`text` with every control and reordering character written as its escape."""
    return _UNSAFE.sub(_escape, text)


def say_to(out: IO[str]) -> Callable[[str], None]:
    """`print` to `out` for lines with device data in them: each through `printable`."""

    def say(line: str) -> None:
        print(printable(line), file=out)

    return say


class _PrintableRecord(logging.LogRecord):
    def getMessage(self) -> str:
        return printable(super().getMessage())


def escape_logs() -> None:
    """Every log record's message, once formatted with its arguments, through
    `printable`: a device id or reason in a log line cannot forge another line or
    drive the terminal that shows it. Tracebacks are written as they are."""
    logging.setLogRecordFactory(_PrintableRecord)
