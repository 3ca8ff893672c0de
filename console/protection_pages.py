"""The game-protection pages: the protection list, a seat session, a dealer, and the
observations a table or round page shows. Observations are evidence to weigh, never
violations: no severity badge, no triage. Every id goes through `e` (text) or `u` (a
link's path segment)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from pitwatch.money import dollars
from pitwatch.protect.observation import CATALOGUE, DEALER, SEAT_SESSION, SHIFT, evidence_text

from .charts import bet_chart, hold_chart
from .html import context, e, local, page, u
from .protection import SEATED_ROUNDS, Seated, SeatSessions

KINDS = {"RATED": "rated player", "ANONYMOUS": "anonymous session"}


def subject_link(o: dict[str, Any]) -> str:
    """What an observation is about, linked to its page."""
    if o["scope"] == SEAT_SESSION:
        return (f'<a class="id" href="/sessions/{u(o["subject"])}">seat {e(o["seat"])} '
                f'at {e(o["table_id"])}</a>')
    if o["scope"] == DEALER:
        return f'dealer <a class="id" href="/dealers/{u(o["subject"])}">{e(o["subject"])}</a>'
    if o["scope"] == SHIFT:  # subject: "gaming day/shift number"
        day, _, n = str(o["subject"]).partition("/")
        q = urlencode({"day": day, "shift": n})
        return f'shift <a class="id" href="/shift?{e(q)}">{e(o["subject"])}</a>'
    return f'table <a class="id" href="/tables/{u(o["subject"])}">{e(o["subject"])}</a>'


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.3g}"


def _f1(x: Any) -> str:
    return f"{float(x):.1f}"


def _f2(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def _rounds(ids: list[str]) -> str:
    return ", ".join(f'<a class="id" href="/rounds/{u(r)}">{e(r)}</a>' for r in ids) or "—"


def observations_table(obs: list[dict[str, Any]], caption: str) -> str:
    """Observations as rows: what, about whom, statistic, p-value or likelihood ratio,
    strength, the rounds that carry the weight, and the detector's sentence."""
    if not obs:
        return f'<p class="note">{e(caption)}: none.</p>'
    rows = "".join(
        f'<tr class="obs" data-code="{e(o["code"])}"><td><b>{e(o["code"])}</b><br>'
        f'<span class="note">{e(CATALOGUE.get(o["code"], ""))}</span></td>'
        f"<td>{subject_link(o)}{' (inferred)' if o['inferred'] else ''}</td>"
        f'<td class="n">{e(o["statistic"])} = {e(_g(o["value"]))}</td>'
        f'<td class="n">{e(evidence_text(o))}</td><td class="n">{e(_f2(o["strength"]))}</td>'
        f'<td class="n">{e(o["rounds"])}</td><td class="ids">{_rounds(o["weight_rounds"])}</td>'
        f'<td>{e(o["message"])}</td></tr>' for o in obs)
    return (f'<div class="scroll"><table class="observations"><caption>{e(caption)}'
            "</caption><thead><tr><th>observation</th><th>about</th><th>statistic</th>"
            "<th>evidence</th><th>strength</th><th>rounds</th><th>rounds that carry the "
            "weight</th><th>what it says</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def protection_list(got: dict[str, Any]) -> str:
    offset, limit, total = got["offset"], got["limit"], got["total"]
    nav = []
    if offset > 0:
        nav.append(f'<a rel="prev" href="/protection?'
                   f'{e(urlencode({"offset": max(0, offset - limit)}))}">newer / stronger</a>')
    if offset + limit < total:
        nav.append(f'<a rel="next" href="/protection?'
                   f'{e(urlencode({"offset": offset + limit}))}">more</a>')
    shown = (f"{offset + 1} to {offset + len(got['observations'])} of {total}"
             if got["observations"] else f"none of {total}")
    body = (f"<h1>Game protection</h1><p class=\"lede\">What the protection detectors "
            "observed (docs/analytics.md): bets that follow the count, decisions only the "
            "hole card makes right, a hold away from theoretical, a dealer's error rate "
            "above the floor's. Evidence to weigh, not violations. Strongest first; of the "
            f"same strength, newest first. Showing {e(shown)}.</p>"
            + observations_table(got["observations"], "observations")
            + f'<p class="pager">{" · ".join(nav)}</p>')
    return page("Game protection", body, active="/protection")


def _who(s: dict[str, Any]) -> str:
    if s["player_id"]:
        return (f'{e(KINDS.get(s["player_kind"] or "", s["player_kind"] or ""))} '
                f'<b class="id">{e(s["player_id"])}</b>')
    return "no player named: the session is inferred from the seat's wagers"


def session_page(s: dict[str, Any]) -> str:
    when = (f"{local(s['started_at'])} → {local(s['ended_at'])}"
            if s["started_at"] is not None and s["ended_at"] is not None else "not recorded")
    weight = sorted({r for o in s["observations"] for r in o["weight_rounds"]})
    dealers = ", ".join(f'<a class="id" href="/dealers/{u(d)}">{e(d)}</a>'
                        for d in s["dealers"]) or "—"
    first = s["rounds"][0] if s["rounds"] else ""
    how = "inferred from the wagers" if s["inferred"] else "from the seat events"
    facts = (f'<dl class="facts"><dt>who</dt><dd>{_who(s)}</dd>'
             f'<dt>where</dt><dd>seat {e(s["seat"])} at table <a class="id" href="/tables/'
             f'{u(s["table_id"])}">{e(s["table_id"])}</a></dd>'
             f"<dt>when</dt><dd>{when}</dd>"
             f'<dt>rounds</dt><dd>{len(s["rounds"])}, first <a class="id" href="/rounds/'
             f'{u(first)}">{e(first)}</a></dd><dt>dealers</dt><dd>{dealers}</dd>'
             f"<dt>session</dt><dd>{how}</dd></dl>")
    body = (f'<h1>Seat session <span class="id">{e(s["session_id"])}</span></h1>{facts}'
            + observations_table(s["observations"], "observations of this session")
            + '<h2>Bet against true count</h2><figure class="chart">'
            + bet_chart(s["points"], weight, s["session_id"])
            + "<figcaption>Each dot a round: the seat's main wager against the Hi-Lo true "
              "count before the round's first card (running count over the decks not yet "
              "dealt). Larger dots: the rounds that carry the weight. The line: the mean "
              "bet at each whole true count. A flat bettor's dots lie level; a counter's "
              "rise to the right.</figcaption></figure>")
    return page(f"Seat session {s['session_id']}", body)


def dealer_page(d: dict[str, Any]) -> str:
    tables = "".join(
        f'<tr><td class="id"><a href="/tables/{u(t["table_id"])}">{e(t["table_id"])}</a></td>'
        f'<td class="n">{e(t["rounds"])}</td><td class="t">{local(t["first_ms"])}</td>'
        f'<td class="t">{local(t["last_ms"])}</td></tr>' for t in d["tables"])
    rounds = "".join(
        f'<tr><td class="id"><a href="/rounds/{u(r["round_id"])}">{e(r["round_id"])}</a></td>'
        f'<td class="id">{e(r["table_id"])}</td><td class="t">{local(r["at"])}</td>'
        f'<td class="n">{e(dollars(r.get("wagered", 0)))}</td>'
        f'<td class="n">{e(dollars(r.get("paid", 0)))}</td>'
        f'<td class="n">{e(dollars(r.get("collected", 0)))}</td>'
        f'<td class="n">{e(r.get("violations") or "")}</td></tr>' for r in d["rounds"])
    errors = [o for o in d["observations"] if o["code"] == "DEALER_ERROR_RATE"]
    rate = ("".join(
        f'<p class="obs-line">{e(o["message"])} ({e(evidence_text(o))}; the floor: '
        f'{e(_f1(o["details"].get("floor_per_100", 0)))} per 100 rounds)</p>'
        for o in errors) or '<p class="note">No error-rate observation: the dealer\'s '
                             "rounds with errors are not above the floor's rate by the "
                             "Poisson test's threshold.</p>")
    hold = d["hold"]
    site = context().site
    body = (f'<h1>Dealer <span class="id">{e(d["dealer_id"])}</span></h1>'
            f"<h2>Error rate against the floor's</h2>{rate}"
            + observations_table(d["observations"], "observations of this dealer")
            + "<h2>Hold against theoretical</h2><figure class=\"chart\">"
            + hold_chart(hold, f"dealer {d['dealer_id']}", site.show)
            + f"<figcaption>The dealer's latest {len(hold)} blackjack rounds (of at most "
              f"{e(d['limit'])}) in time order: the house's cumulative result on the hand "
              "wagers (line), its expectation under the posted rules and the decisions "
              "taken (dashed), and the band of 3 standard deviations around it (shaded)."
              "</figcaption></figure>"
            + "<h2>Tables</h2><div class=\"scroll\"><table class=\"dealer-tables\"><thead>"
              "<tr><th>table</th><th>rounds</th><th>first round</th><th>last round</th>"
              f"</tr></thead><tbody>{tables}</tbody></table></div>"
            + f"<h2>Rounds, newest first (at most {e(d['limit'])})</h2><div class=\"scroll\">"
              "<table class=\"rounds\"><thead><tr><th>round</th><th>table</th><th>started</th>"
              "<th>wagered</th><th>paid</th><th>collected</th><th>violations</th></tr></thead>"
              f"<tbody>{rounds}</tbody></table></div>")
    return page(f"Dealer {d['dealer_id']}", body)


def round_seats(events: Iterable[dict[str, Any]]) -> list[int]:
    """The seats of a round: those its RoundStarted names and those wagered at."""
    seats: set[int] = set()
    for ev in events:
        if ev.get("type") == "RoundStarted":
            seats.update(int(x) for x in ev.get("seats") or [])
        elif ev.get("type") == "WagerPlaced" and ev.get("seat"):
            seats.add(int(ev["seat"]))
    return sorted(seats)


def _seated_who(x: Seated) -> str:
    if x.player_id:
        return (f'{e(KINDS.get(x.player_kind or "", x.player_kind or ""))} '
                f'<b class="id">{e(x.player_id)}</b>')
    return "inferred from the wagers" if x.inferred else "from the seat events"


def round_seat_path(round_id: str, seat: int) -> str:
    """The link that finds a seat's session in a round when it is followed (the route
    `/rounds/{round}/seats/{seat}/session`), ready for an HTML attribute."""
    return f"/rounds/{u(round_id)}/seats/{e(int(seat))}/session"


def seated_section(round_id: str, seats: Iterable[int]) -> str:
    """For a round page: each seat of the round (from its own events) linked to where
    its seat session is found when asked, so the page itself reads no fold."""
    rows = "".join(
        f'<tr data-seat="{e(seat)}"><td class="n">{e(seat)}</td><td><a class="id" '
        f'href="{round_seat_path(round_id, seat)}">seat session at seat {e(seat)}</a>'
        "</td></tr>" for seat in sorted(set(seats)))
    if not rows:
        return '<p class="note">Seat sessions: no seat in this round.</p>'
    return ('<div class="scroll"><table class="seated"><caption>seat sessions: each seat '
            "of this round, its session found when the link is followed (the table's "
            f"rounds read again back to where it began, {e(SEATED_ROUNDS)} rounds at "
            "most)</caption><thead><tr><th>seat</th><th>seat session</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def seat_sessions_page(x: SeatSessions) -> str:
    """The resolver's page when it does not lead straight to one session's page: the
    round is not read (judgement suspended), the seat has no session, its session began
    before the rounds read back, or more than one session sat there in the round."""
    head = (f'<h1>Seat {e(x.seat)} in round <a class="id" href="/rounds/{u(x.round_id)}">'
            f'{e(x.round_id)}</a></h1><p>table <a class="id" href="/tables/'
            f'{u(x.table_id)}">{e(x.table_id)}</a></p>')
    if x.sessions is None:
        body = ('<p class="note seated">Seat sessions: not read for this round. It is '
                "open, or its record has a break, and the detectors suspend judgement on "
                "it until the record decides it.</p>")
    elif not x.sessions:
        body = ('<p class="none seated">Seat session: none. No main wager at the seat in '
                "a round the detectors read, and no recorded stay holds it.</p>")
    else:
        rows = "".join(
            "<tr><td>" + (f'<a class="id" href="/sessions/{u(s.session_id)}">'
                          f"{e(s.session_id)}</a>" if s.session_id is not None else
                          f"began more than {e(SEATED_ROUNDS)} rounds before this one "
                          "(not read back that far, so not linked)")
            + f"</td><td>{_seated_who(s)}</td></tr>" for s in x.sessions)
        body = ('<div class="scroll"><table class="seated"><caption>seat sessions seated '
                "at this seat in this round</caption><thead><tr><th>seat session</th>"
                f"<th>who</th></tr></thead><tbody>{rows}</tbody></table></div>")
    return page(f"Seat {x.seat} in round {x.round_id}", head + body)


def protection_section(obs: list[dict[str, Any]], dealers: list[str], seated: str = ""
                       ) -> str:
    """For a table or round page: its observations and links to its dealers' pages
    (and, for a round, `seated`: its `seated_section`)."""
    links = ", ".join(f'<a class="id" href="/dealers/{u(d)}">{e(d)}</a>' for d in dealers)
    return ("<h2>Game protection</h2>"
            + (f'<p class="dealer-links">dealer pages: {links}</p>' if links else "")
            + seated + observations_table(obs, "observations"))
