"""Time windows said in words ("last hour", "since 2 hours ago", "yesterday") made absolute.

Everything is relative to the caller's clock (`context.now`, fixed by `--now`), so the
same question always gives the same window in tests. The step is chosen here too:
a range query should return a readable number of points whatever the window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from concerto.nlp.numbers import number_words_pattern, word_number
from concerto.packs.metrics.models import TimeRange

DEFAULT_WINDOW = timedelta(hours=1)
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
}
_UNIT_RE = "|".join(sorted(_UNITS, key=len, reverse=True))
_ARTICLES = {"a": 1, "an": 1}  # "over a day", "in the past an hour"
_NUM = r"(?P<n>\d+(?:\.\d+)?|" + number_words_pattern(_ARTICLES) + r")"
_CLOCK = (
    r"\d{4}-\d{2}-\d{2}(?:[ t]\d{1,2}:\d{2}(?::\d{2})?)?(?:z|[+-]\d{2}:?\d{2})?"
    r"|\d{1,2}(?::\d{2})?\s*(?:am|pm)?(?![\d-])"
)

_LAST_N = re.compile(
    rf"\b(?:(?:last|past|previous|recent)\s+{_NUM}?"
    rf"|(?:over|in|within|for|during)\s+(?:the\s+)?{_NUM.replace('?P<n>', '?P<n2>')})"
    rf"\s*-?\s*(?P<u>{_UNIT_RE})\b",
    re.I,
)
_SINCE_AGO = re.compile(rf"\bsince\s+{_NUM}\s*(?P<u>{_UNIT_RE})\s+ago\b", re.I)
_AGO = re.compile(rf"\b{_NUM}\s*(?P<u>{_UNIT_RE})\s+ago\b", re.I)
_BETWEEN = re.compile(rf"\b(?:between|from)\s+(?P<a>{_CLOCK})\s+(?:and|to|until|-)\s+(?P<b>{_CLOCK})", re.I)
_SINCE_CLOCK = re.compile(rf"\bsince\s+(?P<a>{_CLOCK})(?!\s*(?:{_UNIT_RE})\b)", re.I)
_FUTURE = re.compile(r"\b(?:next|tomorrow|coming|upcoming|in\s+\d+\s+\w+\s+from\s+now)\b", re.I)


class TimeParseError(ValueError):
    """A window that cannot be used (end before start, in the future)."""


@dataclass(frozen=True, slots=True)
class ParsedWindow:
    """A window and the span of text it was read from (so the rest can be matched)."""

    time_range: TimeRange
    span: tuple[int, int] | None


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


def _amount(match: re.Match[str]) -> float:
    groups = match.groupdict()
    raw = (groups.get("n") or groups.get("n2") or "1").lower()
    value = word_number(raw, _ARTICLES)
    return float(value if value is not None else raw)


def _describe(amount: float, unit: str) -> str:
    name = {
        1: "second",
        60: "minute",
        3600: "hour",
        86400: "day",
        604800: "week",
        2592000: "month",
    }[_UNITS[unit.lower()]]
    if amount == 1:
        return f"the last {name}"
    return f"the last {amount:g} {name}s"


def _clock(text: str, now: datetime) -> datetime:
    """An explicit time: ISO date/time, or a clock time today (yesterday if still ahead)."""
    text = text.strip().lower()
    if re.match(r"\d{4}-\d{2}-\d{2}", text):
        value = datetime.fromisoformat(text.upper().replace(" ", "T"))
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
    return datetime.combine(now.date(), time(hour, minute), tzinfo=now.tzinfo or UTC)


def _day_start(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time(0), tzinfo=now.tzinfo or UTC)


def parse_time_range(text: str, now: datetime) -> ParsedWindow:
    """Read the window of a question; the last hour when it names none.

    Raises `TimeParseError` for a window that ends before it starts or lies in the future.
    """
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    if (m := _BETWEEN.search(text)) is not None:
        start, end = _clock(m.group("a"), now), _clock(m.group("b"), now)
        if end <= start:
            raise TimeParseError(f"the window ends ({m.group('b')}) before it starts ({m.group('a')})")
        return ParsedWindow(_checked(start, min(end, now), f"from {m.group('a')} to {m.group('b')}", now), m.span())
    if (m := _SINCE_AGO.search(text)) is not None:
        seconds = _amount(m) * _UNITS[m.group("u").lower()]
        return ParsedWindow(
            _checked(now - timedelta(seconds=seconds), now, _describe(_amount(m), m.group("u")), now),
            m.span(),
        )
    if (m := _SINCE_CLOCK.search(text)) is not None and m.group("a").strip():
        start = _clock(m.group("a"), now)
        if start > now and not re.match(r"\d{4}-", m.group("a")):
            start -= timedelta(days=1)
        return ParsedWindow(_checked(start, now, f"since {m.group('a').strip()}", now), m.span())
    if (m := re.search(r"\bsince\s+yesterday\b", text, re.I)) is not None:
        start = _day_start(now.date() - timedelta(days=1), now)
        return ParsedWindow(_checked(start, now, "since yesterday", now), m.span())
    if (m := re.search(r"\byesterday\b", text, re.I)) is not None:
        start = _day_start(now.date() - timedelta(days=1), now)
        return ParsedWindow(_checked(start, start + timedelta(days=1), "yesterday", now), m.span())
    if (m := re.search(r"\btoday\b|\bthis\s+day\b", text, re.I)) is not None:
        return ParsedWindow(_checked(_day_start(now.date(), now), now, "today", now), m.span())
    if (m := _LAST_N.search(text)) is not None:
        amount, unit = _amount(m), m.group("u")
        seconds = amount * _UNITS[unit.lower()]
        return ParsedWindow(_checked(now - timedelta(seconds=seconds), now, _describe(amount, unit), now), m.span())
    if (m := re.search(r"\b(?:right\s+now|currently|current|at the moment|now)\b", text, re.I)) is not None:
        return ParsedWindow(make_range(now - timedelta(minutes=5), now, "the last 5 minutes"), m.span())
    if (m := _FUTURE.search(text)) is not None:
        raise TimeParseError(f"'{m.group(0)}' is in the future; only past data can be queried")
    return ParsedWindow(make_range(now - DEFAULT_WINDOW, now, "the last hour"), None)


def _checked(start: datetime, end: datetime, expression: str, now: datetime) -> TimeRange:
    if end <= start:
        raise TimeParseError(f"the window {expression} is empty or reversed")
    if start >= now:
        raise TimeParseError(f"the window {expression} starts in the future")
    return make_range(start, end, expression)


__all__ = ["ParsedWindow", "TimeParseError", "choose_step", "make_range", "parse_time_range"]
