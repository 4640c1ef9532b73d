"""The shared log of questions: their events, runs and conversation turns, in one database.

What a later request needs lives here, not in a process, so several `concerto serve`
processes behind a load balancer serve one conversation and one event stream: a run
started by one process is followed from another by reading its events and status, and a
conversation's turns are read by whichever process gets the next question.

The database is the configured one: SQLite in the data dir by default (`events.sqlite`, the
file the event log always used, now in WAL mode so that the processes of one machine share
it), PostgreSQL when `CONCERTO_DATABASE_URL` is set (schema `concerto_log`, apart from the
schema `concerto`, whose table names are the user's source names). Both speak the same SQL
(`?` placeholders, `ON CONFLICT`); a backend only connects and runs transactions.

The module sits beside the engine, not the server, because the engine writes the event log
(`EventLog`) and must not import the HTTP layer; runs and turns are records of the same
questions, kept and pruned with them.

Bounded: events by age (`CONCERTO_EVENTS_MAX_AGE_DAYS`) and by rows
(`CONCERTO_EVENTS_MAX_ROWS`), turns by the same age and rows, runs with their events.
Pruning happens as it goes, at most once per `max_rows / 20` rows written or per minute of
writing, so a write rarely pays for it and the table exceeds its bound by 5 % at most
(plus what other processes write in between).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel

from concerto.contracts.events import Event, EventType, QueryState
from concerto.redact import mask_url, remember, scrub, scrub_serialized

if TYPE_CHECKING:
    from concerto.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
Exec = Callable[..., list[tuple[Any, ...]]]  # (sql, params=(), many=False) -> rows
Pruning = Callable[[Exec, float, "Limits"], None]  # (x, cutoff time, limits): a pack's tables pruned
RunState = Literal["running", "completed", "failed"]
Role = Literal["user", "assistant"]
SCHEMA = "concerto_log"
_EVENT_COLUMNS = "query_id, seq, ts, type, source, step, state, task_id, title, details"
_RUN_COLUMNS = "run_id, query_id, conversation_id, status, events, last_seq, result, created, updated"
_ALL = 1 << 62  # "no limit" that SQLite and PostgreSQL both take as LIMIT ?
MAX_PENDING = 1000  # writes queued by `write_events_soon` at most
SQLITE_TIMEOUT_S = 10.0  # how long a SQLite statement waits for another process's lock
RETRY_AFTER_S = 5.0  # a database that could not be reached is not tried again before this


class LogUnavailable(RuntimeError):
    """The database of the log cannot be reached or refused a statement; the message says which
    (scrubbed: a driver's error may quote the connection string)."""

    def __init__(self, message: str) -> None:
        super().__init__(scrub(message))


class LogConflict(RuntimeError):
    """A unique key taken by a concurrent writer (another process appended the same turn)."""


@dataclass(frozen=True)
class Limits:
    """How much the log keeps."""

    max_age_days: float = 30.0
    max_rows: int = 200_000
    prune_interval_s: float = 60.0

    @property
    def prune_every(self) -> int:
        """Rows written between two prunings."""
        return max(1, min(self.max_rows // 20, 10_000))


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


class Log(ABC):
    """The interface: events, runs and turns; a backend supplies `_run` and the table definitions."""

    tables: tuple[str, ...]  # CREATE statements, idempotent
    _create_lock: tuple[str, ...] = ()  # taken before creating tables (processes starting at once)

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._lock = threading.Lock()  # one connection per log, used by one thread at a time
        self._written = 0
        self._pruned_at = time.time()
        self._pruner_lock = threading.Lock()
        self.pruner: threading.Thread | None = None  # the last pruning thread (tests join it)
        self._prunes: list[Pruning] = []  # the packs' own (`create_tables`)
        self._writer: ThreadPoolExecutor | None = None
        self._writer_lock = threading.Lock()
        self._pending = 0

    @abstractmethod
    def _run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        """Run `work` with an executor of statements, in one transaction when `write`."""

    @abstractmethod
    def _disconnect(self) -> None:
        """Close the connection, if open."""

    def close(self) -> None:
        """Finish the queued writes and drop the connection (the next call opens another)."""
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        with self._lock:
            self._disconnect()

    @property
    @abstractmethod
    def where(self) -> str:
        """Where the log is, for messages (never a password)."""

    # -- events ---------------------------------------------------------------------------

    def write_events(self, events: Sequence[Event]) -> None:
        """Append events (one already there is left as it is). Their titles and details are
        scrubbed (`concerto.redact`), as are runs' results and turns' contents: no row of the
        log shows a secret, whichever code wrote it."""
        self._run(lambda x: _insert_events(x, events), write=True)
        self._after_write(len(events))

    def write_events_soon(self, events: Sequence[Event]) -> None:
        """Append events from this log's writer thread, in order, without waiting: the engine
        calls it on the event loop, which a slow or unreachable database must not hold up. A
        failure is logged; beyond `MAX_PENDING` writes waiting, new ones are dropped (and logged)."""
        with self._writer_lock:
            if self._pending >= MAX_PENDING:
                log.warning(
                    "the log at %s is behind by %d writes: events of %s dropped",
                    self.where,
                    MAX_PENDING,
                    events[0].query_id if events else "?",
                )
                return
            if self._writer is None:
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="log-writer")
            self._pending += 1
        self._writer.submit(self._write_quietly, events)

    def _write_quietly(self, events: Sequence[Event]) -> None:
        try:
            self.write_events(events)
        except LogUnavailable as exc:
            log.warning("events not stored: %s", exc)
        finally:
            with self._writer_lock:
                self._pending -= 1

    def flush(self) -> None:
        """Wait for the writes `write_events_soon` has queued."""
        with self._writer_lock:
            writer = self._writer
        if writer is not None:
            writer.submit(lambda: None).result()

    def events(self, query_id: str, after: int = 0) -> list[Event]:
        """The events of one query with a sequence number above `after`, in order."""
        sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE query_id = ? AND seq > ? ORDER BY seq"
        return [_event(r) for r in self._run(lambda x: x(sql, (query_id, after)), write=False)]

    def recent_events(self, limit: int = 200) -> list[Event]:
        """The most recent events of any query, oldest first."""
        sql = f"SELECT {_EVENT_COLUMNS} FROM events ORDER BY ts DESC, seq DESC LIMIT ?"
        return [_event(r) for r in reversed(self._run(lambda x: x(sql, (limit,)), write=False))]

    # -- runs -----------------------------------------------------------------------------

    def save_run(self, run: StoredRun, events: Sequence[Event] = ()) -> None:
        """Write a run's new events and its state in one transaction, so a reader that sees the
        final state finds every event."""
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
            _insert_events(x, events)
            x(sql, values)

        self._run(work, write=True)
        self._after_write(len(events) + 1)

    def run(self, run_id: str) -> StoredRun | None:
        """A run by id, or None."""
        rows = self._run(lambda x: x(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)), write=False)
        if not rows:
            return None
        return StoredRun(**dict(zip(_RUN_COLUMNS.split(", "), rows[0], strict=True)))

    # -- conversations --------------------------------------------------------------------

    def add_turns(self, conversation_id: str, turns: Sequence[tuple[Role, str]], query_id: str | None) -> None:
        """Append turns after the conversation's last one (a new conversation starts at 1)."""
        sql = (
            "INSERT INTO turns (conversation_id, turn, role, content, query_id, ts) "
            "SELECT ?, coalesce(max(turn), 0) + 1, ?, ?, ?, ? FROM turns WHERE conversation_id = ?"
        )

        def work(x: Exec) -> None:
            for role, content in turns:
                x(sql, (conversation_id, role, scrub(content), query_id, time.time(), conversation_id))

        for attempt in range(5):  # PostgreSQL: two processes may take the same turn number at once
            try:
                self._run(work, write=True)
                break
            except LogConflict:
                if attempt == 4:
                    raise LogUnavailable(f"conversation {conversation_id!r}: too many concurrent writers") from None
                time.sleep(0.01 * (attempt + 1))
        self._after_write(len(turns))

    def turns(self, conversation_id: str, last: int | None = None) -> list[Turn]:
        """The conversation's turns, oldest first (the `last` ones only, when given)."""
        sql = "SELECT turn, role, content, query_id, ts FROM turns WHERE conversation_id = ? ORDER BY turn DESC LIMIT ?"
        rows = self._run(lambda x: x(sql, (conversation_id, _ALL if last is None else last)), write=False)
        return [Turn(turn=r[0], role=r[1], content=r[2], query_id=r[3], ts=r[4]) for r in reversed(rows)]

    def delete_conversation(self, conversation_id: str) -> int:
        """Remove a conversation's turns; how many there were."""

        def work(x: Exec) -> int:
            found = x("SELECT count(*) FROM turns WHERE conversation_id = ?", (conversation_id,))[0][0]
            x("DELETE FROM turns WHERE conversation_id = ?", (conversation_id,))
            return int(found)

        return self._run(work, write=True)

    # -- tables of packs ------------------------------------------------------------------

    def create_tables(self, statements: Sequence[str], prune: Pruning | None = None) -> None:
        """Create a pack's own tables in the log's database (`CREATE TABLE IF NOT EXISTS ...`
        in the SQL both backends speak), in one transaction; `prune(x, cutoff, limits)` then
        runs in each of the log's prunings, to keep them bounded as the log's own tables are."""
        self._run(lambda x: [x(s) for s in [*self._create_lock, *statements]], write=True)
        if prune is not None and prune not in self._prunes:
            self._prunes.append(prune)

    def transaction(self, work: Callable[[Exec], T], *, write: bool) -> T:
        """Run `work` with an executor of statements (`x(sql, params=(), many=False)` returning
        rows, `?` placeholders), in one transaction when `write`, on the log's one connection:
        how a pack keeps records of its own beside the log's (a write counts towards the next
        pruning). Raises LogUnavailable, or LogConflict when a unique key is taken."""
        done = self._run(work, write=write)
        if write:
            self._after_write(1)
        return done

    # -- upkeep ---------------------------------------------------------------------------

    def ping(self) -> None:
        """Raise LogUnavailable unless the database answers."""
        self._run(lambda x: x("SELECT 1"), write=False)

    def counts(self) -> dict[str, int]:
        """Rows per table."""

        def work(x: Exec) -> dict[str, int]:
            return {t: int(x(f"SELECT count(*) FROM {t}")[0][0]) for t in ("events", "runs", "turns")}

        return self._run(work, write=False)

    def prune(self, now: float | None = None) -> None:
        """Drop what is older than the age limit, the oldest rows beyond the row limit, and runs
        whose events are gone; then what the packs' prunings drop (`create_tables`)."""
        cutoff = (now if now is not None else time.time()) - self.limits.max_age_days * 86_400
        keep = self.limits.max_rows - 1

        def work(x: Exec) -> None:
            for table in ("events", "turns"):
                x(f"DELETE FROM {table} WHERE ts < ?", (cutoff,))
                x(f"DELETE FROM {table} WHERE ts < (SELECT ts FROM {table} ORDER BY ts DESC LIMIT 1 OFFSET ?)", (keep,))
            x("DELETE FROM runs WHERE updated < ?", (cutoff,))
            x("DELETE FROM runs WHERE updated < (SELECT min(ts) FROM events)")
            for pack_prune in self._prunes:
                pack_prune(x, cutoff, self.limits)

        self._run(work, write=True)

    def _after_write(self, rows: int) -> None:
        """Prune in a thread of its own when due: a write (the engine's is on the event loop)
        never waits for it."""
        self._written += rows
        due = self._written >= self.limits.prune_every
        if not (due or time.time() - self._pruned_at >= self.limits.prune_interval_s):
            return
        with self._pruner_lock:
            if self.pruner is not None and self.pruner.is_alive():
                return
            self._written = 0
            self._pruned_at = time.time()
            self.pruner = threading.Thread(target=self._prune_quietly, name="log-prune", daemon=True)
            self.pruner.start()

    def _prune_quietly(self) -> None:
        try:
            self.prune()
        except LogUnavailable as exc:  # the next write tries again
            log.warning("pruning the log failed: %s", exc)


class SqliteLog(Log):
    """The log in a SQLite file (WAL mode: readers never wait for the writer, and the processes
    of one machine share the file)."""

    tables = (
        "CREATE TABLE IF NOT EXISTS events (query_id TEXT, seq INTEGER, ts REAL, type TEXT, source TEXT, "
        "step INTEGER, state TEXT, task_id TEXT, title TEXT, details TEXT, PRIMARY KEY (query_id, seq))",
        "CREATE INDEX IF NOT EXISTS events_ts ON events (ts)",
        "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, query_id TEXT NOT NULL, conversation_id TEXT, "
        "status TEXT NOT NULL, events INTEGER NOT NULL, last_seq INTEGER NOT NULL, result TEXT, "
        "created REAL NOT NULL, updated REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS runs_updated ON runs (updated)",
        "CREATE TABLE IF NOT EXISTS turns (conversation_id TEXT, turn INTEGER, role TEXT NOT NULL, "
        "content TEXT NOT NULL, query_id TEXT, ts REAL NOT NULL, PRIMARY KEY (conversation_id, turn))",
        "CREATE INDEX IF NOT EXISTS turns_ts ON turns (ts)",
    )

    def __init__(self, path: Path, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self.path = path
        self._con: sqlite3.Connection | None = None

    @property
    def where(self) -> str:
        return str(self.path)

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=SQLITE_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            try:
                self._set_up(con)
            except BaseException:
                con.close()
                raise
            self._con = con
        return self._con

    def _set_up(self, con: sqlite3.Connection) -> None:
        """WAL and the tables. Two processes opening a new file at once: switching it to WAL
        answers "database is locked" at once, without waiting as other statements do (1 start
        in 13 here), so the loser tries again."""
        deadline = time.monotonic() + SQLITE_TIMEOUT_S
        while True:
            try:
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=NORMAL")  # WAL stays consistent; a power cut may lose the last commits
                for statement in self.tables:
                    con.execute(statement)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        with self._lock:
            try:
                con = self._connection()

                def execute(sql: str, params: Sequence[Any] = (), many: bool = False) -> list[tuple[Any, ...]]:
                    if many:
                        con.executemany(sql, params)
                        return []
                    return con.execute(sql, params).fetchall()

                if not write:
                    return work(execute)
                con.execute("BEGIN IMMEDIATE")  # take the write lock now: no upgrade deadlock between processes
                try:
                    done = work(execute)
                except BaseException:
                    with suppress(sqlite3.Error):  # SQLite may have rolled back by itself
                        con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
                return done
            except sqlite3.IntegrityError as exc:
                raise LogConflict(str(exc)) from None
            except (sqlite3.Error, OSError) as exc:
                raise LogUnavailable(f"the log at {self.path} failed: {exc}") from None

    def _disconnect(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


class PostgresLog(Log):
    """The log in PostgreSQL (`CONCERTO_DATABASE_URL`), schema `concerto_log`."""

    _create_lock = ("SELECT pg_advisory_xact_lock(hashtext('concerto_log'))",)

    tables = (
        "CREATE TABLE IF NOT EXISTS events (query_id text, seq bigint, ts double precision, type text, "
        "source text, step integer, state text, task_id text, title text, details text, PRIMARY KEY (query_id, seq))",
        "CREATE INDEX IF NOT EXISTS events_ts ON events (ts)",
        "CREATE TABLE IF NOT EXISTS runs (run_id text PRIMARY KEY, query_id text NOT NULL, conversation_id text, "
        "status text NOT NULL, events integer NOT NULL, last_seq bigint NOT NULL, result text, "
        "created double precision NOT NULL, updated double precision NOT NULL)",
        "CREATE INDEX IF NOT EXISTS runs_updated ON runs (updated)",
        "CREATE TABLE IF NOT EXISTS turns (conversation_id text, turn integer, role text NOT NULL, "
        "content text NOT NULL, query_id text, ts double precision NOT NULL, PRIMARY KEY (conversation_id, turn))",
        "CREATE INDEX IF NOT EXISTS turns_ts ON turns (ts)",
    )

    def __init__(self, url: str, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self.url = url
        remember(url)  # its password is masked even where psycopg quotes it alone
        self._con: Any = None
        self._down_until = 0.0  # after a failed connection: fail at once until then

    @property
    def where(self) -> str:
        try:
            parts = urlsplit(self.url)
            return f"PostgreSQL at {parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path}"
        except ValueError:  # a port that is not a number, an unclosed bracket: psycopg says which
            return f"PostgreSQL at {mask_url(self.url)}"

    def _connection(self) -> Any:
        import psycopg

        if self._con is None or self._con.closed:
            con = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            try:
                with con.transaction():
                    # Two processes starting together would both create the schema: one waits.
                    for statement in self._create_lock:
                        con.execute(statement)
                    con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
                    con.execute(f"SET search_path TO {SCHEMA}")
                    for statement in self.tables:
                        con.execute(statement)
                con.execute(f"SET search_path TO {SCHEMA}")
            except BaseException:
                con.close()
                raise
            self._con = con
        return self._con

    def _run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        import psycopg

        with self._lock:
            if time.monotonic() < self._down_until:
                raise LogUnavailable(f"the log in {self.where} cannot be reached (it did not answer a moment ago)")
            for attempt in (1, 2):  # a connection the server dropped (restart, idle timeout) is opened again
                fresh = self._con is None or self._con.closed
                try:
                    con = self._connection()
                    execute = _pg_executor(con)
                    if not write:
                        return work(execute)
                    with con.transaction():
                        return work(execute)
                except psycopg.errors.UniqueViolation as exc:
                    raise LogConflict(str(exc)) from None
                except psycopg.OperationalError as exc:
                    self._drop()
                    if attempt == 2 or fresh:
                        self._down_until = time.monotonic() + RETRY_AFTER_S
                        raise LogUnavailable(f"the log in {self.where} cannot be reached: {_first_line(exc)}") from None
                except psycopg.Error as exc:
                    raise LogUnavailable(f"the log in {self.where} failed: {_first_line(exc)}") from None
        raise AssertionError("unreachable")

    def _drop(self) -> None:
        if self._con is not None:
            try:
                self._con.close()
            finally:
                self._con = None

    def _disconnect(self) -> None:
        self._drop()


class UnusableLog(Log):
    """A log that cannot be used (its settings are invalid): every call raises the reason."""

    tables = ()

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    @property
    def where(self) -> str:
        return "nowhere"

    def _run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        raise LogUnavailable(self.reason)

    def write_events_soon(self, events: Sequence[Event]) -> None:
        log.warning("events not stored: %s", self.reason)  # no writer thread for a log made per call

    def _disconnect(self) -> None:
        pass


_opened: OrderedDict[tuple[str, str, Limits], Log] = OrderedDict()
_opened_lock = threading.Lock()
_KEEP_OPEN = 8


def open_log(settings: Settings) -> Log:
    """The configured log, one per process and location: PostgreSQL when
    `CONCERTO_DATABASE_URL` is set, else `events.sqlite` in the data dir. Invalid settings of
    the data layer give a log whose every use says so (the app still starts and answers)."""
    from concerto.data.settings import DataSettings
    from concerto.settings import SettingsError

    limits = Limits(max_age_days=settings.events_max_age_days, max_rows=settings.events_max_rows)
    try:
        url = DataSettings.of(settings).database_url
    except SettingsError as exc:
        return UnusableLog(f"the log's database is not known: {exc}")
    key = ("postgres", url.get_secret_value(), limits) if url else ("sqlite", str(settings.data_dir), limits)
    with _opened_lock:
        found = _opened.get(key)
        if found is None:
            made: Log = PostgresLog(key[1], limits) if url else SqliteLog(settings.data_dir / "events.sqlite", limits)
            found = _opened[key] = made
            while len(_opened) > _KEEP_OPEN:  # many data dirs in one process (tests): close the oldest
                _opened.popitem(last=False)[1].close()  # it opens again if still used
        _opened.move_to_end(key)
        return found


def _insert_events(execute: Exec, events: Sequence[Event]) -> None:
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
    sql = f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES ({placeholders}) ON CONFLICT (query_id, seq) DO NOTHING"
    execute(sql, rows, many=True)


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


def _pg_executor(con: Any) -> Exec:
    """Statements written for SQLite (`?`) run by psycopg (`%s`)."""

    def execute(sql: str, params: Sequence[Any] = (), many: bool = False) -> list[tuple[Any, ...]]:
        sql = sql.replace("?", "%s")
        if many:
            with con.cursor() as cur:
                cur.executemany(sql, [_no_nul(p) for p in params])
            return []
        cur = con.execute(sql, _no_nul(params))
        return cur.fetchall() if cur.description else []

    return execute


def _no_nul(params: Sequence[Any]) -> tuple[Any, ...]:
    """PostgreSQL text cannot hold NUL; SQLite can, and a question may carry one."""
    return tuple(p.replace("\x00", "\ufffd") if isinstance(p, str) else p for p in params)


def _first_line(exc: BaseException) -> str:
    return scrub((str(exc).strip().splitlines() or [type(exc).__name__])[0])
