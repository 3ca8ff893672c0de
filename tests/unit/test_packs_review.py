"""The classes of issue 7, each on both sides of its rule: the rounds of
tests/data/review_rounds.py (also dealt into tests/data/rounds.jsonl), each played alone
at a freshly opened table and audited by the real engine.

Each test quotes the sentence it enforces (lines starting with `> `, checked verbatim
against docs/regulations by the last test); rounds judged against a table's posting
(where no text is at hand) say so instead.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from pitwatch.engine.violation import Violation
from pitwatch.money import dollars
from pitwatch.packs import registry
from tests.data import review_rounds as rr
from tests.rounds import TableScript, audit, quotes, regulation_tests, regulation_text


def play(kind: str, label: str, rounds: dict[str, rr.Play], **rules: Any) -> list[Violation]:
    """Deal one review round at a fresh table of `kind`: it raises exactly what it says,
    each on its evidence event, seat and hand."""
    sc = TableScript.opened(kind, "T-07", **rules)
    sc.round_id = sc.round_name(label)
    expected = rounds[label](sc)
    found = audit(sc.events)
    got = sorted((v.code, v.event_id, v.seat, v.hand) for v in found)
    want = sorted((code, ev.event_id, seat, hand) for code, ev, seat, hand in expected)
    assert got == want, [(v.code, v.message) for v in found]
    label_codes = set() if label.startswith("OK-") else set(label.split("~")[0].split("+"))
    assert {v.code for v in found} == label_codes
    return found


# --- class 1: no false alarm on legal play ---------------------------------------------------


@pytest.mark.parametrize("label", [
    "OK-blackjack-paid-in-turn",
    "OK-bonus-third-card-after-blackjack-paid-in-turn",
    "OK-bonus-third-card-after-blackjack-paid-at-reveal",
    "PAYOUT_WRONG~blackjack-in-turn-paid-1-to-1",
])
def test_blackjack_decided_once_the_reader_rules_a_dealer_blackjack_out(label: str) -> None:
    """N.J.A.C. 13:69F-2.25(d)

    > If the dealer's first two cards have a point total of less than 17 and any player
    > has placed an optional bonus wager under this section, the dealer shall be required
    > to draw a third card regardless of whether all players have been dealt blackjack.

    A player blackjack against a 10 up card is decided as soon as the reader shows no
    dealer blackjack: paid 3 to 2 in turn (before the reveal) is legal, not "paid before
    its outcome was known"; paid 1 to 1 it is PAYOUT_WRONG. A blackjack paid at the
    reveal does not show the dealer stopped: the third card drawn right after is no
    BONUS_THIRD_CARD_NOT_DRAWN.
    """
    play("nj_blackjack", label, rr.NJ_BLACKJACK)


def test_wagers_placed_in_two_stacks_are_one_wager() -> None:
    """N.J.A.C. 13:69F-2.25(c)

    > The amount of an optional bonus wager shall be at least $ 1.00

    A main wager of 500 + 500 is 1,000 and is paid 1,000; a bonus wager of 60 + 60 is
    $1.20: neither stack alone is judged against a minimum.
    """
    play("nj_blackjack", "OK-wagers-in-two-stacks", rr.NJ_BLACKJACK)


# --- class 2: money never moves without a finding -------------------------------------------


@pytest.mark.parametrize("label", [
    "OK-insurance-loses", "OK-insurance-wins",
    "INSURANCE_OVER_LIMIT+VOID_WAGER_SETTLED", "INSURANCE_SETTLEMENT_WRONG",
    "INSURANCE_TOO_EARLY", "INSURANCE_TOO_LATE", "INSURANCE_COLLECTION_LATE",
    "INSURANCE_PAID_BEFORE_COLLECTION+INSURANCE_SETTLEMENT_WRONG", "INSURANCE_NOT_AVAILABLE",
])
def test_nj_blackjack_insurance_is_judged_as_posted(label: str) -> None:
    """docs/regulations/posted-rules.txt (d), pitwatch's reading (13:69F-2.9 was not
    retrieved; the words of 13:69F-2A.8):

    > An insurance wager is at most half of the hand's initial main wager, except that it
    > may reach the next chip unit (`rules.chip_unit`) when half cannot be bet in chips.

    > Insurance is placed after the initial deal and before any further card, and, where a
    > card reader is used, before the hole card goes into the reader;

    > Losing insurance is collected as soon as the hole card is known to make no blackjack
    > and before the dealer draws any further card.

    > After the losing insurance is collected, winning insurance is paid at the posted odds
    > (`rules.insurance_pays`, 2 to 1).

    2,000 of insurance on a 2,000 wager paid 3 to 1 is two findings: over the limit
    (void), and the void wager paid."""
    found = play("nj_blackjack", label, rr.NJ_BLACKJACK)
    for v in found:
        assert "posted-rules.txt (d)" in v.citation or v.code == "VOID_WAGER_SETTLED", v


def test_nj_blackjack_previous_pack_version_has_no_insurance_checks() -> None:
    """The composition before this issue stays selectable (`registry.get`) for a
    re-audit: it raises nothing on the 2,000-on-2,000 insurance paid 3 to 1."""
    old = registry.get("nj-blackjack", "2024.09-1")
    new = registry.get("nj-blackjack")
    assert new is registry.select("NJ", "BLACKJACK") and new.version == "2024.09-3"
    assert not any(c.startswith("INSURANCE_") for c in old.codes())
    assert {"INSURANCE_OVER_LIMIT", "INSURANCE_SETTLEMENT_WRONG"} <= new.codes()
    assert ("nj-blackjack", "2024.09-1") in registry.versions()
    with pytest.raises(KeyError, match=r"known: .*nj-blackjack@2024\.09-1"):
        registry.get("nj-blackjack", "1999.1-1")


@pytest.mark.parametrize("kind, label", [
    ("nj_blackjack", "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~not-offered"),
    ("nj_switch", "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~not-offered"),
    ("nj_switch", "PAYOUT_WRONG+SURRENDER_NOT_AVAILABLE~honoured"),
    ("pa_free_bet", "PAYOUT_WRONG+SURRENDER_NOT_AVAILABLE~honoured"),
    ("nz_blackjack", "PAYOUT_WRONG+SURRENDER_NOT_AVAILABLE~honoured"),
])
def test_a_decision_the_table_does_not_offer_leaves_the_hand_judged(kind: str,
                                                                  label: str) -> None:
    """A 16 "taking even money" against an ace, or a surrender, at a table that does not
    offer it: the decision is void (the table's posting), and the money the dealer moves
    for it is judged as the hand's, which nothing has decided yet: PAYOUT_WRONG."""
    rounds = {"nj_blackjack": rr.NJ_BLACKJACK, "nj_switch": rr.NJ_SWITCH,
              "pa_free_bet": rr.PA_FREE_BET, "nz_blackjack": rr.NZ_BLACKJACK}[kind]
    play(kind, label, rounds)


@pytest.mark.parametrize("kind, label", [
    ("nj_switch", "OK-match-two-pair"),
    ("nj_switch", "SIDE_WAGER_SETTLEMENT_WRONG~match"),
    ("pa_free_bet", "OK-push22-loses"),
    ("pa_free_bet", "SIDE_WAGER_SETTLEMENT_WRONG~push22"),
])
def test_every_side_wager_a_table_posts_is_settlement_checked(kind: str, label: str) -> None:
    """58 Pa. Code § 672a.8(e)

    > if the player also placed a Push 22 Wager, the dealer shall tuck the player’s cards
    > under the player’s Push 22 Wager until it is resolved

    The match and Push 22 wagers are judged against their posted pay tables (public
    summaries where none is posted): a Push 22 paid on a dealer 20, a match paid 1 to 1
    on two pair, are SIDE_WAGER_SETTLEMENT_WRONG.
    """
    play(kind, label, rr.NJ_SWITCH if kind == "nj_switch" else rr.PA_FREE_BET)


# --- class 3: timing words -------------------------------------------------------------------


@pytest.mark.parametrize("label", [
    "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~after-the-reader",
    "EVEN_MONEY_NOT_AVAILABLE+PAYOUT_WRONG~insured-hand",
])
def test_672a_8_e_even_money_is_instead_of_insurance(label: str) -> None:
    """58 Pa. Code § 672a.8(e)

    > a certificate holder may offer a player who has Blackjack the option to be paid
    > even money on the Blackjack Wager instead of making an Insurance Wager.

    Insurance is placed before the hole card goes into the reader (672a.8(b)); even
    money, offered instead of it, is too late once the reader has answered, and not
    available on a hand already insured. The 1 to 1 paid for it is then judged as the
    blackjack's (3 to 2 once the reader rules a dealer blackjack out).
    """
    play("pa_free_bet", label, rr.PA_FREE_BET)


@pytest.mark.parametrize("kind, rounds", [("nj_switch", rr.NJ_SWITCH),
                                          ("pa_free_bet", rr.PA_FREE_BET)])
def test_insurance_settled_before_the_hole_card_went_into_the_reader(
        kind: str, rounds: dict[str, rr.Play]) -> None:
    """58 Pa. Code § 672a.8(d)

    > Losing Insurance Wagers shall be collected by the dealer immediately after the
    > dealer inserts his hole card into the card reader device and determines that he
    > does not have a Blackjack

    Collected before the reader answered, the insurance was not yet decided:
    INSURANCE_SETTLEMENT_WRONG (and at Blackjack Switch alike, 2A.8(c)).
    """
    play(kind, "INSURANCE_SETTLEMENT_WRONG~before-the-reader", rounds)


@pytest.mark.parametrize("label", ["OK-insurance-collected-at-once",
                                   "INSURANCE_COLLECTION_LATE~while-the-player-acts"])
def test_672a_8_d_losing_insurance_collected_immediately(label: str) -> None:
    """58 Pa. Code § 672a.8(d)

    > Losing Insurance Wagers shall be collected by the dealer immediately after the
    > dealer inserts his hole card into the card reader device and determines that he
    > does not have a Blackjack and before he draws any additional cards.

    Left up while the player acts, even if collected before any draw: late.
    """
    play("pa_free_bet", label, rr.PA_FREE_BET)


@pytest.mark.parametrize("label", ["OK-insurance-after-the-announcement",
                                   "INSURANCE_TOO_EARLY~before-the-announcement"])
def test_nz_9_2_insurance_only_after_the_announcement(label: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 9.2–9.3

    > If the first card dealt to the dealer is an ace, the dealer shall first complete
    > the initial deal, and then: (a) announce the word "Insurance" in a clearly audible
    > voice;

    > Players may then make an insurance wager
    """
    play("nz_blackjack", label, rr.NZ_BLACKJACK)


@pytest.mark.parametrize("label", [
    "SURRENDER_TOO_LATE~split-hand",
    "PAYOUT_WRONG+SURRENDER_TOO_LATE~after-reveal",
])
def test_2_8_a_surrender_only_on_the_first_two_cards_before_the_reveal(label: str) -> None:
    """N.J.A.C. 13:69F-2.8(a)

    > After the first two cards are dealt to the player and the player's point total is
    > announced, the player may elect to discontinue play on his or her hand for that
    > round by surrendering one-half his or her wager.

    A hand made by a split holds no first two cards of the player (and the split was a
    decision); once the dealer's second card is revealed the hand's outcome is known.
    Either surrender is void; its half and half is then judged as the hand's money.
    """
    play("nj_blackjack", label, rr.NJ_BLACKJACK)


@pytest.mark.parametrize("label", ["OK-surrender-settled-before-the-draw",
                                   "SURRENDER_SETTLEMENT_WRONG~after-the-draw"])
def test_2_8_a2_surrender_settled_immediately_at_the_reveal(label: str) -> None:
    """N.J.A.C. 13:69F-2.8(a)1–2

    > When the dealer's second card is revealed, the hand will be settled by immediately
    > collecting the entire wager should the dealer have blackjack or collecting one-half
    > of the wager and returning one-half of the wager to the player should the dealer not
    > have blackjack.
    """
    play("nj_blackjack", label, rr.NJ_BLACKJACK)


@pytest.mark.parametrize("label", ["OK-bonus-settled-before-the-fourth-card",
                                   "BONUS_SETTLEMENT_ORDER~left-up-on-the-fourth-card"])
def test_2_25_e_bonus_settled_immediately_after_the_third_card(label: str) -> None:
    """N.J.A.C. 13:69F-2.25(e)

    > Immediately after the dealer either determines his or her first two cards have a
    > point count of 17 or higher or deals a third card to his or her hand, the dealer
    > shall, before any other wagers are settled, settle all optional bonus wagers.
    """
    play("nj_blackjack", label, rr.NJ_BLACKJACK)


# --- class 4: odds and rights the texts fix ----------------------------------------------------


@pytest.mark.parametrize("kind", sorted(rr.POSTINGS))
def test_a_posting_that_contradicts_the_text_is_a_finding_on_its_table_opened(
        kind: str) -> None:
    """NZ Gazette 1996 No 7, Blackjack 8.1–8.2

    > the dealer shall announce and pay the blackjack at odds of three to two

    > Whenever the first card dealt to the dealer is an ace, each player shall have the
    > right to make an insurance bet,

    N.J.A.C. 13:69F-2A.8(d)

    > all winning insurance bets shall be paid at odds of 2 to 1.

    A table posting other odds than a text fixes, or posting off a right a text grants
    each player (insurance: 2A.8(a), 672a.8(a), NZ 9.1; even money: NZ 8.3), or an option
    a text bars beside its posting (surrender at 6 to 5: 2.8(c)), is one finding on its
    TableOpened (no round). The round that follows is judged by the text: a wager the
    player has a right to stands, and odds are the text's.
    """
    for changes, label, round_play in rr.POSTINGS[kind]:
        sc = TableScript.of(kind, "T-07")
        opened = sc.open(rr.posted(sc.rules, changes))
        sc.shoe()
        sc.round_id = sc.round_name(label)
        assert round_play(sc) == []
        found = audit(sc.events)
        assert [(v.code, v.event_id, v.round_id, v.severity) for v in found] == [
            ("POSTED_RULES_CONTRADICT_REGULATION", opened.event_id, "", "HIGH")], found
        pack = registry.select(sc.jurisdiction, sc.game)
        assert set(found[0].citation.split("; ")) <= {r.citation for r in pack.posting}


# --- class 5: a void wager's money ------------------------------------------------------------


@pytest.mark.parametrize("kind, rounds", [
    ("nj_switch", rr.NJ_SWITCH), ("pa_free_bet", rr.PA_FREE_BET),
    ("nz_blackjack", rr.NZ_BLACKJACK)])
def test_void_wager_settled_names_the_voiding_violation(kind: str,
                                                        rounds: dict[str, rr.Play]) -> None:
    """A void wager (a HIGH finding) collected instead of handed back: VOID_WAGER_SETTLED,
    CRITICAL, naming the voiding violation's id and code and what the money did."""
    found = play(kind, "INSURANCE_NOT_AVAILABLE+VOID_WAGER_SETTLED", rounds)
    voiding, settled = found
    assert settled.severity == "CRITICAL"
    assert settled.message == (
        f"void INSURANCE {dollars(1000)} (voided by INSURANCE_NOT_AVAILABLE "
        f"{voiding.violation_id}) collected {dollars(1000)} (kept by the house), "
        f"expected handed back {dollars(1000)}")


def test_void_wager_paid_or_kept() -> None:
    """Paid 3 to 1, and kept to the end of the round: both VOID_WAGER_SETTLED."""
    over, paid = play("nj_blackjack", "INSURANCE_OVER_LIMIT+VOID_WAGER_SETTLED",
                      rr.NJ_BLACKJACK)
    assert f"paid {dollars(6000)}, expected handed back {dollars(2000)}" in paid.message
    assert over.violation_id in paid.message
    _, kept = play("nj_blackjack", "BONUS_WAGER_TOO_LATE+VOID_WAGER_SETTLED~kept",
                   rr.NJ_BLACKJACK)
    assert "kept to the end of the round" in kept.message


# --- class 8: one Free Bet marker contract ----------------------------------------------------


@pytest.mark.parametrize("label", ["OK-free-split-busts-marker-moves-no-money",
                                   "PAYOUT_WRONG~free-marker-collected"])
def test_a_losing_free_marker_moves_no_money(label: str) -> None:
    """Free Bet Blackjack (public summary; `settle_free_wager` is the one contract the
    simulator deals by and the checks judge by): a free split hand that busts loses its
    marker with no money event; a WagerCollected of the marker is PAYOUT_WRONG."""
    play("pa_free_bet", label, rr.PA_FREE_BET)


# --- options a table may post, judged as posted --------------------------------------------------


@pytest.mark.parametrize("kind", ["nj_switch", "pa_free_bet", "nz_blackjack"])
@pytest.mark.parametrize("label", sorted(rr.POSTED_SURRENDER))
def test_surrender_where_a_table_posts_it(kind: str, label: str) -> None:
    """N.J.A.C. 13:69F-2.8(a)

    > All decisions to surrender shall be made prior to such player indicating as to
    > whether he or she wishes to double down, split pairs, stand, and/or draw

    Where a table with no surrender text posts surrender, it is judged as posted, with
    the New Jersey reading (docs/regulations/posted-rules.txt (f)).
    """
    play(kind, label, rr.POSTED_SURRENDER, surrender=True)


def test_quotations_are_verbatim() -> None:
    text = regulation_text()
    if text is None:
        pytest.skip("docs/regulations is not at hand")
    for name, doc in regulation_tests(sys.modules[__name__]).items():
        for q in quotes(doc):
            assert q in text, f"{name} quotes text that is not in the regulations: {q!r}"
