"""SQL safety: one read-only query over the source's own tables, checked on sqlglot's AST.

004's `_is_safe_query` looks for words in the text; that is not enough (a `COPY` or a
`read_csv('/etc/passwd')` contains none of them). Here every statement is parsed, and
only this passes:

- exactly one statement, a SELECT (with CTEs, subqueries, set operations, windows);
- no node that writes, reads files or changes the session (INSERT, COPY, ATTACH,
  PRAGMA, SET, `SELECT ... INTO`, `FOR UPDATE`, an unparsed command, ...);
- functions from an allowlist (aggregates, arithmetic, dates, strings, windows);
  table functions (`read_csv`, `glob`, `query`, ...) are not on it;
- tables that are the source's own (or CTEs of the query), unqualified;
- every column resolves to a column of those tables (sqlglot's qualifier, given the
  source's schema): a made-up column is refused before anything runs.

The connection the query then runs on is locked as well (`backends.py`): neither layer
alone is trusted.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.qualify import qualify

# Expression classes for functions a read-only analysis needs.
_ALLOWED_FUNCS: frozenset[type[exp.Expression]] = frozenset(
    {
        # aggregates and statistics
        exp.Count, exp.CountIf, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Median, exp.Mode,
        exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance, exp.VariancePop,
        exp.PercentileCont, exp.PercentileDisc, exp.Corr, exp.CovarSamp, exp.RegrSlope,
        exp.RegrIntercept, exp.RegrR2, exp.Skewness, exp.Kurtosis, exp.ApproxDistinct,
        exp.AnyValue, exp.ArgMax, exp.ArgMin, exp.LogicalAnd, exp.LogicalOr, exp.GroupConcat,
        exp.ArrayAgg,
        # windows
        exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile, exp.PercentRank, exp.CumeDist,
        exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue,
        # arithmetic
        exp.Abs, exp.Round, exp.Floor, exp.Ceil, exp.Ln, exp.Log, exp.Exp, exp.Sqrt, exp.Pow,
        exp.Sign, exp.Greatest, exp.Least, exp.IsNan, exp.IsInf,
        # logic (sqlglot models AND and OR as functions too) and conditions
        exp.And, exp.Or, exp.Xor, exp.Array, exp.Coalesce, exp.Nullif, exp.Case, exp.If, exp.Cast, exp.TryCast,
        # dates
        exp.TimestampTrunc, exp.DateTrunc, exp.Extract, exp.Year, exp.Quarter, exp.Month, exp.Week,
        exp.Day, exp.DayOfWeek, exp.DayOfYear, exp.Hour, exp.Minute, exp.DateDiff, exp.DateAdd,
        exp.DateSub, exp.DateFromParts, exp.TimeToStr, exp.ToChar, exp.StrToTime, exp.StrToDate,
        exp.CurrentDate, exp.TimeToUnix,
        # strings
        exp.Lower, exp.Upper, exp.Length, exp.Trim, exp.Concat, exp.Substring, exp.Replace,
        exp.Left, exp.Right, exp.SplitPart, exp.StrPosition,
    }
)  # fmt: skip
# Functions sqlglot does not model (`Anonymous`), by lower-case name.
_ALLOWED_NAMES = frozenset({"date_part", "array_cosine_similarity", "list_cosine_similarity", "quantile"})
# Nodes that write, read files, lock or change the session, wherever they appear.
_FORBIDDEN = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Copy,
    exp.Attach, exp.Detach, exp.Pragma, exp.Set, exp.Command, exp.Into, exp.Lock, exp.Use,
    exp.Transaction, exp.Commit, exp.Rollback, exp.LoadData, exp.Install, exp.Describe, exp.Show,
)  # fmt: skip


class UnsafeQuery(ValueError):
    """A query that is refused before it runs; the message says why."""


def check_query(sql: str | exp.Expr, schema: Mapping[str, Mapping[str, str]], *, dialect: str) -> exp.Query:
    """The parsed, checked query; raise `UnsafeQuery` naming the first problem.

    `schema` maps each table the query may read to its columns and their SQL types.
    """
    query = _parse(sql, dialect) if isinstance(sql, str) else sql.copy()
    while isinstance(query, exp.Subquery):  # "(SELECT ...)"
        query = query.this
    if not isinstance(query, exp.Query):
        raise UnsafeQuery(f"only a SELECT query is allowed, not {type(query).__name__.upper()}")
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    allowed = {name.lower(): name for name in schema}
    for node in query.walk():
        if isinstance(node, _FORBIDDEN):
            raise UnsafeQuery(f"{type(node).__name__.upper()} is not allowed in a read-only query")
        if isinstance(node, exp.Func) and not _allowed_function(node):
            raise UnsafeQuery(f"the function {_function_name(node)} is not allowed")
        if isinstance(node, exp.Table):
            _check_table(node, allowed, ctes)
    try:
        qualify(query.copy(), schema=dict(schema), dialect=dialect, validate_qualify_columns=True)
    except OptimizeError as exc:
        raise UnsafeQuery(f"{exc}".split(". Line")[0] + f"; the source's columns are {_columns(schema)}") from None
    return query


def _parse(sql: str, dialect: str) -> exp.Expr:
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except ParseError as exc:
        raise UnsafeQuery(f"the query is not valid SQL: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise UnsafeQuery(f"exactly one statement is allowed, found {len(statements)}")
    return statements[0]


def _check_table(node: exp.Table, allowed: dict[str, str], ctes: set[str]) -> None:
    if not isinstance(node.this, exp.Identifier):
        raise UnsafeQuery(f"reading from {node.this.sql()[:60]} is not allowed; query the source's table")
    if node.args.get("db") or node.args.get("catalog"):
        raise UnsafeQuery(f"the table {node.sql()} is qualified; use the source's table by its name")
    name = node.name.lower()
    if name not in allowed and name not in ctes:
        raise UnsafeQuery(f"the table '{node.name}' is not this source's; query {', '.join(allowed.values())}")


def _allowed_function(node: exp.Func) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower() in _ALLOWED_NAMES
    return type(node) in _ALLOWED_FUNCS


def _function_name(node: exp.Func) -> str:
    return str(node.name) if isinstance(node, exp.Anonymous) else node.sql_name()


def _columns(schema: Mapping[str, Mapping[str, str]]) -> str:
    names = [column for columns in schema.values() for column in columns]
    shown = ", ".join(names[:30])
    return shown + (f" and {len(names) - 30} more" if len(names) > 30 else "")
