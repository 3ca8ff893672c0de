"""The site's clock for people: `pitwatch.sitetime` defines it (the console's shift
pages and game protection's hold by shift share one definition of a shift)."""

from __future__ import annotations

from pitwatch.sitetime import SiteTime, parse_hhmm

__all__ = ["SiteTime", "parse_hhmm"]
