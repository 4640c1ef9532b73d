"""The server's records in the shared log's database (`concerto.store`): runs and conversation
turns, beside the engine's events (`concerto.orchestrator.log`).

What a later request needs lives here, not in a process, so several `concerto serve` processes
behind a load balancer serve one conversation and one run: a run started by one process is
followed from another by reading its events and state, and a conversation's turns are read by
whichever process gets the next question (`server/runs.py`, docs/scale-out.md).

The tables `runs` and `turns` are registered through the store's `create_tables`, the hook
every owner of tables uses, after the event log's (a run's pruning looks at its events).
Bounded as the events are: turns by age (`CONCERTO_EVENTS_MAX_AGE_DAYS`) and by rows
(`CONCERTO_EVENTS_MAX_ROWS`), runs by age and with their events.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from concerto.contracts.events import Event
from concerto.orchestrator.log import EventLog, insert_events
from concerto.redact import scrub, scrub_serialized
from concerto.store import Database, Exec, Limits, LogConflict, LogUnavailable, open_database

if TYPE_CHECKING:
    from concerto.settings import Settings

RunState = Literal["running", "completed", "failed"]
Role = Literal["user", "assistant"]
_RUN_COLUMNS = "run_id, query_id, conversation_id, status, events, last_seq, result, created, updated"
_ALL = 1 << 62  # "no limit" that SQLite and PostgreSQL both take as LIMIT ?
TABLES = (  # the SQL both backends speak
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, query_id TEXT NOT NULL, conversation_id TEXT, "
    "status TEXT NOT NULL, events INTEGER NOT NULL, last_seq BIGINT NOT NULL, result TEXT, "
    "created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS runs_updated ON runs (updated)",
    "CREATE TABLE IF NOT EXISTS turns (conversation_id TEXT, turn INTEGER, role TEXT NOT NULL, "
    "content TEXT NOT NULL, query_id TEXT, ts DOUBLE PRECISION NOT NULL, PRIMARY KEY (conversation_id, turn))",
    "CREATE INDEX IF NOT EXISTS turns_ts ON turns (ts)",
)


class StoredRun(BaseModel):
    """A run as the log has it: written by the process answering it, read by any other."""

    run_id: str
    query_id: str
    conversation_id: str | None = None
    status: RunState = "running"
    events: int = 0
    last_seq: int = 0
    result: str | None = None  # the output or error contract, as JSON
    created: float
    updated: float


class Turn(BaseModel):
    """One turn of a conversation: the question (user) or its answer or error (assistant)."""

    turn: int
    role: Role
    content: str
    query_id: str | None = None
    ts: float


class ServerLog:
    """Runs and conversation turns on a database of the store, with the events they go with.
    Every method blocks: the routes call them with `asyncio.to_thread`."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.event_log = EventLog(database)

    @classmethod
    def of(cls, settings: Settings) -> ServerLog:
        """The configured log (one database per process and place)."""
        return cls(open_database(settings))

    @property
    def where(self) -> str:
        """Where the database is, for messages (never a password)."""
        return self.database.where

    def ping(self) -> None:
        """Raise LogUnavailable unless the database answers."""
        self.database.ping()

    def create_tables(self) -> None:
        """The events table, then runs and turns, with their prunings (at once the first time)."""
        self.event_log.create_tables()
        self.database.create_tables(TABLES, _prune)

    # -- runs -------------------------------------------------------------------------------

    def save_run(self, run: StoredRun, events: Sequence[Event] = ()) -> None:
        """Write a run's new events and its state in one transaction, so a reader that sees the
        final state finds every event. Its result is scrubbed (`concerto.redact`)."""
        sql = (
            f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT (run_id) DO UPDATE SET "
            "status = excluded.status, events = excluded.events, last_seq = excluded.last_seq, "
            "result = excluded.result, updated = excluded.updated"
        )
        values = (
            run.run_id,
            run.query_id,
            run.conversation_id,
            run.status,
            run.events,
            run.last_seq,
            scrub_serialized(run.result) if run.result else run.result,
            run.created,
            run.updated,
        )

        def work(x: Exec) -> None:
            insert_events(x, events)
            x(sql, values)

        self.create_tables()
        self.database.transaction(work, write=True, rows=len(events) + 1)

    def run(self, run_id: str) -> StoredRun | None:
        """A run by id, or None."""
        self.create_tables()
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?"
        rows = self.database.transaction(lambda x: x(sql, (run_id,)), write=False)
        if not rows:
            return None
        return StoredRun(**dict(zip(_RUN_COLUMNS.split(", "), rows[0], strict=True)))

    def events(self, query_id: str, after: int = 0) -> list[Event]:
        """A run's events with a sequence number above `after`, in order."""
        return self.event_log.events(query_id, after)

    # -- conversations ----------------------------------------------------------------------

    def add_turns(self, conversation_id: str, turns: Sequence[tuple[Role, str]], query_id: str | None) -> None:
        """Append turns after the conversation's last one (a new conversation starts at 1), in
        one transaction; their contents are scrubbed."""
        sql = (
            "INSERT INTO turns (conversation_id, turn, role, content, query_id, ts) "
            "SELECT ?, coalesce(max(turn), 0) + 1, ?, ?, ?, ? FROM turns WHERE conversation_id = ?"
        )

        def work(x: Exec) -> None:
            for role, content in turns:
                x(sql, (conversation_id, role, scrub(content), query_id, time.time(), conversation_id))

        self.create_tables()
        for attempt in range(5):  # PostgreSQL: two processes may take the same turn number at once
            try:
                self.database.transaction(work, write=True, rows=len(turns))
                return
            except LogConflict:
                if attempt == 4:
                    raise LogUnavailable(f"conversation {conversation_id!r}: too many concurrent writers") from None
                time.sleep(0.01 * (attempt + 1))

    def turns(self, conversation_id: str, last: int | None = None) -> list[Turn]:
        """The conversation's turns, oldest first (the `last` ones only, when given)."""
        sql = "SELECT turn, role, content, query_id, ts FROM turns WHERE conversation_id = ? ORDER BY turn DESC LIMIT ?"
        self.create_tables()
        params = (conversation_id, _ALL if last is None else last)
        rows = self.database.transaction(lambda x: x(sql, params), write=False)
        return [Turn(turn=r[0], role=r[1], content=r[2], query_id=r[3], ts=r[4]) for r in reversed(rows)]

    def delete_conversation(self, conversation_id: str) -> int:
        """Remove a conversation's turns; how many there were."""

        def work(x: Exec) -> int:
            found = x("SELECT count(*) FROM turns WHERE conversation_id = ?", (conversation_id,))[0][0]
            x("DELETE FROM turns WHERE conversation_id = ?", (conversation_id,))
            return int(found)

        self.create_tables()
        return self.database.transaction(work, write=True, rows=0)


def _prune(x: Exec, cutoff: float, limits: Limits) -> None:
    """Within the database's pruning, after the events': turns older than `cutoff` and beyond the
    newest `max_rows`; runs last updated before `cutoff` or older than every event left."""
    x("DELETE FROM turns WHERE ts < ?", (cutoff,))
    x("DELETE FROM turns WHERE ts < (SELECT ts FROM turns ORDER BY ts DESC LIMIT 1 OFFSET ?)", (limits.max_rows - 1,))
    x("DELETE FROM runs WHERE updated < ?", (cutoff,))
    x("DELETE FROM runs WHERE updated < (SELECT min(ts) FROM events)")
