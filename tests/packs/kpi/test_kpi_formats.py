"""The agreed formats: exact parsing, canonical output, round trip, precise errors."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concerto.agents.base import AgentFailure
from concerto.packs.kpi.formats import (
    END_PATTERN,
    EXAMPLES,
    MONTH_PATTERN,
    NATURAL_PATTERN,
    START_PATTERN,
    KPIQuery,
)
from concerto.packs.kpi.months import Month, months_between

SPEC_STRUCTURED = [
    "kpi-attrition-rate department-home-loan month-2025-05-01",
    "kpi-attrition-rate department-home-loan start-2025-02-01 end-2025-05-31",
    "kpi-attrition-rate department-home-loan range-4-months start-2025-02-01 end-2025-05-31",
]


@pytest.mark.parametrize("text", SPEC_STRUCTURED)
def test_spec_examples_round_trip(text: str) -> None:
    query = KPIQuery.parse(text)
    assert query.kpi == "attrition-rate"
    assert query.department == "home-loan"
    assert query.to_text() == text


def test_fields_of_each_format() -> None:
    single, plain, ranged = (KPIQuery.parse(t) for t in SPEC_STRUCTURED)
    assert single.month == date(2025, 5, 1) and not single.is_range
    assert (plain.start, plain.end, plain.range_months) == (date(2025, 2, 1), date(2025, 5, 31), None)
    assert ranged.range_months == 4 and ranged.first_month == Month(2025, 2)
    assert ranged.last_month == Month(2025, 5)


def test_spec_patterns_extract_dates() -> None:
    assert MONTH_PATTERN.search(SPEC_STRUCTURED[0])[1] == "2025-05-01"  # type: ignore[index]
    assert START_PATTERN.search(SPEC_STRUCTURED[1])[1] == "2025-02-01"  # type: ignore[index]
    assert END_PATTERN.search(SPEC_STRUCTURED[1])[1] == "2025-05-31"  # type: ignore[index]
    assert NATURAL_PATTERN.search("home-loan attrition rate previous 4 months")


def test_extra_whitespace_is_accepted_and_canonicalised() -> None:
    text = "  kpi-attrition-rate   department-home-loan\tmonth-2025-05-01 "
    assert KPIQuery.parse(text).to_text() == SPEC_STRUCTURED[0]


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("kpi-attrition-rate department-home-loan month-2025-13-01", "month", "2025-13-01"),
        ("kpi-attrition-rate department-home-loan month-2025-05-32", "month", "2025-05-32"),
        ("kpi-attrition-rate department-home-loan start-2025-02-30 end-2025-05-31", "start", "2025-02-30"),
        ("kpi-attrition-rate department-home-loan start-2025-02-01 end-2025-00-31", "end", "2025-00-31"),
    ],
)
def test_bad_date_is_a_structured_error_naming_it(text: str, field: str, value: str) -> None:
    with pytest.raises(AgentFailure) as info:
        KPIQuery.parse(text)
    assert info.value.error_type == "invalid_date"
    assert info.value.details == {"field": field, "date": value, "reason": info.value.details["reason"]}
    assert value in info.value.message


def test_leap_day_is_a_date_only_in_leap_years() -> None:
    assert KPIQuery.parse("kpi-a department-b month-2024-02-29").month == date(2024, 2, 29)
    with pytest.raises(AgentFailure, match="2025-02-29"):
        KPIQuery.parse("kpi-a department-b month-2025-02-29")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("kpi-attrition-rate month-2025-05-01", "missing `department-"),
        ("kpi-attrition-rate department-home-loan", "missing `month-"),
        ("kpi-attrition-rate department-home-loan start-2025-05-01 end-2025-02-28", "before start"),
        ("kpi-attrition-rate department-home-loan range-3-months start-2025-02-01 end-2025-05-31", "covers 4 months"),
        ("kpi-Attrition department-home-loan month-2025-05-01", "lower-case"),
        ("kpi-attrition-rate department-home-loan month-2025-05-01 please", "order"),
        ("kpi-attrition-rate department-home-loan month-2025-05-01 " + "x" * 10_000, "characters"),
    ],
)
def test_invalid_format_shows_the_format_and_an_example(text: str, reason: str) -> None:
    with pytest.raises(AgentFailure) as info:
        KPIQuery.parse(text)
    failure = info.value
    assert failure.error_type == "invalid_format"
    assert reason in failure.message
    assert "kpi-{kpi_name} department-{department} month-{YYYY-MM-DD}" in failure.message
    assert EXAMPLES[0] in failure.message
    assert len(failure.message) < 1000


names = st.from_regex(r"\A[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}\Z")
days = st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 12, 31))


@st.composite
def queries(draw: st.DrawFn) -> KPIQuery:
    kpi, department = draw(names), draw(names)
    shape = draw(st.sampled_from(["month", "range", "range_n"]))
    if shape == "month":
        return KPIQuery(kpi=kpi, department=department, month=draw(days))
    start = draw(days)
    end = draw(st.dates(min_value=start, max_value=date(2200, 12, 31)))
    n = months_between(Month.of(start), Month.of(end)) if shape == "range_n" else None
    return KPIQuery(kpi=kpi, department=department, start=start, end=end, range_months=n)


@given(queries())
def test_round_trip_model_format_model(query: KPIQuery) -> None:
    text = query.to_text()
    parsed = KPIQuery.parse(text)
    assert parsed == query
    assert parsed.to_text() == text


@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    try:
        query = KPIQuery.parse(text)
    except AgentFailure as failure:
        assert failure.error_type in {"invalid_format", "invalid_date"}
    else:
        assert KPIQuery.parse(query.to_text()) == query


@given(
    st.lists(
        st.sampled_from(
            [
                "kpi-",
                "department-",
                "month-",
                "start-",
                "end-",
                "range-",
                "-months",
                "2025-05-01",
                "2025-13-40",
                "a",
                "-",
                " ",
                "4",
            ]
        ),
        max_size=12,
    )
)
def test_near_miss_structured_text_never_crashes(parts: list[str]) -> None:
    try:
        KPIQuery.parse("".join(parts))
    except AgentFailure as failure:
        assert failure.error_type in {"invalid_format", "invalid_date"}
