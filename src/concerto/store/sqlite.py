"""The database in a SQLite file (`events.sqlite` in the data dir), in WAL mode: readers never
wait for the writer, and the processes of one machine share the file."""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

from concerto.store.database import Database, Exec
from concerto.store.errors import LogConflict, LogUnavailable
from concerto.store.limits import Limits

T = TypeVar("T")
SQLITE_TIMEOUT_S = 10.0  # how long a SQLite statement waits for another process's lock


class SqliteDatabase(Database):
    """SQLite, one connection per process and file, used by one thread at a time."""

    _table_names = "SELECT name FROM sqlite_master WHERE type = 'table'"

    def __init__(self, path: Path, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self.path = path
        self._con: sqlite3.Connection | None = None

    @property
    def where(self) -> str:
        return str(self.path)

    def unmade(self) -> bool:
        return not self.path.exists()

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=SQLITE_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            try:
                _set_up(con)
            except BaseException:
                con.close()
                raise
            self._con = con
            self._created = set()  # a new connection: every owner's tables are made again
        return self._con

    def _run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        with self._lock:
            try:
                con = self._connection()
                execute = _executor(con)
                self._create_pending(functools.partial(_transact, con, execute, write=True))
                return _transact(con, execute, work, write=write)
            except sqlite3.IntegrityError as exc:
                raise LogConflict(str(exc)) from None
            except (sqlite3.Error, OSError) as exc:
                raise LogUnavailable(f"the log at {self.path} failed: {exc}") from None

    def _disconnect(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _set_up(con: sqlite3.Connection) -> None:
    """WAL. Two processes opening a new file at once: switching it to WAL answers "database is
    locked" at once, without waiting as other statements do (1 start in 13 here), so the loser
    tries again."""
    deadline = time.monotonic() + SQLITE_TIMEOUT_S
    while True:
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")  # WAL stays consistent; a power cut may lose the last commits
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _executor(con: sqlite3.Connection) -> Exec:
    def execute(sql: str, params: Sequence[Any] = (), many: bool = False) -> list[tuple[Any, ...]]:
        if many:
            con.executemany(sql, params)
            return []
        return con.execute(sql, params).fetchall()

    return execute


def _transact(con: sqlite3.Connection, execute: Exec, work: Callable[[Exec], T], *, write: bool) -> T:
    """`work`, in one transaction when `write` (the write lock taken at once: no upgrade
    deadlock between processes)."""
    if not write:
        return work(execute)
    con.execute("BEGIN IMMEDIATE")
    try:
        done = work(execute)
    except BaseException:
        with suppress(sqlite3.Error):  # SQLite may have rolled back by itself
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return done
