"""The worker side of the Ray executor: one agent instance answering tasks, its events streamed
back as they happen.

`AgentHost` holds an agent built from the driver's settings, with resources and an LLM client
of its own (a worker shares nothing with the driver's process). `run` is an async generator:
it yields `("event", type, title, details, step)` while the agent works, then `("output",
output)` (its tables as Arrow, `tables.pack`) and `("result", AgentResult)`, or `("raise",
exception)`: the agent's own exception, so the driver's executor reports it exactly as it
does in process. Ray turns the generator into a stream of objects (`num_returns="streaming"`),
so events reach the driver while the task runs; cancelling the
stream cancels the agent's `run`.

As an actor (`remote: actor`) the host lives across questions, keeping the agent's state
(models, connections); as a task (`remote: task`) `run_task` builds one for a single call.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import queue
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from concerto.agents.base import Agent, AgentContext, AgentResult
from concerto.agents.task import TaskInput
from concerto.cluster.tables import pack, unpack
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.resources import Resources
from concerto.settings import Settings

Item = tuple[Any, ...]
_DONE = object()
WAKE_S = 0.1  # a task's main thread returns to Python at least this often (Ray's cancel is an interrupt)
STOP_S = 10.0  # how long a cancelled task waits for its agent to finish cleaning up


@dataclass(frozen=True)
class Earlier:
    """Where an earlier task's output is, when it is sent by reference: the object (in Ray's
    object store) holding the `("output", output)` item its worker yielded. The task's
    `previous` entry travels without its `result`; the dependent's worker reads it from the
    store, so the output does not travel in the call."""

    task_id: str
    output: Any  # ray.ObjectRef


class AgentHost:
    """One agent instance on a worker (a Ray actor's body, or a task's for one call)."""

    def __init__(self, cls: type[Agent], settings: Settings) -> None:
        from concerto.llm.openai_compat import llm_from_settings

        self.settings = settings
        self.resources = Resources(settings)
        self.llm = llm_from_settings(settings)
        self.agent = cls(settings, self.resources)

    async def run(
        self,
        task: TaskInput,
        query: OrchestratorInput,
        now: datetime,
        task_id: str,
        earlier: list[Earlier],
    ) -> AsyncGenerator[Item, None]:
        """Run the agent once; yield its events as they happen, then its output (an item of its
        own, which the driver keeps by reference for dependent tasks) and its result, or the
        exception it raised."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        if earlier:
            task = await _resolve(task, earlier)
            yield ("event", EventType.THINKING, f"Read {len(earlier)} earlier result(s) from the object store", {}, 4)

        async def emit(
            type: EventType, title: str, details: dict[str, Any], step: int, agent: str, task_id: str
        ) -> None:
            queue.put_nowait(("event", type, title, details, step))

        context = AgentContext(
            query=query,
            now=now,
            settings=self.settings,
            resources=self.resources,
            llm=self.llm,
            task_id=task_id,
            agent=self.agent.info.name,
            _emit=emit,
        )
        work = asyncio.ensure_future(self.agent.run(context, task))
        work.add_done_callback(lambda _: queue.put_nowait(_DONE))
        try:
            while (item := await queue.get()) is not _DONE:
                yield item
            while not queue.empty():  # events emitted in the agent's last step
                if (item := queue.get_nowait()) is not _DONE:
                    yield item
            exc = work.exception()
            if exc is not None:
                yield ("raise", _sendable(exc))
                return
            result = work.result()
            if isinstance(result, AgentResult):
                yield ("output", pack(result.output))
                result = result.model_copy(update={"output": {}})
            yield ("result", result)
        finally:
            if not work.done():  # the stream was cancelled (the task's timeout, the deadline)
                work.cancel()
                with contextlib.suppress(BaseException):
                    await work

    async def aclose(self) -> None:
        await self.agent.aclose()
        await self.resources.aclose()


def run_task(cls: type[Agent], settings: Settings, *args: Any) -> Iterator[Item]:
    """A Ray task's body (`remote: task`): a host for one call, its items yielded as they come
    (a Ray streaming generator).

    The agent runs on the worker's event loop, in a thread of its own; this (main) thread waits
    for its items in steps of `WAKE_S`, and between two steps asks Ray whether the task was
    cancelled (`is_canceled`). Ray also interrupts the main thread (KeyboardInterrupt), but only when
    the interrupt reaches it: in the full test suite a reused worker was seen to let the agent
    sleep on after "Cancelling a running task", while the flag was set. Either way the
    cancellation lands here, never inside the agent's code, and becomes a cancellation of the
    agent's run on its loop: the agent sees CancelledError, as it would in process, and this
    returns once the agent has finished cleaning up (at most `STOP_S`).
    """
    import ray

    cancelled = ray.get_runtime_context().is_canceled
    host = AgentHost(cls, settings)  # here: a constructor that fails fails the task, as Ray reports it
    items: queue.SimpleQueue[Any] = queue.SimpleQueue()

    async def drive() -> None:
        try:
            async for item in host.run(*args):
                items.put(item)
        finally:  # also when cancelled: the agent's run was stopped inside `host.run`
            try:
                await host.aclose()
            finally:
                items.put(_DONE)

    running = asyncio.run_coroutine_threadsafe(drive(), _agent_loop())
    finished = False
    try:
        while (item := _next(items, cancelled)) is not _DONE:
            yield item
        finished = True
        running.result(STOP_S)  # the host's own failure (the agent's is an item)
    finally:
        if not finished:  # cancelled (Ray's interrupt), or the stream closed early
            running.cancel()
            deadline = time.monotonic() + STOP_S
            while time.monotonic() < deadline:
                with contextlib.suppress(queue.Empty):
                    if items.get(timeout=WAKE_S) is _DONE:
                        break


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _agent_loop() -> asyncio.AbstractEventLoop:
    """The worker process's loop for agents' runs, in a thread of its own, made on first use and
    kept (a worker runs one task at a time; a new thread and loop per task cost 0.5 ms)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="agent-loop", daemon=True).start()
        return _loop


def _next(items: queue.SimpleQueue[Any], cancelled: Callable[[], bool]) -> Any:
    """The next item, waiting in steps of `WAKE_S`; KeyboardInterrupt (as Ray's own interrupt)
    once the task is cancelled."""
    while True:
        with contextlib.suppress(queue.Empty):
            return items.get(timeout=WAKE_S)
        if cancelled():
            raise KeyboardInterrupt("the Ray task was cancelled")


async def _resolve(task: TaskInput, earlier: list[Earlier]) -> TaskInput:
    """`task` with the results of its earlier tasks that were sent by reference read from the
    object store."""
    items = await asyncio.gather(*(e.output for e in earlier))
    outputs = {e.task_id: unpack(item[1]) for e, item in zip(earlier, items, strict=True)}
    previous = [
        p.model_copy(update={"result": outputs[p.task_id]}) if p.task_id in outputs else p for p in task.previous
    ]
    return task.model_copy(update={"previous": previous})


def _sendable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling (so the driver re-raises the same type),
    else a RuntimeError with its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
