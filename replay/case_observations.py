"""A case's game-protection observations (observations.json) in words: the heading, the
note on what they are, the sentence for none, and one line of cells per observation.
report.html and report.pdf both take them from here, so the two say the same, in the
same order (the order of `Case.observations`). Cells are plain text: each renderer
escapes them for its own format."""

from __future__ import annotations

from typing import Any, Final

from pitwatch.money import dollars
from pitwatch.protect.observation import evidence_text

TITLE: Final = "Game protection observations"
NOTE: Final = (
    "Statistical observations of the protection detectors (docs/analytics.md) that touch "
    "the selected rounds: they name a round among those that carry their weight, or are "
    "about a round's table, its dealer, or a seat session that began with it. Evidence to "
    "weigh, not findings of a rule. Observations carry no time of their own: the rounds "
    "they name give it.")
NONE: Final = "No stored observation touches the selected rounds."
HEADERS: Final = ("observation", "about", "statistic", "evidence", "money",
                  "rounds that carry the weight", "what it says")
#: the cells of HEADERS that hold ids (set in a fixed-width face)
ID_CELLS: Final = frozenset({1, 5})


def _cents(details: dict[str, Any], key: str) -> str | None:
    v = details.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or v != v:
        return None
    return dollars(round(v))


def money(o: dict[str, Any]) -> str:
    """The money an observation weighs (a hold's house result, its expectation and
    standard deviation, stored in cents), in dollars and cents; '' for none."""
    d = o.get("details") or {}
    actual, expected = _cents(d, "actual_cents"), _cents(d, "expected_cents")
    if actual is None or expected is None:
        return ""
    sd = _cents(d, "sd_cents")
    return (f"house result {actual} against {expected} expected"
            + ("" if sd is None else f" (standard deviation {sd})"))


def observation_cells(o: dict[str, Any]) -> tuple[str, ...]:
    """One observation (its JSON form) as the cells of HEADERS, plain text."""
    value = o["value"] if o["value"] is not None else 0.0
    return (str(o["code"]), f"{str(o['scope']).lower()} {o['subject']}",
            f"{o['statistic']} = {value:.3g}", evidence_text(o), money(o),
            ", ".join(o["weight_rounds"]) or "none named", str(o["message"]))
