"""Fresh databases of the shared log (`concerto.store`) for tests of its owners: one SQLite file
or one new database on the session's PostgreSQL cluster; opened twice, two handles on the same
database, as two processes have."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from concerto.contracts.events import Event, EventType, QueryState
from concerto.store import Database, Limits, PostgresDatabase, SqliteDatabase

from .postgres import Postgres

_names = itertools.count()


class Databases:
    """`open(limits)` opens another handle on this test's one database."""

    def __init__(self, where: Path | str) -> None:
        self.where = where
        self.opened: list[Database] = []

    def open(self, limits: Limits | None = None) -> Database:
        where = self.where
        database = SqliteDatabase(where, limits) if isinstance(where, Path) else PostgresDatabase(where, limits)
        self.opened.append(database)
        return database

    def close(self) -> None:
        """Wait for each handle's pruning, then close it."""
        for database in self.opened:
            if database.pruner is not None:
                database.pruner.join(10)
            database.close()


@contextmanager
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Databases]:
    """For a fixture parametrised `["sqlite", "postgres"]`: the database of `request.param`
    (PostgreSQL: a new database on the `postgres` fixture's cluster), closed at the end."""
    if request.param == "sqlite":
        made = Databases(tmp_path / "events.sqlite")
    else:
        postgres: Postgres = request.getfixturevalue("postgres")
        name = f"log_{next(_names)}_{int(time.time() * 1000)}"
        postgres.psql(f"CREATE DATABASE {name}")
        made = Databases(postgres.url.rsplit("/", 1)[0] + f"/{name}")
    try:
        yield made
    finally:
        made.close()


def events(query_id: str, n: int, start: int = 1, ts: float | None = None) -> list[Event]:
    """`n` events of one query from sequence number `start`, 1 ms apart from `ts` (now)."""
    base = ts if ts is not None else time.time()
    return [
        Event(
            query_id=query_id,
            seq=i,
            type=EventType.STATE if i == start else EventType.ACTION,
            title=f"step {i}",
            source="echo",
            state=QueryState.RECEIVED if i == start else None,
            task_id="t1",
            details={"i": i, "text": "é\x00"},
            ts=base + i / 1000,
        )
        for i in range(start, start + n)
    ]
