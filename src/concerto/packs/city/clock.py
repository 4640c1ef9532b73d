"""Local date and time of a city at a given instant, from the IANA timezone database."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from concerto.packs.city.models import DateTimeResult

if TYPE_CHECKING:
    from concerto.packs.city.cities import City


def format_offset(offset: timedelta | None) -> str:
    """A UTC offset as `±HH:MM` ("-05:00", "+00:00", "+05:30")."""
    minutes = int((offset or timedelta()).total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}"


def local_time(city: City, at: datetime) -> DateTimeResult:
    """The wall-clock time in `city` at the instant `at` (which must be timezone-aware)."""
    from zoneinfo import ZoneInfo

    if at.tzinfo is None:
        raise ValueError("the instant must be timezone-aware")
    local = at.astimezone(ZoneInfo(city.timezone))
    return DateTimeResult(
        datetime=local.isoformat(timespec="seconds"),
        timezone=city.timezone,
        utc_offset=format_offset(local.utcoffset()),
        city=city.label,
    )
