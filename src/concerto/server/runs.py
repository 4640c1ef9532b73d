"""Runs: a question started once and followed by any number of readers, who may drop and
come back without losing an event.

`POST /v1/runs` starts the question and answers at once with the run's id. `GET
/v1/runs/{id}/events` is a server-sent event stream: every event so far, then each new
one as it happens, then the `result`; a reader that reconnects sends `Last-Event-ID` (a
browser's EventSource does it by itself) or `?after=N` and gets only what it missed. `GET
/v1/runs/{id}` gives the state and, once there, the result. A run lives on after its
readers leave (a dropped stream does not stop the question, unlike `/v1/ask/stream`) and is
forgotten by its process after `keep` newer runs or `ttl_s` seconds.

A run is also written to the shared log (`concerto.server.log`) as it happens: its
events in batches (at most `flush_s` apart), its state with a heartbeat every `HEARTBEAT_S`,
then its result, with the events in the same transaction. So a reader may come to any
process: the one that started the run serves it from memory, any other (or the same one
after forgetting it) by polling the log every `poll_s` until the state is final. A run
whose process died (still `running`, and no word from it for `stale_s`) is reported as
failed with that reason rather than followed forever.

Conversations: `recall` gives a conversation's earlier turns as a question's
`conversation_history`; `remember` appends the question and its answer (or error).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from concerto.contracts.events import Event
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput
from concerto.server.log import RunState, ServerLog, StoredRun
from concerto.store import LogUnavailable

if TYPE_CHECKING:
    from concerto.orchestrator.engine import Orchestrator

logger = logging.getLogger(__name__)
Result = OrchestratorOutput | OrchestratorErrorResponse
FLUSH_S = 0.05  # events reach the log at most this late (readers in this process see them at once)
POLL_S = 0.1  # how often a reader in another process looks for new events
HEARTBEAT_S = 5.0  # a running run's state is rewritten this often, events or not
STALE_S = 60.0  # no word from a running run for this long: its process is gone
MAX_HISTORY_TURNS = 40  # turns of a stored conversation given to the next question (the page sends as many)


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
    question: str = ""
    conversation_id: str | None = None
    created: float = field(default_factory=time.time)
    recorded: asyncio.Event = field(default_factory=asyncio.Event)  # its first state is in the log
    stored: StoredRun | None = None  # a run this process reads from the log: what the log said last

    @property
    def status(self) -> RunState:
        if self.result is None:
            return "running"
        return "completed" if isinstance(self.result, OrchestratorOutput) else "failed"

    @property
    def count(self) -> int:
        """Events so far."""
        return self.stored.events if self.stored is not None else len(self.events)

    @property
    def result_id(self) -> int:
        """The `id:` of the result event: one past the last event's sequence number."""
        if self.stored is not None:
            return self.stored.last_seq + 1
        return (self.events[-1].seq if self.events else 0) + 1

    def describe(self) -> RunStatus:
        return RunStatus(
            run_id=self.run_id, query_id=self.query_id, status=self.status, events=self.count, result=self.result
        )

    def snapshot(self) -> StoredRun:
        """The run as the log keeps it (taken on the event loop, written from a thread)."""
        return StoredRun(
            run_id=self.run_id,
            query_id=self.query_id,
            conversation_id=self.conversation_id,
            status=self.status,
            events=len(self.events),
            last_seq=self.result_id - 1,
            result=self.result.model_dump_json() if self.result is not None else None,
            created=self.created,
            updated=time.time(),
        )


class UnknownRun(LookupError):
    """No run with that id (never started, or forgotten)."""


class Runs:
    """The runs of one process, written to the shared log; runs of other processes read from it."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        log: ServerLog | None = None,
        *,
        keep: int = 200,
        ttl_s: float = 3600.0,
        flush_s: float = FLUSH_S,
        poll_s: float = POLL_S,
        stale_s: float = STALE_S,
    ) -> None:
        self.orchestrator = orchestrator
        self.log = log if log is not None else ServerLog.of(orchestrator.settings)
        self.keep = keep
        self.ttl_s = ttl_s
        self.flush_s = flush_s
        self.poll_s = poll_s
        self.stale_s = stale_s
        self._runs: OrderedDict[str, Run] = OrderedDict()

    def start(self, query: OrchestratorInput, now: datetime | None = None, conversation_id: str | None = None) -> Run:
        """Start answering `query` in the background; its events are kept for every reader (await
        `run.recorded` before telling other processes about it). With a `conversation_id`, the
        question and its answer are appended to that conversation at the end."""
        self._prune()
        run = Run(run_id=query.query_id, query_id=query.query_id, question=query.query, conversation_id=conversation_id)
        self._runs[run.run_id] = run
        run.task = asyncio.create_task(self._drive(run, query, now))
        return run

    def get(self, run_id: str) -> Run:
        """A run this process started and still remembers."""
        self._prune()
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRun(f"no run '{run_id[:40]}' (finished runs are kept for {self.ttl_s:g} s)")
        return run

    async def find(self, run_id: str) -> Run:
        """A run of this process, else the one the log has (started by another process)."""
        try:
            return self.get(run_id)
        except UnknownRun:
            stored = await asyncio.to_thread(self.log.run, run_id)
            if stored is None:
                raise
        run = Run(run_id=stored.run_id, query_id=stored.query_id, conversation_id=stored.conversation_id, stored=stored)
        run.result = self._result_of(stored)
        return run

    async def follow(self, run: Run, after: int = 0) -> AsyncIterator[Event | Result]:
        """Events with a sequence number above `after`, as they come, then the result (unless
        the reader had it already)."""
        if run.stored is not None:
            async for item in self._follow_stored(run, after):
                yield item
            return
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

    async def _follow_stored(self, run: Run, after: int) -> AsyncIterator[Event | Result]:
        """A run of another process, polled from the log: its state first, then the events, so a
        final state read before them means every event is there."""
        sent = after
        while True:
            if run.result is None:
                stored = await asyncio.to_thread(self.log.run, run.run_id)
                if stored is None:  # pruned or the database was reset: nothing more will come
                    run.result = _failure(run.query_id, "The run is no longer in the log (too old). Ask again.")
                else:
                    run.stored = stored
                    run.result = self._result_of(stored)
            for event in await asyncio.to_thread(self.log.events, run.query_id, sent):
                yield event
                sent = event.seq
            if run.result is not None:
                if after < run.result_id:
                    yield run.result
                return
            await asyncio.sleep(self.poll_s)

    def _result_of(self, stored: StoredRun) -> Result | None:
        """The stored result; None while it runs; a failure when its process stopped writing."""
        if stored.status == "running":
            if time.time() - stored.updated <= self.stale_s:
                return None
            return _failure(
                stored.query_id,
                f"The run stopped: the server answering it has not been heard from for {self.stale_s:g} s "
                "(it may have been restarted). Ask again.",
                category="timeout",
            )
        model = OrchestratorOutput if stored.status == "completed" else OrchestratorErrorResponse
        try:
            return model.model_validate_json(stored.result or "")
        except ValidationError:
            return _failure(stored.query_id, "The run's result in the log cannot be read. Ask again.")

    async def _drive(self, run: Run, query: OrchestratorInput, now: datetime | None) -> None:
        recorder = asyncio.create_task(self._record(run))
        try:
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
                    run.result = _failure(run.query_id, f"the run stopped unexpectedly: {type(exc).__name__}")
                    run.changed.notify_all()
            await recorder
        except asyncio.CancelledError:
            recorder.cancel()
            raise

    async def _record(self, run: Run) -> None:
        """Write the run to the log as it goes: the state at once, then new events at most every
        `flush_s` (a heartbeat when there are none), then the result and the conversation's turns.
        A log that fails is logged once; the run goes on for this process's readers."""
        written = 0
        warned = False

        async def save(snapshot: StoredRun, batch: list[Event]) -> bool:
            nonlocal warned
            try:
                await asyncio.to_thread(self.log.save_run, snapshot, batch)
                return True
            except LogUnavailable as exc:
                if not warned:
                    logger.warning("run %s is not in the log (other processes cannot follow it): %s", run.run_id, exc)
                warned = True
                return False

        try:
            await save(run.snapshot(), [])
        finally:
            run.recorded.set()
        while True:
            async with run.changed:
                if len(run.events) == written and run.result is None:
                    with suppress(TimeoutError):  # a heartbeat: the state is written again
                        await asyncio.wait_for(run.changed.wait(), HEARTBEAT_S)
                batch, snapshot = run.events[written:], run.snapshot()
            if await save(snapshot, batch):
                written += len(batch)
            if run.result is not None and snapshot.status != "running":
                if run.conversation_id:
                    await remember(self.log, run.conversation_id, run.question, run.query_id, run.result)
                return
            await asyncio.sleep(self.flush_s)

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
        """Stop the runs still going (the server is shutting down) and say so in the log."""
        going = [run for run in self._runs.values() if run.task is not None and not run.task.done()]
        for run in going:
            assert run.task is not None
            run.task.cancel()
        await asyncio.gather(*(run.task for run in going if run.task is not None), return_exceptions=True)
        for run in going:  # its last state may not have been written: write it again
            if run.result is None:
                run.result = _failure(run.query_id, "The server stopped before the run finished. Ask again.")
            try:
                await asyncio.to_thread(self.log.save_run, run.snapshot(), run.events)
            except LogUnavailable as exc:
                logger.warning("run %s: could not record that it stopped: %s", run.run_id, exc)


async def recall(log: ServerLog, conversation_id: str) -> list[dict[str, Any]]:
    """A stored conversation's latest turns as `conversation_history` (oldest first)."""
    turns = await asyncio.to_thread(log.turns, conversation_id, MAX_HISTORY_TURNS)
    return [{"role": t.role, "content": t.content} for t in turns]


async def remember(log: ServerLog, conversation_id: str, question: str, query_id: str, result: Result) -> None:
    """Append a question and its answer (or error message) to a conversation; a log that fails
    costs the turns, not the answer."""
    answer = result.response if isinstance(result, OrchestratorOutput) else result.error_message
    try:
        await asyncio.to_thread(log.add_turns, conversation_id, [("user", question), ("assistant", answer)], query_id)
    except LogUnavailable as exc:
        logger.warning("conversation %s: the turns of %s were not stored: %s", conversation_id, query_id, exc)


def _failure(
    query_id: str, message: str, category: Literal["timeout", "synthesis_failed"] = "synthesis_failed"
) -> Result:
    return OrchestratorErrorResponse(
        query_id=query_id, error_message=message, error_category=category, retry_recommended=True
    )


MAX_EVENT_ID = 2**63 - 1  # event ids are the log's 64-bit integers


def after_id(last_event_id: str | None, after: int | None) -> int:
    """Where a reader resumes: `?after=N`, else the `Last-Event-ID` header, else the start
    (an id the log cannot hold is read as the largest it can)."""
    if after is not None:
        return min(after, MAX_EVENT_ID)
    try:
        return min(max(int(last_event_id), 0), MAX_EVENT_ID) if last_event_id else 0
    except ValueError:
        return 0


def sse_fields(item: Event | Result, run: Run) -> dict[str, Any]:
    """The `event:` and `id:` of one item of a run's stream."""
    if isinstance(item, Event):
        return {"event": "event", "id": str(item.seq)}
    return {"event": "result", "id": str(run.result_id)}
