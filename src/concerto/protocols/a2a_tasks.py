"""A2A tasks in the shared log's database, so every `concerto serve` process serves every task.

The SDK (1.3) runs a task on the process that received it and lets other processes take part
through two interfaces, implemented here on the shared log (decision 31; SQLite in the data
dir, or PostgreSQL's `concerto_log` schema with `CONCERTO_DATABASE_URL`):
- `VersionedTaskStore`: each write of a task bumps its version by compare-and-swap, so a cancel
  sent to another process wins and the process running the task stops at its next write; the
  event that caused the write is appended in the same transaction;
- `TaskEventStream`: a process that is not running a task follows it by reading those events
  (polling every 100 ms, as runs are followed).

Why not the SDK's own SQLAlchemy store (decision 32): measured here it took about 15 ms a
write inside a busy server (five writes a question: +95 ms for an echo question, against 8 ms
with tasks in memory); on SQLite its read-then-write raced (sqlite3 begins a transaction only
at the first write, so a cancel and the running task's update could both take the same
version); and after a cancel from another process it went on saving the events the agent had
already queued, turning the cancelled task back to `working`. Here a write is one transaction
of two or three statements on the log's connection, and a finished task is never written
again (the protocol's terminal states are final): the compare-and-swap refuses it.

Tables `a2a_tasks` (the task as protobuf JSON, its version, state and status time) and
`a2a_task_events`, pruned in the log's own prunings (`_prune`): tasks last updated before
`CONCERTO_EVENTS_MAX_AGE_DAYS` and beyond the newest `CONCERTO_EVENTS_MAX_ROWS / 25` (a question
makes about 25 events, so as many questions as the event log keeps) go with their events, and
events beyond the newest `CONCERTO_EVENTS_MAX_ROWS`.

A task whose process died while running it is reported failed, as a run is: the process
running a task touches it every `HEARTBEAT_S`, and a process that reads (or follows) a task
not heard from for `STALE_S` writes it `failed`, saying so, so that no reader waits forever.

A database that cannot be reached is the protocol's internal error naming it (tried again on
the next request), never a server that does not start.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events import Event as A2AEvent
from a2a.server.owner_resolver import resolve_user_scope
from a2a.types import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InternalError, InvalidParamsError
from a2a.utils.proto_utils import to_stream_response
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, decode_page_token, encode_list_tasks_cursor
from google.protobuf import json_format

from concerto.store import Database, Exec, Limits, LogConflict, LogUnavailable, open_database

if TYPE_CHECKING:
    from concerto.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
POLL_S = 0.1  # how often a process following another's task reads its new events
HEARTBEAT_S = 5.0  # a running task is touched this often, events or not (as a run's state is)
STALE_S = 60.0  # a running task not touched for this long: its process is gone
STALE_CHECK_S = 1.0  # how often a process following a quiet task checks whether it is stale
EVENTS_PER_TASK = 25  # about as many as a question makes: tasks kept = max_rows / this
TABLES = (  # the SQL both backends speak
    "CREATE TABLE IF NOT EXISTS a2a_tasks (task_id TEXT PRIMARY KEY, owner TEXT NOT NULL, context_id TEXT NOT NULL, "
    "state INTEGER NOT NULL, status_ns BIGINT, version BIGINT NOT NULL, task TEXT NOT NULL, "
    "updated DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS a2a_tasks_listed ON a2a_tasks (owner, context_id, status_ns)",
    "CREATE INDEX IF NOT EXISTS a2a_tasks_updated ON a2a_tasks (updated)",
    "CREATE TABLE IF NOT EXISTS a2a_task_events (task_id TEXT NOT NULL, version BIGINT NOT NULL, "
    "event TEXT NOT NULL, ts DOUBLE PRECISION NOT NULL, PRIMARY KEY (task_id, version))",
    "CREATE INDEX IF NOT EXISTS a2a_task_events_ts ON a2a_task_events (ts)",
)
_FINISHED = tuple(int(s) for s in sorted(TERMINAL_TASK_STATES))
_NOT_FINISHED = f"state NOT IN ({','.join('?' * len(_FINISHED))})"
_UPSERT = (
    "INSERT INTO a2a_tasks (task_id, owner, context_id, state, status_ns, version, task, updated) "
    "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (task_id) DO NOTHING RETURNING version"
)
_UPDATE = (
    "UPDATE a2a_tasks SET context_id = ?, state = ?, status_ns = ?, version = version + 1, task = ?, updated = ? "
    f"WHERE task_id = ? AND owner = ? AND {{check}} AND {_NOT_FINISHED} RETURNING version"
)
_EVENT = "INSERT INTO a2a_task_events (task_id, version, event, ts) VALUES (?,?,?,?)"
_ORDER = "ORDER BY (status_ns IS NULL), status_ns DESC, task_id DESC"  # ListTasks: newest status first


class Tasks:
    """The A2A handler's store and event stream on the shared log, once `configure`d."""

    def __init__(self) -> None:
        self.store = LogTaskStore(self)
        self.stream = LogTaskEventStream(self)
        self._log: Database | None = None
        self._created = False
        self.running: set[str] = set()  # the tasks this process is running
        self.heartbeat_s, self.stale_s = HEARTBEAT_S, STALE_S
        self._beating: asyncio.Task[None] | None = None

    def configure(self, settings: Settings) -> None:
        """Where the tasks are: the settings' log (its tables are created on first use)."""
        self._log = open_database(settings)

    async def run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        """`work` in one transaction on the log (in a thread); the database's failure as the
        protocol's internal error naming where it is."""
        return await self._on_log(functools.partial(Database.transaction, work=work, write=write))

    async def prune(self) -> None:
        """Prune the log now (the A2A tables with it), as it does by itself as it is written."""
        await self._on_log(Database.prune)

    async def _on_log(self, call: Callable[[Database], T]) -> T:
        """`call(log)` in a thread, the tables (and their pruning) made first."""
        if self._log is None:
            raise InternalError(message="the A2A task store is used before the app started")
        shared = self._log
        try:
            if not self._created:
                await asyncio.to_thread(shared.create_tables, TABLES, _prune)
                self._created = True
            return await asyncio.to_thread(call, shared)
        except LogUnavailable as exc:
            raise InternalError(message=f"the A2A task store cannot be used: {exc}") from None

    async def aclose(self) -> None:
        if self._beating is not None:
            self._beating.cancel()

    # -- tasks whose process died -----------------------------------------------------------

    def started(self, task_id: str) -> None:
        """This process runs `task_id` now: it is touched every `heartbeat_s` until `finished`."""
        self.running.add(task_id)
        if self._beating is None or self._beating.done():
            self._beating = asyncio.create_task(self._beat(), name="a2a-heartbeat")

    def finished(self, task_id: str) -> None:
        self.running.discard(task_id)

    async def _beat(self) -> None:
        while self.running:
            await asyncio.sleep(self.heartbeat_s)
            ids = sorted(self.running)
            if not ids:
                return
            sql = f"UPDATE a2a_tasks SET updated = ? WHERE task_id IN ({','.join('?' * len(ids))})"
            try:
                await self.run(functools.partial(_rows, sql=sql, params=(time.time(), *ids)), write=True)
            except InternalError as exc:  # the next beat tries again
                log.warning("A2A tasks not touched: %s", exc.message)

    async def abandon_if_stale(self, task_id: str) -> bool:
        """Write `failed` on a task still running in the store but not heard from for `stale_s`
        (its process died), with a message saying so and the event for its followers; whether
        it did. A task this process runs is never stale."""
        if task_id in self.running:
            return False
        now = time.time()
        found = f"SELECT task, version FROM a2a_tasks WHERE task_id = ? AND updated < ? AND {_NOT_FINISHED}"
        cas = "UPDATE a2a_tasks SET state = ?, status_ns = ?, version = version + 1, task = ?, updated = ? "
        cas += "WHERE task_id = ? AND version = ? RETURNING version"

        def work(x: Exec) -> bool:
            rows = x(found, (task_id, now - self.stale_s, *_FINISHED))
            if not rows:
                return False
            task = _abandoned(json_format.Parse(rows[0][0], Task()), self.stale_s)
            body, state = json_format.MessageToJson(task), int(task.status.state)
            written = x(cas, (state, _status_ns(task), body, now, task_id, rows[0][1]))
            if not written:
                return False
            event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
            x(_EVENT, (task_id, written[0][0], json_format.MessageToJson(to_stream_response(event)), now))
            return True

        return await self.run(work, write=True)


class LogTaskStore(VersionedTaskStore):
    """Tasks with their versions, scoped to their owner (the SDK's `resolve_user_scope`)."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

    async def save(
        self,
        task: Task,
        *,
        event: A2AEvent | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        """Write `task` if its stored version is still `prev_version` (a first write if MISSING;
        a cancel over any unfinished version), and `event` with the new version. A task that is
        finished, or moved on meanwhile, raises ConcurrentTaskModificationError."""
        owner, now = resolve_user_scope(context), time.time()
        body, status_ns = json_format.MessageToJson(task), _status_ns(task)
        stream = json_format.MessageToJson(to_stream_response(event)) if event is not None else None
        cancel = task.status.state == TaskState.TASK_STATE_CANCELED
        state = int(task.status.state)

        def work(x: Exec) -> int:
            if prev_version.is_missing and not cancel:
                rows = x(_UPSERT, (task.id, owner, task.context_id, state, status_ns, 1, body, now))
            else:
                check, expected = ("1 = 1", ()) if cancel else ("version = ?", (_as_int(prev_version),))
                changed = (task.context_id, state, status_ns, body, now, task.id, owner)
                rows = x(_UPDATE.format(check=check), (*changed, *expected, *_FINISHED))
            if not rows:
                raise _Stale
            version = int(rows[0][0])
            if stream is not None:
                x(_EVENT, (task.id, version, stream, now))
            return version

        try:
            version = await self.tasks.run(work, write=True)
        except (_Stale, LogConflict):
            raise ConcurrentTaskModificationError(task.id) from None
        return TaskVersion(version)

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task and its version; a running task whose process is gone is failed first."""
        sql = "SELECT task, version, state, updated FROM a2a_tasks WHERE task_id = ? AND owner = ?"
        read = functools.partial(_rows, sql=sql, params=(task_id, resolve_user_scope(context)))
        rows = await self.tasks.run(read, write=False)
        stale = rows and rows[0][2] not in _FINISHED and time.time() - rows[0][3] > self.tasks.stale_s
        if stale and await self.tasks.abandon_if_stale(task_id):
            rows = await self.tasks.run(read, write=False)
        if not rows:
            return None
        return StoredTask(json_format.Parse(rows[0][0], Task()), TaskVersion(int(rows[0][1])))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The owner's tasks, newest status first, filtered and paged as ListTasks says (the
        page token carries the last task's position, so it survives that task's changes)."""
        where, values = ["owner = ?"], list[Any]([resolve_user_scope(context)])
        if params.context_id:
            where.append("context_id = ?")
            values.append(params.context_id)
        if params.status:
            where.append("state = ?")
            values.append(int(params.status))
        if params.HasField("status_timestamp_after"):
            where.append("status_ns >= ?")
            values.append(params.status_timestamp_after.ToNanoseconds())
        page_size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        token = params.page_token

        def work(x: Exec) -> tuple[int, list[tuple[Any, ...]]]:
            filters = " AND ".join(where)
            total = int(x(f"SELECT count(*) FROM a2a_tasks WHERE {filters}", values)[0][0])
            after, more = _after(x, token, values[0]) if token else ("1 = 1", [])
            sql = f"SELECT task, status_ns, task_id FROM a2a_tasks WHERE {filters} AND {after} {_ORDER} LIMIT ?"
            return total, x(sql, (*values, *more, page_size + 1))

        total, rows = await self.tasks.run(work, write=False)
        page = rows[:page_size]
        next_token = None
        if len(rows) > page_size:
            next_token = encode_list_tasks_cursor(ListTasksCursor(timestamp_ns=page[-1][1], task_id=page[-1][2]))
        return ListTasksResponse(
            tasks=[json_format.Parse(r[0], Task()) for r in page],
            total_size=total,
            next_page_token=next_token,
            page_size=page_size,
        )

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        owner = resolve_user_scope(context)

        def work(x: Exec) -> None:
            found = x("SELECT 1 FROM a2a_tasks WHERE task_id = ? AND owner = ?", (task_id, owner))
            if found:
                x("DELETE FROM a2a_tasks WHERE task_id = ?", (task_id,))
                x("DELETE FROM a2a_task_events WHERE task_id = ?", (task_id,))

        await self.tasks.run(work, write=True)


class LogTaskEventStream(TaskEventStream):
    """A task's events as its writes appended them; other processes poll for new ones."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        """Nothing to do: the store wrote the event with the task, in one transaction."""

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent, None]:
        """Events of `task_id` newer than `after`, as they are written (the caller stops at the
        task's end)."""
        seen = 0 if after.is_missing else _as_int(after)
        sql = "SELECT version, event FROM a2a_task_events WHERE task_id = ? AND version > ? ORDER BY version"

        checked = time.monotonic()
        while True:
            rows = await self.tasks.run(functools.partial(_rows, sql=sql, params=(task_id, seen)), write=False)
            for version, body in rows:
                seen = int(version)
                yield VersionedEvent(event=_event(json_format.Parse(body, StreamResponse())), version=TaskVersion(seen))
            if rows:
                checked = time.monotonic()
            elif time.monotonic() - checked >= STALE_CHECK_S:  # quiet: is its process still there?
                checked = time.monotonic()
                if await self.tasks.abandon_if_stale(task_id):
                    continue  # its `failed` event is there to read
            if not rows:
                await asyncio.sleep(POLL_S)

    async def destroy(self, task_id: str) -> None:
        """Nothing to do: events go with their task when the log is pruned."""


class _Stale(Exception):
    """The task moved on, or is finished, since the version the write was derived from."""


def _after(x: Exec, token: str, owner: str) -> tuple[str, list[Any]]:
    """The clause of the tasks after a page token: a cursor (its position), or an older token
    naming the first task of the page."""
    cursor = decode_list_tasks_cursor(token)
    if cursor is not None:
        if cursor.timestamp_ns is None:
            return "(status_ns IS NULL AND task_id < ?)", [cursor.task_id]
        clause = "(status_ns < ? OR (status_ns = ? AND task_id < ?) OR status_ns IS NULL)"
        return clause, [cursor.timestamp_ns, cursor.timestamp_ns, cursor.task_id]
    first = decode_page_token(token)
    found = x("SELECT status_ns FROM a2a_tasks WHERE task_id = ? AND owner = ?", (first, owner))
    if not found:
        raise InvalidParamsError(f"Invalid page token: {token}")
    if found[0][0] is None:
        return "(status_ns IS NULL AND task_id <= ?)", [first]
    ns = found[0][0]
    return "(status_ns < ? OR (status_ns = ? AND task_id <= ?) OR status_ns IS NULL)", [ns, ns, first]


def _prune(x: Exec, cutoff: float, limits: Limits) -> None:
    """Within the log's pruning: tasks last updated before `cutoff` or beyond the newest
    `max_rows / EVENTS_PER_TASK`, with their events; events beyond the newest `max_rows`."""
    x("DELETE FROM a2a_tasks WHERE updated < ?", (cutoff,))
    newest = "SELECT updated FROM a2a_tasks ORDER BY updated DESC LIMIT 1 OFFSET ?"
    x(f"DELETE FROM a2a_tasks WHERE updated < ({newest})", (max(1, limits.max_rows // EVENTS_PER_TASK) - 1,))
    x("DELETE FROM a2a_task_events WHERE task_id NOT IN (SELECT task_id FROM a2a_tasks)")
    newest = "SELECT ts FROM a2a_task_events ORDER BY ts DESC LIMIT 1 OFFSET ?"
    x(f"DELETE FROM a2a_task_events WHERE ts < ({newest})", (limits.max_rows - 1,))


def _rows(x: Exec, *, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return x(sql, params)


def _abandoned(task: Task, stale_s: float) -> Task:
    """`task` failed because its process stopped: its status message moved to its history (as
    the SDK does), the error contract as the new one."""
    from concerto.contracts.orchestrator import OrchestratorErrorResponse

    error = OrchestratorErrorResponse(
        query_id=task.id,
        error_message=f"The task stopped: the server answering it has not been heard from for {stale_s:g} s "
        "(it may have been restarted). Ask again.",
        error_category="timeout",
        retry_recommended=True,
    )
    if task.status.HasField("message"):
        task.history.append(task.status.message)
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_AGENT,
        task_id=task.id,
        context_id=task.context_id,
        parts=[new_text_part(error.error_message), new_data_part(json.loads(error.model_dump_json()))],
    )
    task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_FAILED, message=message))
    task.status.timestamp.GetCurrentTime()
    return task


def _status_ns(task: Task) -> int | None:
    return task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else None


def _as_int(version: TaskVersion) -> int:
    value = version._value
    if not isinstance(value, int):
        raise TypeError(f"a task version of this store is an int, not {type(value).__name__}")
    return value


def _event(response: StreamResponse) -> A2AEvent:
    """The event a stream response carries."""
    which = response.WhichOneof("payload")
    event: A2AEvent = getattr(response, which or "task")
    return event
