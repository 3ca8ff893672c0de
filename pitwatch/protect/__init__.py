"""Game protection: detectors that find observations (never violations) in a table's
record: count-correlated betting, hole-card play, hold against theoretical and a
dealer's error rate (docs/analytics.md). Deterministic: no clock, no randomness, no I/O.
"""

from .observation import CATALOGUE, Observation
from .run import observe, protect

__all__ = ["CATALOGUE", "Observation", "observe", "protect"]
