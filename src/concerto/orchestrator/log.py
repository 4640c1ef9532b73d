"""The event log: every question's events in the shared log's database (`concerto.store`).

`events.sqlite` in the data dir, or PostgreSQL's `concerto_log` schema when
`CONCERTO_DATABASE_URL` is set; the database log of DESIGN. The engine appends a question's
events when it ends (`write_soon`: from the database's writer thread, so a slow or unreachable
database never holds up the event loop); `concerto events` and the server's runs read them.

The table `events` is registered through the store's `create_tables`, the hook every owner of
tables uses, with its pruning: events older than `CONCERTO_EVENTS_MAX_AGE_DAYS` and beyond the
newest `CONCERTO_EVENTS_MAX_ROWS` go, as the database is written. Titles and details are
scrubbed (`concerto.redact`) on the way in: no row shows a secret, whichever code wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from concerto.contracts.events import Event, EventType, QueryState
from concerto.redact import scrub, scrub_serialized
from concerto.store import Database, Exec, Limits, SqliteDatabase, open_database

if TYPE_CHECKING:
    from concerto.settings import Settings

_COLUMNS = "query_id, seq, ts, type, source, step, state, task_id, title, details"
TABLES = (  # the SQL both backends speak
    "CREATE TABLE IF NOT EXISTS events (query_id TEXT, seq BIGINT, ts DOUBLE PRECISION, type TEXT, source TEXT, "
    "step INTEGER, state TEXT, task_id TEXT, title TEXT, details TEXT, PRIMARY KEY (query_id, seq))",
    "CREATE INDEX IF NOT EXISTS events_ts ON events (ts)",
)


class EventLog:
    """Every question's events, on a database of the store (a path: a SQLite file of its own)."""

    def __init__(self, where: Path | Database) -> None:
        self.database = where if isinstance(where, Database) else SqliteDatabase(where)

    @classmethod
    def of(cls, settings: Settings) -> EventLog:
        """The configured log (one database per process and place, so connections are reused)."""
        return cls(open_database(settings))

    def create_tables(self) -> None:
        """The events table and its pruning (at once the first time, then free)."""
        self.database.create_tables(TABLES, _prune)

    def write(self, events: Sequence[Event]) -> None:
        """Append events in one transaction (one already there is left as it is)."""
        self.create_tables()
        self.database.transaction(lambda x: insert_events(x, events), write=True, rows=len(events))

    def write_soon(self, events: Sequence[Event]) -> None:
        """Append events from the database's writer thread, in order, without waiting (the
        engine's way). A failure is logged; beyond the writer's bound, they are dropped (and logged)."""
        what = f"events of {events[0].query_id if events else '?'}"
        self.database.write_soon(lambda: self.write(events), what)

    def flush(self) -> None:
        """Wait for the writes `write_soon` has queued."""
        self.database.flush()

    def events(self, query_id: str, after: int = 0) -> list[Event]:
        """The events of one query with a sequence number above `after`, in order."""
        sql = f"SELECT {_COLUMNS} FROM events WHERE query_id = ? AND seq > ? ORDER BY seq"
        self.create_tables()
        return [_event(r) for r in self.database.transaction(lambda x: x(sql, (query_id, after)), write=False)]

    def recent_events(self, limit: int = 200) -> list[Event]:
        """The most recent events of any query, oldest first."""
        sql = f"SELECT {_COLUMNS} FROM events ORDER BY ts DESC, seq DESC LIMIT ?"
        self.create_tables()
        return [_event(r) for r in reversed(self.database.transaction(lambda x: x(sql, (limit,)), write=False))]

    def read(self, query_id: str | None = None, limit: int = 200) -> list[Event]:
        """The events of one query, or the most recent ones (`concerto events`)."""
        return self.events(query_id) if query_id else self.recent_events(limit)


def insert_events(execute: Exec, events: Sequence[Event]) -> None:
    """Append `events` within a transaction of the caller's (the server writes a run's events
    and its state in one), scrubbed; one already there is left as it is."""
    if not events:
        return
    rows = [
        (
            e.query_id,
            e.seq,
            e.ts,
            e.type.value,
            e.source,
            e.step,
            e.state.value if e.state else None,
            e.task_id,
            scrub(e.title),
            scrub_serialized(json.dumps(e.details, default=str)),
        )
        for e in events
    ]
    placeholders = ",".join("?" * 10)
    sql = f"INSERT INTO events ({_COLUMNS}) VALUES ({placeholders}) ON CONFLICT (query_id, seq) DO NOTHING"
    execute(sql, rows, many=True)


def _prune(x: Exec, cutoff: float, limits: Limits) -> None:
    """Within the database's pruning: events older than `cutoff`, then beyond the newest `max_rows`."""
    x("DELETE FROM events WHERE ts < ?", (cutoff,))
    x("DELETE FROM events WHERE ts < (SELECT ts FROM events ORDER BY ts DESC LIMIT 1 OFFSET ?)", (limits.max_rows - 1,))


def _event(r: Sequence[Any]) -> Event:
    return Event(
        query_id=r[0],
        seq=r[1],
        ts=r[2],
        type=EventType(r[3]),
        source=r[4],
        step=r[5],
        state=QueryState(r[6]) if r[6] else None,
        task_id=r[7],
        title=r[8],
        details=json.loads(r[9]),
    )
