"""One thread per database that runs writes in order while their caller goes on: the engine
writes its events from the event loop, which a slow or unreachable database must not hold up."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

MAX_PENDING = 1000  # writes waiting at most; beyond, new ones are refused


class Writer:
    """A single writer thread, started on first use, with at most `max_pending` writes waiting."""

    def __init__(self, name: str, max_pending: int = MAX_PENDING) -> None:
        self.name = name
        self.max_pending = max_pending
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._pending = 0

    def submit(self, write: Callable[[], None]) -> bool:
        """Queue `write`; False (and nothing queued) when `max_pending` are waiting already."""
        with self._lock:
            if self._pending >= self.max_pending:
                return False
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix=self.name)
            self._pending += 1
            pool = self._pool
        try:
            pool.submit(self._run, write)
        except RuntimeError:  # closed in between: the write is refused, as when full
            self._done()
            return False
        return True

    def _run(self, write: Callable[[], None]) -> None:
        try:
            write()
        finally:
            self._done()

    def _done(self) -> None:
        with self._lock:
            self._pending -= 1

    def flush(self) -> None:
        """Wait for the writes queued so far."""
        with self._lock:
            pool = self._pool
        if pool is not None:
            pool.submit(lambda: None).result()

    def close(self) -> None:
        """Finish the queued writes and stop the thread (the next `submit` starts another)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
