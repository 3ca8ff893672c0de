"""The contract's ranges checked in C (`native.range_check`, `limits._in_range`): it
vouches for an event only when Python's check finds nothing, it vouches for every
in-range event of the types it knows (so the decoders' fast path is taken), and the
reasons an out-of-range event is refused with are Python's, naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitwatch.events import limits, native
from pitwatch.events.model import (
    CardDealt,
    CardsCleared,
    Checkpoint,
    Event,
    HoleCardRevealed,
    PayoutMade,
    PlayerDecision,
    RoundEnded,
    RoundStarted,
    ShoeLoaded,
    SwitchOffered,
    WagerPlaced,
)

pytestmark = pytest.mark.skipif(native._native is None, reason="the extension is not built")


def _edges(lo: int, hi: int) -> st.SearchStrategy[Any]:
    """Integers at and around a range's ends, past 64 bits, and values of other types."""
    return (st.sampled_from([lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, -2**63 - 1, 2**64,
                             2**100, True, False])
            | st.integers(lo, hi) | st.sampled_from([None, 1.0, "1", b"1"]))


def _text(n: int) -> st.SearchStrategy[Any]:
    """Strings of lengths around 1 and `n`, some beyond ASCII (a length is in
    characters, not bytes), and values of other types."""
    lengths = st.sampled_from([0, 1, 2, n - 1, n, n + 1])
    return (lengths.flatmap(lambda k: st.text(alphabet="aé€😀", min_size=k, max_size=k))
            | st.sampled_from([None, b"abc", 7]))


def _raw(n: int) -> st.SearchStrategy[Any]:
    return st.sampled_from([None, b"", b"x" * (n - 1), b"x" * n, b"x" * (n + 1), "x" * n,
                            bytearray(n)])


seat_hand = {"seat": _edges(1, limits.MAX_SEAT), "hand": _edges(0, limits.MAX_HAND)}
money = {**seat_hand, "kind": st.just("main"), "amount": _edges(0, limits.MAX_AMOUNT)}
payloads = st.one_of(
    st.builds(WagerPlaced, **money), st.builds(PayoutMade, **money),
    st.builds(CardDealt, to=st.just("seat"), rank=st.just("A"), suit=st.just("S"),
              face_up=st.just(True), **seat_hand),
    st.builds(CardsCleared, **seat_hand),
    st.builds(PlayerDecision, decision=st.just("stand"), **seat_hand),
    st.builds(SwitchOffered, seat=seat_hand["seat"]),
    st.builds(ShoeLoaded, shoe_id=_text(limits.MAX_ID), decks=_edges(1, limits.MAX_DECKS)),
    st.builds(Checkpoint, head_seq=_edges(1, limits.MAX_SEQ),
              head_digest=_raw(limits.DIGEST_BYTES), key_id=_text(limits.MAX_ID),
              signature=_raw(limits.SIGNATURE_BYTES)),
    st.builds(HoleCardRevealed), st.builds(RoundEnded),
    st.builds(RoundStarted, dealer_id=st.just("D1"), seats=st.just((1, 2))),
)
events = st.builds(
    Event, event_id=_text(limits.MAX_ID), table_id=_text(limits.MAX_ID),
    device_id=_text(limits.MAX_ID), seq=_edges(1, limits.MAX_SEQ),
    ts=_edges(limits.MIN_TS, limits.MAX_TS), round_id=_text(limits.MAX_ID),
    prev_digest=_raw(limits.DIGEST_BYTES), payload=payloads)


def _verdict(check: Any, ev: Event) -> str | None:
    """What a check says: None (in range) or its reason."""
    try:
        check(ev)
    except limits.OutOfRange as e:
        return str(e)
    except (TypeError, AttributeError) as e:  # a value of another type altogether
        return f"{type(e).__name__}: {e}"
    return None


def _exact_types(ev: Event) -> bool:
    """Every checked field holds exactly its kind (an int, a str, bytes) or None: what a
    decoder builds; a bool for an int is Python's call, not C's."""
    kinds = {"int": int, "str": str, "bytes": bytes}
    fields = [(ev, f) for f in limits.ENVELOPE] + [
        (ev.payload, f) for f in limits.FIELDS.get(type(ev.payload), ())]
    return all(type(getattr(o, name)) in (kinds[kind], type(None))
               for o, (name, kind, *_) in fields)


@settings(max_examples=600, deadline=None)
@given(events)
def test_c_vouches_for_an_event_exactly_when_python_finds_nothing(ev: Event) -> None:
    reason = _verdict(limits.check_in_python, ev)
    vouched = limits._in_range(ev)
    if vouched:
        assert reason is None, ev
    if reason is None and type(ev.payload) in limits.FIELDS and _exact_types(ev):
        assert vouched, ev
    if type(ev.payload) not in limits.FIELDS:
        assert not vouched  # RoundStarted and TableOpened: Python's alone
    assert _verdict(limits.check, ev) == reason  # whichever path runs: Python's outcome


def _event(**changes: Any) -> Event:
    base: dict[str, Any] = dict(event_id="e1", table_id="T1", device_id="shoe", seq=1,
                                ts=1_764_547_200_000, round_id="r1", prev_digest=None,
                                payload=WagerPlaced(1, 0, "main", 500))
    return Event(**(base | changes))

_VALID_PAYLOADS = [WagerPlaced(1, 0, "main", 500), PayoutMade(32, 31, "main", 10**12),
                   CardDealt("dealer", None, None, "A", "S", True), CardsCleared(None, None),
                   PlayerDecision(3, 1, "hit"), SwitchOffered(2), ShoeLoaded("s" * 128, 16),
                   Checkpoint(2**53 - 1, b"d" * 32, "k", b"s" * 64), RoundEnded()]
_EDGES = {"int": lambda lo, hi: _edges(lo, hi), "str": lambda lo, hi: _text(hi),
          "bytes": lambda lo, hi: _raw(hi)}


@st.composite
def one_field_at_an_edge(draw: st.DrawFn) -> Event:
    """An event in range but for one field, drawn at or around an end of its range."""
    payload = draw(st.sampled_from(_VALID_PAYLOADS))
    ev = _event(payload=type(payload)(*[getattr(payload, f) for f in payload.__slots__]))
    fields = [(ev, f) for f in limits.ENVELOPE] + [
        (ev.payload, f) for f in limits.FIELDS[type(payload)]]
    obj, (name, kind, lo, hi, _) = draw(st.sampled_from(fields))
    setattr(obj, name, draw(_EDGES[kind](lo, hi)))
    return ev


@settings(max_examples=1500, deadline=None)
@given(one_field_at_an_edge())
def test_c_and_python_agree_on_each_field_at_its_edges(ev: Event) -> None:
    reason = _verdict(limits.check_in_python, ev)
    if reason is not None:
        assert not limits._in_range(ev), (ev, reason)
    elif _exact_types(ev):
        assert limits._in_range(ev), ev
    assert _verdict(limits.check, ev) == reason



@pytest.mark.parametrize(("changes", "reason"), [
    ({"ts": -1}, "ts: -1 is outside 0..4294967295999 (ms from 1970 to 2106)"),
    ({"seq": 0}, "seq: 0 is outside 1..9007199254740991"),
    ({"event_id": "x" * 129}, "event_id: 129 characters, not 1..128"),
    ({"round_id": ""}, "round_id: 0 characters, not 1..128"),
    ({"prev_digest": b"x" * 31}, "prev_digest: 31 bytes, not 32"),
    ({"payload": WagerPlaced(40, 0, "main", 500)}, "WagerPlaced.seat: 40 is outside 1..32"),
    ({"payload": PayoutMade(1, 0, "main", 10**18 + 1)},
     "PayoutMade.amount: 1000000000000000001 is outside 0..1000000000000000000"),
    ({"payload": WagerPlaced(1, 0, "main", 10**12 + 1)},
     "WagerPlaced.amount: 1000000000001 is outside 0..1000000000000"),
    ({"payload": CardsCleared(None, 32)}, "CardsCleared.hand: 32 is outside 0..31"),
    ({"payload": ShoeLoaded("s1", 17)}, "ShoeLoaded.decks: 17 is outside 1..16"),
    ({"payload": Checkpoint(3, b"d" * 32, "k1", b"s" * 63)},
     "Checkpoint.signature: 63 bytes, not 64"),
    ({"payload": RoundStarted("D1", (1, 33))}, "RoundStarted.seats: 33 is outside 1..32"),
])
def test_an_event_out_of_range_is_refused_naming_its_field(changes: dict[str, Any],
                                                           reason: str) -> None:
    ev = _event(**changes)
    assert not limits._in_range(ev)
    with pytest.raises(limits.OutOfRange) as e:
        limits.check(ev)
    assert str(e.value) == reason


def test_an_event_of_a_subclass_is_left_to_python() -> None:
    """The slots are read at the class's offsets, so only the class itself is vouched
    for; a subclass is checked in Python."""
    class Other(Event):
        __slots__ = ()

    ev = _event()
    assert limits._in_range(ev)
    other = Other(**{f: getattr(ev, f) for f in Event.__dataclass_fields__})
    assert not limits._in_range(other)
    limits.check(other)


def test_a_range_check_refuses_what_it_cannot_read() -> None:
    class Plain:
        def __init__(self) -> None:
            self.seat = 1

    with pytest.raises(TypeError, match="not a slot"):
        native.range_check(Event, (("seat", "int", 1, 2, False),), "payload", {})
    with pytest.raises(TypeError, match="not a slot"):
        native.range_check(Event, (), "payload", {Plain: (("seat", "int", 1, 2, False),)})
    with pytest.raises(ValueError, match="kind"):
        native.range_check(Event, (("seq", "float", 1, 2, False),), "payload", {})
    with pytest.raises(TypeError, match="field"):
        native.range_check(Event, (("seq", "int", 1),), "payload", {})  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        native.range_check(Event, (("seq", "int", 0, 2**64, False),), "payload", {})
