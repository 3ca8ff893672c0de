"""Expected results of blackjack decisions, by the infinite-deck method.

Each card is drawn with its full-shoe probability (1/13 a rank, 4/13 a ten-value), as
in Griffin's *The Theory of Blackjack* and the published basic-strategy derivations:
exact for an infinite shoe, within about 0.1% of a stake per hand for the 6 and 8
deck shoes of the floor. The dealer plays by the posted rule
(`pitwatch.blackjack.dealer_must_draw`); a player's later play after a hit is the best
one for the total. A split is valued as two hands of one card each drawing once more
and then played best (no resplit): an approximation documented in docs/analytics.md.

Expectations are in stakes of the hand's initial wager (a double is worth 2).
Everything here is a pure function of its arguments, memoised.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Final

from ..blackjack import (
    DOUBLE,
    HIT,
    RANK_VALUES,
    SPLIT,
    STAND,
    SURRENDER,
    can_double,
    dealer_must_draw,
    hand_total,
)
from ..events.model import Rules

#: card values 1 (ace) .. 10 and their infinite-deck probabilities
VALUES: Final = tuple(range(1, 11))
P: Final[dict[int, float]] = {v: (4 / 13 if v == 10 else 1 / 13) for v in VALUES}
#: a rank spelling for each value (for the blackjack package's rank-based functions)
RANK_OF: Final[dict[int, str]] = {1: "A", 10: "10", **{v: str(v) for v in range(2, 10)}}
BUST: Final = 22
#: the dealer's final totals, in the order of a distribution's entries
FINALS: Final = (17, 18, 19, 20, 21, BUST)


def add(total: int, soft: bool, value: int) -> tuple[int, bool]:
    """A hand's (total, soft) after one more card of `value` (an ace counts 1 or 11)."""
    t = total + value
    if soft:
        return (t - 10, False) if t > 21 else (t, True)
    if value == 1 and t + 10 <= 21:
        return t + 10, True
    return t, False


def _ranks_of(total: int, soft: bool) -> tuple[str, ...]:
    """A hand with this (total, soft), to ask the dealer's drawing rule about it: an
    ace (when soft) and ten-values, a 9 and 2 where a 1 would be left over."""
    ranks: list[str] = ["A"] if soft else []
    n = total - 11 if soft else total
    if soft and n == 1:
        return ("A", "A")
    while n > 0:
        take = min(n, 10)
        if n - take == 1:
            take -= 1
        ranks.append(RANK_OF[take])
        n -= take
    return tuple(ranks)


@cache
def _dealer_from(total: int, soft: bool, h17: bool) -> tuple[float, ...]:
    """Probabilities of the dealer's final totals (FINALS) from (total, soft)."""
    if total > 21:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    if not dealer_must_draw(_ranks_of(total, soft), hits_soft_17=h17):
        out = [0.0] * len(FINALS)
        out[FINALS.index(total)] = 1.0
        return tuple(out)
    acc = [0.0] * len(FINALS)
    for v in VALUES:
        nxt = _dealer_from(*add(total, soft, v), h17)
        for i, x in enumerate(nxt):
            acc[i] += P[v] * x
    return tuple(acc)


def dealer_known(ranks: Sequence[str], h17: bool) -> tuple[float, ...]:
    """The dealer's final distribution when both first cards are known."""
    t, soft = hand_total(ranks)
    return _dealer_from(t, soft, h17)


@cache
def dealer_up(up_value: int, h17: bool, peeked: bool) -> tuple[float, ...]:
    """The dealer's final distribution from the up card alone; `peeked`: the hole card
    was checked and is known not to make a blackjack."""
    t0, s0 = (11, True) if up_value == 1 else (up_value, False)
    acc = [0.0] * len(FINALS)
    norm = 0.0
    for v in VALUES:
        if peeked and {up_value, v} == {1, 10}:
            continue
        norm += P[v]
        for i, x in enumerate(_dealer_from(*add(t0, s0, v), h17)):
            acc[i] += P[v] * x
    return tuple(x / norm for x in acc)


class Expectations:
    """The player's expectation of each action against one dealer distribution."""

    __slots__ = ("_best", "_stand", "dist")

    def __init__(self, dist: tuple[float, ...]) -> None:
        self.dist = dist
        self._best: dict[tuple[int, bool], float] = {}
        self._stand = [self._stand_on(t) for t in range(22)]

    def stand(self, total: int) -> float:
        return -1.0 if total > 21 else self._stand[total]

    def _stand_on(self, total: int) -> float:
        d = self.dist
        win = d[5]
        lose = 0.0
        for f, x in zip(FINALS[:5], d[:5], strict=True):
            if f < total:
                win += x
            elif f > total:
                lose += x
        return win - lose

    def best(self, total: int, soft: bool) -> float:
        """Stand or hit, whichever is worth more (no double: not a two-card hand)."""
        if total > 21:
            return -1.0
        key = (total, soft)
        got = self._best.get(key)
        if got is None:
            got = self.stand(total) if total == 21 else max(self.stand(total),
                                                            self.hit(total, soft))
            self._best[key] = got
        return got

    def hit(self, total: int, soft: bool) -> float:
        return sum(P[v] * self.best(*add(total, soft, v)) for v in VALUES)

    def double(self, total: int, soft: bool) -> float:
        return 2.0 * sum(P[v] * self.stand(add(total, soft, v)[0]) for v in VALUES)

    def split(self, value: int, rules: Rules) -> float:
        """Two hands of one card each, each drawing one card and then played best."""
        start = (11, True) if value == 1 else (value, False)
        acc = 0.0
        for v in VALUES:
            t, soft = add(*start, v)
            if value == 1 and not rules.hit_split_aces:
                acc += P[v] * self.stand(t)
                continue
            ev = self.best(t, soft)
            if rules.double_after_split and can_double((RANK_OF[value], RANK_OF[v]),
                                                       rules.double_on):
                ev = max(ev, self.double(t, soft))
            acc += P[v] * ev
        return 2.0 * acc

    def action(self, action: str, ranks: Sequence[str], rules: Rules) -> float:
        """The expectation of `action` on the hand `ranks`."""
        total, soft = hand_total(ranks)
        if action == STAND:
            return self.stand(total)
        if action == HIT:
            return self.hit(total, soft)
        if action == DOUBLE:
            return self.double(total, soft)
        if action == SPLIT:
            return self.split(RANK_VALUES[ranks[0]], rules)
        if action == SURRENDER:
            return -0.5
        raise ValueError(f"not an action with an expectation: {action!r}")


@lru_cache(maxsize=4096)
def against_known(dealer: tuple[str, str], h17: bool) -> Expectations:
    return Expectations(dealer_known(dealer, h17))


@lru_cache(maxsize=256)
def against_up(up: str, h17: bool, peeked: bool) -> Expectations:
    return Expectations(dealer_up(RANK_VALUES[up], h17, peeked))


def peeked(up: str, rules: Rules) -> bool:
    """Whether the round went on only because the hole card was checked for a dealer
    blackjack (a reader or peek table with an ace or ten-value up card)."""
    return rules.hole_card != "NONE" and RANK_VALUES[up] in (1, 10)


def _best_two(ex: Expectations, a: int, b: int, rules: Rules) -> float:
    ranks = (RANK_OF[a], RANK_OF[b])
    total, soft = hand_total(ranks)
    ev = ex.best(total, soft)
    if can_double(ranks, rules.double_on):
        ev = max(ev, ex.double(total, soft))
    if a == b:
        ev = max(ev, ex.split(a, rules))
    if rules.surrender:
        ev = max(ev, -0.5)
    return ev


@lru_cache(maxsize=64)
def player_edge(rules: Rules) -> float:
    """The player's expectation per initial wager under the posted rules, playing each
    hand best for the up card (infinite deck). Negative: the house edge is its minus.
    A table without a hole card is valued as if it peeked (its doubles and splits lost
    to a dealer blackjack are not charged)."""
    bj = rules.blackjack_pays.num / rules.blackjack_pays.den
    p_bj = 2 * P[1] * P[10]
    total = 0.0
    for up in VALUES:
        p_dealer_bj = P[10] if up == 1 else P[1] if up == 10 else 0.0
        ex = Expectations(dealer_up(up, rules.dealer_hits_soft_17, True))
        s = 0.0
        for a in VALUES:
            for b in VALUES:
                p = P[a] * P[b]
                s += p * (bj if {a, b} == {1, 10} else _best_two(ex, a, b, rules))
        total += P[up] * ((1 - p_dealer_bj) * s + p_dealer_bj * -(1 - p_bj))
    return total
