"""A2A tasks in the configured database, so every `concerto serve` process serves every task.

The SDK's clustered store and event stream (`a2a.server.cluster`, over SQLAlchemy) do the
protocol's part: each write of a task bumps its version by compare-and-swap (a cancel sent to
another process wins, and the process running the task stops at its next write), the event
that caused the write is appended in the same transaction, and a process that is not running
a task follows it by polling those events. This module points them at the database the
shared log uses (decision 31) and keeps them bounded:

- nothing set: `a2a.sqlite` in the data dir (WAL: the processes of one machine share it);
- `CONCERTO_DATABASE_URL=postgresql://…`: the schema `concerto_a2a` of that database (the SDK's
  tables `tasks`, `task_versions` and `task_events`).

Pruning, as the log's: tasks last updated before `CONCERTO_EVENTS_MAX_AGE_DAYS`, and beyond
the newest `CONCERTO_EVENTS_MAX_ROWS / 25` tasks (a question makes about 25 events, so as
many questions as the event log keeps), go with their versions and events; task events
beyond the newest `CONCERTO_EVENTS_MAX_ROWS` go too (only a process following a running task
reads them, and it is never that far behind). It runs off the request, at most once per
`max_rows / 20` writes or per minute.

The handler is built when the routes are, before the app knows its settings, so `Tasks`
hands it a store and a stream that learn the settings on the app's start (`configure`) and
connect on first use. A database that cannot be reached is the protocol's internal error
naming it (tried again on the next request), never a server that does not start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    DatabaseTaskEventStream,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedDatabaseTaskStore,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events import Event as A2AEvent
from a2a.server.models import Base
from a2a.types import ListTasksRequest, ListTasksResponse, Task

from concerto.orchestrator.log import Limits

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from concerto.settings import Settings

log = logging.getLogger(__name__)
SCHEMA = "concerto_a2a"
SQLITE_FILE = "a2a.sqlite"
TABLES = ("tasks", "task_versions", "task_events")  # the SDK's default models (a2a.server.models)
POLL_S = 0.1  # how often a process following another's task reads its new events
EVENTS_PER_TASK = 25  # about as many as a question makes: tasks kept = max_rows / this
KEPT_FINISHED = 1000  # finished tasks whose final version a process remembers
INIT_ATTEMPTS = 5  # processes starting together race to create the tables: the losers try again


class Tasks:
    """The A2A handler's store and event stream, on the configured database (`configure`)."""

    def __init__(self) -> None:
        self.store = _Store(self)
        self.stream = _Stream(self)
        self.engine: AsyncEngine | None = None
        self.limits = Limits()
        self.where = "not configured yet"
        self._settings: Settings | None = None
        self._db: VersionedDatabaseTaskStore | None = None
        self._events: DatabaseTaskEventStream | None = None
        self._opening = asyncio.Lock()
        self._writes = 0
        self._pruned_at = time.monotonic()
        self._pruning: asyncio.Task[None] | None = None

    def configure(self, settings: Settings) -> None:
        """Where the tasks are: the settings' database (connected on first use)."""
        self._settings = settings
        self.limits = Limits(max_age_days=settings.events_max_age_days, max_rows=settings.events_max_rows)

    async def db(self) -> VersionedDatabaseTaskStore:
        """The SDK's store, connected (the first call creates the tables when missing)."""
        await self._ready()
        assert self._db is not None
        return self._db

    async def events(self) -> DatabaseTaskEventStream:
        """The SDK's event stream, connected."""
        await self._ready()
        assert self._events is not None
        return self._events

    async def _ready(self) -> None:
        if self._db is not None:
            return
        async with self._opening:
            if self._db is None:
                await self._open()

    async def _open(self) -> None:
        from a2a.utils.errors import InternalError

        from concerto.data.settings import DataSettings

        if self._settings is None:
            raise InternalError(message="the A2A task store is used before the app started")
        url = DataSettings.of(self._settings).database_url
        self.where = _where(url.get_secret_value() if url else None, self._settings.data_dir / SQLITE_FILE)
        engine = _engine(url.get_secret_value() if url else None, self._settings.data_dir / SQLITE_FILE)
        try:
            await _create_tables(engine, postgres=url is not None)
        except Exception as exc:
            await engine.dispose()
            raise InternalError(
                message=f"the A2A task store in {self.where} cannot be used: {_first_line(exc)}"
            ) from None
        self.engine = engine
        self._events = DatabaseTaskEventStream(engine, create_table=False, poll_interval_s=POLL_S)
        self._db = VersionedDatabaseTaskStore(engine, create_table=False)  # last: `_ready` checks it

    async def aclose(self) -> None:
        if self._pruning is not None:
            await asyncio.gather(self._pruning, return_exceptions=True)
        if self.engine is not None:
            await self.engine.dispose()
            self.engine = None

    def wrote(self) -> None:
        """Count a write; start pruning in the background when due."""
        self._writes += 1
        due = self._writes >= self.limits.prune_every
        if not (due or time.monotonic() - self._pruned_at >= self.limits.prune_interval_s):
            return
        if self._pruning is not None and not self._pruning.done():
            return
        self._writes, self._pruned_at = 0, time.monotonic()
        self._pruning = asyncio.create_task(self._prune_quietly(), name="a2a-prune")

    async def _prune_quietly(self) -> None:
        try:
            await self.prune()
        except Exception as exc:  # the next write tries again
            log.warning("pruning the A2A tasks failed: %s", exc)

    async def prune(self, now: float | None = None) -> None:
        """Drop tasks older than the age limit or beyond the newest `max_rows / 25`, with their
        versions and events, and events beyond the newest `max_rows`."""
        from datetime import UTC, datetime

        from sqlalchemy import delete, select

        if self.engine is None:
            return
        tasks, versions, events = (Base.metadata.tables[name] for name in TABLES)
        cutoff = datetime.fromtimestamp(
            (now if now is not None else time.time()) - self.limits.max_age_days * 86_400, UTC
        ).replace(tzinfo=None)  # the SDK stores naive UTC
        keep_tasks = max(1, self.limits.max_rows // EVENTS_PER_TASK)
        async with self.engine.begin() as conn:
            await conn.execute(delete(tasks).where(tasks.c.last_updated < cutoff))
            newest = select(tasks.c.last_updated).order_by(tasks.c.last_updated.desc()).offset(keep_tasks - 1).limit(1)
            await conn.execute(delete(tasks).where(tasks.c.last_updated < newest.scalar_subquery()))
            kept = select(tasks.c.id)
            await conn.execute(delete(versions).where(versions.c.task_id.not_in(kept)))
            await conn.execute(delete(events).where(events.c.task_id.not_in(kept)))
            last = select(events.c.seq).order_by(events.c.seq.desc()).offset(self.limits.max_rows - 1).limit(1)
            await conn.execute(delete(events).where(events.c.seq < last.scalar_subquery()))


class _Store(VersionedTaskStore):
    """The SDK's versioned database store, reached once the app has started; a write derived
    from a finished task is refused as a concurrent change.

    Why the refusal: when another process cancels a task, the process running it finds the
    change at its next write, reloads the task (cancelled) and stops the agent, but the SDK
    (1.3) goes on saving the events the agent had already queued, each derived from the
    reloaded version, which would turn the cancelled task back to `working`. A finished task
    never changes (the protocol's terminal states are final), so the store remembers the
    versions of finished tasks it read or wrote, and refuses a write derived from one of them:
    the SDK then drops the event.
    """

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self._finished: OrderedDict[str, TaskVersion] = OrderedDict()  # task id -> its final version

    async def save(
        self,
        task: Task,
        *,
        event: A2AEvent | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        if not prev_version.is_missing and self._finished.get(task.id) == prev_version:
            raise ConcurrentTaskModificationError(task.id)
        db = await self.tasks.db()
        version = await db.save(task, event=event, prev=prev, prev_version=prev_version, context=context)
        self._note(task, version)
        self.tasks.wrote()
        return version

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        stored = await (await self.tasks.db()).get(task_id, context)
        if stored is not None:
            self._note(stored.task, stored.version)
        return stored

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await (await self.tasks.db()).list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._finished.pop(task_id, None)
        await (await self.tasks.db()).delete(task_id, context)

    def _note(self, task: Task, version: TaskVersion) -> None:
        """Remember the version of a finished task (the newest `KEPT_FINISHED`)."""
        if task.status.state in TERMINAL_TASK_STATES and not version.is_missing:
            self._finished[task.id] = version
            self._finished.move_to_end(task.id)
            while len(self._finished) > KEPT_FINISHED:
                self._finished.popitem(last=False)


class _Stream(TaskEventStream):
    """The SDK's polling event stream over the same database."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        await (await self.tasks.events()).publish(task_id, event)

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent, None]:
        async for event in (await self.tasks.events()).subscribe(task_id, after=after):
            yield event

    async def destroy(self, task_id: str) -> None:
        await (await self.tasks.events()).destroy(task_id)


def _engine(url: str | None, sqlite_path: Path) -> AsyncEngine:
    """An async engine: psycopg on PostgreSQL (schema `concerto_a2a`), aiosqlite in WAL mode on
    the data dir's file."""
    from sqlalchemy import event
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    if url:
        target = make_url(url).set(drivername="postgresql+psycopg")
        options = {"options": f"-csearch_path={SCHEMA}", "connect_timeout": 5}
        return create_async_engine(target, connect_args=options, pool_pre_ping=True)
    sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(f"sqlite+aiosqlite:///{sqlite_path}", connect_args={"timeout": 10})

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(connection: Any, _: Any) -> None:
        connection.isolation_level = None  # sqlite3 would BEGIN only before a write: the SDK's
        cursor = connection.cursor()  # read-then-write (a cancel's version bump) would race
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")  # as the log: no fsync per commit
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")  # one writer at a time, from its first read

    return engine


async def _create_tables(engine: AsyncEngine, *, postgres: bool) -> None:
    """The schema (PostgreSQL) and the SDK's three tables, when missing."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    tables = [Base.metadata.tables[name] for name in TABLES]
    for attempt in range(1, INIT_ATTEMPTS + 1):
        try:
            async with engine.begin() as conn:
                if postgres:
                    await conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
                await conn.run_sync(Base.metadata.create_all, tables=tables)
            return
        except DBAPIError:
            if attempt == INIT_ATTEMPTS:
                raise
            await asyncio.sleep(0.1 * attempt)


def _where(url: str | None, sqlite_path: Path) -> str:
    """Where the tasks are, for messages (never a password)."""
    if not url:
        return str(sqlite_path)
    from sqlalchemy.engine import make_url

    parts = make_url(url)
    return f"PostgreSQL at {parts.host or 'localhost'}:{parts.port or 5432}/{parts.database or ''}"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
