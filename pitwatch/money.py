"""Money for people. Amounts are integer cents in data and on the wire; a person reads
dollars and cents."""

from __future__ import annotations


def dollars(cents: int) -> str:
    """Cents as a person reads them: 123450 -> "$1,234.50", -500 -> "-$5.00"."""
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{part:02d}"
