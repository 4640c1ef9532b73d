"""The store's two errors. Named after the shared log, which is what users know the database as
(`the log at ...` in every message)."""

from __future__ import annotations

from concerto.redact import scrub


class LogUnavailable(RuntimeError):
    """The database cannot be reached or refused a statement; the message says which (scrubbed:
    a driver's error may quote the connection string)."""

    def __init__(self, message: str) -> None:
        super().__init__(scrub(message))


class LogConflict(RuntimeError):
    """A unique key taken by a concurrent writer (another process appended the same row)."""
