"""Money for people: `pitwatch.money.dollars`, and every violation message that names an
amount names it that way."""

from __future__ import annotations

import re

import pytest

from pitwatch.money import dollars
from tests.data.make_rounds import build
from tests.rounds import audit


@pytest.mark.parametrize("cents, shown", [
    (0, "$0.00"), (5, "$0.05"), (99, "$0.99"), (100, "$1.00"), (123450, "$1,234.50"),
    (100_000_000, "$1,000,000.00"), (-500, "-$5.00"), (-123456, "-$1,234.56"),
])
def test_dollars(cents: int, shown: str) -> None:
    assert dollars(cents) == shown


def test_messages_name_amounts_in_dollars_never_bare_cents() -> None:
    """Every message of the hand-built rounds: an amount is "$x.yy"; no number with a
    thousands comma, or of three digits or more, stands bare (seats, hands, card ranks
    and totals are small numbers; violation ids are hex). The record checks, which name
    seq numbers and round ids and no money, are left out."""
    record = {"EVENTS_LOST", "DEVICE_RESTARTED", "SEQUENCE_CONFLICT", "DIGEST_MISMATCH",
              "ROUND_INCOMPLETE"}
    events, _ = build()
    messages = [v.message for v in audit(events) if v.code not in record]
    assert any("$" in m for m in messages)
    for m in messages:
        bare = re.sub(r"-?\$[\d,]+\.\d\d|\b[0-9a-f]{32}\b", "", m)
        assert not re.search(r"\d,\d{3}|\b\d{3,}\b", bare), m
