"""Calendar periods said in words, made into days relative to today.

One reader for every pack that asks "when": the KPI agent turns the days into calendar
months, the metrics agent into a window ending no later than now. Each period is the
inclusive range of days it names, with the span of text it was read from (so the rest of
the question can be matched to names), and two facts a pack may need:

- `months_back`: "last/previous N months" are the N whole calendar months before the
  current one (000's date rule); a pack that counts durations may read them differently.
- `to_date`: the period runs up to today ("this year", "since March", "year to date",
  "over the past 90 days"), so its last days have not happened yet.

Understood, relative to today: "last month", "this month", "last N months", "last N days"
or weeks, "this year", "this year so far", "year to date", "last year", "in 2024",
"this quarter", "last quarter", "Q1 2025", "the first quarter of 2025", "H1", "H2 2024",
"the second half of 2023", "since March", "from February to May 2025", "between Nov 2024
and Feb 2025", "2024-03 to 2024-06", "March 2025", "2025-03". A quarter or half named
without a year is the latest one that has started; a month named without a year is the
latest one not after the current month.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta

from concerto.nlp.numbers import number_words_pattern, word_number

MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
MAX_MONTHS = 1200
MAX_DAYS = 36600
_MON = r"(?P<{g}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_NUM = r"(?P<n>\d{1,5}|" + number_words_pattern({"a": 1, "an": 1}) + r")"
_Y = r"(?P<{g}>(?:19|20|21)\d{{2}})"
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}


@dataclass(frozen=True, slots=True)
class Period:
    """The days a question names: `first` to `last`, both included."""

    first: date
    last: date
    span: tuple[int, int] = (0, 0)
    phrase: str = ""
    months_back: int | None = None
    to_date: bool = False


class PeriodError(ValueError):
    """A period that names an impossible date; `phrase` is the text as written."""

    def __init__(self, phrase: str, reason: str) -> None:
        super().__init__(f"{phrase!r}: {reason}")
        self.phrase = phrase
        self.reason = reason


def month_start(year: int, month: int) -> date:
    """The first day of a month; `month` may run past 12 or below 1 (it carries into years)."""
    index = year * 12 + month - 1
    return date(index // 12, index % 12 + 1, 1)


def month_end(year: int, month: int) -> date:
    """The last day of a month (with the same carrying as `month_start`)."""
    first = month_start(year, month)
    return first.replace(day=calendar.monthrange(first.year, first.month)[1])


def _number(text: str) -> int:
    if text.isdigit():
        return int(text)
    value = word_number(text.lower(), {"a": 1, "an": 1})
    if value is None:
        raise ValueError(f"not a number: {text!r}")
    return value


def _month_number(name: str) -> int:
    return MONTHS[name.lower().rstrip(".")]


def _latest_month(today: date, month: int) -> int:
    """The year of the latest `month` that is not after the current month."""
    return today.year if month <= today.month else today.year - 1


Found = tuple[date, date, int | None, bool]
Rule = Callable[[re.Match[str], date], Found]


def _range_named(m: re.Match[str], today: date) -> Found:
    y1 = int(m["y1"]) if m["y1"] else None
    y2 = int(m["y2"]) if m["y2"] else None
    m1, m2 = _month_number(m["m1"]), _month_number(m["m2"])
    if y2 is None:
        y2 = _latest_month(today, m2) if y1 is None else (y1 if m2 >= m1 else y1 + 1)
    if y1 is None:
        y1 = y2 if m1 <= m2 else y2 - 1
    return month_start(y1, m1), month_end(y2, m2), None, False


def _iso_range(m: re.Match[str], today: date) -> Found:
    return (
        month_start(int(m["y1"]), _checked_month(m["mo1"])),
        month_end(int(m["y2"]), _checked_month(m["mo2"])),
        None,
        False,
    )


def _checked_month(text: str) -> int:
    month = int(text)
    if not 1 <= month <= 12:
        raise ValueError(f"month must be in 1..12, got {month}")
    return month


def _last_n_months(m: re.Match[str], today: date) -> Found:
    n = _number(m["n"])
    if not 1 <= n <= MAX_MONTHS:
        raise ValueError(f"number of months must be in 1..{MAX_MONTHS}, got {n}")
    return month_start(today.year, today.month - n), month_end(today.year, today.month - 1), n, False


def _last_n_days(m: re.Match[str], today: date) -> Found:
    days = _number(m["n"]) * (7 if m["u"].lower().startswith("week") else 1)
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"number of days must be in 1..{MAX_DAYS}, got {days}")
    return today - timedelta(days=days - 1), today, None, True


def _month_offset(offset: int) -> Rule:
    def rule(m: re.Match[str], today: date) -> Found:
        first = month_start(today.year, today.month + offset)
        return (first, today, None, True) if offset == 0 else (first, month_end(first.year, first.month), None, False)

    return rule


def _this_year(m: re.Match[str], today: date) -> Found:
    return date(today.year, 1, 1), today, None, True


def _last_year(m: re.Match[str], today: date) -> Found:
    return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), None, False


def _quarter_start(today: date) -> int:
    return 3 * ((today.month - 1) // 3) + 1


def _this_quarter(m: re.Match[str], today: date) -> Found:
    return month_start(today.year, _quarter_start(today)), today, None, True


def _last_quarter(m: re.Match[str], today: date) -> Found:
    start = month_start(today.year, _quarter_start(today) - 3)
    return start, month_end(start.year, start.month + 2), None, False


def _part_of_year(months: int) -> Rule:
    """A quarter (3 months) or a half (6): "Q2 2024", "second half of 2023", "H2"."""

    def rule(m: re.Match[str], today: date) -> Found:
        which = m["k"].lower()
        index = int(which) if which.isdigit() else _ORDINAL[which]
        start_month = months * (index - 1) + 1
        # named without a year: the latest one that has started
        latest = today.year if start_month <= today.month else today.year - 1
        year = int(m["y"]) if m["y"] else latest
        start = date(year, start_month, 1)
        end = month_end(year, start_month + months - 1)
        if start <= today <= end:
            return start, today, None, True
        return start, end, None, False

    return rule


def _since(m: re.Match[str], today: date) -> Found:
    month = _month_number(m["m"])
    year = int(m["y"]) if m["y"] else _latest_month(today, month)
    return date(year, month, 1), today, None, True


def _named_month(m: re.Match[str], today: date) -> Found:
    month = _month_number(m["m"])
    year = int(m["y"]) if m["y"] else _latest_month(today, month)
    return month_start(year, month), month_end(year, month), None, False


def _iso_month(m: re.Match[str], today: date) -> Found:
    """ "2025-03" is the month; "2025-03-14" is that day (a pack counting months takes its month)."""
    year, month = int(m["y"]), _checked_month(m["mo"])
    last = month_end(year, month)
    if m["d"] and not 1 <= int(m["d"]) <= last.day:
        raise ValueError(f"day must be in 1..{last.day} for {calendar.month_name[month]} {year}")
    if m["d"]:
        day = date(year, month, int(m["d"]))
        return day, day, None, False
    return month_start(year, month), last, None, False


def _year(m: re.Match[str], today: date) -> Found:
    year = int(m["y"])
    return date(year, 1, 1), date(year, 12, 31), None, False


_TO = r"(?:to|until|till|through|thru|and|-|\u2013)"
_LAST = r"\b(?:(?:in|over|during)\s+)?(?:the\s+)?(?:last|previous|past|prior)\s+"
_RULES: list[tuple[re.Pattern[str], Rule]] = [
    (
        re.compile(
            rf"\b(?:from|between)?\s*{_MON.format(g='m1')}(?:\s*,?\s*{_Y.format(g='y1')})?"
            rf"\s*{_TO}\s*{_MON.format(g='m2')}(?:\s*,?\s*{_Y.format(g='y2')})?\b",
            re.I,
        ),
        _range_named,
    ),
    (
        re.compile(
            r"\b(?:from|between)?\s*(?P<y1>\d{4})-(?P<mo1>\d{1,2})(?:-\d{1,2})?\s*"
            r"(?:to|until|through|and|-)\s*(?P<y2>\d{4})-(?P<mo2>\d{1,2})(?:-\d{1,2})?\b",
            re.I,
        ),
        _iso_range,
    ),
    (
        re.compile(
            rf"{_LAST}{_NUM}\s+(?:calendar\s+)?months?\b",
            re.I,
        ),
        _last_n_months,
    ),
    (
        re.compile(
            rf"{_LAST}{_NUM}\s+(?P<u>days?|weeks?)\b",
            re.I,
        ),
        _last_n_days,
    ),
    (re.compile(r"\b(?:last|previous|prior|past)\s+month\b", re.I), _month_offset(-1)),
    (
        re.compile(r"\b(?:this|current)\s+month(?:\s+so\s+far)?\b|\bmonth[\s-]to[\s-]date\b|\bmtd\b", re.I),
        _month_offset(0),
    ),
    (
        re.compile(
            r"\b(?:this|current)\s+year(?:\s+so\s+far|\s+to\s+date)?\b|\bso\s+far\s+this\s+year\b"
            r"|\byear[\s-]to[\s-]date\b|\bytd\b",
            re.I,
        ),
        _this_year,
    ),
    (re.compile(r"\b(?:last|previous|prior|past)\s+year\b", re.I), _last_year),
    (
        re.compile(
            r"\b(?:this|current)\s+quarter(?:\s+so\s+far|\s+to\s+date)?\b|\bquarter[\s-]to[\s-]date\b|\bqtd\b", re.I
        ),
        _this_quarter,
    ),
    (re.compile(r"\b(?:last|previous|prior|past)\s+quarter\b", re.I), _last_quarter),
    (
        re.compile(
            rf"\b(?:since|from)\s+{_MON.format(g='m')}(?:\s*,?\s*{_Y.format(g='y')})?\b(?!\s*{_TO}\b)",
            re.I,
        ),
        _since,
    ),
    (re.compile(rf"\bq(?P<k>[1-4])(?:\s*(?:,|of)?\s*{_Y.format(g='y')})?\b", re.I), _part_of_year(3)),
    (
        re.compile(
            rf"\b(?:the\s+)?(?P<k>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter"
            rf"(?:\s+(?:of\s+)?{_Y.format(g='y')})?\b",
            re.I,
        ),
        _part_of_year(3),
    ),
    (re.compile(rf"\bh(?P<k>[12])(?:\s*(?:,|of)?\s*{_Y.format(g='y')})?\b", re.I), _part_of_year(6)),
    (
        re.compile(rf"\b(?:the\s+)?(?P<k>first|second|1st|2nd)\s+half(?:\s+(?:of\s+)?{_Y.format(g='y')})?\b", re.I),
        _part_of_year(6),
    ),
    (re.compile(rf"\b{_MON.format(g='m')}(?:\s*,?\s*{_Y.format(g='y')})?\b", re.I), _named_month),
    (re.compile(r"\b(?P<y>\d{4})-(?P<mo>\d{1,2})(?:-(?P<d>\d{1,2}))?\b"), _iso_month),
    (re.compile(rf"\b(?:in|for|during|of|over)\s+{_Y.format(g='y')}\b(?!-\d)", re.I), _year),
]
_RANGES = (_range_named, _iso_range)


def _plausible_month(text: str, m: re.Match[str]) -> bool:
    """ "May" is also a verb and "march" a noun: a bare month name counts near a year or a preposition."""
    if m["y"]:
        return True
    before = text[: m.start()].rstrip().lower()
    return before.endswith(
        ("for", "in", "of", "during", "since", "and", "vs", "versus", "with", "to", "than", "against")
    )


def _matches(text: str) -> list[tuple[re.Match[str], Rule]]:
    """Every period expression in `text`, leftmost first, none overlapping an earlier one."""
    found: list[tuple[re.Match[str], Rule]] = []
    for pattern, rule in _RULES:
        for m in pattern.finditer(text):
            if rule is _named_month and not _plausible_month(text, m):
                continue
            found.append((m, rule))
    # Longest first at each start, then keep the ones that do not overlap a kept one.
    found.sort(key=lambda item: (item[0].start(), -(item[0].end() - item[0].start()), _RULES_ORDER[item[1]]))
    kept: list[tuple[re.Match[str], Rule]] = []
    for m, rule in found:
        start, end = _trimmed(m)
        if start == end or any(start < k.end() and k.start() < end for k, _ in kept):
            continue
        kept.append((m, rule))
    return kept


_RULES_ORDER = {rule: i for i, (_, rule) in enumerate(_RULES)}


def _trimmed(m: re.Match[str]) -> tuple[int, int]:
    text = m.group(0)
    return m.start() + len(text) - len(text.lstrip()), m.end() - len(text) + len(text.rstrip())


def find_periods(text: str, today: date) -> list[Period]:
    """Every period named in `text`, in the order written.

    Raises `PeriodError` for an expression that names an impossible date (2025-13, the
    end before the start).
    """
    periods = []
    for m, rule in _matches(text):
        phrase = m.group(0).strip()
        try:
            first, last, months_back, to_date = rule(m, today)
        except ValueError as exc:
            raise PeriodError(phrase, str(exc)) from None
        if last < first:
            raise PeriodError(phrase, "the end is before the start")
        periods.append(Period(first, last, _trimmed(m), phrase, months_back, to_date))
    return periods


def find_period(text: str, today: date) -> Period | None:
    """The first period named in `text`, or None (see `find_periods`)."""
    periods = find_periods(text, today)
    return periods[0] if periods else None


def clipped(period: Period, today: date) -> Period:
    """The period cut at today (a quarter named while it runs ends today, not in the future)."""
    return period if period.last <= today else replace(period, last=today, to_date=True)


__all__ = [
    "MONTHS",
    "Period",
    "PeriodError",
    "clipped",
    "find_period",
    "find_periods",
    "month_end",
    "month_start",
]
