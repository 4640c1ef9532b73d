"""The store: the shared log's database, below the engine.

SQLite in the data dir by default (`events.sqlite`, WAL mode, so the processes of one machine
share it), PostgreSQL's schema `concerto_log` when `CONCERTO_DATABASE_URL` is set (processes on
any machine share it). Both run the same SQL (`?` placeholders, `ON CONFLICT`, `RETURNING`); a
backend only connects and runs transactions.

It knows tables only as their owners register them with `create_tables(statements, prune)`:
the engine's events (`concerto.orchestrator.log`), the server's runs and conversation turns
(`concerto.server.log`), and any pack's (A2A tasks, `concerto.protocols.a2a_tasks`); each is
pruned by the same limits (`Limits`: age and rows) as the database is written. Writes the
caller must not wait for go to one writer thread per database (`write_soon`).

It imports nothing of Concerto but `redact` (and `settings`, for types): the engine, the server
and packs import it, never the other way round.
"""

from concerto.store.database import Database, Exec, Pruning
from concerto.store.errors import LogConflict, LogUnavailable
from concerto.store.limits import Limits
from concerto.store.opened import open_database
from concerto.store.postgres import SCHEMA, PostgresDatabase
from concerto.store.sqlite import SqliteDatabase

__all__ = [
    "SCHEMA",
    "Database",
    "Exec",
    "Limits",
    "LogConflict",
    "LogUnavailable",
    "PostgresDatabase",
    "Pruning",
    "SqliteDatabase",
    "open_database",
]
