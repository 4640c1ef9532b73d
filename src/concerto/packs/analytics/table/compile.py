"""A `TableReading` as one read-only query (a sqlglot expression, checked and run by the store
like every other): identifiers quoted and values as literals, so nothing from the question
is pasted into SQL text.

Readings about the table's order (the first row, the row after another) number the rows as
the table holds them (`ROW_NUMBER() OVER ()`, in load order on DuckDB).
"""

from __future__ import annotations

from sqlglot import exp

from concerto.contracts.reading import Condition, TableReading
from concerto.data.context import DataContext
from concerto.packs.analytics.sql import alias, col, literal

ROW = "row_index"
_ORDERED = ("order", "neighbour", "choice")
_AGGREGATES: dict[str, type[exp.Func]] = {
    "sum": exp.Sum, "avg": exp.Avg, "min": exp.Min, "max": exp.Max, "median": exp.Median,
}  # fmt: skip


def compile_reading(reading: TableReading, context: DataContext) -> exp.Query:
    """The query whose rows answer `reading` (its first column holds the answer's values)."""
    base = _base(reading, context)
    where = _all(reading.conditions)
    match reading.kind:
        case "count":
            counted: exp.Expr = exp.Count(this=exp.Star())
            if reading.aggregate == "count_distinct" and reading.answer:
                counted = exp.Count(this=exp.Distinct(expressions=[col(reading.answer[0])]))
            return _where(exp.select(exp.alias_(counted, "count")).from_(base), where)
        case "aggregate":
            assert reading.measure is not None
            func = _AGGREGATES[reading.aggregate or "sum"](this=col(reading.measure))
            return _where(exp.select(exp.alias_(func, alias(reading.measure))).from_(base), where)
        case "extreme":
            assert reading.measure is not None
            kept = _and(where, _not_null(reading.measure))
            query = _where(exp.select(*_answer(reading)).from_(base), kept)
            if reading.limit is None:  # "the most": every row tied at the extreme
                best = (exp.Max if reading.descending else exp.Min)(this=col(reading.measure))
                top = _where(exp.select(best).from_(base.copy()), kept.copy() if kept else None).subquery()
                return query.where(exp.EQ(this=col(reading.measure), expression=top)).limit(50)
            return query.order_by(exp.Ordered(this=col(reading.measure), desc=reading.descending)).limit(reading.limit)
        case "mode":
            counted = exp.Count(this=exp.Star())
            query = _where(exp.select(*_answer(reading), exp.alias_(counted, "times")).from_(base), where)
            query = query.where(_not_null(reading.answer[0])).group_by(*(col(c) for c in reading.answer))
            if reading.limit is None:  # every value tied at the most (least) frequent
                counts = query.copy().subquery("c")
                best = (exp.Max if reading.descending else exp.Min)(this=exp.column("times"))
                top = exp.select(best).from_(counts).subquery()
                return query.having(exp.EQ(this=counted.copy(), expression=top)).order_by(
                    *(col(c) for c in reading.answer)
                )
            return query.order_by(exp.Ordered(this=exp.column("times"), desc=reading.descending)).limit(reading.limit)
        case "order":
            query = _where(exp.select(*_answer(reading)).from_(base), where)
            return query.order_by(exp.Ordered(this=exp.column(ROW), desc=reading.descending)).limit(reading.limit or 1)
        case "neighbour":
            assert reading.anchor is not None
            anchor = _where(exp.select(exp.Min(this=exp.column(ROW))).from_(base), _condition(reading.anchor))
            target = exp.Add(this=anchor.subquery(), expression=exp.Literal.number(reading.offset))
            return exp.select(*_answer(reading)).from_(base).where(exp.EQ(this=exp.column(ROW), expression=target))
        case "difference":
            return exp.select(exp.alias_(_difference(reading, base, where), "difference"))
        case "choice":
            return _choice(reading, base, where)
        case "yes_no":
            return _where(
                exp.select(
                    exp.alias_(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)), "answer")
                ).from_(base),
                where,
            )
        case _:
            return _where(exp.select(*_answer(reading)).from_(base), where).limit(50)


def _base(reading: TableReading, context: DataContext) -> exp.Expr:
    """The table, its rows numbered for readings about order: by the date or year column the
    question names (`measure` of an order or neighbour reading), else as the table holds them."""
    table = exp.to_table(context.table, quoted=True)
    if reading.kind not in _ORDERED:
        return table
    window = exp.Window(this=exp.RowNumber())
    if reading.kind in ("order", "neighbour") and reading.measure:
        window.set("order", exp.Order(expressions=[exp.Ordered(this=col(reading.measure), nulls_first=False)]))
    numbered = exp.select(exp.Star(), exp.alias_(window, ROW)).from_(table)
    return numbered.subquery("t")


def _answer(reading: TableReading) -> list[exp.Expr]:
    return [col(c) for c in reading.answer] or [exp.Star()]


def _difference(reading: TableReading, base: exp.Expr, where: exp.Expr | None) -> exp.Expr:
    parts = []
    for option in reading.options[:2]:
        value = exp.Sum(this=col(reading.measure)) if reading.measure else exp.Count(this=exp.Star())
        parts.append(_where(exp.select(value).from_(base.copy()), _and(where, _condition(option))).subquery())
    return exp.Abs(this=exp.Sub(this=parts[0], expression=parts[1]))


def _choice(reading: TableReading, base: exp.Expr, where: exp.Expr | None) -> exp.Query:
    """The option with the most (least) of the measure, or the first (last) in the table."""
    column = reading.options[0].column
    values = [v for o in reading.options for v in o.values]
    pick = exp.In(this=col(column), expressions=[literal(v) for v in values])
    by: exp.Expr = exp.Sum(this=col(reading.measure)) if reading.measure else exp.Min(this=exp.column(ROW))
    query = _where(exp.select(col(column), exp.alias_(by, "by")).from_(base), _and(where, pick)).group_by(col(column))
    return query.order_by(exp.Ordered(this=exp.column("by"), desc=reading.descending)).limit(1)


def _condition(c: Condition) -> exp.Expr:
    column = col(c.column)
    value = literal(c.values[0])
    match c.op:
        case "=":
            return exp.EQ(this=column, expression=value)
        case "!=":
            return exp.NEQ(this=column, expression=value)
        case "<":
            return exp.LT(this=column, expression=value)
        case "<=":
            return exp.LTE(this=column, expression=value)
        case ">":
            return exp.GT(this=column, expression=value)
        case ">=":
            return exp.GTE(this=column, expression=value)
        case "in" | "not in":
            found = exp.In(this=column, expressions=[literal(v) for v in c.values])
            return found if c.op == "in" else exp.Not(this=found)
        case "between":
            return exp.Between(this=column, low=value, high=literal(c.values[1]))
        case "contains" | "not contains":
            inside = exp.GT(
                this=exp.StrPosition(this=exp.Lower(this=column), substr=exp.Literal.string(str(c.values[0]).lower())),
                expression=exp.Literal.number(0),
            )
            return inside if c.op == "contains" else exp.Not(this=inside)
        case "year":
            return exp.EQ(this=exp.Year(this=column), expression=value)
        case "month":
            month = exp.EQ(this=exp.Month(this=column), expression=value)
            if len(c.values) > 1:
                return exp.and_(month, exp.EQ(this=exp.Year(this=column.copy()), expression=literal(c.values[1])))
            return month
    raise ValueError(f"unknown condition {c.op}")


def _all(conditions: list[Condition]) -> exp.Expr | None:
    out: exp.Expr | None = None
    for c in conditions:
        out = _and(out, _condition(c))
    return out


def _and(a: exp.Expr | None, b: exp.Expr | None) -> exp.Expr | None:
    if a is None:
        return b
    if b is None:
        return a
    return exp.and_(a, b)


def _not_null(column: str) -> exp.Expr:
    return exp.Not(this=exp.Is(this=col(column), expression=exp.null()))


def _where(query: exp.Select, condition: exp.Expr | None) -> exp.Select:
    return query.where(condition) if condition is not None else query
