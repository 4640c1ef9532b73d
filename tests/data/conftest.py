"""Both stores, over the same tests: DuckDB files in a temporary directory, and the real
PostgreSQL cluster of tests/_services (each test cleans up the sources it made)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from _services.postgres import Postgres
from concerto.data.duckdb_store import DuckDBStore
from concerto.data.store import Store

LIMITS = {"row_cap": 50, "timeout_s": 2.0, "max_file_bytes": 2**30}


@pytest.fixture(params=["duckdb", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store
    if request.param == "duckdb":
        made = DuckDBStore(tmp_path / "sources", **LIMITS)
    else:
        from concerto.data.postgres_store import PostgresStore

        server: Postgres = request.getfixturevalue("postgres")
        made = PostgresStore(server.url, **LIMITS)
    yield made
    for context in made.contexts():
        made.drop(context.name)
    made.close()
