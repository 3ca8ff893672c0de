"""The fault catalogue of docs/procedure.md ("Injection"): how each violation code is
made in a round whose preconditions it meets.

Every fault breaks exactly one rule and keeps its collateral out: a void wager is
handed back with `WagerReturned` when its seat settles, a void decision changes
nothing, a sequence gap keeps the digest chain, and so on. Each fault names the step
the audit sees it on; that step's event id goes to truth.jsonl.

A fault is injected only at tables whose rule pack judges its code (the sources in
docs/violations.md): insurance faults at Blackjack Switch (13:69F-2A.8), Free Bet
(672a.8) and New Zealand (9.1-9.4) tables, surrender and bonus faults at New Jersey
blackjack tables (2.8, 2.25), even money at Free Bet and New Zealand, blackjack payment
in New Zealand; the dealing and record faults everywhere. The two insurance faults the
dealer's peek times (posted rules (d)3-4) also at a table that peeks.

On a floor dealt with the contract's later faults (`TableConfig.contract`), a round may
also carry an event its decoder refuses (EVENT_REFUSED): a wager sensor's negative
amount, refused as the decoder refuses it (`refused_as_decoded`).

Not injected: INSURANCE_PAID_BEFORE_COLLECTION (in a consistent stream all insurance
of a round wins or all of it loses).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pitwatch import blackjack as bj
from pitwatch.events.jsonl import InvalidEvent, dumps, loads
from pitwatch.events.model import (
    SUITS,
    CardDealt,
    CardsCleared,
    Event,
    PayoutMade,
    PlayerDecision,
    RoundStarted,
    WagerCollected,
    WagerPlaced,
    WagerReturned,
)

from .betting import chips, insurance_amount, side_amount
from .dealing import PlayOptions
from .floor import BLACKJACK, FREE_BET, SWITCH, TableConfig
from .script import CONSOLE, RFID, SHOE, RoundScript, Step

NJ_BJ: Final = ("NJ", BLACKJACK)
NJ_SW: Final = ("NJ", SWITCH)
PA_FB: Final = ("PA", FREE_BET)
NZ_BJ: Final = ("NZ", BLACKJACK)
INSURANCE_TABLES: Final = frozenset({NJ_SW, PA_FB, NZ_BJ})
EVEN_MONEY_TABLES: Final = frozenset({PA_FB, NZ_BJ})
HAND_WAGERS: Final = frozenset({"MAIN", "DOUBLE", "SPLIT"})
#: The forgery fault: an amount changed and the device's chain recomputed after it.
FORGERY: Final = "SIGNATURE_INVALID"
#: The refused event: its device sends it, its decoder refuses it (`refused_as_decoded`).
REFUSED: Final = "EVENT_REFUSED"


@dataclass(frozen=True, slots=True)
class InjectContext:
    cfg: TableConfig
    script: RoundScript
    counts: Mapping[tuple[str, str], int]  # cards dealt from the shoe before the round
    decks: int
    last_round: bool


Targets = Callable[[InjectContext], list[Any]]
#: Edits the script; returns the step the audit sees the fault on (None: none of its own).
Apply = Callable[[InjectContext, Any], Step | None]


@dataclass(frozen=True, slots=True)
class Fault:
    code: str
    tables: frozenset[tuple[str, str]] | None  # (jurisdiction, game); None: every table
    targets: Targets
    apply: Apply
    #: faults that change the play: the round is dealt again with these options, and
    #: `apply` then only names the step in the new script
    replay: PlayOptions | None = None
    #: also at any table that peeks at the hole card (posted rules (d)3-4 time it)
    peek: bool = False

    def at(self, cfg: TableConfig) -> bool:
        """Whether a pack that judges the code deals at this table."""
        return (self.tables is None or (cfg.jurisdiction, cfg.game) in self.tables
                or (self.peek and cfg.rules.hole_card == "PEEK"))


# --- helpers ---------------------------------------------------------------------------


def _rfid(payload: object, *tag: object) -> Step:
    return Step(RFID, payload, ("fault", *tag))  # type: ignore[arg-type]


def _console(payload: object, *tag: object) -> Step:
    return Step(CONSOLE, payload, ("fault", *tag))  # type: ignore[arg-type]


def _hand_back(s: RoundScript, seat: int, hand: int, kind: str, amount: int) -> None:
    """A void wager handed back when its seat settles."""
    s.insert_at(s.seat_turn_index(seat), [_rfid(WagerReturned(seat, hand, kind, amount))])


def _drop_insurance(s: RoundScript, seat: int) -> None:
    """The seat makes no insurance of its own (the fault puts one in its place)."""
    s.remove([*s.find("ins", seat), *s.find("ins_settle", seat)])


def _free_seats(ctx: InjectContext) -> list[int]:
    return [n for n in range(1, 8) if n not in ctx.script.facts.seats]


def _up_ace(ctx: InjectContext) -> bool:
    return ctx.script.facts.up == "A"


def _insurers(ctx: InjectContext) -> list[tuple[int, int]]:
    """Seats that could insure (no even money), with the amount a compliant player bets."""
    if not _up_ace(ctx):
        return []
    out = []
    for seat, f in ctx.script.facts.seats.items():
        amount = insurance_amount(f.main, ctx.cfg.rules, ctx.cfg.jurisdiction)
        if not f.even_money and amount is not None:
            out.append((seat, amount))
    return out


def _void_insurance_at(where: Callable[[InjectContext], Step | None]) -> tuple[Targets, Apply]:
    """Insurance of a compliant amount, placed at a moment it may not be."""

    def targets(ctx: InjectContext) -> list[Any]:
        return _insurers(ctx) if where(ctx) is not None else []

    def apply(ctx: InjectContext, t: tuple[int, int]) -> Step:
        seat, amount = t
        s = ctx.script
        _drop_insurance(s, seat)
        anchor = where(ctx)
        assert anchor is not None
        step = _rfid(WagerPlaced(seat, 0, "INSURANCE", amount))
        s.insert_after(anchor, step)
        _hand_back(s, seat, 0, "INSURANCE", amount)
        return step

    return targets, apply


def _void_insurance_amount(amount_of: Callable[[InjectContext, int], int | None]
                           ) -> tuple[Targets, Apply]:
    """Insurance at its time but of an amount that may not be bet."""

    def targets(ctx: InjectContext) -> list[Any]:
        if not (_up_ace(ctx) and ctx.script.find("ins_offer")):
            return []
        out = []
        for seat, f in ctx.script.facts.seats.items():
            amount = amount_of(ctx, f.main)
            if not f.even_money and amount is not None:
                out.append((seat, amount))
        return out

    def apply(ctx: InjectContext, t: tuple[int, int]) -> Step:
        seat, amount = t
        s = ctx.script
        _drop_insurance(s, seat)
        step = _rfid(WagerPlaced(seat, 0, "INSURANCE", amount))
        s.insert_after_marker("ins_slot", seat, steps=[step])
        _hand_back(s, seat, 0, "INSURANCE", amount)
        return step

    return targets, apply


# --- insurance -------------------------------------------------------------------------


def _after_deal(ctx: InjectContext) -> Step | None:
    if _up_ace(ctx):
        return None
    s = ctx.script
    return s.steps[s.marker_index("after_deal")]


def _after_upcard(ctx: InjectContext) -> Step | None:
    s = ctx.script
    return s.steps[s.marker_index("after_upcard")]


def _hole_card_known(s: RoundScript) -> Step | None:
    """The step that lets the hole card be known: the reader's, or the dealer's peek."""
    return s.first("reader") or s.first("peek")


def _too_late_anchor(ctx: InjectContext) -> Step | None:
    """After the hole card went into the reader (or the dealer peeked at it); without
    either (New Zealand), after the first further card a player got."""
    s = ctx.script
    reader = _hole_card_known(s)
    if reader is not None:
        return reader
    if not s.facts.play_phase:
        return None
    start = s.marker_index("play_start")
    for step in s.steps[start:]:
        p = step.payload
        if isinstance(p, CardDealt) and p.to == "PLAYER":
            return step
    return None


def _over_limit(ctx: InjectContext, main: int) -> int | None:
    rules = ctx.cfg.rules
    unit = rules.chip_unit
    amount = bj.allowed_insurance(main, unit) + unit
    if ctx.cfg.jurisdiction == "NZ":  # keep it a chip multiple of at least the minimum
        amount = max(amount, -(-rules.min_wager // unit) * unit)
    return amount


def _under_minimum(ctx: InjectContext, main: int) -> int | None:
    rules = ctx.cfg.rules
    unit = rules.chip_unit
    return unit if unit < rules.min_wager and unit <= main // 2 else None


def _on_match_targets(ctx: InjectContext) -> list[Any]:
    if not (_up_ace(ctx) and ctx.script.find("ins_offer")):
        return []
    return [(seat, f.side[1]) for seat, f in ctx.script.facts.seats.items()
            if f.side is not None and f.side[0] == "MATCH" and not f.split]


def _on_match_apply(ctx: InjectContext, t: tuple[int, int]) -> Step:
    seat, match = t
    unit = ctx.cfg.rules.chip_unit
    amount = max(unit, chips(match // 2, unit))
    step = _rfid(WagerPlaced(seat, 2, "INSURANCE", amount))
    ctx.script.insert_after_marker("ins_slot", seat, steps=[step])
    _hand_back(ctx.script, seat, 2, "INSURANCE", amount)
    return step


def _ins_wrong_targets(ctx: InjectContext) -> list[Any]:
    return [st for st in ctx.script.find("ins_settle") if isinstance(st.payload, PayoutMade)]


def _ins_wrong_apply(ctx: InjectContext, step: Step) -> Step:
    p = step.payload
    assert isinstance(p, PayoutMade)
    odds = ctx.cfg.rules.insurance_pays
    step.payload = PayoutMade(p.seat, p.hand, p.kind, p.amount * odds.den // odds.num)  # 1 to 1
    return step


def _late_collection_targets(ctx: InjectContext) -> list[Any]:
    s = ctx.script
    if _hole_card_known(s) is None or not s.find("dealer_draw"):
        return []
    return [st for st in s.find("ins_settle") if isinstance(st.payload, WagerCollected)]


def _late_collection_apply(ctx: InjectContext, step: Step) -> Step:
    s = ctx.script
    at = s.index(step)
    s.remove([step])
    s.insert_after_marker("settle_start", steps=[step])
    if ctx.cfg.game == SWITCH:  # 2A.8(c): due immediately after the hole card is disclosed
        reveal = s.first("reveal")
        assert reveal is not None
        at = s.index(reveal) + 1
    # "immediately": the audit sees it on the first event after that which is not
    # another insurance being settled
    return next(st for st in s.steps[at:] if not st.is_marker and st.tag[0] != "ins_settle")


# --- even money and blackjack payment --------------------------------------------------


def _em_not_available_targets(ctx: InjectContext) -> list[Any]:
    if not (_up_ace(ctx) and ctx.script.find("ins_offer")):
        return []
    return [seat for seat, f in ctx.script.facts.seats.items() if not f.hand0_blackjack]


def _em_not_available_apply(ctx: InjectContext, seat: int) -> Step:
    s = ctx.script
    _drop_insurance(s, seat)
    step = _console(PlayerDecision(seat, 0, "EVEN_MONEY"))
    s.insert_after_marker("ins_slot", seat, steps=[step])
    return step


def _em_wrong_apply(ctx: InjectContext, target: Any) -> Step:
    if isinstance(target, tuple):  # elected and never paid: found when the round ends
        s = ctx.script
        s.remove([target[1]])
        end = s.first("end")
        assert end is not None
        return end
    step: Step = target
    p = step.payload
    assert isinstance(p, PayoutMade)
    step.payload = PayoutMade(p.seat, p.hand, p.kind, p.amount // 2)
    return step


def _card_after(s: RoundScript, step: Step) -> Step | None:
    return next((st for st in s.steps[s.index(step) + 1:]
                 if isinstance(st.payload, CardDealt)), None)


def _em_removed_targets(ctx: InjectContext) -> list[Any]:
    s = ctx.script
    if ctx.cfg.jurisdiction == "NZ":  # 8.3: removed before any further card
        return [("kept", st) for st in s.find("em_clear") if _card_after(s, st) is not None]
    return [st for st in s.find("em_pay") if not s.find("em_clear", st.tag[1])]


def _em_removed_apply(ctx: InjectContext, target: Any) -> Step:
    s = ctx.script
    if isinstance(target, tuple):
        clear = target[1]
        card = _card_after(s, clear)
        assert card is not None
        s.remove([clear])
        s.insert_after(card, clear)
        return card
    pay: Step = target
    seat = pay.tag[1]
    assert isinstance(seat, int)
    s.remove(s.find("clear", seat, 0))
    step = _console(CardsCleared(seat, 0))
    s.insert_after(pay, step)
    return step


def _bj_early_targets(ctx: InjectContext) -> list[Any]:
    f = ctx.script.facts
    if not (f.up == "A" or bj.is_ten_value(f.up)) or f.dealer_blackjack:
        return []  # against a dealer blackjack the early 3 to 2 is PAYOUT_WRONG too
    return [seat for seat, sf in f.seats.items() if sf.hand0_blackjack and not sf.even_money]


def _bj_early_apply(ctx: InjectContext, seat: int) -> Step:
    s = ctx.script
    main = s.facts.seats[seat].main
    _drop_insurance(s, seat)
    s.remove([*s.find("hand_settle", seat, 0), *s.find("clear", seat, 0)])
    odds = ctx.cfg.rules.blackjack_pays
    pay = _rfid(PayoutMade(seat, 0, "MAIN", bj.pay(main, bj.Ratio(odds.num, odds.den))))
    s.insert_after_marker("after_deal", steps=[pay, _console(CardsCleared(seat, 0))])
    return pay


def _first_player_card(s: RoundScript) -> Step | None:
    """The first card a player gets after the initial deal: a third card (8.1)."""
    for step in s.steps[s.marker_index("after_deal"):]:
        if isinstance(step.payload, CardDealt) and step.payload.to == "PLAYER":
            return step
    return None


def _bj_late_targets(ctx: InjectContext) -> list[Any]:
    if _first_player_card(ctx.script) is None:
        return []  # no player got a third card: paying at the end breaks no rule
    return sorted({seat for st in ctx.script.find("nz_bj") if isinstance(seat := st.tag[1], int)})


def _bj_late_apply(ctx: InjectContext, seat: int) -> Step:
    s = ctx.script
    moved = s.find("nz_bj", seat)
    s.remove(moved)
    third = _first_player_card(s)
    assert third is not None
    s.insert_after(third, *moved)  # paid and cleared only after a player's third card
    return third


def _first_draw(s: RoundScript) -> Step | None:
    """The dealer's first card drawn after the reveal (the dealer's turn)."""
    if not s.facts.play_phase:
        return None  # a dealer blackjack at a reader table: no dealer's turn
    start = s.marker_index("dealer_start")
    return next((st for st in s.steps[start:] if st.tag[:1] == ("dealer_draw",)), None)


def _payout_wrong_targets(ctx: InjectContext) -> list[Any]:
    s = ctx.script
    out: list[Any] = [st for st in s.find("hand_settle") if st.tag[3] in HAND_WAGERS]
    if _first_draw(s) is not None:  # a losing hand paid before the dealer drew
        out += [("early", st) for st in s.find("hand_settle")
                if st.tag[3] == "MAIN" and isinstance(st.payload, WagerCollected)]
    return out


def _payout_wrong_apply(ctx: InjectContext, target: Any) -> Step:
    if isinstance(target, tuple):  # judged against the dealer's final hand, not the 16
        s = ctx.script
        _, collect = target
        p = collect.payload
        assert isinstance(p, WagerCollected)
        draw = _first_draw(s)
        assert draw is not None
        s.remove([collect])
        early = _rfid(PayoutMade(p.seat, p.hand, "MAIN", p.amount))
        s.insert_before(draw, early)
        return early
    step: Step = target
    p = step.payload
    if isinstance(p, PayoutMade):  # a win overpaid by a chip
        step.payload = PayoutMade(p.seat, p.hand, p.kind, p.amount + ctx.cfg.rules.chip_unit)
    elif isinstance(p, WagerCollected):  # a loss handed back
        step.payload = WagerReturned(p.seat, p.hand, p.kind, p.amount)
    else:  # a push taken
        assert isinstance(p, WagerReturned)
        step.payload = WagerCollected(p.seat, p.hand, p.kind, p.amount)
    return step


# --- surrender -------------------------------------------------------------------------


def _first_decisions(ctx: InjectContext, *kinds: str) -> list[Step]:
    return [st for st in ctx.script.find("dec") if st.tag[3] == 0 and st.tag[4] in kinds]


def _surrender_na_targets(ctx: InjectContext) -> list[Any]:
    if ctx.cfg.rules.surrender:
        return []
    return [st for st in _first_decisions(ctx, "HIT", "STAND", "DOUBLE", "SPLIT")
            if st.tag[2] == 0]


def _surrender_na_apply(ctx: InjectContext, first: Step) -> Step:
    p = first.payload
    assert isinstance(p, PlayerDecision)
    step = _console(PlayerDecision(p.seat, p.hand, "SURRENDER"))
    ctx.script.insert_before(first, step)
    return step


def _surrender_early_targets(ctx: InjectContext) -> list[Any]:
    return sorted(ctx.script.facts.seats) if ctx.cfg.rules.surrender else []


def _surrender_early_apply(ctx: InjectContext, seat: int) -> Step:
    step = _console(PlayerDecision(seat, 0, "SURRENDER"))
    ctx.script.insert_after_marker("after_upcard", steps=[step])
    return step


def _surrender_late_targets(ctx: InjectContext) -> list[Any]:
    if not ctx.cfg.rules.surrender:
        return []
    s = ctx.script
    out: list[Step] = []
    for dec in _first_decisions(ctx, "STAND", "HIT"):
        if dec.tag[4] == "STAND":
            out.append(dec)
            continue
        card = s.steps[s.index(dec) + 1]  # the hit card; a bust is settled right after it
        if card.tag[0] == "hit" and s.steps[s.index(card) + 1].tag[0] != "bust":
            out.append(card)
    return out


def _surrender_late_apply(ctx: InjectContext, after: Step) -> Step:
    seat, hand = after.tag[1], after.tag[2]
    assert isinstance(seat, int) and isinstance(hand, int)
    step = _console(PlayerDecision(seat, hand, "SURRENDER"))
    ctx.script.insert_after(after, step)
    return step


def _settled_till_reveal(s: RoundScript) -> bool:
    """A surrender against a 2-9 may be left till the reveal: in a round with no bonus
    wager (one due at the reveal would settle first, 2.25(e))."""
    f = s.facts
    return not (f.up == "A" or bj.is_ten_value(f.up) or s.find("side_wp")
                or s.first("reveal") is None)


def _surrender_wrong_targets(ctx: InjectContext) -> list[Any]:
    s = ctx.script
    collects = [st for st in s.find("surr_settle") if isinstance(st.payload, WagerCollected)]
    late = _settled_till_reveal(s)
    return [*collects, *(("after reveal", st) for st in collects if late)]


def _surrender_wrong_apply(ctx: InjectContext, target: Any) -> Step:
    s = ctx.script
    if isinstance(target, tuple):  # 2.8(a)1 "immediately": settled only after the reveal
        _, first = target
        settle = s.find("surr_settle", first.tag[1], first.tag[2])
        reveal = s.first("reveal")
        assert reveal is not None
        at = s.index(settle[-1]) + 1
        s.remove(settle)
        s.insert_after(reveal, *settle)
        # seen on the first event after the decision that is not its settlement
        return next(st for st in s.steps[at - len(settle):] if not st.is_marker)
    collect: Step = target
    seat, hand = collect.tag[1], collect.tag[2]
    settle = s.find("surr_settle", seat, hand)
    f = s.facts
    if f.up == "A" or bj.is_ten_value(f.up):  # settled before the reveal
        decision = next(st for st in s.find("dec", seat, hand) if st.tag[4] == "SURRENDER")
        s.remove(settle)
        s.insert_at(s.index(decision) + 1, settle)
    else:  # the whole wager collected
        p = collect.payload
        assert isinstance(p, WagerCollected)
        collect.payload = WagerCollected(p.seat, p.hand, p.kind, f.seats[p.seat].main)
        s.remove([st for st in settle if isinstance(st.payload, WagerReturned)])
    return collect


# --- the bonus wager -------------------------------------------------------------------


def _bonus_table(ctx: InjectContext) -> bool:
    return ctx.cfg.bonus_offered


def _seats_without_bonus(ctx: InjectContext) -> list[int]:
    return [seat for seat, f in ctx.script.facts.seats.items() if f.side is None]


def _void_bonus(ctx: InjectContext, seat: int, amount: int, anchor: Step) -> Step:
    step = _rfid(WagerPlaced(seat, 0, "BONUS", amount))
    ctx.script.insert_after(anchor, step)
    _hand_back(ctx.script, seat, 0, "BONUS", amount)
    return step


def _main_wager(ctx: InjectContext, seat: int) -> Step:
    step = ctx.script.first("main_wp", seat, 0)
    assert step is not None
    return step


def _bonus_na_apply(ctx: InjectContext, seat: int) -> Step:
    amount = side_amount(ctx.script.facts.seats[seat].main, ctx.cfg.rules)
    return _void_bonus(ctx, seat, amount, _main_wager(ctx, seat))


def _bonus_late_apply(ctx: InjectContext, seat: int) -> Step:
    s = ctx.script
    amount = side_amount(s.facts.seats[seat].main, ctx.cfg.rules)
    return _void_bonus(ctx, seat, amount, s.steps[s.marker_index("after_first_card")])


def _first_card_after(s: RoundScript, step: Step, seat: int | None = None) -> Step:
    """The first card dealt after `step` (to `seat` when given)."""
    return next(st for st in s.steps[s.index(step) + 1:]
                if isinstance(st.payload, CardDealt)
                and (seat is None or st.payload.seat == seat))


def _bonus_amount_apply(ctx: InjectContext, seat: int) -> Step:
    """Over the posted maximum, seen on the stack; with none posted, over the blackjack
    wager, seen when bets close (the seat's first card: the main wager may grow till
    then)."""
    rules = ctx.cfg.rules
    main = ctx.script.facts.seats[seat].main
    if rules.bonus_wager_max is not None:
        return _void_bonus(ctx, seat, rules.bonus_wager_max + rules.chip_unit,
                           _main_wager(ctx, seat))
    placed = _void_bonus(ctx, seat, main + rules.chip_unit, _main_wager(ctx, seat))
    return _first_card_after(ctx.script, placed, seat)


def _bonus_without_main_apply(ctx: InjectContext, seat: int) -> Step:
    s = ctx.script
    start = s.steps[0]
    p = start.payload
    assert isinstance(p, RoundStarted)
    start.payload = RoundStarted(p.dealer_id, tuple(sorted((*p.seats, seat))))
    after = [st for st in s.find("main_wp") if st.tag[1] > seat]  # type: ignore[operator]
    at = s.index(after[0]) if after else s.marker_index("wagers_end")
    step = _rfid(WagerPlaced(seat, 0, "BONUS", ctx.cfg.rules.chip_unit))
    s.insert_at(at, [step])
    _hand_back(s, seat, 0, "BONUS", ctx.cfg.rules.chip_unit)
    return step


def _third_card_targets(ctx: InjectContext) -> list[Any]:
    f = ctx.script.facts
    return [True] if f.play_phase and f.bonus_open and f.dealer_two_total < 17 else []


def _after_reveal(ctx: InjectContext, _t: object) -> Step:
    """The dealer stopped on two cards: the first thing after the reveal that shows it
    (a hand still in play settled or cleared, the bonus wagers going back last, the
    round's end). A surrender settled, or a blackjack paid and cleared, does not show
    it: neither waits on the dealer's final hand."""
    s = ctx.script
    reveal = s.first("reveal")
    assert reveal is not None
    seats = s.facts.seats

    def blackjack(st: Step) -> bool:
        return (st.tag[0] in ("hand_settle", "clear") and st.tag[2] == 0
                and seats[st.tag[1]].hand0_blackjack)  # type: ignore[index]

    return next(st for st in s.steps[s.index(reveal) + 1:]
                if not st.is_marker and st.tag[0] != "surr_settle" and not blackjack(st))


def _bonus_wrong_apply(ctx: InjectContext, step: Step) -> Step:
    p = step.payload
    if isinstance(p, PayoutMade):  # paid at 1 to 1
        seat = p.seat
        stake = ctx.script.facts.seats[seat].side
        assert stake is not None
        step.payload = PayoutMade(seat, p.hand, p.kind, stake[1])
    else:  # a losing wager handed back
        assert isinstance(p, WagerCollected)
        step.payload = WagerReturned(p.seat, p.hand, p.kind, p.amount)
    return step


def _bonus_order_targets(ctx: InjectContext) -> list[Any]:
    s = ctx.script
    first = s.first("bonus_settle")
    if first is None:
        return []
    if any(st.tag[0] in ("dealer_draw", "dealer_extra") for st in s.steps[s.index(first):]):
        return []  # the dealer's hand is not final yet: the main wager could not settle
    return list(s.facts.final_blocks[:1])


def _bonus_order_apply(ctx: InjectContext, block: tuple[int, int]) -> Step:
    s = ctx.script
    seat, hand = block
    moved = [st for st in s.steps
             if st.tag[:3] in (("hand_settle", seat, hand), ("clear", seat, hand))
             or (hand == 0 and st.tag[:2] == ("p22_settle", seat))]
    s.remove(moved)
    first = s.first("bonus_settle")
    assert first is not None
    s.insert_before(first, *moved)
    return moved[0]


# --- dealing and the record ------------------------------------------------------------


def _dealer_drew_targets(ctx: InjectContext) -> list[Any]:
    return [True] if ctx.script.facts.stopped_on_total else []


def _dealer_extra(ctx: InjectContext, _t: object) -> Step:
    step = ctx.script.first("dealer_extra")
    assert step is not None
    return step


def _card_count_targets(ctx: InjectContext) -> list[Any]:
    out = []
    for st in ctx.script.steps:
        p = st.payload
        if isinstance(p, CardDealt) and p.face_up:
            for suit in SUITS:
                if suit != p.suit and ctx.counts.get((p.rank, suit), 0) >= ctx.decks:
                    out.append((st, suit))
    return out


def _card_count_apply(ctx: InjectContext, t: tuple[Step, str]) -> Step:
    step, suit = t
    p = step.payload
    assert isinstance(p, CardDealt)
    step.payload = CardDealt(p.to, p.seat, p.hand, p.rank, suit, p.face_up)
    return step


def _out_of_order_targets(ctx: InjectContext) -> list[Any]:
    s = ctx.script
    out: list[Any] = _free_seats(ctx) if s.facts.play_phase else []
    first = s.first("switch_offer")
    if first is not None and s.find("switch", first.tag[1]):
        out.append(("unoffered", first))  # the first seat offered switches, unannounced
    return out


def _out_of_order_apply(ctx: InjectContext, target: Any) -> Step:
    if isinstance(target, tuple):
        s = ctx.script
        offer = target[1]
        switch = s.first("switch", offer.tag[1])
        assert switch is not None
        s.remove([offer])
        return switch
    seat: int = target
    step = _console(PlayerDecision(seat, 0, "STAND"))
    ctx.script.insert_after_marker("play_start", steps=[step])
    return step


def _record_targets(ctx: InjectContext) -> list[Any]:
    """Console and shoe events: never a device's first (TableOpened, ShoeLoaded are)."""
    return [st for st in ctx.script.steps if st.device in (CONSOLE, SHOE)]


def _gap_apply(ctx: InjectContext, step: Step) -> Step:
    """A device's seq skips one number (EVENTS_LOST). Not on RoundStarted: a break there
    would cut the round before it, whose own faults (a missing RoundEnded) the audit then
    leaves unjudged; the next console or shoe event of the round takes it instead."""
    if isinstance(step.payload, RoundStarted):
        later = ctx.script.steps[ctx.script.index(step) + 1:]
        step = next(st for st in later if st.device in (CONSOLE, SHOE))
    step.skip_seq = True
    return step


def _digest_apply(ctx: InjectContext, step: Step) -> Step:
    step.bad_digest = True
    return step


def _conflict_targets(ctx: InjectContext) -> list[Any]:
    return [st for st in _record_targets(ctx)
            if isinstance(st.payload, CardDealt | PlayerDecision | RoundStarted)]


def _conflict_apply(ctx: InjectContext, step: Step) -> Step:
    p = step.payload
    if isinstance(p, CardDealt):
        other = SUITS[(SUITS.index(p.suit) + 1) % len(SUITS)]
        step.conflict = CardDealt(p.to, p.seat, p.hand, p.rank, other, p.face_up)
    elif isinstance(p, PlayerDecision):
        step.conflict = PlayerDecision(p.seat, p.hand, "HIT" if p.decision != "HIT" else "STAND")
    else:
        assert isinstance(p, RoundStarted)
        step.conflict = RoundStarted(p.dealer_id + "-X", p.seats)
    return step  # rendering names the conflicting copy (Step.conflict_id)


def _incomplete_apply(ctx: InjectContext, _t: object) -> Step | None:
    """No RoundEnded. The violation cites the round's last event, whichever rule finds
    it (the next round's start, the time-out, the input's end: docs/procedure.md)."""
    s = ctx.script
    s.remove(s.find("end"))
    return s.steps[-1]


def _forgery_targets(ctx: InjectContext) -> list[Any]:
    """Seats whose only money is one main wager and its collection or push, at a table's
    last round (after a forgery no later checkpoint of the device verifies: one round
    keeps the ground truth exact). Raising both by a chip leaves every rule of the game
    satisfied: only the signatures tell."""
    if not ctx.last_round:
        return []
    rules, out = ctx.cfg.rules, []
    for seat in ctx.script.facts.seats:
        money = [st for st in ctx.script.steps if st.device == RFID
                 and getattr(st.payload, "seat", None) == seat]
        if len(money) == 2 and isinstance(money[0].payload, WagerPlaced) \
                and isinstance(money[1].payload, WagerCollected | WagerReturned) \
                and all(getattr(st.payload, "kind", "") == "MAIN"
                        and getattr(st.payload, "hand", -1) == 0 for st in money) \
                and money[0].payload.amount + rules.chip_unit <= rules.max_wager:
            out.append(money)
    return out


def _forgery_apply(ctx: InjectContext, money: list[Step]) -> Step:
    """A forger raises a main wager and its settlement by a chip and recomputes the
    device's chain (devices.py): the digests are right, the signatures are not."""
    for st in money:
        p = st.payload
        assert isinstance(p, WagerPlaced | WagerCollected | WagerReturned)
        st.forged = type(p)(p.seat, p.hand, p.kind, p.amount + ctx.cfg.rules.chip_unit)
    return money[0]


def _all(ctx: InjectContext) -> list[Any]:
    return [True]


# --- the catalogue ---------------------------------------------------------------------

_NA_A = _void_insurance_at(_after_deal)[1]  # any seat may insure: no ace, no one did
_EARLY_T, _EARLY_A = _void_insurance_at(_after_upcard)
_LATE_T, _LATE_A = _void_insurance_at(_too_late_anchor)
_OVER_T, _OVER_A = _void_insurance_amount(_over_limit)
_UNDER_T, _UNDER_PLACE = _void_insurance_amount(_under_minimum)


def _under_minimum_apply(ctx: InjectContext, t: tuple[int, int]) -> Step:
    """Seen when insurance closes: the first card after the initial deal (NZ 9.3)."""
    placed = _UNDER_PLACE(ctx, t)
    assert placed is not None
    return _first_card_after(ctx.script, placed)


def _not_ace_insurers(ctx: InjectContext) -> list[Any]:
    if _up_ace(ctx):
        return []
    out = []
    for seat, f in ctx.script.facts.seats.items():
        amount = insurance_amount(f.main, ctx.cfg.rules, ctx.cfg.jurisdiction)
        if amount is not None:
            out.append((seat, amount))
    return out


def _bonus_free_targets(ctx: InjectContext) -> list[Any]:
    return _seats_without_bonus(ctx) if _bonus_table(ctx) else []


def _without_main_targets(ctx: InjectContext) -> list[Any]:
    return _free_seats(ctx) if _bonus_table(ctx) else []


def _bonus_na_targets(ctx: InjectContext) -> list[Any]:
    return [] if _bonus_table(ctx) else sorted(ctx.script.facts.seats)


def _bonus_settled(ctx: InjectContext) -> list[Any]:
    return ctx.script.find("bonus_settle")


def _main_wagers(ctx: InjectContext) -> list[Any]:
    return ctx.script.find("main_wp")


def _zero_stack_apply(ctx: InjectContext, main: Step) -> Step:
    """A second stack of zero on a main wager (posted-rules.txt (a): a wager is more than
    zero): void, and nothing to hand back."""
    p = main.payload
    assert isinstance(p, WagerPlaced)
    step = _rfid(WagerPlaced(p.seat, p.hand, "MAIN", 0), "zero", p.seat, p.hand)
    ctx.script.insert_after(main, step)
    return step


def _side_settled(ctx: InjectContext) -> list[Any]:
    return [*ctx.script.find("match_settle"), *ctx.script.find("p22_settle")]


def _side_wrong_apply(ctx: InjectContext, step: Step) -> Step:
    p = step.payload
    if isinstance(p, PayoutMade):  # overpaid by a chip
        step.payload = PayoutMade(p.seat, p.hand, p.kind, p.amount + ctx.cfg.rules.chip_unit)
    else:  # a losing wager handed back
        assert isinstance(p, WagerCollected)
        step.payload = WagerReturned(p.seat, p.hand, p.kind, p.amount)
    return step


def _refused_apply(ctx: InjectContext, main: Step) -> Step:
    """After a seat's main wager its sensor sends the same wager again with the amount
    negative: the decoder refuses it (an amount is 0 or more), and the round goes on
    without it."""
    p = main.payload
    assert isinstance(p, WagerPlaced)
    step = _rfid(WagerPlaced(p.seat, p.hand, p.kind, -p.amount), "refused")
    ctx.script.insert_after(main, step)
    return step


def refused_as_decoded(ev: Event) -> Event:
    """The event as its decoder gives it: marked refused, with the decoder's reason
    (`Event.refused`), so the audit takes it by the one path every refused event takes
    (`TableAuditor.refused`). Raises ValueError for an event the decoder takes."""
    try:
        loads(dumps(ev))
    except InvalidEvent as e:
        if e.event is None:
            raise ValueError(f"the decoder refuses {ev.event_id} with no record: {e}") from e
        return e.event
    raise ValueError(f"the decoder takes {ev.event_id}")


def _em_pays(ctx: InjectContext) -> list[Any]:
    pays = ctx.script.find("em_pay")
    if ctx.cfg.jurisdiction != "PA":
        return list(pays)
    return [*pays, *(("never", st) for st in pays)]


CATALOGUE: Final[tuple[Fault, ...]] = (
    Fault("INSURANCE_NOT_AVAILABLE", INSURANCE_TABLES, _not_ace_insurers, _NA_A),
    Fault("INSURANCE_OVER_LIMIT", INSURANCE_TABLES, _OVER_T, _OVER_A),
    Fault("INSURANCE_UNDER_MINIMUM", frozenset({NZ_BJ}), _UNDER_T, _under_minimum_apply),
    Fault("INSURANCE_TOO_EARLY", frozenset({NJ_SW, NZ_BJ}), _EARLY_T, _EARLY_A),
    Fault("INSURANCE_TOO_LATE", INSURANCE_TABLES, _LATE_T, _LATE_A, peek=True),
    Fault("INSURANCE_ON_MATCH_WAGER", frozenset({NJ_SW}), _on_match_targets, _on_match_apply),
    Fault("INSURANCE_SETTLEMENT_WRONG", INSURANCE_TABLES, _ins_wrong_targets, _ins_wrong_apply),
    Fault("INSURANCE_COLLECTION_LATE", frozenset({NJ_SW, PA_FB}), _late_collection_targets,
          _late_collection_apply, peek=True),
    Fault("EVEN_MONEY_NOT_AVAILABLE", EVEN_MONEY_TABLES, _em_not_available_targets,
          _em_not_available_apply),
    Fault("EVEN_MONEY_SETTLEMENT_WRONG", EVEN_MONEY_TABLES, _em_pays, _em_wrong_apply),
    Fault("EVEN_MONEY_CARDS_REMOVED", EVEN_MONEY_TABLES, _em_removed_targets,
          _em_removed_apply),
    Fault("BLACKJACK_PAID_EARLY", frozenset({NZ_BJ}), _bj_early_targets, _bj_early_apply),
    Fault("BLACKJACK_PAID_LATE", frozenset({NZ_BJ}), _bj_late_targets, _bj_late_apply),
    Fault("PAYOUT_WRONG", None, _payout_wrong_targets, _payout_wrong_apply),
    Fault("SURRENDER_NOT_AVAILABLE", frozenset({NJ_BJ}), _surrender_na_targets,
          _surrender_na_apply),
    Fault("SURRENDER_TOO_EARLY", frozenset({NJ_BJ}), _surrender_early_targets,
          _surrender_early_apply),
    Fault("SURRENDER_TOO_LATE", frozenset({NJ_BJ}), _surrender_late_targets,
          _surrender_late_apply),
    Fault("SURRENDER_SETTLEMENT_WRONG", frozenset({NJ_BJ}), _surrender_wrong_targets,
          _surrender_wrong_apply),
    Fault("BONUS_WAGER_NOT_AVAILABLE", frozenset({NJ_BJ}), _bonus_na_targets, _bonus_na_apply),
    Fault("BONUS_WAGER_TOO_LATE", frozenset({NJ_BJ}), _bonus_free_targets, _bonus_late_apply),
    Fault("BONUS_WAGER_WITHOUT_MAIN", frozenset({NJ_BJ}), _without_main_targets,
          _bonus_without_main_apply),
    Fault("BONUS_WAGER_AMOUNT", frozenset({NJ_BJ}), _bonus_free_targets, _bonus_amount_apply),
    Fault("BONUS_THIRD_CARD_NOT_DRAWN", frozenset({NJ_BJ}), _third_card_targets,
          _after_reveal, PlayOptions(skip_bonus_third=True)),
    Fault("BONUS_SETTLEMENT_WRONG", frozenset({NJ_BJ}), _bonus_settled, _bonus_wrong_apply),
    Fault("SIDE_WAGER_SETTLEMENT_WRONG", frozenset({NJ_SW, PA_FB}), _side_settled,
          _side_wrong_apply),
    Fault("WAGER_OUTSIDE_LIMITS", None, _main_wagers, _zero_stack_apply),
    Fault("BONUS_SETTLEMENT_ORDER", frozenset({NJ_BJ}), _bonus_order_targets,
          _bonus_order_apply),
    Fault("DEALER_DREW_WRONG", None, _dealer_drew_targets, _dealer_extra,
          PlayOptions(extra_dealer_card=True)),
    Fault("CARD_COUNT_EXCEEDED", None, _card_count_targets, _card_count_apply),
    Fault("PROCEDURE_OUT_OF_ORDER", None, _out_of_order_targets, _out_of_order_apply),
    Fault("EVENTS_LOST", None, _record_targets, _gap_apply),
    Fault("SEQUENCE_CONFLICT", None, _conflict_targets, _conflict_apply),
    Fault("DIGEST_MISMATCH", None, _record_targets, _digest_apply),
    Fault("ROUND_INCOMPLETE", None, _all, _incomplete_apply),
    Fault(FORGERY, None, _forgery_targets, _forgery_apply),
)

#: The faults only a `contract` floor's tables carry (so every other floor keeps its
#: bytes): an event its decoder refuses.
CONTRACT_FAULTS: Final[tuple[Fault, ...]] = (
    Fault(REFUSED, None, _main_wagers, _refused_apply),
)

BY_CODE: Final = {f.code: f for f in CATALOGUE}
CODES: Final = tuple(f.code for f in CATALOGUE)
#: Codes no single fault of a round makes: a winning insurance paid while a losing one
#: is up (one hole card decides them all); a void wager's money (its voiding fault comes
#: first: two codes); a posting against a text (the table's, not a round's: a contract
#: floor's table posts one, `TableConfig.posting_fault`).
NOT_INJECTED: Final = ("INSURANCE_PAID_BEFORE_COLLECTION", "VOID_WAGER_SETTLED",
                       "POSTED_RULES_CONTRADICT_REGULATION")


def candidates(ctx: InjectContext) -> list[tuple[Fault, list[Any]]]:
    """The faults this round can carry, each with its targets."""
    cfg = ctx.cfg
    out = []
    for fault in (*CATALOGUE, *CONTRACT_FAULTS) if cfg.contract else CATALOGUE:
        if not fault.at(cfg):
            continue
        targets = fault.targets(ctx)
        if targets:
            out.append((fault, targets))
    return out
