"""Executor: dependency graph without supersteps, timeouts, fallbacks, deadline, concurrency cap."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from concerto.agents.base import AgentContext, AgentFailure
from concerto.agents.registry import AgentRegistry
from concerto.contracts.common import ErrorKind, ExecutionStatus
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.contracts.plan import AgentTask, OrchestrationPlan
from concerto.orchestrator.events import EventStream
from concerto.orchestrator.executor import Executor
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import fake_agent

UNIT = 0.05  # seconds; scheduling tests compare orders and ratios, never absolute speed


class Clocked:
    """Records when each agent started and finished, relative to the run's start."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.starts: dict[str, float] = {}
        self.ends: dict[str, float] = {}
        self.running = 0
        self.peak = 0

    def agent(self, name: str, delay: float, fail: BaseException | None = None):  # type: ignore[no-untyped-def]
        clock = self

        class _A(fake_agent(name)):  # type: ignore[misc, valid-type]
            async def run(self, context: AgentContext, payload):  # type: ignore[no-untyped-def]
                clock.starts[name] = time.perf_counter() - clock.t0
                clock.running += 1
                clock.peak = max(clock.peak, clock.running)
                try:
                    await asyncio.sleep(delay)
                    if fail is not None:
                        raise fail
                    return await super().run(context, payload)
                finally:
                    clock.running -= 1
                    clock.ends[name] = time.perf_counter() - clock.t0

        return _A


def context_factory(settings: Settings, resources: Resources, query: OrchestratorInput | None = None):  # type: ignore[no-untyped-def]
    """The executor's `make_context` for a fixed question."""

    def make_context(task, agent, deps):  # type: ignore[no-untyped-def]
        return AgentContext(
            query=query or OrchestratorInput(query="q"),
            now=datetime.now(UTC),
            settings=settings,
            resources=resources,
            task_id=task.task_id,
            agent=agent,
            previous_results=deps,
        )

    return make_context


def run(plan: OrchestrationPlan, registry: AgentRegistry, **kw):  # type: ignore[no-untyped-def]
    settings = Settings()
    resources = Resources(settings)
    instances = {n: registry.get(n)(settings, resources) for n in registry.names()}

    make_context = context_factory(settings, resources, kw.pop("query", None))

    events = EventStream("q")
    executor = Executor(instances.__getitem__, kw.pop("cap", 8))
    return asyncio.run(executor.execute(plan, make_context, events, **kw)), events


def task(tid: str, agent: str, deps: tuple[str, ...] = (), **kw) -> AgentTask:  # type: ignore[no-untyped-def]
    return AgentTask(task_id=tid, agent=agent, depends_on=list(deps), **kw)


def test_no_supersteps_join_starts_when_its_own_dependencies_finish() -> None:
    # A→B (5u) and A→C (2u)→D (2u), then B,D→E: E starts after 5u, not 7u.
    c = Clocked()
    reg = AgentRegistry(
        [c.agent("a", 0), c.agent("b", 5 * UNIT), c.agent("c", 2 * UNIT), c.agent("d", 2 * UNIT), c.agent("e", 0)]
    )
    plan = OrchestrationPlan(
        tasks=[
            task("A", "a"),
            task("B", "b", ("A",)),
            task("C", "c", ("A",)),
            task("D", "d", ("C",)),
            task("E", "e", ("B", "D")),
        ]
    )
    results, _ = run(plan, reg)
    assert all(r.status is ExecutionStatus.COMPLETED for r in results)
    assert c.starts["e"] >= c.ends["b"] and c.starts["e"] >= c.ends["d"]
    assert c.starts["e"] < 6.5 * UNIT  # superstep scheduling would give ~7u
    assert c.starts["d"] >= c.ends["c"]


def test_independent_tasks_overlap() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent(n, 2 * UNIT) for n in "xyz"])
    run(OrchestrationPlan(tasks=[task(n.upper(), n) for n in "xyz"]), reg)
    assert c.peak == 3
    assert max(c.ends.values()) < 2 * 2 * UNIT


def test_concurrency_cap_admits_by_priority() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent(n, UNIT) for n in "pqrs"])
    plan = OrchestrationPlan(
        tasks=[
            task("P", "p", priority=9),
            task("Q", "q", priority=9),
            task("R", "r", priority=5),
            task("S", "s", priority=1),
        ]
    )
    run(plan, reg, cap=2)
    assert c.peak == 2
    # p and q took the two slots first; of the waiting ones, s (priority 1) goes before r (5)
    assert c.starts["s"] <= c.starts["r"]


def test_timeout_without_fallback_reports_error_and_others_answer() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent("slow", 10), c.agent("fast", 0)])
    plan = OrchestrationPlan(tasks=[task("S", "slow", timeout_ms=50), task("F", "fast")])
    results, events = run(plan, reg)
    slow, fast = results
    assert slow.status is ExecutionStatus.TIMEOUT
    assert slow.errors[0].kind is ErrorKind.TIMEOUT and "50 ms" in slow.errors[0].message
    assert fast.status is ExecutionStatus.COMPLETED
    assert any(e.type.value == "ERROR" for e in events.events)


def test_fallback_runs_on_timeout() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent("slow", 10), c.agent("backup", 0)])
    plan = OrchestrationPlan(tasks=[task("S", "slow", timeout_ms=50, fallback_agent="backup")])
    (r,), _ = run(plan, reg)
    assert r.status is ExecutionStatus.COMPLETED and r.used_fallback and r.agent == "backup"
    assert "slow failed (timeout)" in (r.fallback_reason or "")
    assert r.errors[0].agent == "slow"


def test_fallback_only_on_listed_kinds() -> None:
    c = Clocked()
    boom = AgentFailure("bad input", kind=ErrorKind.VALIDATION, error_type="invalid_input")
    reg = AgentRegistry([c.agent("picky", 0, fail=boom), c.agent("backup", 0)])
    plan = OrchestrationPlan(tasks=[task("P", "picky", fallback_agent="backup")])  # default: timeout, error
    (r,), _ = run(plan, reg)
    assert r.status is ExecutionStatus.FAILED and not r.used_fallback
    assert r.errors[0].error_type == "invalid_input"


def test_agent_that_raises_is_contained() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent("buggy", 0, fail=ZeroDivisionError("division by zero")), c.agent("ok", 0)])
    results, _ = run(OrchestrationPlan(tasks=[task("B", "buggy"), task("O", "ok")]), reg)
    assert results[0].status is ExecutionStatus.FAILED
    assert "ZeroDivisionError" in results[0].errors[0].message
    assert results[1].status is ExecutionStatus.COMPLETED


def test_dependents_of_a_failed_task_are_skipped() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent("a", 0, fail=RuntimeError("x")), c.agent("b", 0), c.agent("c", 0)])
    plan = OrchestrationPlan(tasks=[task("A", "a"), task("B", "b", ("A",)), task("C", "c")])
    results, _ = run(plan, reg)
    assert [r.status for r in results] == [ExecutionStatus.FAILED, ExecutionStatus.SKIPPED, ExecutionStatus.COMPLETED]
    assert "depends on a" in results[1].errors[0].message


def test_deadline_cancels_and_returns_partial_results() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent("quick", 0), c.agent("slow", 10), c.agent("after", 0)])
    plan = OrchestrationPlan(tasks=[task("Q", "quick"), task("S", "slow"), task("A", "after", ("S",))])
    results, _ = run(plan, reg, deadline_ms=100)
    assert results[0].status is ExecutionStatus.COMPLETED
    assert results[1].status is ExecutionStatus.CANCELLED and results[2].status is ExecutionStatus.CANCELLED
    assert "deadline of 100 ms" in results[1].errors[0].message


def test_previous_results_reach_dependents() -> None:
    seen: dict[str, object] = {}
    first = fake_agent("first", output={"value": 42}, summary="forty-two")
    second = fake_agent(
        "second",
        on_run=lambda ctx, payload: seen.update(
            ctx=[r.agent for r in ctx.previous_results], payload=payload["previous_results"]
        ),
    )
    plan = OrchestrationPlan(tasks=[task("F", "first", request="what is the answer?"), task("S", "second", ("F",))])
    results, _ = run(plan, AgentRegistry([first, second]))
    assert seen["ctx"] == ["first"]
    assert seen["payload"] == [  # 004's shape: agent, task (what it was asked), result; and ours
        {
            "agent": "first",
            "task": "what is the answer?",
            "task_id": "F",
            "summary": "forty-two",
            "result": {"value": 42},
            "key_findings": [],
        }
    ]
    assert results[1].status is ExecutionStatus.COMPLETED


def test_question_parameters_reach_every_payload_and_entities_come_back() -> None:
    seen: list[dict[str, object]] = []

    class Reporting(fake_agent("reporting")):  # type: ignore[misc, valid-type]
        async def run(self, context, payload):  # type: ignore[no-untyped-def]
            seen.append(payload)
            result = await super().run(context, payload)
            result.entities = {"who": "reporting"}
            return result

    query = OrchestratorInput(
        query="q", source="sales", data_source_id="ds-1", context="Q3", parameters={"treatment": "samples"}
    )
    plan = OrchestrationPlan(tasks=[task("A", "reporting", input_payload={"analysis_type": "effect", "source": "x"})])
    results, _ = run(plan, AgentRegistry([Reporting]), query=query)
    assert seen == [
        {
            "request": "q",
            "treatment": "samples",
            "data_source_id": "ds-1",
            "context": "Q3",
            "source": "x",  # the intent table's input_payload is the task's configuration: it wins
            "analysis_type": "effect",
        }
    ]
    assert results[0].entities == {"who": "reporting"}


@pytest.mark.parametrize("n", [1, 3])
def test_timing_fields_are_consistent(n: int) -> None:
    reg = AgentRegistry([fake_agent(f"a{i}", delay_s=0.01) for i in range(n)])
    results, _ = run(OrchestrationPlan(tasks=[task(f"T{i}", f"a{i}") for i in range(n)]), reg)
    for r in results:
        assert r.execution_latency_ms >= 5
        assert r.total_latency_ms >= r.execution_latency_ms
        assert abs(r.total_latency_ms - r.execution_latency_ms - r.dispatch_latency_ms) < 1


def test_a_crash_inside_the_executor_is_reported_not_hung() -> None:
    """An agent returning something that breaks the response contract fails its task only."""

    class Broken(fake_agent("broken")):  # type: ignore[misc, valid-type]
        async def run(self, context, payload):  # type: ignore[no-untyped-def]
            return "not an AgentResult"

    reg = AgentRegistry([Broken, fake_agent("fine")])
    results, _ = run(OrchestrationPlan(tasks=[task("B", "broken"), task("F", "fine")]), reg)
    assert results[0].status is ExecutionStatus.FAILED and "internal error" in results[0].errors[0].message
    assert results[1].status is ExecutionStatus.COMPLETED


def test_cancelling_the_caller_cancels_running_agents() -> None:
    c = Clocked()
    reg = AgentRegistry([c.agent("slow", 10)])
    settings = Settings()
    resources = Resources(settings)
    instances = {"slow": reg.get("slow")(settings, resources)}

    make_context = context_factory(settings, resources)

    async def main() -> int:
        executor = Executor(instances.__getitem__)
        caller = asyncio.create_task(
            executor.execute(OrchestrationPlan(tasks=[task("S", "slow")]), make_context, EventStream("q"))
        )
        await asyncio.sleep(0.05)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        await asyncio.sleep(0.01)
        return c.running

    assert asyncio.run(main()) == 0
