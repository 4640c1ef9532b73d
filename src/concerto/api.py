"""`concerto.ask(...)`: the synchronous Python API, for scripts and notebooks.

`async with concerto.Orchestrator() as o: await o.ask(...)` is the API for async code.
Code that is not async (a script, a notebook cell, a test) calls `concerto.ask`, which
answers on one orchestrator per process, built on first use from `Settings()` and kept
for the next question (agents keep their connections, the embedding model stays loaded).
That orchestrator lives on an event loop of its own in a daemon thread, so `ask` works
the same where an event loop is already running (Jupyter runs one) and where none is.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput
    from concerto.orchestrator.engine import Orchestrator
    from concerto.settings import Settings

T = TypeVar("T")


class _Shared:
    """The process's orchestrator and the loop it runs on; both made on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._orchestrator: Orchestrator | None = None

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the shared loop and wait for it."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(work, self._start())
        return future.result()

    async def orchestrator(self, settings: Settings | None) -> Orchestrator:
        """The shared orchestrator; `settings` given: a new one with them, replacing it."""
        from concerto.orchestrator.engine import Orchestrator

        if settings is not None and self._orchestrator is not None:
            old, self._orchestrator = self._orchestrator, None
            await old.aclose()
        if self._orchestrator is None:
            orchestrator = Orchestrator(settings)
            await orchestrator.start()
            self._orchestrator = orchestrator
        return self._orchestrator

    def close(self) -> None:
        """Close the orchestrator and stop the loop (at exit, or to start afresh)."""
        with self._lock:
            loop, orchestrator = self._loop, self._orchestrator
            self._loop = self._orchestrator = None
        if loop is None:
            return
        if orchestrator is not None:
            asyncio.run_coroutine_threadsafe(orchestrator.aclose(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="concerto-api", daemon=True).start()
                self._loop = loop
                atexit.register(self.close)
            return self._loop


_shared = _Shared()


def ask(
    query: OrchestratorInput | str | dict[str, Any],
    *,
    now: datetime | None = None,
    agent: str | None = None,
    settings: Settings | None = None,
    **fields: Any,
) -> OrchestratorOutput | OrchestratorErrorResponse:
    """Answer one question and wait for the result (`Orchestrator.ask`, without `await`).

    `query` is the question, or the whole input contract; `fields` are more of its fields
    (`source="sales"`, `output_format="brief"`, `parameters={...}`). `now` fixes the clock,
    `agent` asks one agent by name without routing, and `settings` replaces the shared
    orchestrator with one built from them. Like `Orchestrator.ask`, it never raises for a
    bad question or a failing backend: check for `OrchestratorErrorResponse`.
    """
    if fields:
        base = query.model_dump() if not isinstance(query, str | dict) else query
        query = {**({"query": base} if isinstance(base, str) else base), **fields}

    async def answer() -> OrchestratorOutput | OrchestratorErrorResponse:
        orchestrator = await _shared.orchestrator(settings)
        return await orchestrator.ask(query, now=now, agent=agent)

    return _shared.run(answer())


def close() -> None:
    """Close the shared orchestrator (done at exit; call it to free its resources sooner)."""
    _shared.close()
