"""What a question says about a source: the columns it names, the values it filters on, the
period, the aggregate, the grouping and how many rows it wants.

Columns are found the way the issue asks, never through keyword lists: a column is
named when the words of its name are in the question, exactly or nearly (plurals and
typos, `concerto.nlp.terms`); values are found in the source's own
distinct values; failing both, the question's meaning is compared with each column's
description by the local sentence embedder. The small vocabularies below are grammar
(what "average" or "by" means), not routing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Literal

from concerto.data.context import DataContext, logical_name
from concerto.nlp.numbers import number_words_pattern, word_number
from concerto.nlp.terms import NEAR, word_score, words

Aggregate = Literal["sum", "avg", "count", "min", "max", "median"]
Grain = Literal["day", "week", "month", "quarter", "year"]

_AGGREGATES: list[tuple[re.Pattern[str], Aggregate]] = [
    (re.compile(r"\b(average|avg|mean|typical)\b"), "avg"),
    (re.compile(r"\bmedian\b"), "median"),
    (re.compile(r"\b(how many|number of|count)\b"), "count"),
    (re.compile(r"\b(total|sum|overall|combined)\b"), "sum"),
    (re.compile(r"\b(maximum|max|highest|largest|biggest|peak)\b"), "max"),
    (re.compile(r"\b(minimum|min|lowest|smallest)\b"), "min"),
    # "who had the most points", "the fewest goals": a superlative of an amount (after "how many")
    (re.compile(r"\bthe most\b(?!\s+(?:common|frequent|popular|recent|often))"), "max"),
    (re.compile(r"\bthe (?:least|fewest)\b(?!\s+(?:common|frequent|popular|recent|often))"), "min"),
]
_GRAINS: dict[str, Grain] = {
    "day": "day", "daily": "day", "week": "week", "weekly": "week", "month": "month", "monthly": "month",
    "quarter": "quarter", "quarterly": "quarter", "year": "year", "yearly": "year", "annual": "year",
    "annually": "year",
}  # fmt: skip
_NUMBER = rf"(\d+|{number_words_pattern()})"
_TOP = re.compile(rf"\b(top|first|best|largest|biggest|highest)\s+{_NUMBER}\b")
_BOTTOM = re.compile(rf"\b(bottom|last|worst|smallest|lowest)\s+{_NUMBER}\b(?!\s+(month|year|quarter|week|day))")
_WHICH_N = re.compile(rf"\b(which|what|the|list|show)\s+{_NUMBER}\s+[a-z]")
_GROUP = re.compile(r"\b(by|per|for each|for every|across|each)\s+([a-z][a-z _-]{1,40})")
_LAST = re.compile(rf"\b(last|past|previous|recent)\s+{_NUMBER}?\s*(day|week|month|quarter|year)s?\b")
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_QUARTER = re.compile(r"\bq([1-4])\s*(?:of\s+)?(19\d\d|20\d\d)\b")
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(19\d\d|20\d\d)\b")
STOP = frozenset(
    """the a an of in on for to and or by per with what which who is are was were show me our my all each every how
    many much do does have has their its that this these those from at as be list give find data value values number
    than more less between over under most least""".split()
)
# Words that shape a question rather than name data (aggregates, periods, ordering, verbs).
GRAMMAR = frozenset(
    """average avg mean typical median count total sum overall combined maximum max highest largest biggest peak
    minimum min lowest smallest top bottom first last best worst past previous recent day days week weeks month
    months quarter quarters year years daily weekly monthly quarterly yearly annual annually trend trends over time
    growth change changed changes per across group grouped breakdown break down split show tell compare versus vs
    rank ranked ranking sort sorted order ordered q1 q2 q3 q4 january february march april may june july august
    september october november december this since until when where there did get got see look looks like
    please can could would should will one two three four five six seven eight nine ten twenty fifty hundred
    it they them we us i you your""".split()
)


@dataclass
class Filter:
    """`column IN values` (values as found in the data, so the SQL compares exact values)."""

    column: str
    values: list[object]


@dataclass
class Period:
    """A closed date range on the time column, and how it was read."""

    start: date
    end: date
    text: str


@dataclass
class Reading:
    """What one question asks of one source."""

    measures: list[str] = field(default_factory=list)
    dimensions: list[str] = field(default_factory=list)
    filters: list[Filter] = field(default_factory=list)
    period: Period | None = None
    aggregate: Aggregate | None = None
    grain: Grain | None = None
    top: int | None = None
    ascending: bool = False
    named_columns: list[str] = field(default_factory=list)
    unknown_terms: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def measure(self) -> str | None:
        return self.measures[0] if self.measures else None


def read(
    question: str,
    context: DataContext,
    values: dict[str, list[object]],
    *,
    similar: dict[str, float] | None = None,
) -> Reading:
    """Read `question` against the source. `values` holds each category and label column's
    distinct values; `similar` the embedding similarity of the question to each column's
    description (optional, the last resort for a measure the words did not name)."""
    text = " ".join(words(question))
    reading = Reading()
    reading.aggregate = next((agg for pattern, agg in _AGGREGATES if pattern.search(text)), None)
    _read_top(text, reading)
    _read_period(text, context, values, reading)
    named = _named_columns(text, context)
    reading.named_columns = [c for c, _ in named]
    for column in reading.named_columns:  # "how many workers are married?": a yes/no column named is a filter
        if context.detected_types[column].role == "flag":
            negated = re.search(rf"\b(not|never|un)\s*{logical_name(column).split('_')[0]}", text)
            reading.filters.append(Filter(column, [not negated]))
    _read_filters(question, context, values, reading)
    filtered = {f.column for f in reading.filters}
    _read_groups(text, context, named, filtered, reading)
    measures = [c for c, _ in named if context.detected_types[c].role in ("money", "measure")]
    if not measures and similar and reading.aggregate != "count":
        measures = _closest_measure(context, similar, reading)
    reading.measures = measures
    reading.unknown_terms = _leftover(text, context, reading, values)
    if reading.aggregate is None and re.search(r"\b(trend|over time|growth|change|changed)\b", text):
        reading.grain = reading.grain or "month"
    if reading.grain is None and (
        every := re.search(r"\b(daily|weekly|monthly|quarterly|yearly|annual|annually)\b", text)
    ):
        reading.grain = _GRAINS[every.group(1)]
    return reading


def _leftover(text: str, context: DataContext, reading: Reading, values: dict[str, list[object]]) -> list[str]:
    """Content words the source explains in no way: neither a column, a value, the entity nor grammar."""
    known = {w for c in context.columns for w in logical_name(c).split("_")}
    known |= {w for c in context.columns for w in words(context.describe(c))}
    known |= {w for f in reading.filters for v in f.values for w in words(str(v))}
    profile = context.semantic_profile
    known |= set(words(profile.entity_name)) | set(words(context.name)) | set(words(profile.domain))
    out = []
    for token in text.split():
        if token in STOP or token in GRAMMAR or token.isdigit() or len(token) < 3:
            continue
        if token in known or token.rstrip("s") in known or word_score(token, sorted(known)) >= NEAR:
            continue
        out.append(token)
    return out


def _closest_measure(context: DataContext, similar: dict[str, float], reading: Reading) -> list[str]:
    """The measure whose description the question is clearly closest to in meaning: close
    (>= 0.4), ahead of the next one and of the default measure (MiniLM similarities of a
    question to column descriptions are close together, so a margin is what says "clearly")."""
    ranked = sorted(similar, key=lambda c: -similar[c])
    if not ranked:
        return []
    best = ranked[0]
    runner_up = similar[ranked[1]] if len(ranked) > 1 else 0.0
    default = default_measure(context)
    baseline = similar.get(default, 0.0) if default and default != best else 0.0
    if similar[best] >= 0.4 and similar[best] - runner_up >= 0.05 and similar[best] - baseline >= 0.08:
        reading.notes.append(f"took '{best}' as the measure: its description is closest to the question")
        return [best]
    return []


def default_grain(context: DataContext) -> Grain:
    """The period a trend is read in when the question names none: the data's own spacing when
    it is quarterly or yearly, else months (daily data is summed per month)."""
    column = context.semantic_profile.time_column
    if column is None:
        return "month"
    profile = context.detected_types[column]
    first, last = as_date(profile.min), as_date(profile.max)
    if first is None or last is None or profile.distinct < 2:
        return "month"
    spacing = (last - first).days / (profile.distinct - 1)
    return "year" if spacing >= 300 else "quarter" if spacing >= 80 else "month"


MONTHS_PER: dict[Grain, float] = {"day": 1 / 30, "week": 0.25, "month": 1, "quarter": 3, "year": 12}


def default_measure(context: DataContext) -> str | None:
    """The measure a question means when it names none: money first, then other numbers."""
    for role in ("money", "measure"):
        found = context.columns_with(role)
        if found:
            return found[0]
    return None


def _read_top(text: str, reading: Reading) -> None:
    top, bottom = _TOP.search(text), _BOTTOM.search(text)
    lowest = re.search(r"\b(lowest|least|smallest|bottom|worst|fewest)\b", text)
    if top:
        reading.top = _count(top.group(2))
    elif bottom:
        reading.top, reading.ascending = _count(bottom.group(2)), True
    elif which := _WHICH_N.search(text):  # "which 5 cars have the most ...", "the 3 countries with the lowest"
        reading.top, reading.ascending = _count(which.group(2)), bool(lowest)
    elif lowest:
        reading.ascending = True


def _count(token: str) -> int | None:
    return int(token) if token.isdigit() else word_number(token)


def _named_columns(text: str, context: DataContext) -> list[tuple[str, float]]:
    """Columns whose name words appear in the question (exactly, or nearly), best first."""
    tokens = [t for t in text.split() if t not in STOP]
    found: list[tuple[str, float]] = []
    for column in context.columns:
        name_words = [w for w in logical_name(column).split("_") if w and w not in STOP]
        if len(name_words) > 1 and len(name_words[-1]) <= 3:  # "body_mass_g", "weight_lbs": a unit
            name_words = name_words[:-1]
        if not name_words:
            continue
        score = min(word_score(w, tokens) for w in name_words)
        if score >= NEAR:
            found.append((column, score + 0.01 * len(name_words)))  # longer names are more specific
    return sorted(found, key=lambda pair: -pair[1])


def _read_filters(question: str, context: DataContext, values: dict[str, list[object]], reading: Reading) -> None:
    """Values of category and label columns that the question names ("in the West", "Acme Energy",
    "Japan's", "European" for Europe)."""
    lowered = " " + " ".join(w.removesuffix("'s") for w in words(question)) + " "
    hits: dict[str, list[object]] = {
        column: [v for v in options if isinstance(v, str) and _mentions(lowered, v)]
        for column, options in values.items()
    }
    everything = [str(v).lower() for found in hits.values() for v in found]
    for column, found in hits.items():
        # A value inside a longer value also found ("Energy" in "Acme Energy"), in any column, is not separate.
        longest = [v for v in found if not any(str(v).lower() != w and str(v).lower() in w for w in everything)]
        if longest:
            reading.filters.append(Filter(column, list(longest)))


def _mentions(text: str, value: str) -> bool:
    target = " ".join(words(value))
    if len(target) < 2 or target in STOP:
        return False
    if f" {target} " in text or (len(target) > 3 and f" {target}s " in text):
        return True
    # One longer word: its adjective or plural ("Europe" in "European cars").
    return (
        " " not in target
        and len(target) >= 5
        and any(t.startswith(target) and len(t) - len(target) <= 3 for t in text.split())
    )


def _read_groups(
    text: str,
    context: DataContext,
    named: list[tuple[str, float]],
    filtered: set[str],
    reading: Reading,
) -> None:
    """ "by region", "per segment", "for each industry", "by month"."""
    for match in _GROUP.finditer(text):
        phrase = match.group(2).split(" and ")[0].strip()
        first = phrase.split()[0] if phrase.split() else ""
        if first in _GRAINS:
            reading.grain = _GRAINS[first]
            continue
        candidates = [
            c
            for c in context.columns
            if context.detected_types[c].role in ("category", "label", "id", "flag")
            and word_score(logical_name(c).split("_")[0], phrase.split()) >= NEAR
        ]
        if candidates:
            reading.dimensions.append(candidates[0])
        elif first and first not in STOP and first == context.semantic_profile.entity_name:
            key = context.semantic_profile.entity_key
            if key:
                reading.dimensions.append(key)
    for column, _ in named:
        role = context.detected_types[column].role
        if role == "category" and column not in reading.dimensions and column not in filtered:
            reading.dimensions.append(column)
        if role == "time" and reading.grain is None and re.search(r"\b(trend|over time|by month|monthly)\b", text):
            reading.grain = "month"


def _read_period(text: str, context: DataContext, values: dict[str, list[object]], reading: Reading) -> None:
    """A period on the time column; "last N months" counts back from the data's latest date. Without
    a date column, a year named in the question filters a whole-number column called year."""
    column = context.semantic_profile.time_column
    if not column:
        years = [int(y) for y in _YEAR.findall(text)]
        year_column = next(
            (
                c
                for c in context.columns
                if logical_name(c) in ("year", "yr") and "INT" in context.detected_types[c].type
            ),
            None,
        )
        if years and year_column:
            reading.filters.append(Filter(year_column, list(years)))
        return
    latest = as_date(context.detected_types[column].max)
    if latest is None:
        return
    if m := _QUARTER.search(text):
        q, year = int(m.group(1)), int(m.group(2))
        start = date(year, 3 * q - 2, 1)
        reading.period = Period(start, _month_end(date(year, 3 * q, 1)), f"Q{q} {year}")
    elif m := _MONTH.search(text):
        start = date(int(m.group(2)), _MONTHS[m.group(1)], 1)
        reading.period = Period(start, _month_end(start), f"{m.group(1).title()} {m.group(2)}")
    elif m := _LAST.search(text):
        n = _count(m.group(2)) if m.group(2) else 1
        unit = m.group(3)
        months = {"month": 1, "quarter": 3, "year": 12}.get(unit)
        if months is not None:
            first = add_months(date(latest.year, latest.month, 1), -(n or 1) * months + 1)
        else:
            first = latest - timedelta(days=(n or 1) * (7 if unit == "week" else 1) - 1)
        reading.period = Period(first, latest, f"the last {n or 1} {unit}{'s' if (n or 1) > 1 else ''} of data")
    elif years := [int(y) for y in _YEAR.findall(text)]:
        reading.period = Period(
            date(min(years), 1, 1), date(max(years), 12, 31), "–".join(sorted(set(map(str, years))))
        )


def as_date(value: object) -> date | None:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _month_end(day: date) -> date:
    return add_months(day, 1) - timedelta(days=1)
