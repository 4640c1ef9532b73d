"""The event log on both backends of the store: SQLite in a data dir and a real PostgreSQL
database (the `postgres` fixture). Runs and turns: tests/server/test_log.py; the database
itself: tests/store/."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _services.databases import databases, events
from _services.ports import dead_url
from concerto.orchestrator.log import EventLog
from concerto.store import Limits, LogUnavailable, PostgresDatabase

MakeLog = Callable[..., EventLog]


@pytest.fixture(params=["sqlite", "postgres"])
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeLog]:
    """`make_log(limits=None)`: an event log on a fresh SQLite file or a fresh PostgreSQL
    database; called twice, two logs on the same database (as two processes would have)."""
    with databases(request, tmp_path) as made:

        def make(limits: Limits | None = None) -> EventLog:
            return EventLog(made.open(limits))

        yield make


def test_events_round_trip_in_order_and_resume_after_a_sequence_number(make_log: MakeLog) -> None:
    log = make_log()
    written = events("q1", 5)
    log.write(written[:3])
    log.write(written)  # the first three again: kept once, unchanged
    log.write(events("q2", 2, ts=time.time() + 1))
    assert log.events("q1") == written
    assert log.events("q1", after=3) == written[3:]
    assert log.events("nope") == []
    assert [e.query_id for e in log.recent_events(3)] == ["q1", "q2", "q2"]
    assert log.database.counts()["events"] == 7


def test_events_written_soon_are_written_in_order_by_the_log_s_thread(make_log: MakeLog) -> None:
    log = make_log()
    for q in range(20):
        log.write_soon(events(f"q{q}", 3, ts=1000.0 + q))
    log.flush()
    assert [e.query_id for e in log.recent_events(60)] == [f"q{q}" for q in range(20) for _ in range(3)]


def test_an_unreachable_database_is_a_clear_error_that_never_holds_up_the_engine() -> None:
    database = PostgresDatabase(dead_url().replace("http://", "postgresql://postgres@") + "/postgres")
    log = EventLog(database)
    started = time.monotonic()
    with pytest.raises(LogUnavailable, match=r"cannot be reached"):
        database.ping()
    assert time.monotonic() - started < 6
    assert "postgresql://" not in database.where  # messages never show the URL (it may hold a password)
    started = time.monotonic()
    with pytest.raises(LogUnavailable, match=r"did not answer a moment ago"):  # not tried again at once
        database.ping()
    log.write_soon(events("q", 3))  # the engine's way: returns at once, the failure is logged
    assert time.monotonic() - started < 0.1
    database.close()
