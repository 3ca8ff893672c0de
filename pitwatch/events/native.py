"""Avro blocks read in C (`_native.c`): where each record ends, and records built straight
into pitwatch's typed classes; and an event's JSON Lines form written in C.

fastavro decodes a record into dicts, which `from_datum` then copies into the typed
event, and it can find where a record ends only by decoding it (its skipping parses
every field as dearly). For files, the two costs together were most of the audit's read.
So a small C walk over a program compiled here from the writer schema does both:

- `Program.frame` finds where each record of a block ends and its table_id (the
  top-level record's, never a nested one's), decoding nothing else;
- `Program.build` builds each record with the builder its record type is given (the
  typed classes, fields in the schema's order), an enum as its value, an array as a tuple,
  a logical type as the type it is written as (the file reader strips them too);
- `Program.pick` does both in one walk for an `audit --jobs` worker: it builds only the
  records of the worker's own tables, and makes no object for the others'.

All are stricter than fastavro, never looser: a block they accept, fastavro reads to the
same values, and each record is in its one encoding (what fastavro writes of those
values: no over-long varint, an array's items in one block of a positive count, no
float that reads back other); a block they refuse (None) the caller reads with fastavro
instead, so the outcome never depends on this module. A schema with a map, or an array
of items that take no bytes, has no program. `json_body` writes an event's JSON Lines
form ten times faster than building its dict for orjson. For the decoders, `range_check`
answers whether an event is certainly inside the contract's ranges
(pitwatch/events/limits.py) in a third of the time Python takes. The extension is built
when the package is installed (hatch_build.py); where it could not be, `Program.of` is
None, `json_body` gives None and `range_check` never vouches for an event. The
extension's store part (the `events` rows, the record clock, the id window) is wrapped
by pitwatch/store/native.py.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from .schema import zero_width_items

try:
    from . import _native
except ImportError:  # built at install; without it fastavro reads every record
    _native = None  # type: ignore[assignment]

#: The program's operations (the enum of _native.c, in its order).
(NULL, BOOLEAN, INT, LONG, FLOAT, DOUBLE, BYTES, STRING, FIXED, ENUM, RECORD, UNION,
 ARRAY, MAP, REF, KEY) = range(16)
_PRIMITIVE: Final = {"null": NULL, "boolean": BOOLEAN, "int": INT, "long": LONG,
                     "float": FLOAT, "double": DOUBLE, "bytes": BYTES, "string": STRING}
#: The top-level field whose text `frame` returns.
KEY_FIELD: Final = "table_id"
#: Most fields a record may have (MAX_FIELDS of _native.c).
MAX_FIELDS: Final = 64


#: What a record type is built with: from its full name, its field names and whether it
#: is the top-level record, a callable or None.
Builder = Callable[[str, list[str], bool], Callable[..., Any] | None]


class _Unreadable(Exception):
    """A schema this module does not know how to walk."""


class Program:
    """The walk of one writer schema, and what its records are built with."""

    def __init__(self, code: bytes, consts: tuple[Any, ...], buildable: bool) -> None:
        self.code, self.consts, self.buildable = code, consts, buildable

    @classmethod
    def of(cls, parsed: Any, builder: Builder | None = None,
           enums: Mapping[str, Mapping[str, Any]] | None = None) -> Program | None:
        """The program of a schema as fastavro parses it (full names; a named type defined
        at its first use and named after), or None when the extension is not built, the
        schema has no top-level string `table_id`, or holds what the walk does not know.
        Each record type is built with what `builder(full name, field names, top)` gives
        (called with the fields in the schema's order, the top-level record's bytes
        after them); an enum gives `enums[full name][its symbol]`, or else its symbol. `build`
        is for schemas every record type of which has a builder."""
        if _native is None:
            return None
        try:
            return _compile(parsed, builder or (lambda name, fields, top: None), enums or {})
        except (_Unreadable, KeyError, TypeError, ValueError):
            return None

    def frame(self, data: bytes, count: int) -> tuple[list[int], list[str | None]] | None:
        """Where each of the block's `count` records ends, and its table_id; None when
        the bytes are not exactly `count` records the walk accepts."""
        return _native.frame(self.code, data, count)

    def build(self, data: bytes, count: int) -> list[Any] | None:
        """The block's `count` records, built; None when the bytes are not exactly
        `count` records the walk accepts, or a builder raised."""
        if not self.buildable:
            return None
        return _native.build(self.code, self.consts, data, count)

    def pick(self, data: bytes, count: int, ours: dict[str | None, bool],
             decide: Callable[[str | None], bool]) -> tuple[list[int], list[Any]] | None:
        """The block's records whose table_id `ours` maps to True, built, with their
        indices in the block; a table_id not in `ours` is given `decide(table_id)` first,
        in the order met. What `frame` then `build` of the picked spans give, in one walk
        that makes no object for the others. None as `build` gives it."""
        if not self.buildable:
            return None
        return _native.pick(self.code, self.consts, data, count, ours, decide)


def json_body(event: Any) -> bytes | None:
    """The event's JSON Lines form written in C, byte for byte what
    `orjson.dumps(jsonl.to_json(event))` gives; None for what the C writer does not
    write (a TableOpened's rules, or no extension built): the caller writes it so."""
    return None if _native is None else _native.body(event)


def _compile(parsed: Any, builder_of: Builder,
             enums: Mapping[str, Mapping[str, Any]]) -> Program | None:
    code: list[int] = []
    consts: list[Any] = []
    named: dict[str, int] = {}
    buildable = True

    def const(value: Any) -> int:
        consts.append(value)
        return len(consts) - 1

    def record(s: dict[str, Any], top: bool) -> None:
        nonlocal buildable
        fields = s["fields"]
        if len(fields) > MAX_FIELDS:
            raise _Unreadable(f"{s['name']} has more than {MAX_FIELDS} fields")
        builder = builder_of(s["name"], [f["name"] for f in fields], top)
        buildable = buildable and builder is not None
        code.extend((RECORD, len(fields), const(builder)))
        for f in fields:
            if top and f["name"] == KEY_FIELD:
                code.append(KEY)
            else:
                node(f["type"])

    def node(s: Any) -> None:
        if isinstance(s, list):
            at = len(code)
            code.extend((UNION, len(s), 0, *([0] * len(s))))
            for i, branch in enumerate(s):
                code[at + 3 + i] = len(code)
                node(branch)
            code[at + 2] = len(code)
            return
        if isinstance(s, str):
            if s in _PRIMITIVE:
                code.append(_PRIMITIVE[s])
            elif s in named:
                code.extend((REF, named[s]))
            else:
                raise _Unreadable(f"unknown type {s!r}")
            return
        if not isinstance(s, dict):
            raise _Unreadable(f"not a schema: {s!r}")
        kind = s.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            named[s["name"]] = len(code)
        if kind in ("record", "error"):
            record(s, top=False)
        elif kind == "enum":
            values = enums.get(s["name"], {})
            symbols = s["symbols"]
            code.extend((ENUM, len(symbols), const(tuple(values.get(y, y) for y in symbols))))
        elif kind == "fixed":
            code.extend((FIXED, int(s["size"])))
        elif kind == "array":
            at = len(code)
            code.extend((ARRAY, 0))
            node(s["items"])
            code[at + 1] = len(code)
        elif kind == "map":  # its one encoding has no key twice, which a walk cannot see
            raise _Unreadable("a map")
        else:  # a primitive written as an object, logical types included
            node(kind)

    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        return None
    if zero_width_items(parsed) is not None:  # a count with no bytes to bound it
        return None
    if [f["type"] for f in parsed["fields"] if f["name"] == KEY_FIELD] not in (
            ["string"], [{"type": "string"}]):
        return None
    named[parsed["name"]] = 0
    record(parsed, top=True)
    return Program(array("i", code).tobytes(), tuple(consts), buildable)


#: A field's range: (attribute, kind, lo, hi, optional): an "int" from lo to hi, a "str"
#: of lo to hi characters, "bytes" of lo to hi bytes; None passes where optional.
Field = tuple[str, str, int, int, bool]


def range_check(event_type: type, envelope: tuple[Field, ...], payload: str,
                payloads: Mapping[type, tuple[Field, ...]]) -> Callable[[Any], bool]:
    """A test that is True when an event is certainly inside these ranges: of
    `event_type`, each `envelope` field in range, and its `payload` attribute of a type
    in `payloads` with each of that type's fields in range. False gives no verdict (the
    caller then checks in Python, and names the field); without the extension it is
    always False. The classes must be slotted (the extension reads the slots)."""
    if _native is None:
        return lambda ev: False
    return cast(Callable[[Any], bool],
                _native.RangeCheck(event_type, envelope, payload, dict(payloads)))
