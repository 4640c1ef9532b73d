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
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from concerto.agents.base import Agent, AgentContext, AgentResult
from concerto.cluster.tables import pack, unpack
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.resources import Resources
from concerto.settings import Settings

Item = tuple[Any, ...]
_DONE = object()


@dataclass(frozen=True)
class Earlier:
    """An earlier task's response sent by reference: the response without its output, and the
    object (in Ray's object store) holding the `("output", output)` item its worker yielded.
    A dependent's worker reads the output from the store; it does not travel in the call."""

    response: AgentDispatchResponse
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
        payload: dict[str, Any],
        query: OrchestratorInput,
        now: datetime,
        task_id: str,
        previous_results: list[AgentDispatchResponse | Earlier],
    ) -> AsyncGenerator[Item, None]:
        """Run the agent once; yield its events as they happen, then its output (an item of its
        own, which the driver keeps by reference for dependent tasks) and its result, or the
        exception it raised."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        earlier, payload, shipped = await _resolve(previous_results, payload)
        if shipped:
            yield ("event", EventType.THINKING, f"Read {shipped} earlier result(s) from the object store", {}, 4)

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
            previous_results=earlier,
            _emit=emit,
        )
        work = asyncio.ensure_future(self.agent.run(context, payload))
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
    """A Ray task's body (`remote: task`): a host for one call, driven on a loop of its own, its
    items yielded as they come (a Ray streaming generator).

    Ray cancels a running task by raising KeyboardInterrupt here; the step in flight is then
    cancelled on the loop, so the agent's `run` sees CancelledError as it would in process.
    """
    host = AgentHost(cls, settings)
    loop = asyncio.new_event_loop()
    stream = host.run(*args)

    async def step() -> Item:
        return await anext(stream)

    pending: asyncio.Task[Item] | None = None
    try:
        while True:
            pending = loop.create_task(step())
            try:
                yield loop.run_until_complete(pending)
            except StopAsyncIteration:
                return
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(pending)
        with contextlib.suppress(Exception):
            loop.run_until_complete(stream.aclose())
            loop.run_until_complete(host.aclose())
        loop.close()


async def _resolve(
    previous: list[AgentDispatchResponse | Earlier], payload: dict[str, Any]
) -> tuple[list[AgentDispatchResponse], dict[str, Any], int]:
    """The earlier results with their outputs read from the object store, in the context and in
    the payload's `previous_results`; and how many were read."""
    shipped = [p for p in previous if isinstance(p, Earlier)]
    if not shipped:
        return [p for p in previous if isinstance(p, AgentDispatchResponse)], payload, 0
    items = await asyncio.gather(*(p.output for p in shipped))
    outputs = {p.response.task_id: unpack(item[1]) for p, item in zip(shipped, items, strict=True)}
    earlier = [
        p.response.model_copy(update={"output": outputs[p.response.task_id]}) if isinstance(p, Earlier) else p
        for p in previous
    ]
    if isinstance(payload.get("previous_results"), list):
        filled = [
            {**p, "result": outputs[p["task_id"]]} if isinstance(p, dict) and p.get("task_id") in outputs else p
            for p in payload["previous_results"]
        ]
        payload = {**payload, "previous_results": filled}
    return earlier, payload, len(shipped)


def _sendable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling (so the driver re-raises the same type),
    else a RuntimeError with its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
