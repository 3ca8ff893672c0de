"""CSV cells a spreadsheet reads as data, never as a formula.

A cell that begins with `=`, `+`, `-` or `@` (or a tab or carriage return, which some
spreadsheets skip before reading one of those) is a formula to Excel, LibreOffice and
Google Sheets: a device-chosen id such as `=HYPERLINK(...)` or `@SUM(...)` would run
when an investigator opens the file. Such a cell gets a leading `'`, which the
spreadsheet shows as text and does not display. Numbers stay numbers (a negative amount
is written as the number it is). Every CSV pitwatch writes goes through `csv_row`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

#: What makes a spreadsheet read a cell as a formula.
FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """`value` as a cell a spreadsheet shows as the text it is: a string that begins
    like a formula gets a leading `'`; anything else is returned as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_row(values: Iterable[Any]) -> list[Any]:
    """A row for `csv.writer.writerow`, every cell through `csv_cell`."""
    return [csv_cell(v) for v in values]
