"""One plan run through `Executor.execute` as the orchestrator runs it, for the benchmarks that
time the executor alone (bench_engine.py, bench_ray.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from concerto.agents.base import AgentContext
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.contracts.plan import AgentTask, OrchestrationPlan
from concerto.orchestrator.events import EventStream
from concerto.orchestrator.executor import Executor
from concerto.resources import Resources
from concerto.settings import Settings


def executing(
    executor: Executor,
    plan: OrchestrationPlan,
    query: OrchestratorInput,
    settings: Settings,
    resources: Resources,
    now: datetime,
) -> Callable[[], Awaitable[list[AgentDispatchResponse]]]:
    """A call that runs `plan` once, with a fresh event stream (one per question) and contexts
    built as the orchestrator builds them; it returns the dispatch responses."""

    async def run() -> list[AgentDispatchResponse]:
        events = EventStream(query.query_id)

        def make_context(task: AgentTask, agent: str) -> AgentContext:
            return AgentContext(
                query=query,
                now=now,
                settings=settings,
                resources=resources,
                task_id=task.task_id,
                agent=agent,
                _emit=events.agent_emit,
            )

        results: list[AgentDispatchResponse] = await executor.execute(plan, make_context, events)
        return results

    return run
