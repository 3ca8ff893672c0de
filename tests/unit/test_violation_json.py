"""A violation has one JSON form (`Violation.to_json`) and one way back
(`Violation.from_json`), which the alerts topic's Avro decoder, a case's verification
(replay/verify.py) and an audit state's snapshot all use: every violation comes back
equal, and a form that is not a violation's is refused naming its field, never
converted."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pitwatch.engine.violation import Severity, Violation
from pitwatch.events.violation_avro import decode_violation, encode_violation

text = st.text(max_size=12)
int32 = st.integers(-(2**31), 2**31 - 1)
violations = st.builds(
    Violation, code=text, severity=st.sampled_from(list(map(str, Severity))),
    table_id=text, round_id=text, seat=st.none() | int32, hand=st.none() | int32,
    event_id=text, evidence=st.lists(text, max_size=3).map(tuple), citation=text,
    message=text, pack=text, pack_version=text, detected_at=st.integers(0, 2**62))

ONE = Violation("PAYOUT_WRONG", "CRITICAL", "T-1", "T-1-000007", 3, None, "e-9",
                ("e-8", "e-9"), "NJ 13:69F-2.5(a)", "paid $15.00; $30.00 due",
                "NJ_BLACKJACK", "3", 1_796_466_600_123)


@given(violations)
def test_every_violation_comes_back_equal_from_its_json_its_json_text_and_avro(
        v: Violation) -> None:
    assert Violation.from_json(v.to_json()) == v
    assert Violation.from_json(orjson.loads(orjson.dumps(v.to_json()))) == v
    assert decode_violation(encode_violation(v)) == v


def test_the_id_follows_from_the_fields_and_is_not_read() -> None:
    d = ONE.to_json() | {"violation_id": "0" * 32}
    assert Violation.from_json(d).violation_id == ONE.violation_id != "0" * 32
    del d["violation_id"]  # an audit state's form leaves it out
    assert Violation.from_json(d) == ONE


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("seat", "3", "'seat' is not a seat number or none"),
    ("seat", True, "'seat' is not a seat number or none"),
    ("hand", 1.0, "'hand' is not a hand number or none"),
    ("detected_at", None, "'detected_at' is not a time in ms"),
    ("detected_at", "1796466600123", "'detected_at' is not a time in ms"),
    ("evidence", "e-9", "'evidence' is not a list of event ids"),
    ("evidence", ["e-8", 9], "'evidence' is not a list of event ids"),
    ("code", None, "'code' is not text"),
    ("message", ["paid"], "'message' is not text"),
])
def test_a_field_of_another_type_is_refused_by_name(field: str, value: Any,
                                                    reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        Violation.from_json(ONE.to_json() | {field: value})


def test_a_missing_field_is_refused_by_name() -> None:
    for field in ("code", "seat", "evidence", "detected_at"):
        d = ONE.to_json()
        del d[field]
        with pytest.raises(ValueError, match=f"a violation with no '{field}'"):
            Violation.from_json(d)
