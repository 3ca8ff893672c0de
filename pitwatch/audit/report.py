"""What the audit prints: a summary for people, violations as a table or JSON Lines."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from ..engine.violation import Violation
from ..events.keys import NOT_CHECKED, WHERE_KEYS, KeyRegistry
from ..money import dollars
from ..terminal import printable
from .run import AuditReport

SEVERITY_ORDER = {"CRITICAL": 0, "HIGH": 1, "MEDIUM": 2, "LOW": 3}


def summary(rep: AuditReport, out: IO[str], keys: KeyRegistry | None = None,
            keys_file: str | Path | None = None) -> None:
    """The audit's summary; `keys`: the registry the signatures were checked against,
    read from `keys_file` (named with its SHA-256)."""
    games = ", ".join(f"{g} {n}" for g, n in rep.games.most_common()) or "none"
    sev = ", ".join(f"{s} {rep.by_severity[s]}" for s in SEVERITY_ORDER if rep.by_severity[s])
    if rep.files or rep.events:
        print(printable(f"audited {rep.events:,} events from {rep.files} file(s): "
                        f"{len(rep.tables)} tables, {rep.rounds:,} rounds ({games})"), file=out)
    else:
        print(printable(f"no new input: the store's books closed, {rep.rounds:,} round(s) "
                        f"judged ({games})"), file=out)
    if rep.rejected:
        print(f"rejected {rep.rejected:,} malformed record(s): kept aside with their reasons",
              file=out)
    if rep.refused:
        print(f"refused {rep.refused:,} event(s) the record did not accept (a different copy "
              "of a recorded event, a late one): never stored, kept aside with their reasons",
              file=out)
    print(f"money: wagered {dollars(rep.wagered)}, paid {dollars(rep.paid)}, collected "
          f"{dollars(rep.collected)}, returned {dollars(rep.returned)}", file=out)
    total = sum(rep.by_code.values())
    known = sum(rep.known.values())
    if known:
        print(f"violations: {total:,} new" + (f" ({sev})" if sev else "")
              + f"; {known:,} already in the store (found by an earlier audit of the same "
              "input)", file=out)
    else:
        print(f"violations: {total:,}" + (f" ({sev})" if sev else ""), file=out)
    for code, n in rep.by_code.most_common():
        print(f"  {n:6,}  {code}", file=out)
    if known:
        print("  already in the store: " + ", ".join(
            f"{code} {n:,}" for code, n in rep.known.most_common()), file=out)
    if rep.incomplete:
        print(f"incomplete rounds: {rep.incomplete:,}", file=out)
    if rep.open_rounds:
        oldest = rep.open_rounds[0]
        print(printable(f"rounds left open in the store: {len(rep.open_rounds):,}, the "
                        f"oldest {oldest.round_id} open since {when(oldest.since)} by its "
                        "devices' clock: each is judged when its table's next events come, "
                        "or by --final"), file=out)
    if rep.unclosed:
        print(printable("books not closed: " + ", ".join(rep.unclosed) + " (no stored state "
                        "agrees with the table's stored events: audit its files again "
                        "into the store, then --final)"), file=out)
    if rep.signing_devices is None:
        print(f"{NOT_CHECKED}: no key registry ({WHERE_KEYS})", file=out)
    else:
        print(f"signatures: verified; {rep.signing_devices:,} device(s) in the key registry "
              "must sign", file=out)
    if keys is not None:
        print(printable(f"key registry: {keys_file or 'given'}, sha256 {keys.sha256}"),
              file=out)
    if rep.engine_errors:
        first = rep.engine_errors[0]
        print(printable(f"engine errors: {len(rep.engine_errors):,} (bugs in pitwatch, not "
                        "findings about the tables; each logged with its event; first: "
                        f"{first})"), file=out)


def when(ms: int) -> str:
    """A device time (ms since the epoch, UTC) in UTC and in this site's local time."""
    utc = datetime.fromtimestamp(ms / 1000, UTC)
    local = utc.astimezone()
    return f"{utc:%Y-%m-%d %H:%M:%S} UTC (local {local:%Y-%m-%d %H:%M:%S %Z})"


def tables(rep: AuditReport, out: IO[str], limit: int | None = None) -> None:
    """The new violations as a table, then those already in the store, apart."""
    known = rep.known_ids
    table((v for v in rep.violations if v.violation_id not in known), out, limit)
    if known:
        print("\nalready in the store (found by an earlier audit of the same input):",
              file=out)
        table((v for v in rep.violations if v.violation_id in known), out, limit)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def table(violations: Iterable[Violation], out: IO[str], limit: int | None = None) -> None:
    vs = sorted(violations, key=lambda v: (SEVERITY_ORDER.get(v.severity, 9), v.detected_at))
    shown = vs if limit is None else vs[:limit]
    if not shown:
        return
    print(f"\n{'SEVERITY':8}  {'CODE':32}  {'TABLE':9}  {'ROUND':16}  {'SEAT':>4}  "
          f"{'CITATION':28}  MESSAGE", file=out)
    for v in shown:
        seat = "" if v.seat is None else f"{v.seat}/{v.hand}"
        print(printable(f"{v.severity:8}  {v.code:32}  {v.table_id:9}  {v.round_id:16}  "
                        f"{seat:>4}  {_clip(v.citation, 28):28}  {v.message}"), file=out)
    if len(vs) > len(shown):
        print(f"… and {len(vs) - len(shown):,} more (--limit 0 for all, or --format jsonl)",
              file=out)
