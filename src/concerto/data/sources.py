"""The configured store and the source a question is about.

Kept apart from `store.py` (the interface) because it knows the implementations and the
demo, which themselves build on the interface.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from concerto.data.store import DEMO, QueryFailed, SourceError, Store

if TYPE_CHECKING:
    from concerto.agents.base import AgentFailure, FirstUse
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.data.context import DataContext
    from concerto.nlp.embeddings import Embedder
    from concerto.resources import Resources
    from concerto.settings import Settings


_LOADING_DEMO = threading.Lock()


def store_for(settings: Settings, resources: Resources | None = None) -> Store:
    """The configured store (PostgreSQL when `CONCERTO_DATABASE_URL` is set), shared via `resources`."""
    from concerto.data.settings import DataSettings

    data = DataSettings.of(settings)

    def make() -> Store:
        limits = {
            "row_cap": data.data_row_cap,
            "timeout_s": data.data_query_timeout_s,
            "max_file_bytes": data.data_max_file_mb * 2**20,
            "max_unpacked_bytes": data.data_max_unpacked_mb * 2**20,
            "load_memory_bytes": data.data_load_memory_mb * 2**20,
            "embedder": _embedder(resources),
            "embed_max_values": data.data_embed_max_values,
        }
        if settings.database_url:
            from concerto.data.postgres_store import PostgresStore

            return PostgresStore(settings.database_url.get_secret_value(), **limits)
        from concerto.data.duckdb_store import DuckDBStore

        return DuckDBStore(Path(settings.data_dir) / "sources", **limits)

    if resources is None:
        return make()
    return resources.get("data.store", make)


def _embedder(resources: Resources | None) -> Callable[[], Embedder]:
    """The shared embedder when there are shared resources, else the default one (made on first use)."""
    if resources is not None:
        return lambda: resources.embedder
    from concerto.nlp.embeddings import default_embedder

    made: list[Embedder] = []

    def embedder() -> Embedder:
        if not made:
            made.append(default_embedder())
        return made[0]

    return embedder


def choose(store: Store, name: str | None = None) -> DataContext:
    """The source a question is about: the one named, else the only one the user loaded,
    else the demo (loaded on first use, so every agent answers on a fresh install). Sources a
    pack ships (`built_in`, e.g. the commercial data set) are used only when named."""
    if name:
        return store.context(name)
    loaded = store.contexts()
    mine = [c for c in loaded if c.name != DEMO and c.built_in is None]
    if len(mine) == 1:
        return mine[0]
    if len(mine) > 1:
        names = ", ".join(c.name for c in mine)
        raise SourceError(f"several data sources are loaded ({names}); say which with --source NAME")
    demo = next((c for c in loaded if c.name == DEMO), None)
    if demo is not None:
        return demo
    from concerto.data.demo import load_demo

    with _LOADING_DEMO:  # two agents of one plan may both ask for it first (DuckDB: write-write conflict)
        demo = next((c for c in store.contexts() if c.name == DEMO), None)
        return demo if demo is not None else load_demo(store)


def demo_first_use(store: Store, query: OrchestratorInput | None = None) -> FirstUse | None:
    """Loading the demo table before the agents' tasks (`Agent.first_use`), when `query` (any
    question, when None) will be about it and it is not loaded: no source named, none of the
    user's loaded (as `choose` decides)."""
    from concerto.agents.base import FirstUse
    from concerto.data.demo import PREPARE_SECONDS

    if named_source(query):
        return None
    if any(c.name == DEMO or c.built_in is None for c in store.contexts()):
        return None  # loaded already, or the user's own sources are what questions are about
    return FirstUse("data.demo", "the demo table", PREPARE_SECONDS, lambda: choose(store))


def source_failure(exc: SourceError | QueryFailed) -> AgentFailure:
    """What an agent reports when the source it needs is missing or the database is down."""
    from concerto.agents.base import AgentFailure
    from concerto.contracts.common import ErrorKind

    if isinstance(exc, SourceError):
        return AgentFailure(
            str(exc),
            error_type="source_not_found",
            kind=ErrorKind.NOT_FOUND,
            suggestion="See the loaded sources with `concerto data list`; load one with `concerto data load FILE`.",
        )
    return AgentFailure(str(exc), error_type="database_unavailable", kind=ErrorKind.UNAVAILABLE)


def named_source(query: OrchestratorInput | None) -> str | None:
    """The source a question names (`--source`, `data_source_id`, or either as a parameter)."""
    if query is None:
        return None
    given = query.payload_parameters()
    name = given.get("source") or given.get("data_source_id")
    return str(name) if name else None
