"""Runs: a question started once and followed by any number of readers, who may drop and
come back without losing an event.

`POST /v1/runs` starts the question and answers at once with the run's id. `GET
/v1/runs/{id}/events` is a server-sent event stream: every event so far, then each new
one as it happens, then the `result`; a reader that reconnects sends `Last-Event-ID` (a
browser's EventSource does it by itself) or `?after=N` and gets only what it missed. `GET
/v1/runs/{id}` gives the state and, once there, the result. A run lives on after its
readers leave (a dropped stream does not stop the question, unlike `/v1/ask/stream`) and is
forgotten after `keep` newer runs or `ttl_s` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from concerto.contracts.events import Event
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput

if TYPE_CHECKING:
    from concerto.orchestrator.engine import Orchestrator

Result = OrchestratorOutput | OrchestratorErrorResponse
RunState = Literal["running", "completed", "failed"]


class RunStarted(BaseModel):
    """The answer of `POST /v1/runs`: where to follow the run."""

    run_id: str
    query_id: str
    events_url: str = Field(..., description="Server-sent events; reconnect with Last-Event-ID to resume")
    result_url: str


class RunStatus(BaseModel):
    """A run's state and, when it has finished, its result (output or error contract)."""

    run_id: str
    query_id: str
    status: RunState
    events: int = Field(..., description="Events so far")
    result: OrchestratorOutput | OrchestratorErrorResponse | None = None


@dataclass
class Run:
    run_id: str
    query_id: str
    events: list[Event] = field(default_factory=list)
    result: Result | None = None
    started: float = field(default_factory=time.monotonic)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    task: asyncio.Task[None] | None = None

    @property
    def status(self) -> RunState:
        if self.result is None:
            return "running"
        return "completed" if isinstance(self.result, OrchestratorOutput) else "failed"

    @property
    def result_id(self) -> int:
        """The `id:` of the result event: one past the last event's sequence number."""
        return (self.events[-1].seq if self.events else 0) + 1

    def describe(self) -> RunStatus:
        return RunStatus(
            run_id=self.run_id, query_id=self.query_id, status=self.status, events=len(self.events), result=self.result
        )


class UnknownRun(LookupError):
    """No run with that id (never started, or forgotten)."""


class Runs:
    """The runs of one process."""

    def __init__(self, orchestrator: Orchestrator, *, keep: int = 200, ttl_s: float = 3600.0) -> None:
        self.orchestrator = orchestrator
        self.keep = keep
        self.ttl_s = ttl_s
        self._runs: OrderedDict[str, Run] = OrderedDict()

    def start(self, query: OrchestratorInput, now: datetime | None = None) -> Run:
        """Start answering `query` in the background; its events are kept for every reader."""
        self._prune()
        run = Run(run_id=query.query_id, query_id=query.query_id)
        self._runs[run.run_id] = run
        run.task = asyncio.create_task(self._drive(run, query, now))
        return run

    def get(self, run_id: str) -> Run:
        self._prune()
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRun(f"no run '{run_id[:40]}' (finished runs are kept for {self.ttl_s:g} s)")
        return run

    async def follow(self, run: Run, after: int = 0) -> AsyncIterator[Event | Result]:
        """Events with a sequence number above `after`, as they come, then the result (unless
        the reader had it already)."""
        sent = after
        while True:
            async with run.changed:
                fresh = [e for e in run.events if e.seq > sent]
                if not fresh and run.result is None:
                    await run.changed.wait()
                    continue
            for event in fresh:
                yield event
                sent = event.seq
            if run.result is not None and not [e for e in run.events if e.seq > sent]:
                if after < run.result_id:
                    yield run.result
                return

    async def _drive(self, run: Run, query: OrchestratorInput, now: datetime | None) -> None:
        try:
            async for item in self.orchestrator.stream(query, now=now):
                async with run.changed:
                    if isinstance(item, Event):
                        run.events.append(item)
                    else:
                        run.result = item
                    run.changed.notify_all()
        except Exception as exc:  # the engine returns contracts; this is a last resort for readers
            async with run.changed:
                run.result = OrchestratorErrorResponse(
                    query_id=run.query_id,
                    error_message=f"the run stopped unexpectedly: {type(exc).__name__}",
                    error_category="synthesis_failed",
                    retry_recommended=True,
                )
                run.changed.notify_all()

    def _prune(self) -> None:
        cutoff = time.monotonic() - self.ttl_s
        for run_id in [r for r, run in self._runs.items() if run.result is not None and run.started < cutoff]:
            del self._runs[run_id]
        while len(self._runs) > self.keep:
            oldest = next((r for r, run in self._runs.items() if run.result is not None), None)
            if oldest is None:
                break
            del self._runs[oldest]

    async def aclose(self) -> None:
        """Stop the runs still going (the server is shutting down)."""
        tasks = [run.task for run in self._runs.values() if run.task is not None and not run.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def after_id(last_event_id: str | None, after: int | None) -> int:
    """Where a reader resumes: `?after=N`, else the `Last-Event-ID` header, else the start."""
    if after is not None:
        return after
    try:
        return int(last_event_id) if last_event_id else 0
    except ValueError:
        return 0


def sse_fields(item: Event | Result, run: Run) -> dict[str, Any]:
    """The `event:` and `id:` of one item of a run's stream."""
    if isinstance(item, Event):
        return {"event": "event", "id": str(item.seq)}
    return {"event": "result", "id": str(run.result_id)}
