"""Periods of a KPI question as calendar months (000_*.txt date rules).

The words are read by `concerto.nlp.periods` (shared with the metrics pack); here the
days become the months a KPI is reported for: every month the period touches. So "last
month" is the previous calendar month, "last N months" the N months before the current
one, "this year" January to the current month, "Q1 2025" three months, "the second half
of 2023" July to December 2023 and "over the past 90 days" the four months those days
touch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from concerto.nlp import periods
from concerto.nlp.periods import MAX_MONTHS, PeriodError
from concerto.packs.kpi.months import Month


@dataclass(frozen=True, slots=True)
class Period:
    """Months a question asks about; `last_n` is set for "last/previous N months"."""

    first: Month
    last: Month
    last_n: int | None = None
    span: tuple[int, int] = (0, 0)
    phrase: str = ""
    to_date: bool = False

    @property
    def single(self) -> bool:
        return self.first == self.last and self.last_n is None


def last_n_months(today: date, n: int) -> tuple[Month, Month]:
    """The N whole calendar months that end before the month of `today`."""
    if not 1 <= n <= MAX_MONTHS:
        raise ValueError(f"number of months must be in 1..{MAX_MONTHS}, got {n}")
    current = Month.of(today)
    return current.shift(-n), current.shift(-1)


def _months(period: periods.Period) -> Period:
    return Period(
        Month.of(period.first),
        Month.of(period.last),
        period.months_back,
        period.span,
        period.phrase,
        period.to_date,
    )


def find_periods(text: str, today: date) -> list[Period]:
    """Every period in `text` as months, in the order written; raises `PeriodError`."""
    return [_months(p) for p in periods.find_periods(text, today)]


def find_period(text: str, today: date) -> Period | None:
    """The first period in `text` as months, or None; raises `PeriodError`."""
    found = find_periods(text, today)
    return found[0] if found else None


__all__ = ["Period", "PeriodError", "find_period", "find_periods", "last_n_months"]
