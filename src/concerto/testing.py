"""Test helpers shipped for users and plugin authors: a scripted LLM, a fake agent, a context,
one agent run as the executor runs it, and a guard against real LLM requests.

Like httpx's MockTransport, these let code that uses Concerto be tested without a
network or a model. In a conftest.py:

    @pytest.fixture(autouse=True)
    def _no_llm_requests():
        with block_llm_requests():
            yield
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult
from concerto.agents.task import TaskInput
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.llm import guard
from concerto.llm.base import LLMError, LLMResponse, Message
from concerto.resources import Resources
from concerto.settings import Settings

Script = str | BaseException | Callable[[list[Message]], str]


class ScriptedLLM:
    """An `LLMClient` that answers from a script, in order, and records every prompt.

    Each script item is the reply text, an exception to raise, or a function of the
    messages returning the text. When the script runs out, `LLMError` is raised.
    """

    def __init__(self, replies: Iterable[Script], model: str = "scripted") -> None:
        self.replies = list(replies)
        self.model = model
        self.calls: list[list[Message]] = []

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> LLMResponse:
        self.calls.append(messages)
        if not self.replies:
            raise LLMError("scripted LLM has no more replies", kind="unavailable")
        item = self.replies.pop(0)
        if isinstance(item, BaseException):
            raise item
        text = item(messages) if callable(item) else item
        return LLMResponse(
            text=text,
            model=self.model,
            prompt_tokens=sum(len(m.content) // 4 for m in messages),
            completion_tokens=len(text) // 4,
            finish_reason="stop",
        )


def fake_agent(
    name: str,
    *,
    output: dict[str, Any] | None = None,
    summary: str | None = None,
    delay_s: float = 0.0,
    fail: BaseException | None = None,
    description: str | None = None,
    examples: list[str] | None = None,
    on_run: Callable[[AgentContext, TaskInput], Any] | None = None,
    inputs: dict[str, str] | None = None,
) -> type[Agent]:
    """Build an agent class that waits `delay_s`, then raises `fail` or returns `output`.

    The class is not registered anywhere; pass it to an `AgentRegistry`. `inputs` is its
    declaration (`AgentInfo.inputs`): one with a `source` input is offered questions that name a
    source (agents without one are not, unless the question names something they hold).
    """

    class _Fake(Agent):
        info = AgentInfo(
            name=name,
            description=description or f"Test agent {name}",
            examples=examples or [],
            inputs=inputs or {},
            pack="testing",
        )

        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            if delay_s:
                await asyncio.sleep(delay_s)
            if on_run is not None:
                on_run(context, task)
            if fail is not None:
                raise fail
            return AgentResult(output=dict(output or {"agent": name}), summary=summary)

    _Fake.__name__ = _Fake.__qualname__ = f"Fake_{name}"
    return _Fake


def make_context(
    query: str = "test question",
    *,
    now: datetime | None = None,
    settings: Settings | None = None,
    resources: Resources | None = None,
    llm: Any = None,
    agent: str = "test",
) -> AgentContext:
    """An `AgentContext` for calling one agent's `run` directly in a test."""
    settings = settings or Settings()
    return AgentContext(
        query=OrchestratorInput(query=query),
        now=now or datetime.now(UTC),
        settings=settings,
        resources=resources or Resources(settings),
        llm=llm,
        agent=agent,
    )


async def run_agent(
    agent: Agent, context: AgentContext, question: str | None = None, *, inputs: dict[str, Any] | None = None
) -> AgentResult:
    """Answer `question` (the context's, when None) with one agent, as the executor does: the
    agent's `prepare` reads it into the task's inputs, unless `inputs` are given (then used as
    a plan task's `input_payload` is: over the question's parameters, `source` included)."""
    question = context.query.query if question is None else question
    if inputs is not None:
        return await agent.run(context, TaskInput.build(context.query, request=question, task_input=inputs))
    read = await agent.prepare(question, context)
    return await agent.run(context, TaskInput.build(context.query, request=question, prepared=read))


@contextmanager
def block_llm_requests(*allowed: str) -> Iterator[None]:
    """Refuse LLM requests to any endpoint but `allowed` (and those `allow_llm_endpoint` added).

    A refused request raises `LLMRequestBlocked` where it is made and, because the
    orchestrator may fall back gracefully on LLM errors, fails the block on exit too.
    """
    for url in allowed:
        guard.allow(url)
    before = len(guard.refused)
    previous = guard.set_blocking(True)
    try:
        yield
    finally:
        guard.set_blocking(previous)
        refused = guard.refused[before:]
        del guard.refused[before:]
    if refused:
        raise guard.LLMRequestBlocked(f"LLM requests to endpoints the test did not allow: {', '.join(refused)}")


def allow_llm_endpoint(base_url: str) -> None:
    """Allow LLM requests to `base_url` (a server the test suite started) while blocking."""
    guard.allow(base_url)


__all__ = [
    "AgentFailure",
    "ScriptedLLM",
    "allow_llm_endpoint",
    "block_llm_requests",
    "fake_agent",
    "make_context",
]
