"""The table as the reader needs it: the distinct values of each column (up to a bound), fetched
once per loaded version of the source and kept in the orchestrator's resources."""

from __future__ import annotations

from sqlglot import exp

from concerto.data.context import DataContext
from concerto.data.store import Store
from concerto.packs.analytics.table.mentions import Table

VALUE_LIMIT = 5000  # distinct values per column: cells a question can name


def table_of(store: Store, context: DataContext) -> Table:
    """Every column's distinct values (text and numbers; up to `VALUE_LIMIT` each)."""
    values: dict[str, list[object]] = {}
    source = exp.to_table(context.table, quoted=True)
    for column in context.columns:
        profile = context.detected_types[column]
        if profile.role == "flag":
            continue
        name = exp.column(column, quoted=True)
        query = exp.select(name).distinct().from_(source).where(name.is_(exp.null()).not_()).limit(VALUE_LIMIT)
        values[column] = [row[column] for row in store.query(context, query).data]
    return Table(context, values)
