"""A round as it happened: the layout at its end (cards as cards, wagers and money per
hand) and its events in table order, each finding beside the event that shows it with
the paragraph it cites quoted from docs/regulations/."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from typing import Any

from pitwatch.citations import Quote, quote
from pitwatch.money import dollars
from pitwatch.protect.seat_words import left_words, seated_words

from .html import badge, clock, e

SUITS = {"C": ("♣", "clubs", False), "D": ("♦", "diamonds", True),
         "H": ("♥", "hearts", True), "S": ("♠", "spades", False)}
_LABEL = re.compile(r"^(\([a-z]{1,2}\)|\d+\.\d+)\s")
MONEY_EVENTS = {"PayoutMade": "paid", "WagerCollected": "collected",
                "WagerReturned": "returned"}


def card(rank: str, suit: str, face_up: bool = True, hidden: bool = False) -> str:
    """A card drawn as a card; a face-down card shows its back (and, since a reading
    shoe knows it, its identity in small print unless `hidden`)."""
    sym, name, red = SUITS.get(suit, ("?", suit, False))
    title = f"{rank} of {name}" + ("" if face_up else " (face down)")
    if not face_up and hidden:
        return '<span class="card back" title="face down">&nbsp;</span>'
    cls = "card" + (" red" if red else "") + ("" if face_up else " down")
    return (f'<span class="{cls}" title="{escape(title)}" data-card="{e(rank)}{e(suit)}">'
            f'<b>{e(rank)}</b><i>{sym}</i></span>')


def hand_label(seat: Any, hand: Any) -> str:
    if seat is None:
        return "dealer"
    return f"seat {seat}" + (f" hand {hand}" if hand else "")


def describe(ev: dict[str, Any]) -> str:
    """One event in words (HTML), money in dollars, cards as cards."""
    t = ev["type"]
    who = hand_label(ev.get("seat"), ev.get("hand"))
    if t == "TableOpened":
        return f"table opened: {e(ev.get('jurisdiction'))} {e(ev.get('game'))}"
    if t == "ShoeLoaded":
        return f"shoe {e(ev.get('shoe_id'))} loaded, {e(ev.get('decks'))} decks"
    if t == "RoundStarted":
        seats = ", ".join(str(s) for s in ev.get("seats") or [])
        return f"round started, dealer <b>{e(ev.get('dealer_id'))}</b>, seats {e(seats)}"
    if t == "WagerPlaced":
        return f"{e(who)}: <b>{e(ev['kind'])}</b> wager {e(dollars(ev['amount']))}"
    if t == "CardDealt":
        to = "dealer" if ev.get("to") == "DEALER" else who
        return f"card to {e(to)} " + card(ev["rank"], ev["suit"], ev.get("face_up", True))
    if t in MONEY_EVENTS:
        return f"{e(who)}: {e(ev['kind'])} {MONEY_EVENTS[t]} {e(dollars(ev['amount']))}"
    if t == "PlayerDecision":
        return f"{e(who)}: <b>{e(ev['decision'])}</b>"
    if t == "InsuranceOffered":
        return "insurance offered"
    if t == "SwitchOffered":
        return f"switch offered to seat {e(ev.get('seat'))}"
    if t == "HoleCardInserted":
        bj = "blackjack" if ev.get("dealer_blackjack") else "no blackjack"
        return f"hole card into the reader: {bj}"
    if t == "HoleCardChecked":
        bj = "blackjack" if ev.get("dealer_blackjack") else "no blackjack"
        return f"the dealer peeked at the hole card: {bj}"
    if t == "HoleCardRevealed":
        return "hole card revealed"
    if t == "CardsCleared":
        return "dealer's cards cleared" if ev.get("seat") is None else f"{e(who)} cleared"
    if t == "RoundEnded":
        return "round ended"
    if t == "PlayerSeated":
        return e(seated_words(ev.get("seat"), ev.get("player_id"), ev.get("player_kind")))
    if t == "PlayerLeft":
        return e(left_words(ev.get("seat")))
    return e(t)


@dataclass
class Spot:
    """One hand on the layout (or the dealer's): cards and money by wager kind."""

    cards: list[tuple[str, str, bool]] = field(default_factory=list)
    wagers: dict[str, int] = field(default_factory=dict)
    money: list[tuple[str, str, int]] = field(default_factory=list)  # (what, kind, cents)
    decisions: list[str] = field(default_factory=list)


def layout(events: list[dict[str, Any]]) -> tuple[Spot, dict[tuple[int, int], Spot]]:
    dealer = Spot()
    hands: dict[tuple[int, int], Spot] = {}
    revealed = False
    splitting: tuple[int, int] | None = None  # the hand of the last SPLIT decision
    for ev in events:
        t = ev["type"]
        if t == "HoleCardRevealed":
            revealed = True
        seat: int = ev.get("seat") or 0
        hand: int = ev.get("hand") or 0
        if t == "WagerPlaced" and ev["kind"] in ("SPLIT", "FREE_SPLIT") and splitting \
                and splitting[0] == seat and len(hands.get(splitting, Spot()).cards) > 1:
            # the pair's second card moves to the new hand (no card event for it)
            hands.setdefault((seat, hand), Spot()).cards.insert(
                0, hands[splitting].cards.pop(1))
            splitting = None
        if t == "PlayerDecision" and ev["decision"] == "SPLIT":
            splitting = (seat, hand)
        if t == "PlayerDecision" and ev["decision"] == "SWITCH":
            a, b = hands.get((seat, 0)), hands.get((seat, 1))
            if a and b and len(a.cards) > 1 and len(b.cards) > 1:  # second cards swap
                a.cards[1], b.cards[1] = b.cards[1], a.cards[1]
        if t == "CardDealt":
            if ev.get("to") == "DEALER":
                dealer.cards.append((ev["rank"], ev["suit"], ev.get("face_up", True)))
            else:
                hands.setdefault((seat, hand), Spot()).cards.append(
                    (ev["rank"], ev["suit"], True))
        elif t == "WagerPlaced":
            spot = hands.setdefault((seat, hand), Spot())
            spot.wagers[ev["kind"]] = spot.wagers.get(ev["kind"], 0) + ev["amount"]
        elif t in MONEY_EVENTS:
            hands.setdefault((seat, hand), Spot()).money.append(
                (MONEY_EVENTS[t], ev["kind"], ev["amount"]))
        elif t == "PlayerDecision":
            hands.setdefault((seat, hand), Spot()).decisions.append(ev["decision"])
    if revealed:
        dealer.cards = [(r, s, True) for r, s, _ in dealer.cards]
    return dealer, dict(sorted(hands.items()))


def render_layout(events: list[dict[str, Any]]) -> str:
    dealer, hands = layout(events)
    out = ['<div class="layout"><div class="spot dealer"><h3>Dealer</h3><div class="cards">',
           "".join(card(r, s, up) for r, s, up in dealer.cards) or "<i>no cards</i>",
           "</div></div>"]
    for (seat, hand), spot in hands.items():
        wagers = ", ".join(f"{e(k)} {e(dollars(v))}" for k, v in spot.wagers.items())
        money = "".join(f'<li class="{w}">{e(k)} {w} {e(dollars(c))}</li>'
                        for w, k, c in spot.money)
        out.append(
            f'<div class="spot" data-seat="{seat}" data-hand="{hand}">'
            f"<h3>{e(hand_label(seat, hand))}</h3>"
            f'<div class="cards">{"".join(card(r, s) for r, s, _ in spot.cards)}</div>'
            f'<p class="wagers">{wagers or "no wager"}</p>'
            + (f'<p class="decisions">{e(" · ".join(spot.decisions))}</p>'
               if spot.decisions else "")
            + f'<ul class="money">{money}</ul></div>')
    out.append("</div>")
    return "".join(out)


def quotes(citation: str) -> list[Quote]:
    """Every text a citation rests on: a citation of two texts (`NZ Gazette 1996 No 7,
    Blackjack 8.1–8.2 (…); other wins 1 to 1 as posted, docs/regulations/posted-rules.txt
    (b)`) quotes both, each part on its own, in citation order."""
    parts = [p.strip() for p in citation.split(";")] if ";" in citation else []
    found = [q for q in (*(quote(p) for p in parts), quote(citation)) if q is not None]
    out: list[Quote] = []
    for q in found:
        if all((q.source, q.paragraphs) != (o.source, o.paragraphs) for o in out):
            out.append(q)
    return out


def render_quote(citation: str) -> str:
    found = quotes(citation)
    if not found:
        return ('<p class="noquote">No text in docs/ to quote for this citation (a posted '
                "rule whose text is not in docs/regulations/).</p>")
    return "".join(_blockquote(q) for q in found)


def _blockquote(q: Quote) -> str:
    parts = [f'<blockquote class="regulation" data-source="{e(q.source)}">']
    for label, text in q.paragraphs:
        first, *rest = text.splitlines()
        m = _LABEL.match(first)
        head = (f'<span class="para">{e(m.group(1))}</span> {e(first[m.end():])}' if m
                else f'<span class="para">§ {e(label)}</span><br>{e(first)}')
        body = "<br>".join([head, *(e(line) for line in rest)])
        parts.append(f'<p data-label="{e(label)}">{body}</p>')
    parts.append(f"<footer>{e(q.source)}</footer></blockquote>")
    return "".join(parts)


def change_words(t: dict[str, Any]) -> str:
    """One triage change in words: `closed (confirmed, $12.50)`, `assigned to ana`."""
    if t["action"] == "close":
        extra = t["disposition"].replace("_", " ")
        if t["disposition"] == "confirmed":
            extra += f", {dollars(t['amount'])}"
        return f"closed ({extra})"
    if t["action"] == "assign":
        return f"assigned to {t['assignee']}"
    if t["action"] == "note":
        return "note"
    words = {"acknowledge": "acknowledged", "investigate": "investigating",
             "escalate": "escalated", "reopen": "reopened"}
    return words.get(str(t["action"]), str(t["action"]))


def render_finding(v: dict[str, Any], triage: list[dict[str, Any]]) -> str:
    changes = [t for t in triage if t["violation_id"] == v["violation_id"]]
    ack = "".join(f'<p class="acked">{e(change_words(t))} by {e(t["who"])} at '
                  f'{clock(t["at"])} UTC' + (f": {e(t['note'])}" if t["note"] else "")
                  + "</p>" for t in reversed(changes))
    where = hand_label(v["seat"], v["hand"]) if v["seat"] else ""
    return (f'<div class="finding sev-{e(v["severity"])}" id="v-{e(v["violation_id"])}">'
            f'{badge(v["severity"])} <b class="code">{e(v["code"])}</b> '
            f'{e(where)} <span class="msg">{e(v["message"])}</span>'
            f'<p class="citation">{e(v["citation"])}</p>{render_quote(v["citation"])}'
            f"{ack}</div>")


def render_timeline(events: list[dict[str, Any]], violations: list[dict[str, Any]],
                    triage: list[dict[str, Any]]) -> str:
    at: dict[str, list[dict[str, Any]]] = {}
    for v in violations:
        at.setdefault(v["event_id"], []).append(v)
    rows = ['<div class="scroll"><table class="timeline"><thead><tr><th>device time (UTC)</th>'
            "<th>device</th><th>seq</th><th>event</th><th>what</th></tr></thead><tbody>"]
    for ev in events:
        found = at.pop(ev["event_id"], [])
        cls = ' class="has-finding"' if found else ""
        rows.append(
            f'<tr{cls} id="e-{e(ev["event_id"])}"><td class="t">{clock(ev["ts"])}</td>'
            f'<td>{e(ev["device_id"].removeprefix(ev["table_id"] + "-"))}</td>'
            f'<td class="n">{e(ev["seq"])}</td><td>{e(ev["type"])}</td>'
            f'<td>{describe(ev)}<div class="evid">{e(ev["event_id"])}</div></td></tr>')
        for v in found:
            rows.append(f'<tr class="finding-row"><td colspan="5">'
                        f"{render_finding(v, triage)}</td></tr>")
    rows.append("</tbody></table></div>")
    for vs in at.values():  # found on an event stored outside this round's rows
        for v in vs:
            rows.append(render_finding(v, triage))
    return "".join(rows)
