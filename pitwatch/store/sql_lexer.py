"""ClickHouse SQL split into tokens, as ClickHouse's own lexer splits it, for the
read-only check of `pitwatch query` (`readonly.py`).

What it knows, each the way ClickHouse reads it: `--`, `#` and `#!` comments to the end
of the line; `/* ... */` comments, which nest; string literals in single quotes (a
backslash escapes, and `''` is a quote); heredoc literals `$tag$ ... $tag$`; quoted
identifiers in double quotes or backquotes (the same escapes). A literal, a quoted
identifier or a comment that does not end is an error: the check never guesses where
one ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    WORD = "word"  # a bare identifier or keyword
    QUOTED = "quoted"  # an identifier in "..." or `...`
    STRING = "string"  # a string literal, '...' or $tag$...$tag$
    NUMBER = "number"
    PUNCT = "punct"  # one character: ( ) , ; . and the operators


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str  # a WORD or PUNCT as written; a QUOTED or STRING's content, unescaped
    pos: int  # where it starts in the statement


class LexError(ValueError):
    """The statement cannot be split into tokens (an unterminated literal or comment)."""


#: ClickHouse reads any byte past ASCII as part of a word, as it does a letter.
_WORD = re.compile(r"[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*")
_NUMBER = re.compile(r"(?:0[xX][0-9A-Fa-f_]+|0[bB][01_]+|(?:\d[\d_]*\.?\d*|\.\d+)"
                     r"(?:[eEpP][+-]?\d+)?)")
_HEREDOC = re.compile(r"\$([A-Za-z0-9_]*)\$")
_SPACE = " \t\n\r\f\v"


def _quoted(sql: str, start: int) -> tuple[str, int]:
    """The content of the literal or quoted identifier opening at `start` (its quote
    character ends it; a backslash escapes the next character; the quote doubled is the
    quote) and the position after it."""
    q = sql[start]
    out: list[str] = []
    i = start + 1
    n = len(sql)
    while i < n:
        c = sql[i]
        if c == "\\":
            if i + 1 >= n:
                break
            out.append(sql[i + 1])
            i += 2
        elif c == q:
            if i + 1 < n and sql[i + 1] == q:
                out.append(q)
                i += 2
            else:
                return "".join(out), i + 1
        else:
            out.append(c)
            i += 1
    what = "string literal" if q == "'" else "quoted identifier"
    raise LexError(f"unterminated {what} at character {start + 1}")


def _block_comment(sql: str, start: int) -> int:
    """The position after the `/* ... */` comment opening at `start` (nested ones too)."""
    depth, i, n = 0, start, len(sql)
    while i < n:
        if sql.startswith("/*", i):
            depth += 1
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    raise LexError(f"unterminated /* comment at character {start + 1}")


def tokens(sql: str) -> list[Token]:
    """The statement's tokens, without its comments and whitespace."""
    out: list[Token] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in _SPACE:
            i += 1
        elif sql.startswith("--", i) or c == "#":
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            i = _block_comment(sql, i)
        elif c in "'\"`":
            text, end = _quoted(sql, i)
            out.append(Token(Kind.STRING if c == "'" else Kind.QUOTED, text, i))
            i = end
        elif c == "$" and (m := _HEREDOC.match(sql, i)):
            close = sql.find(m.group(0), m.end())
            if close < 0:
                raise LexError(f"unterminated heredoc {m.group(0)} at character {i + 1}")
            out.append(Token(Kind.STRING, sql[m.end():close], i))
            i = close + len(m.group(0))
        elif m := _WORD.match(sql, i):
            out.append(Token(Kind.WORD, m.group(0), i))
            i = m.end()
        elif c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isdigit()):
            m2 = _NUMBER.match(sql, i)
            end = m2.end() if m2 and m2.end() > i else i + 1
            out.append(Token(Kind.NUMBER, sql[i:end], i))
            i = end
        else:
            out.append(Token(Kind.PUNCT, c, i))
            i += 1
    return out
