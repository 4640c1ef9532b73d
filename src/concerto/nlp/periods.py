"""Calendar periods said in words, made into days relative to today.

One reader for every pack that asks "when": the KPI agent turns the days into calendar
months, the metrics agent into a window ending no later than now. Each period is the
inclusive range of days it names, with the span of text it was read from (so the rest of
the question can be matched to names), and two facts a pack may need:

- `months_back`: "last/previous N months" are the N whole calendar months before the
  current one (000's date rule); a pack that counts durations may read them differently.
- `to_date`: the period runs up to today ("this year", "since March", "year to date",
  "over the past 90 days"), so its last days have not happened yet.

Understood, relative to today: "last month", "this month", "next month", "last N months"
(or days or weeks), "next N months", "this/last/next week" (Monday to Sunday), "today",
"yesterday", "tomorrow", "this year", "this year so far", "year to date", "last year",
"next year", "in 2024", "this quarter", "last quarter", "next quarter", "Q1 2025", "the
first quarter of 2025", "H1", "H2 2024", "the second half of 2023", "since March", "from
February to May 2025", "between Nov 2024 and Feb 2025", "2024-03 to 2024-06", "March 2025",
"2025-03", "2025-03-14", "March 14, 2025", "the 14th of March". A quarter or half named
without a year is the latest one that has started; a month (or a day of a month) named
without a year is the latest one not after the current month.

Never another period. A year written beside a month, quarter or half is that year, whatever
it is ("March 9999" is March 9999, for the pack to say it holds no data then); a bare
number after "in", "for" or "during" is a year unless a unit follows it ("in 1850", not
"in 1500 ms"). What the calendar does not have is a `PeriodError` naming it: "Q5 2025",
"H3", "February 30 2025", "2025-13". `unread` finds time words no rule read ("next
fortnight", "on Mondays", "2025" alone), so a pack can refuse them instead of answering
for a default period.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
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
# A year beside a month, quarter or half: any four digits ("March 9999" is not March 2025).
_Y = r"(?P<{g}>\d{{4}})"
_DAY = r"(?P<{g}>\d{{1,2}})(?:st|nd|rd|th)?"
_ORDINAL = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
    "5th": 5,
}
_ORDINALS = "|".join(sorted(_ORDINAL, key=len, reverse=True))


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


def _year(text: str) -> int:
    year = int(text)
    if year < 1:
        raise ValueError(f"there is no year {text}")
    return year


def _day(year: int, month: int, day: str) -> date:
    """A day of a month, or ValueError saying how many days the month has."""
    last = month_end(year, month)
    if not 1 <= int(day) <= last.day:
        raise ValueError(f"{calendar.month_name[month]} {year} has {last.day} days")
    return last.replace(day=int(day))


Found = tuple[date, date, int | None, bool]
Rule = Callable[[re.Match[str], date], Found]


def _range_named(m: re.Match[str], today: date) -> Found:
    y1 = _year(m["y1"]) if m["y1"] else None
    y2 = _year(m["y2"]) if m["y2"] else None
    m1, m2 = _month_number(m["m1"]), _month_number(m["m2"])
    if y2 is None:
        y2 = _latest_month(today, m2) if y1 is None else (y1 if m2 >= m1 else y1 + 1)
    if y1 is None:
        y1 = y2 if m1 <= m2 else y2 - 1
    d1, d2 = m["da1"] or m["db1"], m["da2"] or m["db2"]
    first = _day(y1, m1, d1) if d1 else month_start(y1, m1)
    last = _day(y2, m2, d2) if d2 else month_end(y2, m2)
    return first, last, None, False


def _iso_range(m: re.Match[str], today: date) -> Found:
    y1, y2 = _year(m["y1"]), _year(m["y2"])
    mo1, mo2 = _checked_month(m["mo1"]), _checked_month(m["mo2"])
    first = _day(y1, mo1, m["d1"]) if m["d1"] else month_start(y1, mo1)
    last = _day(y2, mo2, m["d2"]) if m["d2"] else month_end(y2, mo2)
    return first, last, None, False


def _checked_month(text: str) -> int:
    month = int(text)
    if not 1 <= month <= 12:
        raise ValueError(f"month must be in 1..12, got {month}")
    return month


def _count(m: re.Match[str], limit: int, what: str) -> int:
    n = _number(m["n"])
    if not 1 <= n <= limit:
        raise ValueError(f"number of {what} must be in 1..{limit}, got {n}")
    return n


def _last_n_months(m: re.Match[str], today: date) -> Found:
    n = _count(m, MAX_MONTHS, "months")
    return month_start(today.year, today.month - n), month_end(today.year, today.month - 1), n, False


def _next_n_months(m: re.Match[str], today: date) -> Found:
    n = _count(m, MAX_MONTHS, "months")
    return month_start(today.year, today.month + 1), month_end(today.year, today.month + n), None, False


def _days_of(m: re.Match[str]) -> int:
    days = _number(m["n"]) * (7 if m["u"].lower().startswith("week") else 1)
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"number of days must be in 1..{MAX_DAYS}, got {days}")
    return days


def _last_n_days(m: re.Match[str], today: date) -> Found:
    return today - timedelta(days=_days_of(m) - 1), today, None, True


def _next_n_days(m: re.Match[str], today: date) -> Found:
    return today + timedelta(days=1), today + timedelta(days=_days_of(m)), None, False


def _month_offset(offset: int) -> Rule:
    def rule(m: re.Match[str], today: date) -> Found:
        first = month_start(today.year, today.month + offset)
        return (first, today, None, True) if offset == 0 else (first, month_end(first.year, first.month), None, False)

    return rule


def _day_offset(offset: int) -> Rule:
    """ "yesterday" (-1), "today" (0, to date), "tomorrow" (+1)."""

    def rule(m: re.Match[str], today: date) -> Found:
        day = today + timedelta(days=offset)
        return day, day, None, offset == 0

    return rule


def _week(offset: int) -> Rule:
    """This week (Monday to today), last week or next week (Monday to Sunday)."""

    def rule(m: re.Match[str], today: date) -> Found:
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        if offset == 0:
            return monday, today, None, True
        return monday, monday + timedelta(days=6), None, False

    return rule


def _this_year(m: re.Match[str], today: date) -> Found:
    return date(today.year, 1, 1), today, None, True


def _year_offset(offset: int) -> Rule:
    def rule(m: re.Match[str], today: date) -> Found:
        year = today.year + offset
        return date(year, 1, 1), date(year, 12, 31), None, False

    return rule


def _quarter_start(today: date) -> int:
    return 3 * ((today.month - 1) // 3) + 1


def _this_quarter(m: re.Match[str], today: date) -> Found:
    return month_start(today.year, _quarter_start(today)), today, None, True


def _quarter_offset(offset: int) -> Rule:
    def rule(m: re.Match[str], today: date) -> Found:
        start = month_start(today.year, _quarter_start(today) + 3 * offset)
        return start, month_end(start.year, start.month + 2), None, False

    return rule


def _part_of_year(months: int) -> Rule:
    """A quarter (3 months) or a half (6): "Q2 2024", "second half of 2023", "H2"."""
    parts = 12 // months

    def rule(m: re.Match[str], today: date) -> Found:
        which = m["k"].lower()
        index = int(which) if which.isdigit() else _ORDINAL[which]
        if not 1 <= index <= parts:
            kind, letter = ("quarters", "Q") if months == 3 else ("halves", "H")
            raise ValueError(f"a year has {parts} {kind}, {letter}1 to {letter}{parts}")
        start_month = months * (index - 1) + 1
        # named without a year: the latest one that has started
        latest = today.year if start_month <= today.month else today.year - 1
        year = _year(m["y"]) if m["y"] else latest
        start = date(year, start_month, 1)
        end = month_end(year, start_month + months - 1)
        if start <= today <= end:
            return start, today, None, True
        return start, end, None, False

    return rule


def _since(m: re.Match[str], today: date) -> Found:
    month = _month_number(m["m"])
    year = _year(m["y"]) if m["y"] else _latest_month(today, month)
    return _day(year, month, m["d"]) if m["d"] else date(year, month, 1), today, None, True


def _named_month(m: re.Match[str], today: date) -> Found:
    month = _month_number(m["m"])
    year = _year(m["y"]) if m["y"] else _latest_month(today, month)
    return month_start(year, month), month_end(year, month), None, False


def _named_day(m: re.Match[str], today: date) -> Found:
    """ "March 14, 2025", "14th of March": that day (a pack counting months takes its month)."""
    month = _month_number(m["m"])
    year = _year(m["y"]) if m["y"] else _latest_month(today, month)
    day = _day(year, month, m["d"])
    return day, day, None, False


def _iso_month(m: re.Match[str], today: date) -> Found:
    """ "2025-03" is the month; "2025-03-14" is that day (a pack counting months takes its month)."""
    year, month = _year(m["y"]), _checked_month(m["mo"])
    if m["d"]:
        day = _day(year, month, m["d"])
        return day, day, None, False
    return month_start(year, month), month_end(year, month), None, False


def _bare_year(m: re.Match[str], today: date) -> Found:
    year = _year(m["y"] or m["y2"])
    return date(year, 1, 1), date(year, 12, 31), None, False


def _year_range(m: re.Match[str], today: date) -> Found:
    """ "from 2023 to 2025", "2023-2025", "between 2023 and 2024": whole years."""
    return date(_year(m["y1"]), 1, 1), date(_year(m["y2"]), 12, 31), None, False


def _named_date(n: int) -> str:
    """A month with an optional day before or after it and an optional year: "3 March",
    "March 3rd, 2025", "Nov 2024" (groups da{n}, m{n}, db{n}, y{n})."""
    return (
        rf"(?:{_DAY.format(g=f'da{n}')}\s+(?:of\s+)?)?{_MON.format(g=f'm{n}')}"
        rf"(?:\s+{_DAY.format(g=f'db{n}')}\b)?(?:\s*,?\s*{_Y.format(g=f'y{n}')})?"
    )


_TO = r"(?:to|until|till|through|thru|-|\u2013)"
_LAST = r"\b(?:(?:in|over|during)\s+)?(?:the\s+)?(?:last|previous|past|prior)\s+"
_NEXT = r"\b(?:(?:in|over|during)\s+)?(?:the\s+)?(?:next|coming|following)\s+"
_ISO_DAY = r"(?P<y{n}>\d{{4}})-(?P<mo{n}>\d{{1,2}})(?:-(?P<d{n}>\d{{1,2}}))?"
# After a bare year, a unit or a count means a quantity ("in 1500 ms", "for 2000 employees").
_QUANTITY = (
    r"(?!\s*(?:%|(?:ms|s|secs?|mins?|h|hrs?|d|x|[kmgt]i?b)\b"
    r"|\w*(?:second|minute|hour|day|week|month|year|record|row|request|people|employee|staff|unit|item"
    r"|time|percent|byte|user|customer|dollar|euro|point)s?\b))"
)
_RULES: list[tuple[re.Pattern[str], Rule]] = [
    (
        re.compile(rf"\bbetween\s+{_named_date(1)}\s*and\s*{_named_date(2)}\b", re.I),
        _range_named,
    ),
    (
        re.compile(rf"\b(?:from\s+)?{_named_date(1)}\s*{_TO}\s*{_named_date(2)}\b", re.I),
        _range_named,
    ),
    (
        re.compile(rf"\b(?:from\s+)?{_ISO_DAY.format(n=1)}\s*(?:to|until|through|-)\s*{_ISO_DAY.format(n=2)}\b", re.I),
        _iso_range,
    ),
    (re.compile(rf"\bbetween\s+{_ISO_DAY.format(n=1)}\s*and\s*{_ISO_DAY.format(n=2)}\b", re.I), _iso_range),
    (re.compile(rf"{_LAST}{_NUM}\s+(?:calendar\s+)?months?\b", re.I), _last_n_months),
    (re.compile(rf"{_LAST}{_NUM}\s+(?P<u>days?|weeks?)\b", re.I), _last_n_days),
    (re.compile(rf"{_NEXT}{_NUM}\s+(?:calendar\s+)?months?\b", re.I), _next_n_months),
    (re.compile(rf"{_NEXT}{_NUM}\s+(?P<u>days?|weeks?)\b", re.I), _next_n_days),
    (re.compile(r"\b(?:last|previous|prior|past)\s+month\b", re.I), _month_offset(-1)),
    (
        re.compile(r"\b(?:this|current)\s+month(?:\s+so\s+far)?\b|\bmonth[\s-]to[\s-]date\b|\bmtd\b", re.I),
        _month_offset(0),
    ),
    (re.compile(r"\b(?:next|coming|following)\s+month\b", re.I), _month_offset(1)),
    (re.compile(r"\b(?:last|previous|prior|past)\s+week\b", re.I), _week(-1)),
    (re.compile(r"\b(?:this|current)\s+week(?:\s+so\s+far)?\b|\bweek[\s-]to[\s-]date\b|\bwtd\b", re.I), _week(0)),
    (re.compile(r"\b(?:next|coming|following)\s+week\b", re.I), _week(1)),
    (re.compile(r"\byesterday\b", re.I), _day_offset(-1)),
    (re.compile(r"\btoday(?:\s+so\s+far)?\b", re.I), _day_offset(0)),
    (re.compile(r"\btomorrow\b", re.I), _day_offset(1)),
    (
        re.compile(
            r"\b(?:this|current)\s+year(?:\s+so\s+far|\s+to\s+date)?\b|\bso\s+far\s+this\s+year\b"
            r"|\byear[\s-]to[\s-]date\b|\bytd\b",
            re.I,
        ),
        _this_year,
    ),
    (re.compile(r"\b(?:last|previous|prior|past)\s+year\b", re.I), _year_offset(-1)),
    (re.compile(r"\b(?:next|coming|following)\s+year\b", re.I), _year_offset(1)),
    (
        re.compile(
            r"\b(?:this|current)\s+quarter(?:\s+so\s+far|\s+to\s+date)?\b|\bquarter[\s-]to[\s-]date\b|\bqtd\b", re.I
        ),
        _this_quarter,
    ),
    (re.compile(r"\b(?:last|previous|prior|past)\s+quarter\b", re.I), _quarter_offset(-1)),
    (re.compile(r"\b(?:next|coming|following)\s+quarter\b", re.I), _quarter_offset(1)),
    (
        re.compile(
            rf"\b(?:since|from)\s+{_MON.format(g='m')}(?:\s+{_DAY.format(g='d')}\b)?(?:\s*,?\s*{_Y.format(g='y')})?\b"
            rf"(?!\s*{_TO}\b)",
            re.I,
        ),
        _since,
    ),
    (
        re.compile(rf"(?<![\w-])q(?P<k>\d{{1,2}})(?:(?:\s*(?:,|of)\s*|\s+|-){_Y.format(g='y')})?(?![\w-])", re.I),
        _part_of_year(3),
    ),
    (
        re.compile(
            rf"\b(?:the\s+)?(?P<k>{_ORDINALS})\s+quarter(?:\s+(?:of\s+)?{_Y.format(g='y')})?\b",
            re.I,
        ),
        _part_of_year(3),
    ),
    (
        re.compile(rf"(?<![\w-])h(?P<k>\d)(?:(?:\s*(?:,|of)\s*|\s+|-){_Y.format(g='y')})?(?![\w-])", re.I),
        _part_of_year(6),
    ),
    (
        re.compile(rf"\b(?:the\s+)?(?P<k>{_ORDINALS})\s+half(?:\s+(?:of\s+)?{_Y.format(g='y')})?\b", re.I),
        _part_of_year(6),
    ),
    (
        re.compile(rf"\b{_MON.format(g='m')}\s+{_DAY.format(g='d')}\b(?:\s*,?\s*{_Y.format(g='y')}\b)?", re.I),
        _named_day,
    ),
    (
        re.compile(
            rf"\b(?:the\s+)?{_DAY.format(g='d')}\s+(?P<of>of\s+)?{_MON.format(g='m')}(?:\s*,?\s*{_Y.format(g='y')})?\b",
            re.I,
        ),
        _named_day,
    ),
    (re.compile(rf"\b{_MON.format(g='m')}(?:\s*,?\s*{_Y.format(g='y')})?\b", re.I), _named_month),
    (re.compile(r"\b(?P<y>\d{4})-(?P<mo>\d{1,2})(?:-(?P<d>\d{1,2}))?\b"), _iso_month),
    (
        re.compile(
            rf"\b(?:(?:from|in|for|during)\s+)?{_Y.format(g='y1')}\s*{_TO}\s*{_Y.format(g='y2')}\b{_QUANTITY}", re.I
        ),
        _year_range,
    ),
    (re.compile(rf"\bbetween\s+{_Y.format(g='y1')}\s+and\s+{_Y.format(g='y2')}\b{_QUANTITY}", re.I), _year_range),
    (
        re.compile(
            rf"\b(?:(?:of|over|and|or|vs\.?|versus|than|against|with)\s+(?P<y>(?:19|20|21)\d{{2}})"
            rf"|(?:in|for|during)\s+(?P<y2>\d{{4}}))\b(?![-.,]\d){_QUANTITY}",
            re.I,
        ),
        _bare_year,
    ),
]


_PREPOSITIONS = ("for", "in", "of", "during", "since", "and", "vs", "versus", "with", "to", "than", "against", "on")
# Words before a number that make it a count, not a day ("top 3 May 2025" is May 2025).
_COUNTING = re.compile(
    r"(?:top|bottom|best|worst|highest|lowest|biggest|smallest|largest|first|last|previous|past|next)\s*$", re.I
)


def _plausible_month(text: str, m: re.Match[str]) -> bool:
    """ "May" is also a verb and "march" a noun: a bare month name counts near a year, after
    a preposition, or at the end of the question."""
    if m["y"]:
        return True
    before = text[: m.start()].rstrip().lower()
    if before.endswith(_PREPOSITIONS):
        return True
    return m["m"].lower() != "may" and not text[m.end() :].strip(" ?.!,;:)\"'")


def _plausible_day(text: str, m: re.Match[str]) -> bool:
    """ "3 March" and "the 3rd of March" are days, but in "top 3 March 2025" the number
    counts something; "March 3" is a day where "March" would be a month."""
    if "of" in m.re.groupindex:  # the day before the month
        return m.group(0).lower().startswith("the") or not _COUNTING.search(text[: m.start()])
    return _plausible_month(text, m)


def _matches(text: str) -> list[tuple[re.Match[str], Rule]]:
    """Every period expression in `text`, leftmost first, none overlapping an earlier one."""
    found: list[tuple[re.Match[str], Rule]] = []
    for pattern, rule in _RULES:
        for m in pattern.finditer(text):
            if rule is _named_month and not _plausible_month(text, m):
                continue
            if rule is _named_day and not _plausible_day(text, m):
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


_RULES_ORDER = {rule: i for i, (_, rule) in reversed(list(enumerate(_RULES)))}  # a rule's first place


def _trimmed(m: re.Match[str]) -> tuple[int, int]:
    text = m.group(0)
    return m.start() + len(text) - len(text.lstrip()), m.end() - len(text) + len(text.rstrip())


def find_periods(text: str, today: date) -> list[Period]:
    """Every period named in `text`, in the order written.

    Raises `PeriodError` for an expression that names a date the calendar does not have
    (2025-13, February 30, Q5, the end before the start).
    """
    periods = []
    for m, rule in _matches(text):
        phrase = m.group(0).strip()
        try:
            first, last, months_back, to_date = rule(m, today)
        except (ValueError, OverflowError) as exc:  # OverflowError: a day past 9999-12-31
            raise PeriodError(phrase, str(exc) if isinstance(exc, ValueError) else "beyond the year 9999") from None
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


_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MONTH_WORDS = "|".join(sorted((m for m in MONTHS if m != "may"), key=len, reverse=True))
# Time words and dates no rule above reads; `unread` reports the first one left in a question.
_UNREAD = re.compile(
    r"(?<![\w-])(?:next|upcoming|ago|tonight|weekends?|weekdays?|weeks?|fortnights?|decades?|centur(?:y|ies)"
    rf"|(?:{_WEEKDAYS})s?|mornings?|afternoons?|evenings?|overnight|midnight|quarters?|semesters?|fiscal|fy\d{{0,4}}"
    rf"|{_MONTH_WORDS})(?![\w-])\.?"
    r"|(?<![\w.:/-])(?:\d{4}(?:[-/.]\d{1,4}){0,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|\d{1,2}[-/.]\d{4})(?![\w:/-]|\.\d)",
    re.I,
)


def unread(text: str, taken: Sequence[tuple[int, int]] = ()) -> str | None:
    """The first time word or date in `text`, outside the `taken` spans, that no rule of
    `find_periods` reads ("next fortnight", "on Mondays", "2025" with no "in", "15.03.2025"),
    or None. A pack answering for a default period when one is left would answer a period
    nobody asked for; `taken` holds the spans of the periods read and of the names matched.
    """
    for m in _UNREAD.finditer(text):
        if not any(m.start() < end and start < m.end() for start, end in taken):
            return m.group(0).rstrip(".")
    return None


__all__ = [
    "MONTHS",
    "Period",
    "PeriodError",
    "clipped",
    "find_period",
    "find_periods",
    "month_end",
    "month_start",
    "unread",
]
