"""The site's clock for people: its time zone, when its gaming day starts, its shifts.

Data stay UTC; only what a page shows and what a summary groups by are the site's local
time. A gaming day is named by the local date it starts on (a 06:00 start: 05:59 on
the 5th belongs to the gaming day of the 4th). One definition for every stage: the
console's shift pages and the hold by shift (`pitwatch.protect.hold`) group by it. The
commands that take it (`pitwatch serve`, `pitwatch protect`) take it with the same flags
(`add_site_flags`, `site_from_flags`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def parse_hhmm(value: str) -> time:
    """"06:00" -> 06:00, or ValueError naming the expected form."""
    try:
        h, m = value.split(":")
        return time(int(h), int(m))
    except ValueError as exc:
        raise ValueError(f"expected HH:MM (00:00 to 23:59), got {value[:20]!r}") from exc


@dataclass(frozen=True, slots=True)
class SiteTime:
    """tz: an IANA zone; day_start: when a gaming day starts, local; shifts: the local
    times each shift starts, the first at day_start."""

    tz: str = "UTC"
    day_start: time = time(6, 0)
    shifts: tuple[time, ...] = (time(6, 0), time(14, 0), time(22, 0))

    @classmethod
    def make(cls, tz: str, day_start: str, shifts: str) -> SiteTime:
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {tz[:40]!r} (an IANA name such as "
                             "America/New_York)") from exc
        try:
            start = parse_hhmm(day_start)
        except ValueError as exc:
            raise ValueError(f"the gaming day's start: {exc}") from exc
        try:
            starts = tuple(sorted({parse_hhmm(s.strip()) for s in shifts.split(",")
                                   if s.strip()}))
        except ValueError as exc:
            raise ValueError(f"the shifts: {exc}") from exc
        if start not in starts:
            raise ValueError(f"the first shift must start with the gaming day ({day_start})")
        # in gaming-day order: day_start first, those before it (past midnight) last
        ordered = tuple(sorted(starts, key=lambda t: (t < start, t)))
        return cls(tz, start, ordered)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    def local(self, ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, UTC).astimezone(self.zone)

    def gaming_day(self, ms: int) -> date:
        """The gaming day an instant belongs to."""
        t = self.local(ms)
        d = t.date()
        return d - timedelta(days=1) if t.time() < self.day_start else d

    def _at(self, day: date, at: time) -> int:
        """UTC ms of a local wall time on the gaming day `day` (times before day_start
        fall on the next calendar date)."""
        cal = day + timedelta(days=1) if at < self.day_start else day
        local = datetime.combine(cal, at, self.zone)
        return int(local.astimezone(UTC).timestamp() * 1000)

    def day_bounds(self, day: date) -> tuple[int, int]:
        """[start, end) of a gaming day in UTC ms."""
        return self._at(day, self.day_start), self._at(day + timedelta(days=1), self.day_start)

    def shift_bounds(self, day: date, n: int) -> tuple[int, int]:
        """[start, end) in UTC ms of shift n (0-based) of a gaming day."""
        if not 0 <= n < len(self.shifts):
            raise ValueError(f"shift must be 1 to {len(self.shifts)}")
        start = self._at(day, self.shifts[n])
        end = (self._at(day, self.shifts[n + 1]) if n + 1 < len(self.shifts)
               else self.day_bounds(day)[1])
        return start, end

    def shift_of(self, ms: int) -> tuple[date, int]:
        day = self.gaming_day(ms)
        for n in range(len(self.shifts)):
            lo, hi = self.shift_bounds(day, n)
            if lo <= ms < hi:
                return day, n
        return day, 0  # unreachable: the shifts tile the day

    def shift_name(self, n: int) -> str:
        start = self.shifts[n]
        end = self.shifts[(n + 1) % len(self.shifts)]
        return f"shift {n + 1} ({start:%H:%M}–{end:%H:%M})"

    def show(self, ms: int) -> str:
        """Local time with its zone, then UTC: `2026-12-04 17:02:03 EST (22:02:03 UTC)`."""
        t = self.local(ms)
        u = datetime.fromtimestamp(ms / 1000, UTC)
        if self.tz == "UTC":
            return f"{u:%Y-%m-%d %H:%M:%S} UTC"
        return f"{t:%Y-%m-%d %H:%M:%S} {t.tzname()} ({u:%H:%M:%S} UTC)"


def add_site_flags(p: argparse.ArgumentParser, used_for: str) -> None:
    """The site's time as flags (--tz, --gaming-day-start, --shifts), their defaults
    `SiteTime()`'s; `used_for` says what the command shows or groups by it."""
    site = SiteTime()
    p.add_argument("--tz", default=site.tz, metavar="ZONE",
                   help=f"the site's time zone, an IANA name such as America/New_York, "
                   f"for {used_for} (default %(default)s)")
    p.add_argument("--gaming-day-start", default=f"{site.day_start:%H:%M}", metavar="HH:MM",
                   help="local time a gaming day starts (default %(default)s)")
    p.add_argument("--shifts", default=",".join(f"{t:%H:%M}" for t in site.shifts),
                   metavar="HH:MM,...", help="local times the shifts start, the first with "
                   "the gaming day (default %(default)s)")


def site_from_flags(args: argparse.Namespace) -> SiteTime:
    """The site's time the flags of `add_site_flags` give, or ValueError saying which
    part is wrong."""
    return SiteTime.make(args.tz, args.gaming_day_start, args.shifts)
