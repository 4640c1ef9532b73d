"""The analytics agents on the demo source, over both stores: DuckDB files in a temporary data
dir and the real PostgreSQL server of tests/_services. One orchestrator per store for the
session (loading the demo embeds its descriptions once); one embedder shared by both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from _helpers.analytics import close_stores, make_orchestrator
from _services.postgres import Postgres
from concerto.nlp.embeddings import Embedder, default_embedder
from concerto.orchestrator.engine import Orchestrator


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return default_embedder()


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("analytics")


@pytest.fixture(scope="session")
def duck(data_root: Path, embedder: Embedder) -> Iterator[Orchestrator]:
    # Not entered: the analytics agents discover nothing at start, and the connections they
    # open are thread-safe, so one orchestrator serves every test's event loop.
    orchestrator = make_orchestrator(data_root / "duckdb", embedder)
    yield orchestrator
    close_stores(orchestrator)


@pytest.fixture(scope="session")
def pg(data_root: Path, embedder: Embedder, postgres: Postgres) -> Iterator[Orchestrator]:
    orchestrator = make_orchestrator(data_root / "postgres", embedder, postgres.url)
    yield orchestrator
    close_stores(orchestrator)


@pytest.fixture(params=["duckdb", "postgres"])
def orchestrator(request: pytest.FixtureRequest) -> Orchestrator:
    """Each test that takes it runs on both stores."""
    return request.getfixturevalue("duck" if request.param == "duckdb" else "pg")  # type: ignore[no-any-return]
