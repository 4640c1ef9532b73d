"""`sql_analytics` (004's reference agent): quantitative questions answered with one query.

Query types: an aggregate of a measure (total, average, median, minimum, maximum, count)
overall, by one or two categories, or over time; a count of entities; the top or bottom
entities or groups by a measure; the rows that match the question's filters.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentFailure, AgentInfo, Unanswered
from concerto.contracts.common import ErrorKind
from concerto.contracts.reading import CONFIDENT, TableReading
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Planned, Work
from concerto.packs.analytics.reading import Aggregate, default_measure
from concerto.packs.analytics.table import wording
from concerto.packs.analytics.table.compile import compile_reading

_WORD: dict[Aggregate, str] = {
    "sum": "total",
    "avg": "average",
    "median": "median",
    "min": "minimum",
    "max": "maximum",
    "count": "count",
}


class SQLAnalyticsAgent(AnalyticsAgent):
    """Totals, averages, counts, rankings and breakdowns of the loaded data."""

    info = AgentInfo(
        name="sql_analytics",
        description=(
            "Answers quantitative questions about a loaded table with SQL: totals, averages, counts, "
            "minimums and maximums, broken down by category or over time, with rankings."
        ),
        capabilities=[
            "Calculate totals, averages, medians, minimums and maximums of a numeric column",
            "Break numbers down by a category column or by month, quarter or year",
            "Count records or entities matching conditions",
            "Rank groups or entities by a measure (top and bottom N)",
            "Filter by category values and date ranges",
        ],
        inputs={
            "request": "Natural language request from orchestrator",
            "data_source_id": "ID of data source to analyze",
            "context": "Additional context (optional)",
            "previous_results": "Results from prior agents (optional)",
        },
        outputs={
            "results": "Query results as structured data",
            "insights": "Interpretation of the results",
            "queries_executed": "SQL queries that were run",
            "visualization_hint": "Suggested chart type",
        },
        examples=[
            "total sales by region",
            "average engagement score per segment",
            "how many customers are in the West region?",
            "top 10 customers by sales",
            "monthly sales in 2024",
            "average X by Y",
            "total X per Y",
            "what was the average X in 2011?",
            "which 3 of them had the highest X?",
            "what is the median X?",
            "maximum X for each Y",
            "how many X are there?",
            "how many X are Y?",
            "how many X in each Y?",
            "what is the highest X ever?",
        ],
        default_timeout_ms=20000,
    )

    @staticmethod
    def reading_answers(reading: TableReading | None) -> bool:
        """A confident reading is answered as read: every form it has one answer (a value, a row,
        a count, a comparison); breakdowns, trends and rankings of groups are planned below."""
        return reading is not None and reading.confidence >= CONFIDENT

    def plan(self, work: Work) -> list[Planned]:
        reading = answering(work)
        if reading is not None:  # one value, row, count or comparison: the table reading's own query
            return [Planned(reading.read_as(), compile_reading(reading, work.source), kind=_READING)]
        r, source = work.reading, work.source
        _refuse_unknown(work)
        condition = sql.where(r, source)
        key = source.semantic_profile.entity_key
        if r.aggregate == "count" and not r.measures:
            counted_column = _counted_column(work)
            if counted_column is not None:  # "how many firms are there?": distinct firms, not firms per firm
                r.dimensions = [d for d in r.dimensions if d != counted_column]
                counted = exp.Count(this=exp.Distinct(expressions=[sql.col(counted_column)]))
                name = f"distinct_{counted_column}"
                return [self._grouped(work, counted, name, condition, f"Count of distinct {counted_column}")]
            rows_asked = re.search(r"\b(rows|records|entries|lines)\b", work.request.lower())
            if key and not rows_asked:
                counted = exp.Count(this=exp.Distinct(expressions=[sql.col(key)]))
            else:
                counted = exp.Count(this=exp.Star())
            name = words.plural(source.semantic_profile.entity_name) if key and not rows_asked else "rows"
            return [self._grouped(work, counted, name, condition, f"Count of {name}")]
        measure = self.measure(work)
        kind: Aggregate = r.aggregate or ("sum" if sql.additive(source, measure) else "avg")
        if kind == "count":
            kind = "sum" if sql.additive(source, measure) else "avg"
        value_name = f"{_WORD[kind]}_{measure}"
        if r.top is not None or (kind in ("max", "min") and not r.dimensions and not r.grain):
            return [self._ranked(work, measure, kind, value_name, condition)]
        expression = sql.rounded(sql.aggregate(kind, measure))
        return [self._grouped(work, expression, value_name, condition, f"{_WORD[kind]} {measure}")]

    def _grouped(self, work: Work, value: exp.Expr, name: str, condition: exp.Expr | None, purpose: str) -> Planned:
        """The value overall, by the question's categories, or per time bucket."""
        r, source = work.reading, work.source
        time_column = source.semantic_profile.time_column
        if r.grain and time_column:
            bucket = sql.bucket(time_column, r.grain)
            split = next(iter(r.dimensions), None)
            keys: list[exp.Expr] = [bucket.copy()] + ([sql.col(split)] if split else [])
            projections = [exp.alias_(bucket, sql.alias(r.grain)), *([sql.col(split)] if split else [])]
            query = sql.select_from(source, *projections, exp.alias_(value, sql.alias(name)))
            query = sql.filtered(query, condition).group_by(*keys).order_by(*(k.copy() for k in keys))
            what = f"{purpose} by {r.grain}" + (f" and {split}" if split else "")
            return Planned(what, query, "line", r.grain, [name], series=split)
        if r.dimensions:
            dims = r.dimensions[:2]
            query = sql.select_from(source, *(sql.col(d) for d in dims), exp.alias_(value, sql.alias(name)))
            order = exp.Ordered(this=sql.col(name), desc=not r.ascending)
            query = sql.filtered(query, condition).group_by(*(sql.col(d) for d in dims)).order_by(order)
            return Planned(f"{purpose} by {', '.join(dims)}", query, "bar", dims[0], [name])
        query = sql.filtered(sql.select_from(source, exp.alias_(value, sql.alias(name))), condition)
        return Planned(purpose, query, "table")

    def _ranked(self, work: Work, measure: str, kind: Aggregate, name: str, condition: exp.Expr | None) -> Planned:
        """Top (or bottom) N groups, or entities when no category is named."""
        r, source = work.reading, work.source
        n = r.top or 1
        label = _label_column(work)
        if r.top is None and not r.dimensions and kind in ("max", "min"):
            return self._extreme_row(work, measure, kind, condition)
        if r.dimensions:
            groups = [sql.col(d) for d in r.dimensions[:1]]
            x = r.dimensions[0]
            value = sql.aggregate(kind if kind not in ("max", "min") else sql.entity_measure(source, measure), measure)
        elif source.semantic_profile.entity_key:
            key = source.semantic_profile.entity_key
            groups = [sql.col(key)] + ([sql.col(label)] if label else [])
            x = label or key
            value = sql.aggregate(sql.entity_measure(source, measure), measure)
            name = f"{'total' if sql.additive(source, measure) else 'average'}_{measure}"
        else:
            groups, x = [], None
            value = sql.col(measure)
            name = measure
        projections = [*groups, exp.alias_(sql.rounded(value), sql.alias(name))]
        query = sql.filtered(sql.select_from(source, *projections), condition)
        if groups and (r.dimensions or source.semantic_profile.entity_key):
            query = query.group_by(*groups)
        query = query.order_by(exp.Ordered(this=sql.col(name), desc=not r.ascending)).limit(n)
        which = "bottom" if r.ascending else "top"
        return Planned(f"{which} {n} by {measure}", query, "bar", x, [name])

    def _extreme_row(self, work: Work, measure: str, kind: Aggregate, condition: exp.Expr | None) -> Planned:
        """The single highest (or lowest) value of the measure, with the row it belongs to."""
        source = work.source
        shown = [
            c
            for c in dict.fromkeys(
                [source.semantic_profile.entity_key, _label_column(work), source.semantic_profile.time_column]
            )
            if c
        ]
        not_null = exp.Not(this=exp.Is(this=sql.col(measure), expression=exp.Null()))
        both = exp.and_(condition, not_null) if condition is not None else not_null
        query = sql.select_from(source, *(sql.col(c) for c in shown), sql.col(measure)).where(both)
        query = query.order_by(exp.Ordered(this=sql.col(measure), desc=kind == "max")).limit(1)
        word = "highest" if kind == "max" else "lowest"
        return Planned(f"{word} {measure}", query, "bar", shown[0] if shown else None, [measure])

    def answer_values(self, work: Work, executed: list[Executed]) -> list[object] | None:
        if executed and executed[0].planned.kind == _READING:
            reading = answering(work)
            assert reading is not None and executed[0].result is not None
            return wording.values_of(reading, executed[0].result.data)
        return _values(work, executed)

    def unanswered(self, work: Work) -> list[Unanswered]:
        """With a table reading, the parts of the question it did not apply (values, numbers,
        dates, comparisons); a column named and not used is in the reading's `words`, not here."""
        reading = answering(work)
        if reading is None:
            return super().unanswered(work)
        return [
            Unanswered(
                part=f"'{w.words}'",
                reason=f"not applied: the {w.kind} was read{f' as {w.read_as}' if w.read_as else ''} but "
                "fits no part of the reading, so the answer does not depend on it",
                error_type="condition_not_applied",
                suggestion="Name the column it is about, or ask without it.",
            )
            for w in reading.conditions_missed
        ]

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        e = executed[0]
        if e.planned.kind == _READING:
            reading = answering(work)
            assert reading is not None and e.result is not None
            summary = wording.sentence(reading, e.result.data)
            return Insights(summary, [summary, f"Read as: {reading.read_as()}."])
        assert e.result is not None
        rows, planned = e.result.data, e.planned
        scope = _scope(work)
        if not rows:
            return Insights(f"No rows match {scope or 'the question'}.", follow_ups=_follow_ups(work))
        value_column = planned.y[0] if planned.y else e.result.columns[-1]
        if planned.chart == "table" or planned.x is None:
            value = rows[0][value_column]
            summary = f"{words.label(value_column).capitalize()}: {words.number(value)}{scope}."
            return Insights(summary, [summary], follow_ups=_follow_ups(work))
        values = [float(r[value_column] or 0) for r in rows]
        total = sum(values)
        labels = [str(r[planned.x]) for r in rows]
        if planned.chart == "line":
            findings = _line_findings(rows, planned, value_column, scope)
            return Insights(findings[0], findings, follow_ups=_follow_ups(work))
        verb = "is lowest" if work.reading.ascending else "leads"
        lead = f"{labels[0]} {verb} with {words.number(values[0])}"
        share = f" ({words.percent(values[0], total)} of the total)" if all(v >= 0 for v in values) else ""
        summary = f"{words.label(value_column).capitalize()} by {words.label(planned.x)}: {lead}{share}{scope}."
        findings = [summary]
        if len(rows) > 1:
            other = "highest" if work.reading.ascending else "lowest"
            findings.append(f"{labels[-1]} is the {other} shown, with {words.number(values[-1])}.")
            low, high = min(values), max(values)
            if low > 0:
                findings.append(f"The largest is {high / low:.1f}× the smallest (n = {len(rows)} groups).")
        if e.result.truncated:
            findings.append(f"Only the first {e.result.row_count} rows are shown.")
        return Insights(summary, findings, follow_ups=_follow_ups(work))


def _values(work: Work, executed: list[Executed]) -> list[object] | None:
    """What the one query answered, as values: the value of a one-cell answer (a count, a
    total); for a ranking or an extreme row, the names when the question asks which or who
    ("which 3 products sold most"), else the values ("what was the highest amount"). A table
    of groups or a series over time is an analysis: None."""
    e = executed[0] if len(executed) == 1 else None
    if e is None or e.result is None or not e.result.data:
        return None
    rows, planned = e.result.data, e.planned
    value_column = planned.y[0] if planned.y else e.result.columns[-1]
    if planned.chart == "table" or planned.x is None:
        if len(rows) != 1 or (_ASKS_WHO.search(work.request) and not isinstance(rows[0][value_column], str)):
            return None  # "who won ...?" answered by a number is not its answer: say nothing as values
        return [rows[0][value_column]]
    ranked = planned.kind == "" and planned.chart == "bar" and planned.purpose.split()[0] in _RANKED
    if not ranked:
        return None
    if not _ASKS_NAME.search(work.request):
        return [r[value_column] for r in rows]
    label = _label_column(work)  # a name ("Jeff Gordon") rather than the key beside it ("24")
    column = label if label in rows[0] else planned.x
    return [r[column] for r in rows]


_READING = "reading"


def answering(work: Work) -> TableReading | None:
    """The table reading this agent answers with (`SQLAnalyticsAgent.reading_answers`), else None."""
    return work.table_reading if SQLAnalyticsAgent.reading_answers(work.table_reading) else None


_RANKED = {"top", "bottom", "highest", "lowest"}
_ASKS_WHO = re.compile(r"^\W*(?:who|whom|whose|which|name)\b", re.I)
# "which region ...", "who ...", "name the ...", "what product ..." (not "what is / was the ...").
_ASKS_NAME = re.compile(r"^\W*(?:which|who|whom|whose|name|list)\b|^\W*what\s+(?!is\b|was\b|are\b|were\b|'s\b)", re.I)


def _counted_column(work: Work) -> str | None:
    """The category column a "how many X" question counts the distinct values of (X names it)."""
    asked = re.search(r"\bhow many\s+([a-z]+)", work.request.lower())
    if asked is None:
        return None
    from concerto.data.context import logical_name
    from concerto.nlp.terms import stem

    word = stem(asked.group(1))
    for column in work.reading.dimensions:
        if word in {stem(w) for w in logical_name(column).split("_")}:
            return column
    return None


def _line_findings(rows: list[dict[str, Any]], planned: Planned, value_column: str, scope: str) -> list[str]:
    """First to last and the peak, per series when the chart has several."""
    assert planned.x is not None
    series: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault(str(row[planned.series]) if planned.series else "", []).append(row)
    out = []
    for name, part in series.items():
        values = [float(r[value_column] or 0) for r in part]
        labels = [str(r[planned.x]) for r in part]
        head = f"{name}: " if name else ""
        out.append(
            f"{head}{words.label(value_column).capitalize()} went from {words.number(values[0])} ({labels[0]}) to "
            f"{words.number(values[-1])} ({labels[-1]}), {words.change(values[0], values[-1])}{scope}."
        )
        if not name:
            peak = max(range(len(values)), key=values.__getitem__)
            out.append(f"Peak: {words.number(values[peak])} in {labels[peak]} (n = {len(part)} periods).")
    return out


def _refuse_unknown(work: Work) -> None:
    """A question about data the source does not have gets the columns it does have."""
    r, source = work.reading, work.source
    if r.unknown_terms and not r.measures and r.aggregate not in (None, "count"):
        raise AgentFailure(
            f"The source '{source.name}' has no column for '{' '.join(r.unknown_terms)}'. "
            f"Its columns are: {', '.join(source.columns)}.",
            error_type="unknown_column",
            kind=ErrorKind.VALIDATION,
            suggestion="Ask about one of: " + ", ".join(source.columns_with("money", "measure") or source.columns),
            details={"unknown": r.unknown_terms, "columns": source.columns},
        )


def _label_column(work: Work) -> str | None:
    """A readable name for the entities (company name beside the customer id): the first label
    column whose samples read as words ("Jeff Gordon"), else the first label column ("07")."""
    source = work.source
    labels = source.columns_with("label")
    worded = [
        c
        for c in labels
        if any(isinstance(v, str) and re.search(r"[^\W\d_]{2}", v) for v in source.detected_types[c].sample_values)
    ]
    chosen = worded or labels
    return chosen[0] if chosen else None


def _scope(work: Work) -> str:
    r = work.reading
    parts = [f"{words.label(f.column)} {words.listing([str(v) for v in f.values])}" for f in r.filters]
    if r.period:
        parts.append(r.period.text)
    return (" (" + "; ".join(parts) + ")") if parts else ""


def _follow_ups(work: Work) -> list[str]:
    source = work.source
    categories = source.columns_with("category")
    measure = work.reading.measure or default_measure(source) or "the numbers"
    out = []
    if categories:
        out.append(f"{words.label(measure)} by {words.label(categories[0])}")
    if source.semantic_profile.time_column:
        out.append(f"monthly {words.label(measure)} trend")
    return out[:2]
