"""Planner: a classification becomes a validated `OrchestrationPlan`.

From the intent table when the classification names an intent, one task per chosen
agent otherwise, or a plan written by the LLM (when configured and several agents are
involved). Every plan is validated: known agents only, no cycles, timeouts in bounds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from pydantic import BaseModel, Field

from concerto.agents.base import AgentInfo
from concerto.contracts.dispatch import MAX_TIMEOUT_MS, MIN_TIMEOUT_MS
from concerto.contracts.plan import AgentTask, ExecutionStrategy, OrchestrationPlan
from concerto.llm.base import LLMClient, LLMError, Message, Usage
from concerto.orchestrator.intents import IntentSpec
from concerto.orchestrator.router import RouteDecision
from concerto.orchestrator.timeouts import Timeouts


class PlanError(ValueError):
    """A plan that cannot run: unknown agent, cycle, bad dependency or timeout."""


class LLMTask(BaseModel):
    task_id: str
    agent: str
    request: str = Field("", description="What this agent should answer")
    depends_on: list[str] = []


class LLMPlan(BaseModel):
    """The plan shape the LLM writes (002_*.txt OrchestrationPlan)."""

    strategy: ExecutionStrategy = ExecutionStrategy.PARALLEL
    reasoning: str
    tasks: list[LLMTask] = Field(..., min_length=1)


def validate_plan(plan: OrchestrationPlan, known: set[str]) -> None:
    """Raise `PlanError` naming the first problem found."""
    if not plan.tasks:
        raise PlanError("the plan has no tasks")
    ids = [t.task_id for t in plan.tasks]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise PlanError(f"duplicate task ids: {', '.join(sorted(duplicates))}")
    for task in plan.tasks:
        for name in filter(None, (task.agent, task.fallback_agent)):
            if name not in known:
                raise PlanError(
                    f"task {task.task_id} names an unknown agent '{name}'; known agents: {', '.join(sorted(known))}"
                )
        missing = [d for d in task.depends_on if d not in ids]
        if missing:
            raise PlanError(f"task {task.task_id} depends on unknown task(s) {', '.join(missing)}")
        if not MIN_TIMEOUT_MS <= task.timeout_ms <= MAX_TIMEOUT_MS:
            raise PlanError(
                f"task {task.task_id} has a timeout of {task.timeout_ms} ms; allowed {MIN_TIMEOUT_MS}..{MAX_TIMEOUT_MS}"
            )
    cycle = _find_cycle({t.task_id: t.depends_on for t in plan.tasks})
    if cycle:
        raise PlanError(f"the plan has a dependency cycle: {' -> '.join(cycle)}")


def _find_cycle(graph: Mapping[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in graph:
        if node not in state and (found := visit(node)):
            return found
    return None


class Planner:
    """Builds plans for routed questions."""

    def __init__(
        self,
        infos: Mapping[str, AgentInfo],
        intents: Mapping[str, IntentSpec],
        *,
        llm: LLMClient | None = None,
        llm_retries: int = 1,
        default_timeout_ms: int = 30000,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.infos = infos
        self.intents = intents
        self.llm = llm
        self.llm_retries = llm_retries
        self.timeouts = timeouts or Timeouts(default_ms=default_timeout_ms)

    async def plan(
        self, question: str, decision: RouteDecision, query_id: str = "", usage: Usage | None = None
    ) -> tuple[OrchestrationPlan, list[str]]:
        """The validated plan and notes on what was fallen back on."""
        notes: list[str] = []
        cls = decision.classification
        plan: OrchestrationPlan | None = None
        if self.llm is not None and len(cls.agents) > 1 and cls.primary_intent not in self.intents:
            try:
                plan = await self._llm_plan(question, cls.agents, usage)
                validate_plan(plan, set(self.infos))
            except (LLMError, PlanError) as exc:
                notes.append(f"LLM plan rejected ({exc}); used the deterministic plan")
                plan = None
        if plan is None:
            plan = self._deterministic(question, decision)
        plan.query_id = query_id
        caps = [self.infos[t.agent].max_concurrency for t in plan.tasks if t.agent in self.infos]
        plan.max_concurrency = min((c for c in caps if c), default=None)
        validate_plan(plan, set(self.infos))
        return plan, notes

    def _deterministic(self, question: str, decision: RouteDecision) -> OrchestrationPlan:
        cls = decision.classification
        spec = self.intents.get(cls.primary_intent)
        if spec is not None:
            tasks = spec.to_tasks(question)
            for task, request in zip(tasks, spec.tasks, strict=True):
                table = request.timeout_ms if "timeout_ms" in request.model_fields_set else None
                task.timeout_ms = self._timeout(task.agent, table)
            extra = [a for a in cls.agents if a not in spec.agents]
            tasks += [self._task(a, question, i + len(tasks)) for i, a in enumerate(extra)]
            return OrchestrationPlan(
                intent=spec.name, tasks=tasks, source="table", reasoning=f"intent '{spec.name}' from the intent table"
            )
        if decision.steps:
            tasks = [self._task(a, step, i) for i, (a, step) in enumerate(decision.steps)]
            for before, task in itertools.pairwise(tasks):
                task.depends_on = [before.task_id]
            return OrchestrationPlan(
                intent=cls.primary_intent,
                tasks=tasks,
                strategy=ExecutionStrategy.SEQUENTIAL,
                reasoning=" then ".join(t.agent for t in tasks) + ": each step works on the result of the one before",
                source="default",
            )
        tasks = [self._task(a, question, i) for i, a in enumerate(cls.agents)]
        reasoning = (
            f"{tasks[0].agent} answers the question"
            if len(tasks) == 1
            else f"{', '.join(t.agent for t in tasks)} answer independent parts, so they run in parallel"
        )
        return OrchestrationPlan(intent=cls.primary_intent, tasks=tasks, reasoning=reasoning, source="default")

    def _timeout(self, agent: str, table: int | None = None) -> int:
        """The task timeout of `agent` (`timeouts.py`): the user's setting for it, else the
        intent table's, the agent's own or the default, raised to the configured minimum."""
        info = self.infos.get(agent)
        return self.timeouts.of(agent, table or (info.default_timeout_ms if info else None))

    def _task(self, agent: str, question: str, index: int) -> AgentTask:
        return AgentTask(
            task_id=f"t{index + 1}-{agent}", agent=agent, request=question, timeout_ms=self._timeout(agent), priority=5
        )

    async def _llm_plan(self, question: str, agents: list[str], usage: Usage | None) -> OrchestrationPlan:
        from concerto.llm.structured import complete_structured

        assert self.llm is not None
        catalogue = [{"name": a, "description": self.infos[a].description} for a in agents if a in self.infos]
        messages = [
            Message(
                role="system",
                content=(
                    "Plan how agents answer a question. Use only these agents: "
                    f"{catalogue}. Give each task an id, the agent, the part of the question it answers, "
                    "and depends_on with the ids of tasks whose results it needs (empty when independent). "
                    "Say why in 'reasoning'. Answer with JSON only."
                ),
            ),
            Message(role="user", content=question),
        ]
        written = await complete_structured(
            self.llm, messages, LLMPlan, retries=self.llm_retries, usage=usage, purpose="plan"
        )
        assert isinstance(written, LLMPlan)
        tasks = [
            AgentTask(
                task_id=t.task_id,
                agent=t.agent,
                request=t.request or question,
                depends_on=t.depends_on,
                timeout_ms=self._timeout(t.agent),
            )
            for t in written.tasks
        ]
        return OrchestrationPlan(
            tasks=tasks, strategy=written.strategy, reasoning=written.reasoning, source="llm", intent="+".join(agents)
        )
