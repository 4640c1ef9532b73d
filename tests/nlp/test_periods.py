"""Calendar periods in words → days, relative to today: year boundaries, leap years, halves."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concerto.nlp.periods import PeriodError, find_period, find_periods

MID = date(2025, 6, 15)
NEW_YEAR = date(2025, 1, 1)
LEAP = date(2024, 2, 29)


def days(text: str, today: date) -> tuple[date, date, bool]:
    found = find_period(text, today)
    assert found is not None, text
    return found.first, found.last, found.to_date


@pytest.mark.parametrize(
    ("text", "today", "first", "last", "to_date"),
    [
        ("nps this year", MID, date(2025, 1, 1), MID, True),
        ("nps this year so far", MID, date(2025, 1, 1), MID, True),
        ("revenue year to date", MID, date(2025, 1, 1), MID, True),
        ("revenue ytd", NEW_YEAR, NEW_YEAR, NEW_YEAR, True),
        ("this quarter", MID, date(2025, 4, 1), MID, True),
        ("this quarter", NEW_YEAR, NEW_YEAR, NEW_YEAR, True),
        ("last quarter", MID, date(2025, 1, 1), date(2025, 3, 31), False),
        ("last quarter", NEW_YEAR, date(2024, 10, 1), date(2024, 12, 31), False),
        ("last quarter", LEAP, date(2023, 10, 1), date(2023, 12, 31), False),
        ("the first half of 2024", MID, date(2024, 1, 1), date(2024, 6, 30), False),
        ("in the second half of 2023", MID, date(2023, 7, 1), date(2023, 12, 31), False),
        ("H2", MID, date(2024, 7, 1), date(2024, 12, 31), False),
        ("H1", MID, date(2025, 1, 1), MID, True),
        ("h2 2024", MID, date(2024, 7, 1), date(2024, 12, 31), False),
        ("since March", MID, date(2025, 3, 1), MID, True),
        ("since March", NEW_YEAR, date(2024, 3, 1), NEW_YEAR, True),
        ("since march 2023", LEAP, date(2023, 3, 1), LEAP, True),
        ("over the past 90 days", MID, MID - timedelta(days=89), MID, True),
        ("over the past 90 days", date(2024, 3, 1), date(2023, 12, 3), date(2024, 3, 1), True),
        ("in the last 2 weeks", NEW_YEAR, date(2024, 12, 19), NEW_YEAR, True),
        ("last month", NEW_YEAR, date(2024, 12, 1), date(2024, 12, 31), False),
        ("last month", date(2024, 3, 10), date(2024, 2, 1), LEAP, False),
        ("february 2024", MID, date(2024, 2, 1), LEAP, False),
        ("february 2023", MID, date(2023, 2, 1), date(2023, 2, 28), False),
        ("last 3 months", NEW_YEAR, date(2024, 10, 1), date(2024, 12, 31), False),
        ("last year", NEW_YEAR, date(2024, 1, 1), date(2024, 12, 31), False),
        ("in 2024", MID, date(2024, 1, 1), date(2024, 12, 31), False),
        ("Q1 2025", MID, date(2025, 1, 1), date(2025, 3, 31), False),
        ("Q3", MID, date(2024, 7, 1), date(2024, 9, 30), False),
        ("the first quarter of 2025", MID, date(2025, 1, 1), date(2025, 3, 31), False),
        ("from November 2024 to February 2025", MID, date(2024, 11, 1), date(2025, 2, 28), False),
        ("between Nov and Feb", MID, date(2024, 11, 1), date(2025, 2, 28), False),
        ("2024-03 to 2024-06", MID, date(2024, 3, 1), date(2024, 6, 30), False),
        ("this month", LEAP, date(2024, 2, 1), LEAP, True),
        ("on 2024-02-29", MID, LEAP, LEAP, False),
        ("in 2025-03", MID, date(2025, 3, 1), date(2025, 3, 31), False),
    ],
)
def test_period_words(text: str, today: date, first: date, last: date, to_date: bool) -> None:
    assert days(text, today) == (first, last, to_date)


def test_last_n_months_keeps_the_count_000_needs() -> None:
    found = find_period("attrition previous 4 months", MID)
    assert found is not None and found.months_back == 4
    assert (found.first, found.last) == (date(2025, 2, 1), date(2025, 5, 31))


def test_several_periods_in_the_order_written_and_spans_point_at_them() -> None:
    text = "attrition in Q1 2025 vs the first half of 2024"
    found = find_periods(text, MID)
    assert [(p.first, p.last) for p in found] == [
        (date(2025, 1, 1), date(2025, 3, 31)),
        (date(2024, 1, 1), date(2024, 6, 30)),
    ]
    assert [text[p.span[0] : p.span[1]] for p in found] == ["Q1 2025", "the first half of 2024"]


def test_a_verb_is_not_a_month() -> None:
    assert find_period("may I see the attrition", MID) is None
    assert find_period("nps for May", MID) is not None
    found = find_period("CPU in March compared to February", MID)
    assert found is not None and found.first == date(2025, 3, 1)
    assert [p.first for p in find_periods("CPU in March compared to February", MID)] == [
        date(2025, 3, 1),
        date(2025, 2, 1),
    ]


@pytest.mark.parametrize("text", ["2025-13", "2025-02-30 revenue", "from 2025-05 to 2025-02"])
def test_impossible_dates_are_named(text: str) -> None:
    with pytest.raises(PeriodError) as raised:
        find_period(text, MID)
    assert raised.value.phrase


@given(
    today=st.dates(min_value=date(1990, 1, 1), max_value=date(2099, 12, 31)),
    text=st.sampled_from(
        [
            *("this year", "ytd", "this quarter", "last quarter", "H1", "H2", "since March", "past 45 days"),
            *("Q4", "last month"),
        ]
    ),
)
def test_every_period_is_ordered_and_never_ends_in_the_future(today: date, text: str) -> None:
    first, last, to_date = days(text, today)
    assert first <= last <= today or (not to_date and first <= last)
    assert last <= today or text in ("this quarter",)
