"""A table reading's answer in words and as values: what was found, how the question was read,
and what of it was not applied."""

from __future__ import annotations

from typing import Any

from concerto.contracts.common import answer_value
from concerto.contracts.reading import TableReading
from concerto.packs.analytics import words

_AGGREGATE_WORD = {"sum": "total", "avg": "average", "median": "median", "min": "lowest", "max": "highest"}


def values_of(reading: TableReading, rows: list[dict[str, Any]]) -> list[object] | None:
    """The answer's values: the first column of each row (one row's cells when several columns
    are asked), yes/no for a yes/no question; None when nothing matched."""
    if not rows:
        return None
    if reading.kind == "yes_no":
        return [answer_value(bool(next(iter(rows[0].values()))))]
    if len(reading.answer) > 1 and reading.kind != "choice":
        return [answer_value(v) for v in rows[0].values() if v is not None] or None
    found = [next(iter(r.values())) for r in rows]
    return [answer_value(v) for v in found if v is not None] or None


def sentence(reading: TableReading, rows: list[dict[str, Any]]) -> str:
    """One sentence with the answer ("3 rows match Year > 2000." / "Team: Real Madrid.")."""
    scope = _scope(reading)
    values = values_of(reading, rows)
    if values is None:
        return f"No row matches{scope or ' the question'}." if reading.kind != "count" else f"No rows{scope}."
    shown = words.listing([_shown(v) for v in values], limit=10)
    match reading.kind:
        case "count":
            what = (
                f"distinct {words.label(reading.answer[0])} values" if reading.aggregate == "count_distinct" else "rows"
            )
            return f"{shown} {what[:-1] if values == [1] else what}{scope}."
        case "aggregate":
            word = _AGGREGATE_WORD.get(reading.aggregate or "sum", reading.aggregate or "")
            return f"The {word} {words.label(reading.measure or '')} is {shown}{scope}."
        case "difference":
            return f"The difference in {words.label(reading.measure or 'rows')} is {shown}."
        case "choice":
            by = words.label(reading.measure) if reading.measure else "place in the table"
            side = (
                ("higher" if reading.descending else "lower")
                if reading.measure
                else ("later" if reading.descending else "earlier")
            )
            return f"{shown} has the {side} {by}."
        case "yes_no":
            return f"{str(values[0]).capitalize()}{scope}."
        case _:
            label = ", ".join(words.label(c) for c in reading.answer) or "Answer"
            return f"{label[:1].upper()}{label[1:]}: {shown}{scope}."


def _scope(reading: TableReading) -> str:
    parts = [c.text() for c in reading.conditions]
    return f" where {' and '.join(parts)}" if parts else ""


def _shown(value: object) -> str:
    return words.number(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)
