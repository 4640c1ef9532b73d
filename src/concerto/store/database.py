"""The database interface every owner of tables uses: transactions, `create_tables` with its
pruning, the writer thread, `ping` and `counts`. A backend (`sqlite.py`, `postgres.py`) only
connects and runs one transaction.

Tables are registered, not built in: each owner (the engine's event log, the server's runs and
turns, a pack such as A2A) calls `create_tables(statements, prune)` before it uses them. The
statements run at once and again on every new connection (a database that was reset or a
connection the server dropped); `prune(x, cutoff, limits)` runs in each of the database's
prunings, in the order the owners registered, all in one transaction.

Pruning happens as it goes: at most once per `limits.prune_every` rows written (`max_rows / 20`)
or per `prune_interval_s` of writing, in a thread of its own, so a write rarely pays for it and
a table exceeds its bound by 5 % at most (plus what other processes write in between).
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from concerto.store.errors import LogUnavailable
from concerto.store.limits import Limits
from concerto.store.writer import Writer

log = logging.getLogger(__name__)
T = TypeVar("T")
Exec = Callable[..., list[tuple[Any, ...]]]  # (sql, params=(), many=False) -> rows
Pruning = Callable[[Exec, float, Limits], None]  # (x, cutoff time, limits): an owner's tables pruned
Tables = tuple[str, ...]  # one owner's CREATE statements, idempotent


class Database(ABC):
    """One database of the shared log, used by several threads through one connection."""

    _create_lock: Tables = ()  # taken in the transaction that creates tables (processes starting at once)
    _table_names = ""  # SELECT giving the names of the tables (for `counts`)

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._lock = threading.Lock()  # one connection, used by one thread at a time
        self._tables: list[Tables] = []  # every owner's statements, run on each new connection
        self._created: set[Tables] = set()  # those run on the current connection
        self._prunes: list[Pruning] = []
        self._registering = threading.Lock()
        self._written = 0
        self._pruned_at = time.time()
        self._pruner_lock = threading.Lock()
        self.pruner: threading.Thread | None = None  # the last pruning thread (tests join it)
        self._writer = Writer("log-writer")

    # -- what a backend supplies ------------------------------------------------------------

    @abstractmethod
    def _run(self, work: Callable[[Exec], T], *, write: bool) -> T:
        """Run `work` with an executor of statements, in one transaction when `write`, after
        creating the tables not yet created on this connection (`_create_pending`). Raises
        LogUnavailable, or LogConflict when a unique key is taken."""

    @abstractmethod
    def _disconnect(self) -> None:
        """Close the connection, if open."""

    @property
    @abstractmethod
    def where(self) -> str:
        """Where the database is, for messages (never a password)."""

    def _create_pending(self, transact: Callable[[Callable[[Exec], None]], None]) -> None:
        """Run (through `transact`, one write transaction) the registered statements that have
        not run on this connection; called by `_run` under the connection's lock."""
        pending = [group for group in list(self._tables) if group not in self._created]
        if not pending:
            return

        def create(x: Exec) -> None:
            for statement in [*self._create_lock, *(s for group in pending for s in group)]:
                x(statement)

        transact(create)
        self._created.update(pending)

    # -- the interface ----------------------------------------------------------------------

    def transaction(self, work: Callable[[Exec], T], *, write: bool, rows: int = 1) -> T:
        """Run `work` with an executor of statements (`x(sql, params=(), many=False)` returning
        rows, `?` placeholders, `RETURNING` works), in one transaction when `write`, on this
        database's one connection; a write's `rows` count towards the next pruning. Blocks: call
        it from a thread (`asyncio.to_thread`). Raises LogUnavailable, or LogConflict when a
        unique key is taken."""
        done = self._run(work, write=write)
        if write:
            self._after_write(rows)
        return done

    def create_tables(self, statements: Sequence[str], prune: Pruning | None = None) -> None:
        """Create an owner's tables (`CREATE TABLE IF NOT EXISTS ...` in the SQL both backends
        speak: `TEXT`, `BIGINT`, `DOUBLE PRECISION`), in one transaction; `prune(x, cutoff,
        limits)` then runs in each of the database's prunings. Called again with the same
        statements, it returns at once: owners call it before each use."""
        group = tuple(statements)
        if group in self._tables and (prune is None or prune in self._prunes):
            return
        with self._registering:
            added = group not in self._tables
            if added:
                self._tables.append(group)
            try:
                self._run(lambda x: None, write=False)  # creates what is pending
            except BaseException:
                if added:  # tried again on the next call, and never in another owner's way
                    self._tables.remove(group)
                raise
            if prune is not None and prune not in self._prunes:
                self._prunes.append(prune)

    def write_soon(self, write: Callable[[], None], what: str) -> None:
        """Run `write` (which calls `transaction`) on this database's writer thread, in order,
        without waiting. LogUnavailable is logged, naming `what`; beyond `MAX_PENDING` writes
        waiting, new ones are dropped (and logged)."""

        def quietly() -> None:
            try:
                write()
            except LogUnavailable as exc:
                log.warning("%s not stored: %s", what, exc)

        if not self._writer.submit(quietly):
            log.warning("the log at %s is behind by %d writes: %s dropped", self.where, self._writer.max_pending, what)

    def flush(self) -> None:
        """Wait for the writes `write_soon` has queued."""
        self._writer.flush()

    def close(self) -> None:
        """Finish the queued writes and drop the connection (the next call opens another)."""
        self._writer.close()
        with self._lock:
            self._disconnect()

    def unmade(self) -> bool:
        """True while the database does not exist yet (a SQLite file nothing has written), so
        there is nothing to prune and no reason to make it now."""
        return False

    def ping(self) -> None:
        """Raise LogUnavailable unless the database answers."""
        self._run(lambda x: x("SELECT 1"), write=False)

    def counts(self) -> dict[str, int]:
        """Rows per table."""

        def work(x: Exec) -> dict[str, int]:
            names = sorted(str(r[0]) for r in x(self._table_names))
            return {name: int(x(f"SELECT count(*) FROM {name}")[0][0]) for name in names}

        return self._run(work, write=False)

    # -- pruning ----------------------------------------------------------------------------

    def prune(self, now: float | None = None) -> None:
        """Run every owner's pruning (`create_tables`) in one transaction, with the cutoff of
        the age limit."""
        cutoff = (now if now is not None else time.time()) - self.limits.max_age_days * 86_400

        def work(x: Exec) -> None:
            for prune in list(self._prunes):
                prune(x, cutoff, self.limits)

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
