"""The round view's layout: the cards each hand ends with, its wagers and money, as the
events say, including what moves cards without a card event (a split, a switch)."""

from __future__ import annotations

from typing import Any

from pitwatch.console.roundview import card, describe, layout


def ev(type_: str, **fields: Any) -> dict[str, Any]:
    return {"type": type_, **fields}


def dealt(seat: int | None, hand: int | None, rank: str, suit: str,
          face_up: bool = True) -> dict[str, Any]:
    to = "DEALER" if seat is None else "PLAYER"
    return ev("CardDealt", to=to, seat=seat, hand=hand, rank=rank, suit=suit, face_up=face_up)


def test_a_split_moves_the_second_card_to_the_new_hand() -> None:
    dealer, hands = layout([
        ev("WagerPlaced", seat=2, hand=0, kind="MAIN", amount=1000),
        dealt(2, 0, "8", "S"), dealt(None, None, "6", "H"), dealt(2, 0, "8", "D"),
        dealt(None, None, "K", "C", face_up=False),
        ev("PlayerDecision", seat=2, hand=0, decision="SPLIT"),
        ev("WagerPlaced", seat=2, hand=1, kind="SPLIT", amount=1000),
        dealt(2, 0, "3", "C"), ev("PlayerDecision", seat=2, hand=0, decision="STAND"),
        dealt(2, 1, "A", "H"), ev("PlayerDecision", seat=2, hand=1, decision="STAND"),
        ev("HoleCardRevealed"),
        ev("PayoutMade", seat=2, hand=0, kind="MAIN", amount=1000),
        ev("WagerCollected", seat=2, hand=1, kind="SPLIT", amount=1000),
    ])
    assert [(r, s) for r, s, _ in hands[(2, 0)].cards] == [("8", "S"), ("3", "C")]
    assert [(r, s) for r, s, _ in hands[(2, 1)].cards] == [("8", "D"), ("A", "H")]
    assert hands[(2, 0)].wagers == {"MAIN": 1000} and hands[(2, 1)].wagers == {"SPLIT": 1000}
    assert hands[(2, 0)].money == [("paid", "MAIN", 1000)]
    assert hands[(2, 1)].money == [("collected", "SPLIT", 1000)]
    assert hands[(2, 0)].decisions == ["SPLIT", "STAND"]
    # the hole card shows face up once revealed
    assert dealer.cards == [("6", "H", True), ("K", "C", True)]


def test_a_switch_swaps_the_second_cards_and_an_unrevealed_hole_card_stays_down() -> None:
    dealer, hands = layout([
        dealt(1, 0, "10", "S"), dealt(1, 1, "5", "D"), dealt(None, None, "9", "H"),
        dealt(1, 0, "6", "C"), dealt(1, 1, "Q", "H"),
        dealt(None, None, "2", "S", face_up=False),
        ev("PlayerDecision", seat=1, hand=0, decision="SWITCH"),
    ])
    assert [r for r, _, _ in hands[(1, 0)].cards] == ["10", "Q"]
    assert [r for r, _, _ in hands[(1, 1)].cards] == ["5", "6"]
    assert dealer.cards[1] == ("2", "S", False)


def test_cards_and_money_read_as_people_read_them() -> None:
    assert 'class="card red"' in card("A", "H") and "♥" in card("A", "H")
    assert 'class="card down"' in card("K", "S", face_up=False)
    assert "$12.50" in describe(ev("WagerReturned", seat=3, hand=0, kind="MAIN", amount=1250))
    assert "seat 3 hand 1" in describe(ev("PlayerDecision", seat=3, hand=1, decision="HIT"))
    assert "&lt;b&gt;" in describe(ev("RoundStarted", dealer_id="<b>", seats=[1]))


def test_a_citation_of_the_gazette_and_the_posted_rules_quotes_both() -> None:
    """the NZ citation quoting both texts"""
    from pitwatch.console.roundview import quotes, render_quote

    citation = ("NZ Gazette 1996 No 7, Blackjack 8.1–8.2 (blackjack 3 to 2, stand-off "
                "against a dealer blackjack); other wins 1 to 1 as posted, "
                "docs/regulations/posted-rules.txt (b)")
    got = quotes(citation)
    assert [q.source for q in got] == [
        "docs/regulations/nz-gazette-1996-blackjack-payment-insurance.txt",
        "docs/regulations/posted-rules.txt"]
    assert [label for label, _ in got[0].paragraphs] == ["8.1", "8.2"]
    assert [label for label, _ in got[1].paragraphs] == ["(b)"]
    assert render_quote(citation).count('<blockquote class="regulation"') == 2
    # one text: quoted once
    assert len(quotes("NZ Gazette 1996 No 7, Blackjack 8.1")) == 1
