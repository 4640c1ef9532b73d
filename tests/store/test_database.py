"""The store: the configured database, WAL, the `create_tables` hook every owner of tables uses
(tables made again on a new connection, pruned with the database), and what it imports."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _services.databases import Databases, databases, events
from _services.postgres import Postgres
from concerto.orchestrator.log import EventLog
from concerto.settings import Settings
from concerto.store import (
    Database,
    Exec,
    Limits,
    LogUnavailable,
    PostgresDatabase,
    SqliteDatabase,
    open_database,
)

NOTES = ("CREATE TABLE IF NOT EXISTS test_notes (note TEXT, ts DOUBLE PRECISION NOT NULL)",)


def _prune_notes(x: Exec, cutoff: float, limits: Limits) -> None:
    x("DELETE FROM test_notes WHERE ts < ?", (cutoff,))


def _notes(database: Database) -> list[str]:
    return [r[0] for r in database.transaction(lambda x: x("SELECT note FROM test_notes ORDER BY ts"), write=False)]


@pytest.fixture(params=["sqlite", "postgres"])
def made(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Databases]:
    with databases(request, tmp_path) as found:
        yield found


def test_an_owner_s_tables_are_created_pruned_with_the_database_and_made_again(made: Databases) -> None:
    database = made.open(Limits(max_age_days=1))
    database.create_tables(NOTES, _prune_notes)
    old, now = time.time() - 2 * 86_400, time.time()
    rows = [("old", old), ("new", now)]
    database.transaction(lambda x: x("INSERT INTO test_notes VALUES (?, ?)", rows, many=True), write=True)
    database.prune()
    assert _notes(database) == ["new"]
    other = made.open()  # another process: the table is there, and its second registration is free
    other.create_tables(NOTES, _prune_notes)
    assert other.counts()["test_notes"] == 1
    other.transaction(lambda x: x("DROP TABLE test_notes"), write=True)  # e.g. a database reset
    database.close()  # the next use opens a new connection, which makes every registered table again
    assert _notes(database) == []


def test_a_failed_registration_is_forgotten_and_stands_in_no_one_s_way(made: Databases) -> None:
    database = made.open()
    with pytest.raises(LogUnavailable):
        database.create_tables(("CREATE TABLE IF NOT EXISTS broken (",))
    database.close()
    database.ping()  # a new connection does not run the broken statement again
    with pytest.raises(LogUnavailable):  # nor was it taken as created
        database.create_tables(("CREATE TABLE IF NOT EXISTS broken (",))


def test_sqlite_log_is_in_wal_mode_so_processes_share_it(tmp_path: Path) -> None:
    SqliteDatabase(tmp_path / "events.sqlite").ping()
    con = sqlite3.connect(tmp_path / "events.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_the_configured_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres: Postgres) -> None:
    monkeypatch.setenv("CONCERTO_EVENTS_MAX_AGE_DAYS", "7")
    monkeypatch.setenv("CONCERTO_EVENTS_MAX_ROWS", "5000")
    embedded = open_database(Settings(data_dir=tmp_path))
    assert isinstance(embedded, SqliteDatabase) and embedded.path == tmp_path / "events.sqlite"
    assert embedded.limits == Limits(max_age_days=7, max_rows=5000)
    assert open_database(Settings(data_dir=tmp_path)) is embedded  # one per process and place
    monkeypatch.setenv("CONCERTO_DATABASE_URL", postgres.url)
    shared = open_database(Settings(data_dir=tmp_path))
    assert isinstance(shared, PostgresDatabase)
    log = EventLog.of(Settings(data_dir=tmp_path))
    log.write(events("configured", 2))
    assert [e.seq for e in log.read("configured")] == [1, 2]
    assert postgres.psql("SELECT count(*) FROM concerto_log.events WHERE query_id = 'configured'") == "2"


def test_the_log_does_not_read_the_data_layer_s_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database URL is a core setting: the data layer's settings, invalid, are the data
    layer's error alone (tests/data/test_routes.py), and the log works."""
    monkeypatch.setenv("CONCERTO_DATA_ROW_CAP", "lots")
    open_database(Settings(data_dir=tmp_path)).ping()


def test_a_database_that_cannot_be_used_says_so_on_every_use(tmp_path: Path) -> None:
    (tmp_path / "a file").write_text("")
    database = open_database(Settings(data_dir=tmp_path / "a file"))
    with pytest.raises(LogUnavailable, match=r"the log at .*a file.* failed"):
        database.ping()
    database.write_soon(database.ping, "a ping")  # logged, never raised
    database.flush()


def test_the_store_imports_nothing_above_it() -> None:
    code = (
        "import sys, concerto.store\n"
        "above = ('orchestrator', 'server', 'protocols', 'packs', 'data', 'agents', 'contracts')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2][-1] in above and m.startswith('concerto.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
