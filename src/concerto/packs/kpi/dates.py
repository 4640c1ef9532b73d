"""Natural-language periods to months, relative to the current date (000_*.txt date rules).

- "last month" / "previous month": the previous calendar month (June 2025 → May 2025).
- "last N months" / "previous N months": the N calendar months before the current one.
- "for March 2025", "in 2024-03": that month; "for March": the latest March not after now.
- "from February to May 2025", "between Nov 2024 and Feb 2025": inclusive month range.
- "this year so far" / "year to date": January of the current year to the current month.
- "since January 2025": that month to the current month.
- "Q1 2025", "first quarter of 2025": the three months; "Q1" alone is the latest started one.
- "this month", "last year", "in 2024", "last quarter".

The first expression found wins; its character span is returned so the rest of the
question can be matched to KPI and department names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from concerto.nlp.numbers import number_words_pattern, word_number
from concerto.packs.kpi.months import Month

_MONTHS = {
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
_MON = r"(?P<{g}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_NUM = r"(?P<n>\d{1,3}|" + number_words_pattern() + r")"
MAX_MONTHS = 1200


@dataclass(frozen=True, slots=True)
class Period:
    """Months a question asks about; `last_n` is set for "last/previous N months"."""

    first: Month
    last: Month
    last_n: int | None = None
    span: tuple[int, int] = (0, 0)
    phrase: str = ""

    @property
    def single(self) -> bool:
        return self.first == self.last and self.last_n is None


class PeriodError(ValueError):
    """A period expression that names an impossible date; `phrase` is the text as written."""

    def __init__(self, phrase: str, reason: str) -> None:
        super().__init__(f"{phrase!r}: {reason}")
        self.phrase = phrase
        self.reason = reason


def last_n_months(today: date, n: int) -> tuple[Month, Month]:
    """The N whole calendar months that end before the month of `today`."""
    if not 1 <= n <= MAX_MONTHS:
        raise ValueError(f"number of months must be in 1..{MAX_MONTHS}, got {n}")
    current = Month.of(today)
    return current.shift(-n), current.shift(-1)


def _number(text: str) -> int:
    if text.isdigit():
        return int(text)
    value = word_number(text)
    if value is None:
        raise ValueError(f"not a number: {text!r}")
    return value


def _month(name: str) -> int:
    return _MONTHS[name.lower().rstrip(".")]


def _latest(today: date, month: int) -> Month:
    """The latest given month that is not after the current month."""
    current = Month.of(today)
    return Month(current.year if month <= current.month else current.year - 1, month)


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[Month, Month, int | None]]]


def _range_named(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    y2 = int(m["y2"]) if m["y2"] else None
    y1 = int(m["y1"]) if m["y1"] else None
    m1, m2 = _month(m["m1"]), _month(m["m2"])
    if y2 is None:
        last = _latest(today, m2) if y1 is None else Month(y1 if m2 >= m1 else y1 + 1, m2)
    else:
        last = Month(y2, m2)
    first = Month(y1 if y1 is not None else (last.year if m1 <= m2 else last.year - 1), m1)
    return first, last, None


def _iso_range(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    return Month(int(m["y1"]), int(m["mo1"])), Month(int(m["y2"]), int(m["mo2"])), None


def _last_n(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    n = _number(m["n"].lower())
    first, last = last_n_months(today, n)
    return first, last, n


def _relative(offset: int) -> Callable[[re.Match[str], date], tuple[Month, Month, int | None]]:
    def rule(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
        month = Month.of(today).shift(offset)
        return month, month, None

    return rule


def _ytd(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    return Month(today.year, 1), Month.of(today), None


def _last_year(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    return Month(today.year - 1, 1), Month(today.year - 1, 12), None


def _last_quarter(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    start = Month(today.year, 3 * ((today.month - 1) // 3) + 1).shift(-3)
    return start, start.shift(2), None


def _quarter(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    words = {"first": 1, "second": 2, "third": 3, "fourth": 4}
    q = int(m["q"]) if "q" in m.groupdict() and m["q"] else words[m["qw"].lower()]
    start = Month(today.year, 3 * (q - 1) + 1)
    if m["y"]:
        start = Month(int(m["y"]), start.month)
    elif start > Month.of(today):  # "Q3" alone: the latest such quarter that has started
        start = Month(today.year - 1, start.month)
    return start, start.shift(2), None


def _since(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    start = Month(int(m["y"]), _month(m["m"])) if m["y"] else _latest(today, _month(m["m"]))
    return start, Month.of(today), None


def _named_month(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    month = Month(int(m["y"]), _month(m["m"])) if m["y"] else _latest(today, _month(m["m"]))
    return month, month, None


def _iso_month(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    month = Month(int(m["y"]), int(m["mo"]))
    if m["d"] and not 1 <= int(m["d"]) <= month.last_day.day:
        raise ValueError(f"day must be in 1..{month.last_day.day} for {month.name}")
    return month, month, None


def _year(m: re.Match[str], today: date) -> tuple[Month, Month, int | None]:
    return Month(int(m["y"]), 1), Month(int(m["y"]), 12), None


_Y = r"(?P<{g}>(?:19|20|21)\d{{2}})"
_RULES: list[Rule] = [
    (
        re.compile(
            rf"\b(?:from|between)?\s*{_MON.format(g='m1')}(?:\s*,?\s*{_Y.format(g='y1')})?"
            rf"\s*(?:to|until|till|through|thru|and|-|\u2013)\s*{_MON.format(g='m2')}"
            rf"(?:\s*,?\s*{_Y.format(g='y2')})?\b",
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
        re.compile(rf"\b(?:last|previous|past|prior)\s+{_NUM}\s+(?:calendar\s+)?months?\b", re.I),
        _last_n,
    ),
    (re.compile(r"\b(?:last|previous|prior|past)\s+month\b", re.I), _relative(-1)),
    (re.compile(r"\b(?:this|current)\s+month\b", re.I), _relative(0)),
    (
        re.compile(r"\b(?:this\s+year\s+so\s+far|so\s+far\s+this\s+year|year[\s-]to[\s-]date|ytd)\b", re.I),
        _ytd,
    ),
    (re.compile(r"\b(?:last|previous|prior)\s+year\b", re.I), _last_year),
    (re.compile(r"\b(?:last|previous|prior)\s+quarter\b", re.I), _last_quarter),
    (
        re.compile(
            rf"\b(?:since|from)\s+{_MON.format(g='m')}(?:\s*,?\s*{_Y.format(g='y')})?\b"
            rf"(?!\s*(?:to|until|till|through|thru|and|-)\b)",
            re.I,
        ),
        _since,
    ),
    (re.compile(rf"\bq(?P<q>[1-4])(?:\s*,?\s*{_Y.format(g='y')})?\b", re.I), _quarter),
    (
        re.compile(rf"\b(?P<qw>first|second|third|fourth)\s+quarter(?:\s+(?:of\s+)?{_Y.format(g='y')})?\b", re.I),
        _quarter,
    ),
    (re.compile(rf"\b{_MON.format(g='m')}(?:\s*,?\s*{_Y.format(g='y')})?\b", re.I), _named_month),
    (re.compile(r"\b(?P<y>\d{4})-(?P<mo>\d{1,2})(?:-(?P<d>\d{1,2}))?\b"), _iso_month),
    (re.compile(rf"\b(?:in|for|during)\s+{_Y.format(g='y')}\b(?!-\d)", re.I), _year),
]


def find_period(text: str, today: date) -> Period | None:
    """The first period expression in `text`, resolved against `today`, or None.

    Raises `PeriodError` for an expression that names an impossible date (e.g. 2025-13).
    """
    best: tuple[int, re.Match[str], Callable[..., tuple[Month, Month, int | None]]] | None = None
    for pattern, rule in _RULES:
        m = pattern.search(text)
        # "May" is also a verb; only count a bare month name when a year or a preposition is near.
        if m is None or (rule is _named_month and not _plausible_month(text, m)):
            continue
        if best is None or m.start() < best[0]:
            best = (m.start(), m, rule)
            if rule is _range_named or rule is _iso_range:
                break  # a range beats the single months it contains
    if best is None:
        return None
    _, m, rule = best
    phrase = m.group(0).strip()
    try:
        first, last, n = rule(m, today)
    except ValueError as exc:
        raise PeriodError(phrase, str(exc)) from None
    if last < first:
        raise PeriodError(phrase, "the end is before the start")
    return Period(first, last, n, (m.start(), m.end()), m.group(0).strip())


def _plausible_month(text: str, m: re.Match[str]) -> bool:
    if m["y"]:
        return True
    before = text[: m.start()].rstrip().lower()
    return before.endswith(("for", "in", "of", "during", "since"))
