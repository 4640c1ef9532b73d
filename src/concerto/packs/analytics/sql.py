"""Building queries as sqlglot expressions: identifiers are quoted by sqlglot and values are
literals it renders, so nothing from the question or the data is pasted into SQL text.
The same expression renders for DuckDB or PostgreSQL.
"""

from __future__ import annotations

import functools
from datetime import date
from typing import Any

from sqlglot import exp

from concerto.data.context import DataContext
from concerto.packs.analytics.reading import Aggregate, Grain, Period, Reading

_FUNCS: dict[Aggregate, type[exp.Func]] = {
    "sum": exp.Sum,
    "avg": exp.Avg,
    "min": exp.Min,
    "max": exp.Max,
    "median": exp.Median,
}


def col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


def alias(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def literal(value: Any) -> exp.Expr:
    """A value as a SQL literal (dates as DATE casts)."""
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    return exp.Literal.string(str(value))


def aggregate(kind: Aggregate, column: str | None) -> exp.Expr:
    if kind == "count" or column is None:
        return exp.Count(this=exp.Star()) if column is None else exp.Count(this=col(column))
    return _FUNCS[kind](this=col(column))


def rounded(expression: exp.Expr, digits: int = 2) -> exp.Expr:
    return exp.Round(this=exp.cast(expression, "DOUBLE"), decimals=exp.Literal.number(digits))


def additive(context: DataContext, column: str) -> bool:
    """Whether values add up over rows (money, counts) rather than average (scores, rates)."""
    profile = context.detected_types[column]
    return profile.role == "money" or "INT" in profile.type or profile.type.startswith("DECIMAL")


def entity_measure(context: DataContext, column: str) -> Aggregate:
    """How a measure rolls up over an entity's rows: sums for amounts, averages for scores."""
    return "sum" if additive(context, column) else "avg"


def where(reading: Reading, context: DataContext) -> exp.Expr | None:
    """The question's filters and period as one condition."""
    conditions: list[exp.Expr] = []
    for f in reading.filters:
        conditions.append(exp.In(this=col(f.column), expressions=[literal(v) for v in f.values]))
    if reading.period and context.semantic_profile.time_column:
        conditions.append(period_condition(context.semantic_profile.time_column, reading.period))
    if not conditions:
        return None
    condition = conditions[0]
    for more in conditions[1:]:
        condition = exp.and_(condition, more)
    return condition


def period_condition(column: str, period: Period) -> exp.Expr:
    return exp.Between(this=col(column), low=literal(period.start), high=literal(period.end))


def bucket(column: str, grain: Grain) -> exp.Expr:
    """The time column truncated to `grain`, as a DATE on both dialects."""
    return exp.cast(exp.TimestampTrunc(this=col(column), unit=exp.var(grain.upper())), "DATE")


def select_from(context: DataContext, *projections: exp.Expr) -> exp.Select:
    return exp.select(*projections).from_(exp.to_table(context.table, quoted=True))


def filtered(query: exp.Select, condition: exp.Expr | None) -> exp.Select:
    return query.where(condition) if condition is not None else query


def per_entity(context: DataContext, measures: list[str], condition: exp.Expr | None, *extra: str) -> exp.Select:
    """One row per entity with each measure rolled up (and `extra` columns carried along).

    Panel data (an entity over months) is summed or averaged per entity first; a table of
    one row per entity passes through.
    """
    key = context.semantic_profile.entity_key
    if key is None:
        return filtered(select_from(context, *(col(c) for c in (*extra, *measures))), condition)
    carried = [c for c in extra if c != key]
    projections: list[exp.Expr] = [col(key)]
    projections += [exp.alias_(exp.AnyValue(this=col(c)), alias(c)) for c in carried]
    projections += [exp.alias_(aggregate(entity_measure(context, m), m), alias(m)) for m in measures]
    return filtered(select_from(context, *projections), condition).group_by(col(key))


def template(text: str, **parts: exp.Expr) -> exp.Query:
    """A query from a SQL template (DuckDB syntax) whose `p_<name>` markers stand for columns,
    tables or literals: each marker is replaced by the expression given for it, on the
    parsed tree, so names are quoted and values are literals however they are spelled."""
    tree = _parsed(text).copy()

    def fill(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column | exp.Table) and not node.args.get("table") and node.name.startswith("p_"):
            part = parts.get(node.name[2:])
            if part is None:
                raise KeyError(f"template marker {node.name} has no value")
            return part.copy()
        return node

    filled = tree.transform(fill)
    assert isinstance(filled, exp.Query)
    return filled


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> exp.Query:
    import sqlglot

    tree = sqlglot.parse_one(text, read="duckdb")
    assert isinstance(tree, exp.Query), text
    return tree


def table(context: DataContext) -> exp.Table:
    return exp.to_table(context.table, quoted=True)


def condition_or_true(condition: exp.Expr | None) -> exp.Expr:
    return condition if condition is not None else exp.true()


def panel(context: DataContext, measures: list[str], condition: exp.Expr | None, grain: Grain = "month") -> exp.Select:
    """One row per entity and period: `entity`, `period` and each measure rolled up (the
    sum of amounts, the average of scores) — the shape trends and declines are read from."""
    key = context.semantic_profile.entity_key
    time_column = context.semantic_profile.time_column
    assert time_column is not None, "panel() needs a time column"
    period = bucket(time_column, grain)
    projections: list[exp.Expr] = [
        exp.alias_(col(key) if key else exp.Literal.string("all"), "entity"),
        exp.alias_(period, "period"),
    ]
    projections += [exp.alias_(aggregate(entity_measure(context, m), m), alias(m)) for m in measures]
    query = filtered(select_from(context, *projections), condition)
    return query.group_by(exp.Literal.number(1), exp.Literal.number(2))


def recent_vs_earlier(
    context: DataContext, measures: list[str], condition: exp.Expr | None, *, recent: int = 3, earlier: int = 3
) -> exp.Select:
    """Per entity, each measure's average per period over the latest `recent` periods of the
    data (`<m>_recent`) and over the `earlier` periods before them (`<m>_earlier`)."""
    ranked = exp.select(
        "*",
        exp.alias_(
            exp.Window(
                this=exp.DenseRank(), order=exp.Order(expressions=[exp.Ordered(this=exp.column("period"), desc=True)])
            ),
            "back",
        ),
    ).from_(panel(context, measures, condition).subquery("p"))
    back = exp.column("back")
    projections: list[exp.Expr] = [exp.column("entity")]
    for m in measures:
        is_recent = exp.LTE(this=back.copy(), expression=exp.Literal.number(recent))
        is_earlier = exp.and_(
            exp.GT(this=back.copy(), expression=exp.Literal.number(recent)),
            exp.LTE(this=back.copy(), expression=exp.Literal.number(recent + earlier)),
        )
        for name, when in ((f"{m}_recent", is_recent), (f"{m}_earlier", is_earlier)):
            value = exp.Case(ifs=[exp.If(this=when, true=col(m))])
            projections.append(exp.alias_(exp.Avg(this=value), alias(name)))
    return exp.select(*projections).from_(ranked.subquery("r")).group_by(exp.column("entity"))


def labelled(context: DataContext, query: exp.Select, *extra: str) -> exp.Select:
    """`query` (one row per `entity`) with the entity's label and `extra` columns joined on."""
    key = context.semantic_profile.entity_key
    shown = [c for c in (label_column(context), *extra) if c and c != key]
    if key is None or not shown:
        return query
    names = exp.select(
        exp.alias_(col(key), "entity_key"), *(exp.alias_(exp.AnyValue(this=col(c)), alias(c)) for c in shown)
    )
    names = names.from_(table(context)).group_by(col(key))
    joined = exp.select(
        exp.Column(this=exp.Star(), table=exp.to_identifier("q")), *(exp.column(c, "n", quoted=True) for c in shown)
    )
    on = exp.EQ(this=exp.column("entity", "q"), expression=exp.column("entity_key", "n"))
    return joined.from_(query.subquery("q")).join(names.subquery("n"), on=on)


def label_column(context: DataContext) -> str | None:
    """The column that names an entity in words (the company name beside the customer id)."""
    labels = [c for c in context.columns_with("label") if c != context.semantic_profile.entity_key]
    return labels[0] if labels else None
