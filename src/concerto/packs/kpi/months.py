"""Calendar months as values: arithmetic across year boundaries, first and last days.

Stored as the integer YYYYMM (e.g. 202505) so ChromaDB can compare them as numbers.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date

MONTH_NAMES = [calendar.month_name[i] for i in range(1, 13)]


@dataclass(frozen=True, order=True, slots=True)
class Month:
    """A calendar month; ordering is chronological."""

    year: int
    month: int

    def __post_init__(self) -> None:
        if not 1 <= self.month <= 12:
            raise ValueError(f"month must be in 1..12, got {self.month}")
        if not 1 <= self.year <= 9999:
            raise ValueError(f"year must be in 1..9999, got {self.year}")

    @classmethod
    def of(cls, day: date) -> Month:
        return cls(day.year, day.month)

    @classmethod
    def from_int(cls, value: int) -> Month:
        """From YYYYMM."""
        return cls(value // 100, value % 100)

    def as_int(self) -> int:
        return self.year * 100 + self.month

    def shift(self, months: int) -> Month:
        """The month `months` later (earlier when negative)."""
        index = self.year * 12 + (self.month - 1) + months
        return Month(index // 12, index % 12 + 1)

    @property
    def first_day(self) -> date:
        return date(self.year, self.month, 1)

    @property
    def last_day(self) -> date:
        return date(self.year, self.month, calendar.monthrange(self.year, self.month)[1])

    @property
    def name(self) -> str:
        """E.g. "May 2025"."""
        return f"{MONTH_NAMES[self.month - 1]} {self.year}"

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


def months_between(first: Month, last: Month) -> int:
    """Number of months from `first` to `last`, both included (0 when last < first)."""
    return max(0, (last.year - first.year) * 12 + last.month - first.month + 1)


def month_range(first: Month, last: Month) -> list[Month]:
    """Every month from `first` to `last`, both included."""
    return [first.shift(i) for i in range(months_between(first, last))]


def period_phrase(first: Month, last: Month) -> str:
    """ "in May 2025", "between February and May 2025", "between November 2024 and March 2025"."""
    if first == last:
        return f"in {first.name}"
    if first.year == last.year:
        return f"between {MONTH_NAMES[first.month - 1]} and {last.name}"
    return f"between {first.name} and {last.name}"
