"""Local time from the timezone database: DST changes in Chicago; Phoenix and Honolulu keep none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from concerto.packs.city.cities import resolve
from concerto.packs.city.clock import format_offset, local_time


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("city", "instant", "local", "offset"),
    [
        # Spring forward, 2025-03-09 02:00 CST -> 03:00 CDT (08:00 UTC).
        ("Chicago", "2025-03-09T07:59:59", "2025-03-09T01:59:59-06:00", "-06:00"),
        ("Chicago", "2025-03-09T08:00:00", "2025-03-09T03:00:00-05:00", "-05:00"),
        # Fall back, 2025-11-02 02:00 CDT -> 01:00 CST (07:00 UTC): 01:30 happens twice.
        ("Chicago", "2025-11-02T06:30:00", "2025-11-02T01:30:00-05:00", "-05:00"),
        ("Chicago", "2025-11-02T07:30:00", "2025-11-02T01:30:00-06:00", "-06:00"),
        # Phoenix stays on MST, Honolulu on HST, all year.
        ("Phoenix", "2025-01-15T19:00:00", "2025-01-15T12:00:00-07:00", "-07:00"),
        ("Phoenix", "2025-07-15T19:00:00", "2025-07-15T12:00:00-07:00", "-07:00"),
        ("Phoenix", "2025-03-09T09:30:00", "2025-03-09T02:30:00-07:00", "-07:00"),
        ("Honolulu", "2025-01-15T22:00:00", "2025-01-15T12:00:00-10:00", "-10:00"),
        ("Honolulu", "2025-07-15T22:00:00", "2025-07-15T12:00:00-10:00", "-10:00"),
        # Denver (Mountain with DST) differs from Phoenix in summer only.
        ("Denver", "2025-07-15T19:00:00", "2025-07-15T13:00:00-06:00", "-06:00"),
        ("Anchorage", "2025-12-31T23:59:59", "2025-12-31T14:59:59-09:00", "-09:00"),
    ],
)
def test_local_time(city: str, instant: str, local: str, offset: str) -> None:
    result = local_time(resolve(city), at(instant))
    assert (result.datetime, result.utc_offset) == (local, offset)


def test_offset_format() -> None:
    assert format_offset(timedelta(hours=-5)) == "-05:00"
    assert format_offset(timedelta(0)) == "+00:00"
    assert format_offset(timedelta(hours=5, minutes=30)) == "+05:30"
    assert format_offset(timedelta(hours=-9, minutes=-30)) == "-09:30"


def test_naive_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        local_time(resolve("Chicago"), datetime(2025, 1, 1))
