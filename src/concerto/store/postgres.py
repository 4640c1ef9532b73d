"""The database in PostgreSQL (`CONCERTO_DATABASE_URL`), schema `concerto_log`, apart from the
schema `concerto` whose table names are the user's source names. Statements are written for
SQLite (`?` placeholders) and run by psycopg (`%s`)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from concerto.redact import mask_url, remember, scrub
from concerto.store.database import Database, Exec
from concerto.store.errors import LogConflict, LogUnavailable
from concerto.store.limits import Limits

T = TypeVar("T")
SCHEMA = "concerto_log"
RETRY_AFTER_S = 5.0  # a database that could not be reached is not tried again before this


class PostgresDatabase(Database):
    """PostgreSQL, one connection per process and URL, used by one thread at a time; a
    connection the server dropped (restart, idle timeout) is opened again once."""

    _create_lock = (f"SELECT pg_advisory_xact_lock(hashtext('{SCHEMA}'))",)
    _table_names = f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{SCHEMA}'"

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
            except BaseException:
                con.close()
                raise
            self._con = con
            self._created = set()  # a new connection: every owner's tables are made again
        return self._con

    def _run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        import psycopg

        with self._lock:
            if time.monotonic() < self._down_until:
                raise LogUnavailable(f"the log in {self.where} cannot be reached (it did not answer a moment ago)")
            for attempt in (1, 2):  # a connection the server dropped (restart, idle timeout) is opened again
                fresh = self._con is None or self._con.closed
                try:
                    return self._once(work, write=write)
                except psycopg.errors.UniqueViolation as exc:
                    raise LogConflict(str(exc)) from None
                except psycopg.OperationalError as exc:
                    self._disconnect()
                    if attempt == 2 or fresh:
                        self._down_until = time.monotonic() + RETRY_AFTER_S
                        raise LogUnavailable(f"the log in {self.where} cannot be reached: {_first_line(exc)}") from None
                except psycopg.Error as exc:
                    raise LogUnavailable(f"the log in {self.where} failed: {_first_line(exc)}") from None
        raise AssertionError("unreachable")

    def _once(self, work: Callable[[Exec], T], *, write: bool) -> T:
        con = self._connection()
        execute = _executor(con)
        self._create_pending(functools.partial(_transact, con, execute, write=True))
        return _transact(con, execute, work, write=write)

    def _disconnect(self) -> None:
        if self._con is not None:
            try:
                self._con.close()
            finally:
                self._con = None


def _transact(con: Any, execute: Exec, work: Callable[[Exec], T], *, write: bool) -> T:
    if not write:
        return work(execute)
    with con.transaction():
        return work(execute)


def _executor(con: Any) -> Exec:
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
