"""The analytics pack's reader (`Pack.reader`): the question read against the table it names,
once per question, with the table's values kept per loaded version of the source."""

from __future__ import annotations

from typing import Any

from concerto.agents.task import requested_source
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.contracts.reading import TableReading
from concerto.data.sources import store_for
from concerto.data.store import QueryFailed, SourceError
from concerto.packs.analytics.table.reader import read_table
from concerto.packs.analytics.table.values import table_for


def read_question(settings: Any, resources: Any, query: OrchestratorInput) -> TableReading | None:
    """The reading of `query` against its named source; None when it names none, or a source
    this pack does not hold (another pack's built-in data, or none loaded by that name)."""
    name = requested_source(query)
    if not name:
        return None
    store = store_for(settings, resources)
    try:
        context = store.context(name)
    except (SourceError, QueryFailed):
        return None
    if context.built_in is not None:
        return None
    return read_table(query.query, table_for(store, context, resources))
