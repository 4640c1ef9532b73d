"""Calendar periods in words → days, relative to today: year boundaries, leap years, halves."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concerto.nlp.periods import PeriodError, find_period, find_periods, unread

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


# -- never another period (issue 26) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "phrase", "reason"),
    [
        ("revenue in Q5 2025", "Q5 2025", "Q1 to Q4"),
        ("revenue in q0", "q0", "Q1 to Q4"),
        ("revenue in the fifth quarter of 2024", "fifth quarter of 2024", "Q1 to Q4"),
        ("revenue in H3", "H3", "H1 to H2"),
        ("revenue February 30 2025", "February 30 2025", "February 2025 has 28 days"),
        ("revenue on 30 February 2025", "30 February 2025", "28 days"),
        ("revenue on the 31st of April", "the 31st of April", "April 2025 has 30 days"),
        ("revenue from 2025-02-30 to 2025-03-10", "2025-02-30 to 2025-03-10", "28 days"),
        ("revenue from March 3 2025 to February 5 2025", "March 3 2025 to February 5 2025", "before the start"),
        ("revenue in 2025-13", "2025-13", "1..12"),
        ("revenue in 0000", "0000", "no year 0000"),
        ("revenue over the next 3 months", "next 3 months", None),
    ],
)
def test_what_the_calendar_does_not_have_is_named(text: str, phrase: str, reason: str | None) -> None:
    today = date(9999, 11, 15) if "next 3 months" in text else MID
    with pytest.raises(PeriodError) as raised:
        find_periods(text, today)
    assert phrase in raised.value.phrase
    assert reason is None or reason in raised.value.reason


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        # a year written beside a month or after "in" is that year, never the current one
        ("revenue in March 9999", date(9999, 3, 1), date(9999, 3, 31)),
        ("revenue in 1850", date(1850, 1, 1), date(1850, 12, 31)),
        ("revenue in Q1 1850", date(1850, 1, 1), date(1850, 3, 31)),
        ("revenue from 2023 to 2025", date(2023, 1, 1), date(2025, 12, 31)),
        ("revenue 2023-2024", date(2023, 1, 1), date(2024, 12, 31)),
        # periods after today are periods too (a pack says whether it holds them)
        ("revenue next month", date(2025, 7, 1), date(2025, 7, 31)),
        ("revenue next quarter", date(2025, 7, 1), date(2025, 9, 30)),
        ("revenue next year", date(2026, 1, 1), date(2026, 12, 31)),
        ("revenue over the next 3 months", date(2025, 7, 1), date(2025, 9, 30)),
        ("revenue next week", date(2025, 6, 16), date(2025, 6, 22)),
        ("revenue last week", date(2025, 6, 2), date(2025, 6, 8)),
        ("revenue tomorrow", date(2025, 6, 16), date(2025, 6, 16)),
        ("revenue yesterday", date(2025, 6, 14), date(2025, 6, 14)),
        # days of a month
        ("revenue on March 14, 2024", date(2024, 3, 14), date(2024, 3, 14)),
        ("revenue on the 3rd of March", date(2025, 3, 3), date(2025, 3, 3)),
        ("revenue since March 3", date(2025, 3, 3), MID),
        ("revenue from March 3 to May 5 2025", date(2025, 3, 3), date(2025, 5, 5)),
        ("revenue between 1 March and 31 May 2024", date(2024, 3, 1), date(2024, 5, 31)),
        ("revenue 2025-03-10 to 2025-03-20", date(2025, 3, 10), date(2025, 3, 20)),
        # a count before a month is no day of it
        ("top 3 departments by revenue May 2025", date(2025, 5, 1), date(2025, 5, 31)),
        ("home-loan attrition march", date(2025, 3, 1), date(2025, 3, 31)),
    ],
)
def test_periods_are_read_as_written(text: str, first: date, last: date) -> None:
    found = find_periods(text, MID)
    assert [(p.first, p.last) for p in found] == [(first, last)]


def test_two_months_joined_by_and_are_two_periods_not_a_range() -> None:
    found = find_periods("revenue in March and May", MID)
    assert [(p.first, p.last) for p in found] == [
        (date(2025, 3, 1), date(2025, 3, 31)),
        (date(2025, 5, 1), date(2025, 5, 31)),
    ]
    found = find_periods("revenue between March and May", MID)
    assert [(p.first, p.last) for p in found] == [(date(2025, 3, 1), date(2025, 5, 31))]


@pytest.mark.parametrize("text", ["latency in 1500 ms", "errors for 2000 employees", "over 2000 requests"])
def test_a_number_with_a_unit_is_no_year(text: str) -> None:
    assert find_periods(text, MID) == []


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("revenue next fortnight", "next"),
        ("revenue on mondays", "mondays"),
        ("revenue of home-loan 2024", "2024"),
        ("revenue on 15.03.2025", "15.03.2025"),
        ("revenue of fy2024", "fy2024"),
        ("revenue three weeks ago", "weeks"),
        ("revenue by quarter", "quarter"),
        ("revenue in 2024 and 1860", "1860"),
    ],
)
def test_unread_names_the_time_word_no_rule_read(text: str, word: str) -> None:
    assert unread(text, [p.span for p in find_periods(text, MID)]) == word


@pytest.mark.parametrize(
    "text",
    [
        "revenue of next-gen-ops in Q1 2025",  # a name with a time word inside it
        "may I see the revenue last month",
        "revenue from February to May 2025",
        "revenue in 2024 and 2023",
        "revenue this week",
        "revenue of home-loan",
    ],
)
def test_unread_is_none_when_every_time_word_was_read(text: str) -> None:
    assert unread(text, [p.span for p in find_periods(text, MID)]) is None
