"""Time windows said in words made absolute: durations, calendar periods and comparisons.

Everything is relative to the caller's clock (`context.now`, fixed by `--now`), so the
same question always gives the same window in tests. Three kinds of words are read:

- durations, the pack's own: "the last hour", "past 90 days", "since 2 hours ago",
  "since 9am", "from 10:00 to 11:00", "yesterday", "today", "now"; "the last month" and
  "the past year" run back from now by the calendar (2025-06-15 12:00 → 2025-05-15 12:00);
- calendar periods, read by the shared `concerto.nlp.periods` ("this year", "year to date",
  "this quarter", "last quarter", "the first half of 2024", "H2", "since March", "in 2024",
  "last month") plus weeks ("this week", "last week": Monday to Sunday). A period is the
  window from its first day 00:00 to the end of its last day, cut at now;
- shifts, which make a comparison: "vs the same hour yesterday", "compared to a week ago",
  "week over week" (see `Shift`).

The step is chosen here too: a range query should return a readable number of points
whatever the window (Prometheus refuses more than 11,000; we ask for at most 250).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from concerto.nlp.numbers import number_words_pattern, word_number
from concerto.nlp.periods import PeriodError, find_periods
from concerto.packs.metrics.models import Comparison, TimeRange

DEFAULT_WINDOW = timedelta(hours=1)
NOW_WINDOW = timedelta(minutes=5)
TARGET_MAX_POINTS = 250
# Steps people read easily; the smallest one giving at most TARGET_MAX_POINTS is used.
_NICE_STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
)

_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
    "month": 2592000,
    "months": 2592000,
    "quarter": 7776000,
    "quarters": 7776000,
    "year": 31536000,
    "years": 31536000,
}
# Units counted on the calendar: how many months one of them is.
_CALENDAR_MONTHS = {"month": 1, "months": 1, "quarter": 3, "quarters": 3, "year": 12, "years": 12}
_UNIT_RE = "|".join(sorted(_UNITS, key=len, reverse=True))
_WORD_UNIT_RE = "|".join(sorted((u for u in _UNITS if len(u) > 3 or u in ("day", "min", "sec")), key=len, reverse=True))
_ARTICLES = {"a": 1, "an": 1}  # "over a day", "in the past an hour"
_NUM_WORDS = number_words_pattern(_ARTICLES)
_NUM = r"(?P<n>\d+(?:\.\d+)?|" + _NUM_WORDS + r")"
_CLOCK = (
    r"\d{4}-\d{2}-\d{2}(?:[ t]\d{1,2}:\d{2}(?::\d{2})?)?(?:z|[+-]\d{2}:?\d{2})?"
    r"|\d{1,2}(?::\d{2})?\s*(?:am|pm)?(?![\d-])"
)

# Durations: a number ("last 2 hours", "over the past 90 days", "in 30 minutes"), "past" or
# "the last" without one ("the past week", "the last month"), or a unit shorter than a week
# ("last hour", "last day"). "last week", "last month", "last year" without "the" are the
# calendar periods (read below and by concerto.nlp.periods).
_LAST_N = re.compile(
    rf"\b(?:(?:(?:the\s+)?(?:last|past|previous|recent|trailing|rolling)\s+{_NUM})"
    rf"|(?:(?:the\s+)?(?:past|recent|trailing|rolling)|the\s+(?:last|previous))"
    rf"|(?:last|previous)(?=\s+(?:s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)\b)"
    rf"|(?:over|in|within|for|during)\s+(?:the\s+)?{_NUM.replace('?P<n>', '?P<n2>')})"
    rf"\s*-?\s*(?P<u>{_UNIT_RE})\b",
    re.I,
)
_AGO = re.compile(rf"\b{_NUM}\s*(?P<u>{_UNIT_RE})\s+ago\b", re.I)
_SINCE_AGO = re.compile(rf"\bsince\s+{_NUM}\s*(?P<u>{_UNIT_RE})\s+ago\b", re.I)
_BETWEEN = re.compile(rf"\b(?:between|from)\s+(?P<a>{_CLOCK})\s+(?:and|to|until|-)\s+(?P<b>{_CLOCK})", re.I)
_SINCE_CLOCK = re.compile(rf"\bsince\s+(?P<a>{_CLOCK})(?!\s*(?:{_UNIT_RE})\b)", re.I)
_DAY_WORD = re.compile(r"\b(?:on\s+)?(?P<d>yesterday|today|\d{4}-\d{2}-\d{2})(?![\d\-:]|[ t]\d{1,2}:)", re.I)
"""A day that sets the date of a clock range ("yesterday from 10:00 to 11:00")."""
_ISO_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")
_SINCE_YESTERDAY = re.compile(r"\bsince\s+yesterday\b", re.I)
_YESTERDAY = re.compile(r"\byesterday\b", re.I)
_TODAY = re.compile(r"\btoday(?:\s+so\s+far)?\b|\bthis\s+day\b", re.I)
_WEEK = re.compile(r"\b(?P<which>this|current|last|previous|prior)\s+week(?:\s+so\s+far)?\b", re.I)
_NOW = re.compile(r"\b(?:right\s+now|currently|current|at\s+the\s+moment|now)\b", re.I)
_FUTURE = re.compile(r"\b(?:next|tomorrow|coming|upcoming|in\s+\d+\s+\w+\s+from\s+now)\b", re.I)

# Shifts: "vs the same hour yesterday", "compared to a week ago", "than last month".
_COMPARATOR = r"(?:vs\.?|versus|compared\s+(?:to|with)|in\s+comparison\s+(?:to|with)|against|than|relative\s+to)"
COMPARATOR = re.compile(rf"\b{_COMPARATOR}(?=\s|$)", re.I)
"""A word that asks for a comparison ("vs", "versus", "compared to/with", "against", "than")."""
_SAME = r"(?:(?:at|during|in|for|over)\s+)?the\s+same\s+(?P<same>" + _WORD_UNIT_RE + r"|time|period|window|hours)"
_WHEN = (
    r"(?P<when>yesterday|the\s+day\s+before|the\s+previous\s+day"
    r"|(?:last|the\s+previous|the\s+prior)\s+(?P<cal>hour|day|week|month|quarter|year)"
    r"|the\s+(?P<cal2>hour|day|week|month|quarter|year)\s+before"
    r"|(?:the\s+)?(?P<k>\d+(?:\.\d+)?|" + _NUM_WORDS + r")\s*(?P<ku>" + _UNIT_RE + r")\s+(?:ago|earlier|before)"
    r"|the\s+(?:previous|prior|preceding)\s+(?P<k2>\d+(?:\.\d+)?|" + _NUM_WORDS + r")\s*(?P<ku2>" + _UNIT_RE + r"))"
)
_COMPARATOR_RE = re.compile(rf"^\s*{_COMPARATOR}\s*", re.I)
_SHIFT_COMPARED = re.compile(rf"\b{_COMPARATOR}\s+(?:{_SAME}\s+)?{_WHEN}\b", re.I)
_SHIFT_SAME = re.compile(rf"\b{_SAME}\s+{_WHEN}\b", re.I)
_OVER = re.compile(r"\b(?P<u>hour|day|week|month|quarter|year)[\s-]+(?:over|on)[\s-]+(?P=u)\b", re.I)


class TimeParseError(ValueError):
    """A window that cannot be used (end before start, in the future, an impossible date)."""


@dataclass(frozen=True, slots=True)
class ParsedWindow:
    """A window and the span of text it was read from (so the rest can be matched).

    `kind` says how it was named: `duration`, `calendar`, `now` ("right now": the last five
    minutes) or `default` (no window named: the last hour).
    """

    time_range: TimeRange
    span: tuple[int, int] | None
    kind: str = "duration"


@dataclass(frozen=True, slots=True)
class Shift:
    """A comparison with the same window earlier: `amount` `unit`s back.

    `same` is the unit after "the same" ("the same hour yesterday"): when the question names
    no window of its own ("CPU now vs the same hour yesterday"), the current window is the
    last one of those.
    """

    amount: float
    unit: str
    span: tuple[int, int]
    phrase: str
    same: str | None = None

    def back(self, moment: datetime) -> datetime:
        """`moment` moved back by the shift (months and years on the calendar)."""
        return minus(moment, self.amount, self.unit)

    def baseline_expression(self) -> str:
        """How the baseline reads: "the same hour yesterday", "the same window a week earlier"."""
        said = _COMPARATOR_RE.sub("", self.phrase).strip()
        if said.lower().startswith(("the same", "at the same", "during the same", "in the same")):
            return said
        name = unit_name(self.unit)
        amount = "a" if self.amount == 1 and name != "hour" else ("an" if self.amount == 1 else f"{self.amount:g}")
        plural = "s" if self.amount != 1 else ""
        return f"the same window {amount} {name}{plural} earlier"


@dataclass(slots=True)
class Windows:
    """Every window a question names, in the order written, and the shift it asks for."""

    windows: list[ParsedWindow] = field(default_factory=list)
    shift: Shift | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)


def choose_step(duration_s: float) -> int:
    """The smallest readable step that keeps a range query under TARGET_MAX_POINTS points."""
    needed = max(duration_s / TARGET_MAX_POINTS, 1)
    for step in _NICE_STEPS:
        if step >= needed:
            return step
    return int(needed // 86400 + 1) * 86400


def make_range(start: datetime, end: datetime, expression: str) -> TimeRange:
    """A `TimeRange` with its step chosen from the duration."""
    return TimeRange(
        start_time=start,
        end_time=end,
        expression=expression,
        step_seconds=choose_step(max((end - start).total_seconds(), 1)),
    )


def minus(moment: datetime, amount: float, unit: str) -> datetime:
    """`moment` minus `amount` units; whole months, quarters and years count on the calendar
    (the day of month kept, or the month's last day: 31 March minus a month is 28 or 29 February)."""
    unit = unit.lower()
    months = _CALENDAR_MONTHS.get(unit)
    if months is not None and float(amount).is_integer():
        index = moment.year * 12 + moment.month - 1 - int(amount) * months
        year, month = divmod(index, 12)
        day = min(moment.day, calendar.monthrange(year, month + 1)[1])
        return moment.replace(year=year, month=month + 1, day=day)
    return moment - timedelta(seconds=amount * _UNITS[unit])


def _amount(match: re.Match[str], *groups: str) -> float:
    found = match.groupdict()
    raw = next((found[g] for g in groups if found.get(g)), None) or "1"
    value = word_number(raw.lower(), _ARTICLES)
    return float(value if value is not None else raw)


_UNIT_NAMES = {
    1: "second",
    60: "minute",
    3600: "hour",
    86400: "day",
    604800: "week",
    2592000: "month",
    7776000: "quarter",
    31536000: "year",
}


def unit_name(unit: str) -> str:
    """The singular name of a unit ("h" → "hour")."""
    return _UNIT_NAMES[_UNITS[unit.lower()]]


def _describe(amount: float, unit: str) -> str:
    name = unit_name(unit)
    if amount == 1:
        return f"the last {name}"
    return f"the last {amount:g} {name}s"


def _clock(text: str, now: datetime, day: date | None = None, end: bool = False) -> datetime:
    """An explicit time: ISO date/time, or a clock time on `day` (default today).

    An ISO date without a time is that day: its start, or with `end` the end of it
    ("from 2025-06-10 to 2025-06-14" includes the 14th).
    """
    text = text.strip().lower()
    if re.match(r"\d{4}-\d{2}-\d{2}", text):
        try:
            value = datetime.fromisoformat(text.upper().replace(" ", "T"))
        except ValueError as exc:
            raise TimeParseError(f"'{text}' is not a date") from exc
        if end and _ISO_DATE.match(text):
            value += timedelta(days=1)
        return value if value.tzinfo else value.replace(tzinfo=now.tzinfo or UTC)
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?", text)
    if m is None:
        raise TimeParseError(f"cannot read the time '{text}'")
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3) == "pm" and hour < 12:
        hour += 12
    if m.group(3) == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        raise TimeParseError(f"'{text}' is not a time of day")
    return datetime.combine(day or now.date(), time(hour, minute), tzinfo=now.tzinfo or UTC)


def _day_of(word: str, now: datetime) -> date:
    """The date a day word names: yesterday, today or an ISO day."""
    word = word.lower()
    if word == "yesterday":
        return now.date() - timedelta(days=1)
    if word == "today":
        return now.date()
    try:
        return date.fromisoformat(word)
    except ValueError as exc:
        raise TimeParseError(f"'{word}' is not a date") from exc


def _day_start(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time(0), tzinfo=now.tzinfo or UTC)


def calendar_window(first: date, last: date, expression: str, now: datetime) -> TimeRange:
    """Days `first`..`last` (inclusive) as a window: first day 00:00 to min(last day + 1, now)."""
    start = _day_start(first, now)
    end = min(_day_start(last + timedelta(days=1), now), now)
    if start >= now:
        raise TimeParseError(f"{expression} has not started yet; only past data can be queried")
    return make_range(start, end, expression)


_RELATIVE = re.compile(
    r"^(?:this|current|last|previous|prior|past|since|from|between|year|quarter|month|so|ytd|qtd|mtd)\b", re.I
)


def _said(phrase: str, first: date, last: date) -> str:
    """How a calendar period reads in an answer: as written, with its dates when the phrase
    names neither a year nor a relation to today ("H2" → "H2 (2024-07-01 to 2024-12-31)")."""
    if re.search(r"\b(?:19|20|21)\d{2}\b", phrase) or _RELATIVE.match(phrase):
        return phrase
    return f"{phrase} ({first.isoformat()} to {last.isoformat()})"


def _checked(start: datetime, end: datetime, expression: str, now: datetime) -> TimeRange:
    if end <= start:
        raise TimeParseError(f"the window {expression} is empty or reversed")
    if start >= now:
        raise TimeParseError(f"the window {expression} starts in the future")
    return make_range(start, end, expression)


def masked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """`text` with the spans blanked out (positions kept), so later readers skip them."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def overlaps(span: tuple[int, int], taken: Sequence[tuple[int, int]]) -> bool:
    """Whether `span` overlaps any of `taken`."""
    return any(span[0] < end and start < span[1] for start, end in taken)


_COMPARED_WORDS = re.compile(r"\b(?:compared\s+(?:to|with)|relative\s+to|against|than)\b", re.I)
_COMPARED_YEAR = re.compile(rf"\b{_COMPARATOR}(?P<gap>\s+)(?=(?:19|20|21)\d{{2}}\b(?![-/]))", re.I)


def _for_periods(text: str) -> str:
    """`text` with comparison words written as the shared period reader expects, padded to the
    same length (positions kept).

    The period reader takes a bare month name ("March") as a month only after a word such as
    "in" or "vs" ("May" is also a verb), and a bare year only after "in": "compared to
    February" means the month, "2024 vs 2023" the year.
    """
    text = _COMPARED_YEAR.sub(lambda m: "in".rjust(len(m.group(0)) - len(m.group("gap"))) + m.group("gap"), text)
    return _COMPARED_WORDS.sub(
        lambda m: "versus".rjust(len(m.group(0))) if len(m.group(0)) >= 6 else "vs".rjust(len(m.group(0))), text
    )


# Time words no reader above understood: a window would silently become the default one.
_LEFTOVER_TIME = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|morning|afternoon|evening|"
    r"tonight|overnight|midnight|noon|midday|ago|since|until|till|"
    r"(?:last|past|previous|prior|this|since|before|after)\s+(?:few|couple|several|\w+day|night|hours?|days?|"
    r"weeks?|months?|years?|quarters?|decade|century)|"
    r"(?<![\w.:\-/])(?:19|20|21)\d{2}(?![\w.:\-/]))\b",
    re.I,
)


def leftover_time_words(text: str) -> str | None:
    """The first time word left in `text` (windows already blanked out) that no reader
    understood ("last Tuesday", "this morning", "since 2024"), or None."""
    m = _LEFTOVER_TIME.search(text)
    return m.group(0) if m else None


def _shift(text: str) -> Shift | None:
    """The comparison shift the question asks for, if any."""
    for pattern in (_SHIFT_COMPARED, _SHIFT_SAME):
        m = pattern.search(text)
        if m is None:
            continue
        same = (m.group("same") or "").lower() or None
        if same is not None and same not in _UNITS:
            same = None  # "the same time/period": the current window stays as named
        if m.group("cal") or m.group("cal2"):
            unit, amount = (m.group("cal") or m.group("cal2")).lower(), 1.0
        elif m.group("ku"):
            unit, amount = m.group("ku").lower(), _amount(m, "k")
        elif m.group("ku2"):
            unit, amount = m.group("ku2").lower(), _amount(m, "k2")
        else:  # yesterday, the day before
            unit, amount = "day", 1.0
        if amount <= 0:
            continue
        return Shift(amount, unit, m.span(), m.group(0).strip(), same)
    m = _OVER.search(text)
    if m is not None:
        return Shift(1.0, m.group("u").lower(), m.span(), m.group(0).strip())
    return None


def read_windows(text: str, now: datetime) -> Windows:
    """Every window named in `text` (in the order written) and the comparison shift.

    Raises `TimeParseError` for a window that ends before it starts, lies in the future or
    names an impossible date.
    """
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    found: list[ParsedWindow] = []
    taken: list[tuple[int, int]] = []
    shift = _shift(text)
    if shift is not None:
        taken.append(shift.span)

    def add(window: TimeRange, span: tuple[int, int], kind: str = "duration") -> None:
        found.append(ParsedWindow(window, span, kind))
        taken.append(span)

    def scan(pattern: re.Pattern[str]) -> list[re.Match[str]]:
        return [m for m in pattern.finditer(masked(text, taken)) if not overlaps(m.span(), taken)]

    for m in scan(_BETWEEN):
        a, b = m.group("a").strip(), m.group("b").strip()
        day, said = None, f"from {a} to {b}"
        if not re.match(r"\d{4}-", a) and not re.match(r"\d{4}-", b):
            # "yesterday from 10:00 to 11:00", "from 10 to 11 on 2025-06-14": the clock range's date
            d = _DAY_WORD.search(masked(text, [*taken, m.span()]))
            if d is not None:
                day = _day_of(d.group("d"), now)
                named = d.group("d")
                said = f"{said} {named}" if named.lower() in ("yesterday", "today") else f"{said} on {day}"
                taken.append(d.span())
        start, end = _clock(a, now, day), _clock(b, now, day, end=True)
        if end <= start:
            raise TimeParseError(f"the window ends ({b}) before it starts ({a})")
        add(_checked(start, min(end, now), said, now), m.span())
    for m in scan(_SINCE_AGO):
        amount = _amount(m, "n")
        add(_checked(minus(now, amount, m.group("u")), now, _describe(amount, m.group("u")), now), m.span())
    for m in scan(_LAST_N):
        amount, unit = _amount(m, "n", "n2"), m.group("u")
        if amount <= 0:
            raise TimeParseError(f"'{m.group(0).strip()}' is an empty window")
        add(_checked(minus(now, amount, unit), now, _describe(amount, unit), now), m.span())
    for m in scan(_AGO):  # "CPU usage 2 hours ago": the few minutes up to that moment
        amount = _amount(m, "n")
        moment = minus(now, amount, m.group("u"))
        said = f"{amount:g} {unit_name(m.group('u'))}{'s' if amount != 1 else ''} ago"
        add(_checked(moment - NOW_WINDOW, moment, said, now), m.span())
    for m in scan(_SINCE_CLOCK):
        if not m.group("a").strip():
            continue
        start = _clock(m.group("a"), now)
        if start > now and not re.match(r"\d{4}-", m.group("a")):
            start -= timedelta(days=1)
        add(_checked(start, now, f"since {m.group('a').strip()}", now), m.span())
    for m in scan(_SINCE_YESTERDAY):
        add(_checked(_day_start(now.date() - timedelta(days=1), now), now, "since yesterday", now), m.span())
    for m in scan(_YESTERDAY):
        start = _day_start(now.date() - timedelta(days=1), now)
        add(_checked(start, min(start + timedelta(days=1), now), "yesterday", now), m.span(), "calendar")
    for m in scan(_TODAY):
        add(_checked(_day_start(now.date(), now), now, "today", now), m.span(), "calendar")
    for m in scan(_WEEK):
        monday = now.date() - timedelta(days=now.weekday())
        if m.group("which").lower() in ("this", "current"):
            add(calendar_window(monday, now.date(), "this week", now), m.span(), "calendar")
        else:
            first = monday - timedelta(days=7)
            add(calendar_window(first, first + timedelta(days=6), "last week", now), m.span(), "calendar")
    try:
        periods = find_periods(_for_periods(masked(text, taken)), now.date())
    except PeriodError as exc:
        raise TimeParseError(f"'{exc.phrase}' cannot be read: {exc.reason}") from None
    for period in periods:
        if not overlaps(period.span, taken):
            add(
                calendar_window(period.first, period.last, _said(period.phrase, period.first, period.last), now),
                period.span,
                "calendar",
            )
    if not found:
        for m in scan(_NOW):
            add(make_range(now - NOW_WINDOW, now, "the last 5 minutes"), m.span(), "now")
            break
    future = None if found else _FUTURE.search(masked(text, taken))
    if future is not None:
        raise TimeParseError(f"'{future.group(0)}' is in the future; only past data can be queried")
    leftover = leftover_time_words(masked(text, taken))
    if leftover is not None:
        raise TimeParseError(f"'{leftover}' cannot be read as a window")
    found.sort(key=lambda w: w.span[0] if w.span else 0)
    return Windows(found, shift, sorted(taken))


def default_window(now: datetime) -> ParsedWindow:
    """The window of a question that names none: the last hour."""
    return ParsedWindow(make_range(now - DEFAULT_WINDOW, now, "the last hour"), None, "default")


def _month_index(moment: datetime) -> int:
    return moment.year * 12 + moment.month - 1


def _starts_a_month(moment: datetime) -> bool:
    return moment.day == 1 and moment.time() == time(0)


def baseline_of(current: TimeRange, start: datetime, end: datetime, expression: str) -> Comparison:
    """The comparison of `current` with the window `start`..`end`: PromQL `offset` over the
    current window when the two are equally long (they line up point by point), otherwise a
    range query of its own over the baseline window."""
    if end > current.start_time:
        raise TimeParseError(f"{expression} overlaps {current.expression}; nothing to compare")
    baseline = make_range(start, end, expression)
    if end - start == current.end_time - current.start_time:
        return Comparison(baseline=baseline, offset_seconds=int((current.start_time - start).total_seconds()))
    return Comparison(baseline=baseline)


def _same_part(later: TimeRange, earlier: TimeRange) -> tuple[datetime, datetime, str]:
    """The part of `earlier` that matches `later`, both ends moved back on the calendar.

    Periods starting on the first of a month move back by whole months (31 March 12:00 a
    month back is 28 February 12:00), others by the time between the two starts; the end is
    cut where the earlier period ends ("last month vs the month before" compares April with
    all of March, not with March and the first day of April).
    """
    a, b = later, earlier
    if _starts_a_month(a.start_time) and _starts_a_month(b.start_time):
        months = _month_index(a.start_time) - _month_index(b.start_time)
        end = minus(a.end_time, months, "months")
    else:
        end = a.end_time - (a.start_time - b.start_time)
    end = min(end, b.end_time)
    if end == b.end_time:
        return b.start_time, end, b.expression
    said = re.sub(r"^(?:in|on|during)\s+", "", b.expression)
    return b.start_time, end, f"the same part of {said} (to {end:%Y-%m-%d %H:%M} UTC)"


def comparison_of(found: Windows, now: datetime, compared: bool) -> tuple[ParsedWindow, Comparison | None, str | None]:
    """The window answered, the baseline it is compared with, and what of the question's
    windows is left unanswered (None when all are used).

    A shift ("vs the same hour yesterday") moves both ends of the current window back; two
    windows joined by a comparing word ("this month vs last month", "March compared to
    February") compare the later with the same part of the earlier (`_same_part`). Two
    windows without one ("CPU last week and this month") answer the first and say the second
    is not: nothing asked for a comparison.
    """
    windows = found.windows
    current = windows[0] if windows else default_window(now)
    shift = found.shift
    if shift is not None:
        if shift.same is not None and current.kind in ("default", "now"):
            current = ParsedWindow(last(1, shift.same, now), current.span, "duration")
        tr = current.time_range
        start, end = shift.back(tr.start_time), shift.back(tr.end_time)
        said = shift.baseline_expression()
        if end - start != tr.end_time - tr.start_time:  # months differ in length: say which days
            said = f"{said} ({start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC)"
        return current, baseline_of(tr, start, end, said), None
    if len(windows) < 2:
        return current, None, None
    if not compared:
        extra = ", ".join(w.time_range.expression for w in windows[1:])
        return current, None, extra
    earlier, later = sorted(windows[:2], key=lambda w: w.time_range.start_time)
    a, b = later.time_range, earlier.time_range
    if a.start_time <= b.start_time:
        raise TimeParseError(f"{a.expression} and {b.expression} start at the same time; nothing to compare")
    if b.end_time > a.start_time:
        raise TimeParseError(f"{b.expression} and {a.expression} overlap; compare windows that do not")
    start, end, said = _same_part(a, b)
    return later, baseline_of(a, start, end, said), None


def parse_time_range(text: str, now: datetime) -> ParsedWindow:
    """The first window a text names; the last hour when it names none.

    Raises `TimeParseError` for a window that ends before it starts or lies in the future.
    """
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    windows = read_windows(text, now).windows
    return windows[0] if windows else default_window(now)


def last(amount: float, unit: str, now: datetime) -> TimeRange:
    """The window of the last `amount` `unit`s up to now."""
    return make_range(minus(now, amount, unit), now, _describe(amount, unit))


def duration_text(seconds: float) -> str:
    """A PromQL duration for `seconds`, in the largest unit that divides it (1d, 90m, 45s)."""
    whole = round(seconds)
    for suffix, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if whole % size == 0:
            return f"{whole // size}{suffix}"
    return f"{whole}s"


__all__ = [
    "COMPARATOR",
    "DEFAULT_WINDOW",
    "ParsedWindow",
    "Shift",
    "TimeParseError",
    "Windows",
    "baseline_of",
    "calendar_window",
    "choose_step",
    "comparison_of",
    "default_window",
    "duration_text",
    "last",
    "leftover_time_words",
    "make_range",
    "masked",
    "minus",
    "overlaps",
    "parse_time_range",
    "read_windows",
    "unit_name",
]
