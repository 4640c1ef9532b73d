"""How `prediction_synthesizer` reads a question: the horizon in months (the caller's
`horizon`, or the question: "next quarter" = 3, "next 6 months", "rest of the year"; default
6, at most 36), the time column, the outcome (the caller's `outcome`, the question's
"forecast X", else new_rx), the interval level and a segment to forecast ("specialty=Oncology",
or a category value the question names).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.errors import invalid

if TYPE_CHECKING:
    from concerto.packs.commercial.base.agent import Work

DEFAULT_HORIZON = 6  # months
MAX_HORIZON = 36  # months; also never more periods than the history holds
DEFAULT_OUTCOME = "new_rx"
_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "eighteen": 18, "twenty-four": 24, "a": 1, "an": 1,
}  # fmt: skip
_UNIT_MONTHS = {"month": 1, "quarter": 3, "year": 12, "week": 12 / 52}
_NEXT = re.compile(
    r"\b(?:next|coming|upcoming|following)\s+(?:(?P<n>\d+|[a-z-]+)\s+)?(?P<unit>month|quarter|year|week)s?\b",
    re.IGNORECASE,
)
_COUNTED = re.compile(
    r"(?<!last )(?<!past )(?<!previous )\b(?P<n>\d+|[a-z]+)[- ](?P<unit>month|quarter|year|week)s?\b", re.IGNORECASE
)
_HALF = re.compile(r"\b(?:next|coming)\s+half[- ]year\b|\bnext\s+six\s+months\b", re.IGNORECASE)
_REST = re.compile(r"\b(?:rest|remainder|end)\s+of\s+(?:the\s+|this\s+)?year\b|\byear[- ]end\b", re.IGNORECASE)
_OUTCOME = re.compile(
    r"\b(?:forecast|predict|project|projection of|outlook for|expect)\w*\s+(?:the\s+|our\s+)?(?P<y>.+?)"
    r"(?:\s+(?:for|over|in|during|through|next|until|by|will)\b|[?.!,]|$)",
    re.IGNORECASE,
)


def horizon_from_question(text: str) -> int | str | None:
    """Months asked for ("next quarter" → 3), "rest" for the rest of the year, or None."""
    if _REST.search(text):
        return "rest"
    if _HALF.search(text):
        return 6
    for m in (*_COUNTED.finditer(text), *_NEXT.finditer(text)):
        count = m.group("n")
        n = 1 if count is None else int(count) if count.isdigit() else _NUMBERS.get(count.lower())
        if n is not None:
            return max(1, math.ceil(n * _UNIT_MONTHS[m.group("unit").lower()]))
    return None


def horizon_of(work: Work) -> int | str:
    given = work.given("horizon")
    if given is None:
        asked = horizon_from_question(work.request)
        return DEFAULT_HORIZON if asked is None else asked
    try:
        months = float(given)
    except (TypeError, ValueError):
        raise invalid(
            f"the horizon '{given}' is not a number of months",
            f"Give the horizon as a whole number of months, 1 to {MAX_HORIZON}.",
            error_type="invalid_horizon",
        ) from None
    if not months >= 1 or (math.isfinite(months) and months != int(months)):
        raise invalid(
            f"the horizon must be a whole number of months of at least 1, not {given}",
            f"Ask for 1 to {MAX_HORIZON} months ahead, e.g. horizon 6.",
            error_type="invalid_horizon",
            horizon=given,
        )
    if months > MAX_HORIZON:
        raise invalid(
            f"a horizon of {months:,.0f} months is too far: forecasts here go at most {MAX_HORIZON} months "
            "ahead (and no further than the history they are fitted on)",
            f"Ask for {MAX_HORIZON} months or fewer.",
            error_type="invalid_horizon",
            horizon=str(given),
            max_horizon=MAX_HORIZON,
        )
    return int(months)


def time_column_of(work: Work) -> str:
    source = work.source
    if work.given("time_column") is not None:
        column = cols.resolve(source, str(work.given("time_column")), "time column")
    else:
        times = source.columns_with("time")
        column = source.semantic_profile.time_column or (times[0] if times else None)  # type: ignore[assignment]
    if column is not None and source.detected_types[column].role != "time":
        kind = source.detected_types[column].type.upper()
        if not any(t in kind for t in ("DATE", "TIME", "CHAR", "TEXT", "STRING")):
            raise invalid(
                f"the time column {column} holds {kind.lower()} values, not dates",
                "Name a date column with time_column.",
                error_type="no_time_column",
            )
    if column is None:
        raise invalid(
            f"the source {source.name} has no date column to forecast along",
            "Name a date column with time_column, or load a source with one (e.g. a month column).",
            error_type="no_time_column",
        )
    return column


def outcome_of(work: Work, time_column: str) -> str:
    source = work.source
    numeric = [c for c in cols.numeric_columns(source) if c != time_column and source.detected_types[c].role != "id"]
    if work.given("outcome") is not None:
        column = cols.resolve(source, str(work.given("outcome")), "outcome")
        return cols.numeric(source, column, "outcome")
    m = _OUTCOME.search(work.request)
    found = cols.match_phrase(source, m.group("y"), numeric) if m else None
    found = found or cols.match_phrase(source, work.request, numeric)
    if found is None and DEFAULT_OUTCOME in numeric:
        found = DEFAULT_OUTCOME
    if found is None and len(numeric) == 1:
        found = numeric[0]
    if found is None:
        raise invalid(
            f"which column of {source.name} to forecast is not clear from the question",
            f"Name it with outcome: one of {', '.join(numeric) or 'none (the source has no numeric column)'}.",
            error_type="missing_outcome",
        )
    return found


def level_of(work: Work) -> float:
    given = work.given("interval_level")
    try:
        level = float(given) if given is not None else 0.95
    except (TypeError, ValueError):
        level = -1.0
    if level > 1:
        level /= 100  # "95" means 95 %
    if not 0.5 <= level < 1:
        raise invalid(
            f"the interval level {given} is not between 50 % and 99.9 %",
            "Give interval_level as e.g. 0.8, 0.9 or 0.95.",
            error_type="invalid_level",
        )
    return level


def segment_of(work: Work) -> tuple[str, str] | None:
    """(column, value) from `segment` ("specialty=Oncology", {"specialty": "Oncology"} or a
    value of a category column, "Oncology"), else a category value the question names
    ("oncology new Rx", "in the Northeast region"; the brand is the base's filter)."""
    given = work.given("segment")
    source = work.source
    if given is None:
        named = [
            (len(str(v)), c, str(v))
            for c in cols.category_columns(source)
            if c != "brand"
            for v in source.detected_types[c].categories
            if len(str(v)) >= 3
            and not str(v).isdigit()
            and re.search(rf"(?<![\w-]){re.escape(str(v))}(?![\w-])", work.request, re.IGNORECASE)
        ]
        if not named:
            return None
        _, column, value = max(named)
        work.notes.append(f"forecast for {column} = {value}, as the question names it")
        return column, value
    if isinstance(given, dict) and len(given) == 1:
        column, value = next(iter(given.items()))
    elif isinstance(given, str) and "=" in given:
        column, value = (p.strip() for p in given.split("=", 1))
    else:
        value = str(given).strip()
        owners = [
            c for c in source.columns
            if any(str(v).lower() == value.lower() for v in source.detected_types[c].categories)
        ]  # fmt: skip
        if not owners:
            raise invalid(
                f"no category column of {source.name} has the value '{value}'",
                "Give the segment as column=value, e.g. specialty=Oncology.",
                error_type="unknown_segment",
            )
        column = owners[0]
    column = cols.resolve(source, str(column), "segment")
    known = source.detected_types[column].categories
    if known and not any(str(v).lower() == str(value).lower() for v in known):
        raise invalid(
            f"'{value}' is not a value of {column}",
            f"Values of {column}: {', '.join(map(str, known[:20]))}",
            error_type="unknown_segment",
        )
    return column, str(value)
