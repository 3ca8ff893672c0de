"""Checks: small functions of (round state before the event, event) -> Finding | None.

Grouped by what they rule on. They carry no citation: a rule pack registers each one
with its code, severity and the paragraph it enforces in that jurisdiction.
"""
