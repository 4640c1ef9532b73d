"""Which rows drift_monitor and health_score compare, and which columns: the split of the
rows into a reference and a current period (`plan_split`), read from the caller's
`period_column` (with `reference_period` and `current_period`), `time_column` and
`split_date`, else the question ("since January", "this year", "last quarter"), else the
source (a period column with two values, or the halves of its time range); and the features
(`default_features`). health_score measures drift as drift_monitor does, so both read the
periods here; the measuring is `methods.drift`.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

from concerto.packs.commercial.methods import drift
from concerto.packs.commercial.methods.drift import SplitPlan, choose_periods
from concerto.packs.commercial.methods.errors import PeriodError

if TYPE_CHECKING:
    from concerto.data.context import DataContext
    from concerto.packs.commercial.base.agent import Work

PERIOD_NAMES = ("period", "phase", "wave")
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ]
    )
    for name in names
}  # fmt: skip
_SINCE = re.compile(
    r"\b(?:since|from|after)\s+(?:(?P<iso>\d{4}-\d{2}(?:-\d{2})?)|(?P<month>[a-z]+)(?:\s+(?P<year>\d{4}))?)\b",
    re.IGNORECASE,
)
_THIS_YEAR = re.compile(r"\b(?:this year|year to date|year-to-date|ytd)\b", re.IGNORECASE)
_WINDOW = re.compile(
    r"\b(?:last|past|latest|most recent)\s+(?:(?P<n>\d+|two|three|four|six|twelve)\s+)?"
    r"(?P<unit>month|quarter|year)s?\b",
    re.IGNORECASE,
)
_COUNT = {"two": 2, "three": 3, "four": 4, "six": 6, "twelve": 12}
_UNIT = {"month": 1, "quarter": 3, "year": 12}


def period_column(source: DataContext) -> str | None:
    """A category column naming two periods (the built-in `period`), or None."""
    for column in source.columns:
        profile = source.detected_types[column]
        if (
            profile.role in ("category", "label")
            and any(name in column.lower() for name in PERIOD_NAMES)
            and len(profile.categories) == 2
        ):
            return column
    return None


def time_column(source: DataContext) -> str | None:
    times = source.columns_with("time")
    return source.semantic_profile.time_column or (times[0] if times else None)


def plan_split(work: Work) -> SplitPlan:
    """The split the caller or the question asks for, else the source's default; raises
    `PeriodError` for an unknown period value or a column that is not there."""
    source, request = work.source, work.request
    if work.given("period_column") is not None:
        column = _column(source, str(work.given("period_column")))
        return _period_plan(work, column)
    when = time_column(source)
    if work.given("time_column") is not None:
        when = _column(source, str(work.given("time_column")))
    if work.given("split_date") is not None:
        if when is None:
            raise PeriodError("a split date needs a time column", "Name the date column with time_column.")
        try:
            split = date.fromisoformat(str(work.given("split_date"))[:10])
        except ValueError:
            raise PeriodError(
                f"the split date '{work.given('split_date')}' is not a date", "Give split_date as YYYY-MM-DD."
            ) from None
        return SplitPlan("date", when, split_date=split, described=f"before {split} vs from {split} on")
    if when is not None:
        if _THIS_YEAR.search(request):
            return SplitPlan("date", when, split_date=date(2000, 1, 1), latest_year=True)
        since = _SINCE.search(request)
        if since and since.group("iso"):
            iso = since.group("iso")
            try:
                split = date.fromisoformat(iso if len(iso) == 10 else f"{iso}-01")
            except ValueError:
                raise PeriodError(f"'{iso}' is not a date", "Write the date as YYYY-MM-DD or YYYY-MM.") from None
            return SplitPlan("date", when, split_date=split, described=f"before {split} vs since {split}")
        if since and (since.group("month") or "").lower() in _MONTHS:
            month = _MONTHS[since.group("month").lower()]
            if since.group("year"):
                return SplitPlan("date", when, split_date=date(int(since.group("year")), month, 1))
            return SplitPlan("date", when, split_date=date(2000, month, 1), latest_year=True)
        window = _WINDOW.search(request)
        if window:
            count = window.group("n")
            n = 1 if count is None else int(count) if count.isdigit() else _COUNT[count.lower()]
            months = n * _UNIT[window.group("unit").lower()]
            return SplitPlan("window", when, months=months)
    named = period_column(source)
    if named is not None and work.given("time_column") is None:
        return _period_plan(work, named)
    if when is not None:
        return SplitPlan("halves", when, described="the later half of the time range vs the earlier half")
    raise PeriodError(
        f"{source.name} has no period column and no date column to tell two periods apart",
        "Name a column with two periods (period_column), or a time_column and a split_date.",
        error_type="no_periods",
    )


def _column(source: DataContext, name: str) -> str:
    found = source.column_of(name) or source.column_of(name.strip().lower().replace(" ", "_"))
    if found is None:
        raise PeriodError(
            f"'{name}' is not a column of {source.name}",
            f"Columns of {source.name}: {', '.join(source.columns)}",
            error_type="unknown_column",
        )
    return found


def _period_plan(work: Work, column: str) -> SplitPlan:
    reference = work.given("reference_period") or work.given("baseline")
    current = work.given("current_period") or work.given("recent")
    reference, current = (None if v is None else str(v) for v in (reference, current))
    values = [str(v) for v in work.source.detected_types[column].categories]
    if values:  # known from profiling: fail before reading the data
        reference, current = choose_periods(column, values, reference, current)
    return SplitPlan("period", column, reference, current, described=f"{column} {reference} vs {current}")


def default_features(source: DataContext, exclude: set[str]) -> tuple[list[str], list[str]]:
    """(numeric, category) features: every numeric and category column except ids, time
    columns, a period column and `exclude`; 0/1 flags count as categories."""
    skip = set(exclude) | set(source.columns_with("id", "time")) | {period_column(source)}
    numeric, category = [], []
    for column in source.columns:
        if column in skip:
            continue
        profile = source.detected_types[column]
        if profile.role == "flag" or profile.role in ("category", "label"):
            if profile.distinct <= drift.MAX_CATEGORIES or profile.categories:
                category.append(column)
        elif profile.role in ("measure", "money") or any(
            t in profile.type.upper() for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "NUMERIC", "REAL")
        ):
            numeric.append(column)
    return numeric, category
