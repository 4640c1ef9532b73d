"""Time words for metric windows: calendar periods, durations and comparisons, relative to the
query's clock, at year boundaries and in leap years (no server needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from concerto.packs.metrics.parser import read_text
from concerto.packs.metrics.timeparse import (
    TimeParseError,
    choose_step,
    duration_text,
    minus,
    parse_time_range,
    read_windows,
)

MID_JUNE = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)  # a Sunday
NEW_YEAR = datetime(2025, 1, 1, 0, 30, tzinfo=UTC)  # a Wednesday, half an hour into the year
LEAP_DAY_AFTER = datetime(2024, 3, 1, 0, 30, tzinfo=UTC)


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "now", "start", "end"),
    [
        # calendar periods through concerto.nlp.periods: first day 00:00 to min(last day + 1, now)
        ("CPU usage this year", MID_JUNE, "2025-01-01", MID_JUNE),
        ("CPU usage this year so far", MID_JUNE, "2025-01-01", MID_JUNE),
        ("memory used year to date", MID_JUNE, "2025-01-01", MID_JUNE),
        ("CPU usage this quarter", MID_JUNE, "2025-04-01", MID_JUNE),
        ("CPU usage last quarter", MID_JUNE, "2025-01-01", "2025-04-01"),
        ("memory used in the first half of 2024", MID_JUNE, "2024-01-01", "2024-07-01"),
        ("disk writes in H2", MID_JUNE, "2024-07-01", "2025-01-01"),  # the latest H2 that has started
        ("CPU usage since March", MID_JUNE, "2025-03-01", MID_JUNE),
        ("CPU usage in 2024", MID_JUNE, "2024-01-01", "2025-01-01"),
        ("CPU usage last month", MID_JUNE, "2025-05-01", "2025-06-01"),
        ("CPU usage last week", MID_JUNE, "2025-06-02", "2025-06-09"),
        ("CPU usage this week", MID_JUNE, "2025-06-09", MID_JUNE),
        # the pack's own durations stay durations
        ("network traffic over the past 90 days", MID_JUNE, MID_JUNE - timedelta(days=90), MID_JUNE),
        ("CPU usage over the last month", MID_JUNE, "2025-05-15T12:00", MID_JUNE),
        ("CPU usage over the past year", MID_JUNE, "2024-06-15T12:00", MID_JUNE),
        ("CPU usage in the last 2 hours", MID_JUNE, MID_JUNE - timedelta(hours=2), MID_JUNE),
        ("what was CPU usage 2 hours ago?", MID_JUNE, "2025-06-15T09:55", "2025-06-15T10:00"),
        ("memory used an hour ago", NEW_YEAR, "2024-12-31T23:25", "2024-12-31T23:30"),
        # year boundary: half an hour into 2025
        ("CPU usage this year", NEW_YEAR, "2025-01-01", NEW_YEAR),
        ("memory used year to date", NEW_YEAR, "2025-01-01", NEW_YEAR),
        ("CPU usage this quarter", NEW_YEAR, "2025-01-01", NEW_YEAR),
        ("CPU usage this month", NEW_YEAR, "2025-01-01", NEW_YEAR),
        ("CPU usage today", NEW_YEAR, "2025-01-01", NEW_YEAR),
        ("CPU usage last year", NEW_YEAR, "2024-01-01", "2025-01-01"),  # 366 days: a leap year
        ("CPU usage last quarter", NEW_YEAR, "2024-10-01", "2025-01-01"),
        ("CPU usage last month", NEW_YEAR, "2024-12-01", "2025-01-01"),
        ("CPU usage yesterday", NEW_YEAR, "2024-12-31", "2025-01-01"),
        ("CPU usage this week", NEW_YEAR, "2024-12-30", NEW_YEAR),  # the week began in 2024
        ("CPU usage last week", NEW_YEAR, "2024-12-23", "2024-12-30"),
        ("CPU usage in H2", NEW_YEAR, "2024-07-01", "2025-01-01"),
        ("CPU usage over the last hour", NEW_YEAR, "2024-12-31T23:30", NEW_YEAR),
        ("CPU usage this year so far", t("2024-12-31T23:00"), "2024-01-01", "2024-12-31T23:00"),
        # leap years
        ("memory used yesterday", LEAP_DAY_AFTER, "2024-02-29", "2024-03-01"),
        ("CPU usage in February 2024", MID_JUNE, "2024-02-01", "2024-03-01"),
        ("CPU usage in February 2025", MID_JUNE, "2025-02-01", "2025-03-01"),
        ("CPU usage last month", t("2024-03-10T08:00"), "2024-02-01", "2024-03-01"),
        ("CPU usage over the last month", t("2024-03-31T12:00"), "2024-02-29T12:00", "2024-03-31T12:00"),
        ("CPU usage over the last month", t("2025-03-31T12:00"), "2025-02-28T12:00", "2025-03-31T12:00"),
        ("CPU usage over the past year", t("2024-02-29T12:00"), "2023-02-28T12:00", "2024-02-29T12:00"),
        ("CPU usage since February", t("2024-02-29T10:00"), "2024-02-01", "2024-02-29T10:00"),
        ("CPU usage the first quarter of 2024", MID_JUNE, "2024-01-01", "2024-04-01"),
    ],
)
def test_windows(text: str, now: datetime, start: str | datetime, end: str | datetime) -> None:
    window = parse_time_range(text, now).time_range
    want = tuple(x if isinstance(x, datetime) else t(x) for x in (start, end))
    assert (window.start_time, window.end_time) == want


def test_a_year_window_keeps_under_prometheus_point_limits() -> None:
    window = parse_time_range("CPU usage last year", NEW_YEAR).time_range
    assert window.step_seconds == 172800  # two days: 183 points for 366 days
    assert window.duration_seconds / window.step_seconds <= 250 < 11000
    assert choose_step(400 * 86400) == 172800


@pytest.mark.parametrize(
    ("text", "now"),
    [
        ("CPU usage in Q3 2025", MID_JUNE),  # not started yet
        ("CPU usage next week", MID_JUNE),
        ("CPU usage in 2025-13", MID_JUNE),
        ("CPU usage in H1 2026", NEW_YEAR),
    ],
)
def test_windows_that_cannot_be_used(text: str, now: datetime) -> None:
    with pytest.raises(TimeParseError):
        parse_time_range(text, now)


def test_calendar_arithmetic_keeps_the_day_or_the_month_end() -> None:
    assert minus(t("2024-03-31T12:00"), 1, "month") == t("2024-02-29T12:00")
    assert minus(t("2024-02-29T00:00"), 1, "year") == t("2023-02-28T00:00")
    assert minus(t("2025-01-15T00:00"), 1, "quarter") == t("2024-10-15T00:00")
    assert minus(t("2025-01-01T00:30"), 1, "day") == t("2024-12-31T00:30")
    assert duration_text(86400) == "1d" and duration_text(366 * 86400) == "366d"
    assert duration_text(5400) == "90m" and duration_text(45) == "45s" and duration_text(7200) == "2h"


def _comparison(text: str, now: datetime) -> tuple[datetime, datetime, datetime, datetime, int | None]:
    parts = read_text(text, now)
    assert parts.comparison is not None, text
    base = parts.comparison.baseline
    return (
        parts.time_range.start_time,
        parts.time_range.end_time,
        base.start_time,
        base.end_time,
        parts.comparison.offset_seconds,
    )


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        # "now vs the same hour yesterday": the last hour, a day earlier
        (
            "CPU now vs the same hour yesterday",
            MID_JUNE,
            (MID_JUNE - timedelta(hours=1), MID_JUNE, t("2025-06-14T11:00"), t("2025-06-14T12:00"), 86400),
        ),
        # this week so far against the same days of last week
        (
            "memory used this week compared to last week",
            MID_JUNE,
            (t("2025-06-09"), MID_JUNE, t("2025-06-02"), t("2025-06-08T12:00"), 7 * 86400),
        ),
        # a month back on the calendar: June 1 against May 1 is 31 days
        (
            "memory used this month compared to last month",
            MID_JUNE,
            (t("2025-06-01"), MID_JUNE, t("2025-05-01"), t("2025-05-15T12:00"), 31 * 86400),
        ),
        # a year back from 1 January 2025 crosses the leap day: 366 days
        (
            "CPU usage this year vs last year",
            NEW_YEAR,
            (t("2025-01-01"), NEW_YEAR, t("2024-01-01"), t("2024-01-01T00:30"), 366 * 86400),
        ),
        (
            "CPU usage today compared with yesterday",
            NEW_YEAR,
            (t("2025-01-01"), NEW_YEAR, t("2024-12-31"), t("2024-12-31T00:30"), 86400),
        ),
        (
            "CPU usage over the last 10 minutes compared to 10 minutes earlier",
            MID_JUNE,
            (t("2025-06-15T11:50"), MID_JUNE, t("2025-06-15T11:40"), t("2025-06-15T11:50"), 600),
        ),
        (
            "system load week over week",
            MID_JUNE,
            (t("2025-06-15T11:00"), MID_JUNE, t("2025-06-08T11:00"), t("2025-06-08T12:00"), 7 * 86400),
        ),
        # two named periods: the later is the current one; a shorter earlier one is its own query
        (
            "CPU usage in March vs February",
            MID_JUNE,
            (t("2025-03-01"), t("2025-04-01"), t("2025-02-01"), t("2025-03-01"), None),
        ),
        # all of January: 31 days against February's 29, so a range query of its own
        (
            "CPU usage in February 2024 compared to January 2024",
            MID_JUNE,
            (t("2024-02-01"), t("2024-03-01"), t("2024-01-01"), t("2024-02-01"), None),
        ),
    ],
)
def test_comparisons(text: str, now: datetime, expected: tuple[datetime, ...]) -> None:
    assert _comparison(text, now) == expected


def test_shift_words_do_not_become_windows_of_their_own() -> None:
    found = read_windows("CPU now vs the same hour yesterday", MID_JUNE)
    assert found.shift is not None and found.shift.same == "hour"
    assert [w.kind for w in found.windows] == ["now"]  # "yesterday" is the shift, not a window
