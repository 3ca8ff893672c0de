"""The few distributions the detectors need, in closed form (no sampling)."""

from __future__ import annotations

import math


def normal_upper(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


def poisson_upper(k: int, mu: float) -> float:
    """P(X >= k) for X ~ Poisson(mu)."""
    if k <= 0:
        return 1.0
    if mu <= 0.0:
        return 0.0
    term = math.exp(-mu)
    below = 0.0
    for i in range(k):
        below += term
        term *= mu / (i + 1)
    return max(0.0, 1.0 - below) if below < 0.999 else _poisson_tail(k, mu)


def _poisson_tail(k: int, mu: float) -> float:
    """P(X >= k) summed upward from k (precise where the tail is tiny)."""
    log_term = -mu + k * math.log(mu) - math.lgamma(k + 1)
    total, term, i = 0.0, math.exp(log_term), k
    while term > 1e-300 and (total == 0.0 or term > total * 1e-17):
        total += term
        i += 1
        term *= mu / i
    return total


def pearson(xs: list[float], ys: list[float]) -> float:
    """Pearson's correlation; 0 when either series is constant."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0.0 or syy <= 0.0:
        return 0.0
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return sxy / math.sqrt(sxx * syy)
