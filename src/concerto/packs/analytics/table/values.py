"""The table as the reader needs it: the distinct values of its columns (up to a bound each),
fetched once per loaded version of the source and shared by the reader and every analytics
agent (`table_for`)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from concerto.data.context import DataContext
from concerto.data.store import Store
from concerto.packs.analytics.table.mentions import Table

VALUE_LIMIT = 5000  # distinct values per column: cells a question can name
MORE_COLUMNS = 200  # beyond the category and label columns, at most this many more are fetched


def table_for(store: Store, context: DataContext, resources: Any) -> Table:
    """The source's `Table`, once per loaded version (its `data_source_id`) and orchestrator."""
    return resources.get(f"analytics.table:{context.data_source_id}", lambda: table_of(store, context))


def table_of(store: Store, context: DataContext) -> Table:
    """Distinct values of every category and label column (what agents match names against),
    then of up to `MORE_COLUMNS` others: text and key columns, and numbers with few enough
    distinct values to be named ("order 1007", "a capacity of 600"). Yes/no columns are read
    from their names, not values. A wide table costs one query per column fetched."""
    types = context.detected_types
    always = [c for c in context.columns if types[c].role in ("category", "label")]
    others = [
        c
        for c in context.columns
        if c not in always
        and types[c].role != "flag"
        and (types[c].role in ("text", "id") or 0 < types[c].distinct <= VALUE_LIMIT)
    ]
    source = exp.to_table(context.table, quoted=True)
    values: dict[str, list[object]] = {}
    for column in always + others[:MORE_COLUMNS]:
        name = exp.column(column, quoted=True)
        query = exp.select(name).distinct().from_(source).where(name.is_(exp.null()).not_()).limit(VALUE_LIMIT)
        values[column] = [row[column] for row in store.query(context, query).data]
    return Table(context, values)
