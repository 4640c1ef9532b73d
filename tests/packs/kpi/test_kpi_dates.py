"""Date rules of 000_*.txt: previous calendar months relative to now, inclusive ranges."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concerto.packs.kpi.dates import PeriodError, find_period, last_n_months
from concerto.packs.kpi.interpret import period_query
from concerto.packs.kpi.months import Month, month_range

nows = st.dates(min_value=date(1901, 1, 1), max_value=date(2199, 12, 31))


@given(nows, st.integers(min_value=1, max_value=120))
def test_last_n_months_covers_exactly_n_whole_months_before_the_current_one(today: date, n: int) -> None:
    first, last = last_n_months(today, n)
    assert len(month_range(first, last)) == n
    assert last.shift(1) == Month.of(today)
    query = period_query("attrition-rate", "home-loan", find_period(f"previous {n} months", today))  # type: ignore[arg-type]
    assert query.range_months == n
    assert query.start == first.first_day and query.start.day == 1  # type: ignore[union-attr]
    assert query.end == last.last_day  # type: ignore[union-attr]
    assert query.end < today.replace(day=1)  # type: ignore[operator]


@given(nows)
def test_last_month_is_the_previous_calendar_month(today: date) -> None:
    for phrase in ("last month", "previous month"):
        period = find_period(f"home-loan attrition rate {phrase}", today)
        assert period is not None and period.single
        assert period.first == Month.of(today).shift(-1)
        query = period_query("attrition-rate", "home-loan", period)
        assert query.month is not None and query.month.day == 1


@pytest.mark.parametrize(
    ("text", "today", "first", "last"),
    [
        ("last month", date(2025, 6, 15), Month(2025, 5), Month(2025, 5)),
        ("last month", date(2025, 1, 1), Month(2024, 12), Month(2024, 12)),
        ("previous 4 months", date(2025, 6, 15), Month(2025, 2), Month(2025, 5)),
        ("last 3 months", date(2025, 2, 10), Month(2024, 11), Month(2025, 1)),
        ("last twelve months", date(2025, 6, 1), Month(2024, 6), Month(2025, 5)),
        ("for March 2025", date(2025, 6, 15), Month(2025, 3), Month(2025, 3)),
        ("for march", date(2025, 2, 15), Month(2024, 3), Month(2024, 3)),
        ("from February to May 2025", date(2025, 6, 15), Month(2025, 2), Month(2025, 5)),
        ("between Nov 2024 and Feb 2025", date(2025, 6, 15), Month(2024, 11), Month(2025, 2)),
        ("from November to February 2025", date(2025, 6, 15), Month(2024, 11), Month(2025, 2)),
        ("from 2024-11 to 2025-02", date(2025, 6, 15), Month(2024, 11), Month(2025, 2)),
        ("this year so far", date(2025, 6, 15), Month(2025, 1), Month(2025, 6)),
        ("year to date", date(2024, 2, 29), Month(2024, 1), Month(2024, 2)),
        ("this month", date(2025, 6, 15), Month(2025, 6), Month(2025, 6)),
        ("last year", date(2025, 6, 15), Month(2024, 1), Month(2024, 12)),
        ("last quarter", date(2025, 2, 15), Month(2024, 10), Month(2024, 12)),
        ("in 2024", date(2025, 6, 15), Month(2024, 1), Month(2024, 12)),
        ("on 2025-05-01", date(2025, 6, 15), Month(2025, 5), Month(2025, 5)),
        ("since January 2025", date(2025, 6, 15), Month(2025, 1), Month(2025, 6)),
        ("in Q1 2025", date(2025, 6, 15), Month(2025, 1), Month(2025, 3)),
        ("in q3", date(2025, 6, 15), Month(2024, 7), Month(2024, 9)),
        ("in the fourth quarter of 2024", date(2025, 6, 15), Month(2024, 10), Month(2024, 12)),
    ],
)
def test_expressions(text: str, today: date, first: Month, last: Month) -> None:
    period = find_period(f"home-loan attrition rate {text}", today)
    assert period is not None
    assert (period.first, period.last) == (first, last)


def test_range_end_is_the_last_day_of_the_end_month_including_leap_february() -> None:
    period = find_period("from December 2023 to February 2024", date(2025, 1, 1))
    assert period is not None
    query = period_query("a", "b", period)
    assert query.to_text() == "kpi-a department-b start-2023-12-01 end-2024-02-29"
    period = find_period("previous 2 months", date(2025, 3, 3))
    assert period_query("a", "b", period).end == date(2025, 2, 28)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["for 2025-13", "on 2025-05-32", "from May 2025 to February 2025"])
def test_impossible_dates_name_the_phrase(text: str) -> None:
    with pytest.raises(PeriodError) as info:
        find_period(text, date(2025, 6, 15))
    assert info.value.phrase in text


def test_no_period() -> None:
    assert find_period("home-loan attrition rate", date(2025, 6, 15)) is None
    assert find_period("May I see the attrition rate", date(2025, 6, 15)) is None


@given(st.text(max_size=200), nows)
def test_arbitrary_text_never_crashes(text: str, today: date) -> None:
    try:
        period = find_period(text, today)
    except PeriodError:
        return
    if period is not None:
        assert period.first <= period.last
