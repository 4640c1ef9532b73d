"""Executor: dependency graph without supersteps, timeouts, fallbacks, deadline, concurrency cap.

The whole suite runs on both backends: in process, and with every agent's `run` shipped to a
local Ray cluster as a Ray task (`CONCERTO_EXECUTOR=ray`). What an agent observes comes back
in its output (wall-clock times, what it was given), never through shared memory, so the
same assertions hold wherever the agent ran. Each backend runs on both event loops: asyncio's
and uvloop (what `concerto serve` runs on), whose timers and clock differ in rounding.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentResult
from concerto.agents.registry import AgentRegistry
from concerto.agents.task import TaskInput
from concerto.contracts.common import ErrorKind, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.contracts.plan import AgentTask, OrchestrationPlan
from concerto.orchestrator.events import EventStream
from concerto.orchestrator.executor import Executor, Runner
from concerto.orchestrator.timeouts import Timeouts
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import fake_agent


@dataclass(frozen=True)
class Backend:
    """Where agents run (`local` or `ray`) and on which event loop the executor runs."""

    where: str
    loop: str

    def run(self, main: Coroutine[Any, Any, Any]) -> Any:
        """`asyncio.run` on this backend's event loop."""
        factory = importlib.import_module("uvloop").new_event_loop if self.loop == "uvloop" else None
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(main)


NO_UVLOOP = pytest.mark.skipif(
    importlib.util.find_spec("uvloop") is None,
    reason="uvloop is not installed (the dev extra leaves it out on Windows)",
)


@pytest.fixture(
    params=[
        pytest.param(Backend(where, loop), marks=[NO_UVLOOP] if loop == "uvloop" else [], id=f"{where}-{loop}")
        for where in ("local", "ray")
        for loop in ("asyncio", "uvloop")
    ],
)
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param.where == "ray":
        request.getfixturevalue("ray_cluster")
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def unit(backend: Backend) -> float:
    """Seconds; scheduling tests compare orders and ratios, never absolute speed. Wider on Ray,
    where each task also crosses processes (a few ms)."""
    return 0.05 if backend.where == "local" else 0.15


def runner_for(backend: Backend, settings: Settings) -> Runner | None:
    if backend.where == "local":
        return None
    from concerto.cluster.ray_runner import RayRunner

    return RayRunner(settings, placement=lambda info: "task")


def timed(name: str, delay: float, fail: BaseException | None = None) -> type[Agent]:
    """An agent that sleeps `delay` s, then raises `fail` or returns when it ran (wall clock)."""

    class Timed(fake_agent(name)):  # type: ignore[misc, valid-type]
        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            start = time.time()
            await asyncio.sleep(delay)
            if fail is not None:
                raise fail
            return AgentResult(output={"start": start, "end": time.time()})

    return Timed


class Run:
    """One plan executed: the responses, the events, and when each agent ran (from t0)."""

    def __init__(self, results: list[AgentDispatchResponse], events: EventStream, t0: float) -> None:
        self.results, self.events = results, events
        done = [r for r in results if "start" in r.output]
        self.starts = {r.agent: r.output["start"] - t0 for r in done}
        self.ends = {r.agent: r.output["end"] - t0 for r in done}

    @property
    def peak(self) -> int:
        """The most agents running at once."""
        edges = sorted([(s, 1) for s in self.starts.values()] + [(e, -1) for e in self.ends.values()])
        running = peak = 0
        for _, step in edges:
            running += step
            peak = max(peak, running)
        return peak


def context_factory(settings: Settings, resources: Resources, query: OrchestratorInput | None = None):  # type: ignore[no-untyped-def]
    """The executor's `make_context` for a fixed question."""

    def make_context(task, agent):  # type: ignore[no-untyped-def]
        return AgentContext(
            query=query or OrchestratorInput(query="q"),
            now=datetime.now(UTC),
            settings=settings,
            resources=resources,
            task_id=task.task_id,
            agent=agent,
        )

    return make_context


def run(backend: Backend, plan: OrchestrationPlan, registry: AgentRegistry, **kw: Any) -> Run:
    settings = Settings()
    resources = Resources(settings)
    instances = {n: registry.get(n)(settings, resources) for n in registry.names()}
    make_context = context_factory(settings, resources, kw.pop("query", None))
    events = EventStream("q")
    runner = runner_for(backend, settings)
    executor = Executor(instances.__getitem__, kw.pop("cap", 8), runner=runner, timeouts=kw.pop("timeouts", None))
    t0 = time.time()
    # bounded: a plan that never ends fails its test instead of hanging the suite
    results = backend.run(asyncio.wait_for(executor.execute(plan, make_context, events, **kw), 60))
    return Run(results, events, t0)


def task(tid: str, agent: str, deps: tuple[str, ...] = (), **kw: Any) -> AgentTask:
    return AgentTask(task_id=tid, agent=agent, depends_on=list(deps), **kw)


def test_no_supersteps_join_starts_when_its_own_dependencies_finish(backend: Backend, unit: float) -> None:
    # A→B (5u) and A→C (2u)→D (2u), then B,D→E: E starts after 5u, not 7u.
    reg = AgentRegistry(
        [timed("a", 0), timed("b", 5 * unit), timed("c", 2 * unit), timed("d", 2 * unit), timed("e", 0)]
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
    r = run(backend, plan, reg)
    assert all(x.status is ExecutionStatus.COMPLETED for x in r.results)
    assert r.starts["e"] >= r.ends["b"] and r.starts["e"] >= r.ends["d"]
    assert r.starts["e"] - r.ends["b"] < 1.5 * unit  # superstep scheduling would wait for d's superstep
    assert r.starts["d"] >= r.ends["c"]


def test_independent_tasks_overlap(backend: Backend, unit: float) -> None:
    reg = AgentRegistry([timed(n, 2 * unit) for n in "xyz"])
    r = run(backend, OrchestrationPlan(tasks=[task(n.upper(), n) for n in "xyz"]), reg)
    assert r.peak == 3
    assert max(r.ends.values()) - min(r.starts.values()) < 2 * 2 * unit


def test_concurrency_cap_admits_by_priority(backend: Backend, unit: float) -> None:
    # p frees its slot well before q, so exactly one waiting task is admitted then: s (priority 1)
    reg = AgentRegistry([timed("p", unit), timed("q", 3 * unit), timed("r", unit), timed("s", unit)])
    plan = OrchestrationPlan(
        tasks=[
            task("P", "p", priority=9),
            task("Q", "q", priority=9),
            task("R", "r", priority=5),
            task("S", "s", priority=1),
        ]
    )
    r = run(backend, plan, reg, cap=2)
    assert r.peak == 2
    # p and q took the two slots first; of the waiting ones, s (priority 1) goes before r (5)
    assert r.starts["s"] < r.starts["r"]
    assert r.starts["s"] >= r.ends["p"] and r.starts["r"] >= r.ends["s"] - 0.5 * unit


def test_timeout_without_fallback_reports_error_and_others_answer(backend: Backend) -> None:
    reg = AgentRegistry([timed("slow", 10), timed("fast", 0)])
    plan = OrchestrationPlan(tasks=[task("S", "slow", timeout_ms=300), task("F", "fast")])
    r = run(backend, plan, reg)
    slow, fast = r.results
    assert slow.status is ExecutionStatus.TIMEOUT
    assert slow.errors[0].kind is ErrorKind.TIMEOUT and "300 ms" in slow.errors[0].message
    assert fast.status is ExecutionStatus.COMPLETED
    assert any(e.type.value == "ERROR" for e in r.events.events)


def test_fallback_runs_on_timeout(backend: Backend) -> None:
    reg = AgentRegistry([timed("slow", 10), timed("backup", 0)])
    plan = OrchestrationPlan(tasks=[task("S", "slow", timeout_ms=300, fallback_agent="backup")])
    (x,) = run(backend, plan, reg).results
    assert x.status is ExecutionStatus.COMPLETED and x.used_fallback and x.agent == "backup"
    assert "slow failed (timeout)" in (x.fallback_reason or "")
    assert x.errors[0].agent == "slow"


def test_fallback_only_on_listed_kinds(backend: Backend) -> None:
    boom = AgentFailure("bad input", kind=ErrorKind.VALIDATION, error_type="invalid_input")
    reg = AgentRegistry([timed("picky", 0, fail=boom), timed("backup", 0)])
    plan = OrchestrationPlan(tasks=[task("P", "picky", fallback_agent="backup")])  # default: timeout, error
    (x,) = run(backend, plan, reg).results
    assert x.status is ExecutionStatus.FAILED and not x.used_fallback
    assert x.errors[0].error_type == "invalid_input" and x.errors[0].message == "bad input"


def test_agent_that_raises_is_contained(backend: Backend) -> None:
    reg = AgentRegistry([timed("buggy", 0, fail=ZeroDivisionError("division by zero")), timed("ok", 0)])
    r = run(backend, OrchestrationPlan(tasks=[task("B", "buggy"), task("O", "ok")]), reg)
    assert r.results[0].status is ExecutionStatus.FAILED
    assert "ZeroDivisionError: division by zero" in r.results[0].errors[0].message
    assert r.results[1].status is ExecutionStatus.COMPLETED


def test_dependents_of_a_failed_task_are_skipped(backend: Backend) -> None:
    reg = AgentRegistry([timed("a", 0, fail=RuntimeError("x")), timed("b", 0), timed("c", 0)])
    plan = OrchestrationPlan(tasks=[task("A", "a"), task("B", "b", ("A",)), task("C", "c")])
    r = run(backend, plan, reg)
    assert [x.status for x in r.results] == [
        ExecutionStatus.FAILED,
        ExecutionStatus.SKIPPED,
        ExecutionStatus.COMPLETED,
    ]
    assert "depends on a" in r.results[1].errors[0].message


def test_deadline_cancels_and_returns_partial_results(backend: Backend) -> None:
    reg = AgentRegistry([timed("quick", 0), timed("slow", 10), timed("after", 0)])
    plan = OrchestrationPlan(tasks=[task("Q", "quick"), task("S", "slow"), task("A", "after", ("S",))])
    r = run(backend, plan, reg, deadline_ms=1000)
    assert r.results[0].status is ExecutionStatus.COMPLETED
    assert r.results[1].status is ExecutionStatus.CANCELLED and r.results[2].status is ExecutionStatus.CANCELLED
    assert "deadline of 1000 ms" in r.results[1].errors[0].message


class Witness(Agent):
    """Returns what it was given: the earlier tasks' agents and its task."""

    info = fake_agent("witness").info

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        seen = {"ctx": [r.agent for r in task.previous], "task": task.model_dump()}
        return AgentResult(output=seen, entities={"who": "witness"})


def test_previous_results_reach_dependents(backend: Backend) -> None:
    first = fake_agent("first", output={"value": 42}, summary="forty-two")
    plan = OrchestrationPlan(tasks=[task("F", "first", request="what is the answer?"), task("W", "witness", ("F",))])
    r = run(backend, plan, AgentRegistry([first, Witness]))
    seen = r.results[1].output
    assert seen["ctx"] == ["first"]
    assert seen["task"]["previous"] == [  # 004's shape: agent, task (what it was asked), result; and ours
        {
            "agent": "first",
            "task": "what is the answer?",
            "task_id": "F",
            "summary": "forty-two",
            "result": {"value": 42},
            "key_findings": [],
        }
    ]
    assert r.results[1].status is ExecutionStatus.COMPLETED


def test_question_parameters_reach_every_payload_and_entities_come_back(backend: Backend) -> None:
    query = OrchestratorInput(
        query="q", source="sales", data_source_id="ds-1", context="Q3", parameters={"treatment": "samples"}
    )
    plan = OrchestrationPlan(tasks=[task("A", "witness", input_payload={"analysis_type": "effect", "source": "x"})])
    r = run(backend, plan, AgentRegistry([Witness]), query=query)
    given = r.results[0].output["task"]
    assert given["question"] == "q" and given["business_context"] == "Q3"
    assert given["source"] == "x"  # the intent table's input_payload is the task's configuration: it wins
    assert given["inputs"] == {"treatment": "samples", "analysis_type": "effect"}
    assert r.results[0].entities == {"who": "witness"}


@pytest.mark.parametrize("n", [1, 3])
def test_timing_fields_are_consistent(backend: Backend, n: int) -> None:
    reg = AgentRegistry([fake_agent(f"a{i}", delay_s=0.01) for i in range(n)])
    r = run(backend, OrchestrationPlan(tasks=[task(f"T{i}", f"a{i}") for i in range(n)]), reg)
    for x in r.results:
        assert x.execution_latency_ms >= 5
        assert x.total_latency_ms >= x.execution_latency_ms
        assert abs(x.total_latency_ms - x.execution_latency_ms - x.dispatch_latency_ms) < 1


def test_a_crash_inside_the_executor_is_reported_not_hung(backend: Backend) -> None:
    """An agent returning something that breaks the response contract fails its task only."""

    class Broken(fake_agent("broken")):  # type: ignore[misc, valid-type]
        async def run(self, context, task):  # type: ignore[no-untyped-def]
            return "not an AgentResult"

    r = run(
        backend,
        OrchestrationPlan(tasks=[task("B", "broken"), task("F", "fine")]),
        AgentRegistry([Broken, fake_agent("fine")]),
    )
    assert r.results[0].status is ExecutionStatus.FAILED and "internal error" in r.results[0].errors[0].message
    assert r.results[1].status is ExecutionStatus.COMPLETED


def marking(name: str, marks: Path) -> type[Agent]:
    """An agent that writes `started` to a file, sleeps, and writes `cancelled` if stopped."""

    class Marking(fake_agent(name)):  # type: ignore[misc, valid-type]
        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            marks.write_text("started")
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                marks.write_text("cancelled")
                raise
            return AgentResult()

    return Marking


def wait_for(check: Callable[[], bool], timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_cancelling_the_caller_cancels_running_agents(backend: Backend, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    reg = AgentRegistry([marking("slow", marks)])
    settings = Settings()
    resources = Resources(settings)
    instances = {"slow": reg.get("slow")(settings, resources)}
    make_context = context_factory(settings, resources)

    async def main() -> None:
        executor = Executor(instances.__getitem__, runner=runner_for(backend, settings))
        caller = asyncio.create_task(
            executor.execute(OrchestrationPlan(tasks=[task("S", "slow")]), make_context, EventStream("q"))
        )
        assert await asyncio.to_thread(wait_for, lambda: marks.exists())
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller

    backend.run(main())
    assert wait_for(lambda: marks.read_text() == "cancelled"), "the agent's run went on after the caller left"


def test_a_timed_out_task_stops_running(backend: Backend, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    r = run(
        backend, OrchestrationPlan(tasks=[task("S", "slow", timeout_ms=500)]), AgentRegistry([marking("slow", marks)])
    )
    assert r.results[0].status is ExecutionStatus.TIMEOUT
    assert wait_for(lambda: marks.read_text() == "cancelled"), "the agent's run went on after its timeout"


@pytest.mark.parametrize("deadline_ms", [None, 20])
def test_short_timeouts_always_settle(backend: Backend, deadline_ms: int | None) -> None:
    """Every plan ends when its timer (or, as well, the deadline) fires in the same millisecond as
    anything else: under uvloop, comparing `loop.time()` with the timer's `when()` misread about
    one timeout in twelve as someone else's cancel, and the plan waited forever."""
    settings = Settings()
    resources = Resources(settings)
    slow = timed("slow", 10)(settings, resources)
    make_context = context_factory(settings, resources)
    executor = Executor({"slow": slow}.__getitem__, runner=runner_for(backend, settings))
    plan = OrchestrationPlan(tasks=[task("S", "slow", timeout_ms=20)])

    async def main() -> list[ExecutionStatus]:
        statuses = []
        for _ in range(150 if backend.where == "local" else 30):
            # generous: a plan either ends in about 20 ms or never
            results = await asyncio.wait_for(
                executor.execute(plan, make_context, EventStream("q"), deadline_ms=deadline_ms), 30
            )
            statuses.append(results[0].status)
        return statuses

    statuses = backend.run(main())
    expected = {ExecutionStatus.TIMEOUT}
    if deadline_ms is not None:  # the deadline and the timer race: either may report it
        expected.add(ExecutionStatus.CANCELLED)
    assert set(statuses) <= expected


def test_a_task_cancelled_by_something_else_is_settled(backend: Backend) -> None:
    """A run cancelled by neither its timer, the deadline nor the caller (here the agent cancels the
    task running it) is reported, and the plan goes on; it used to be left unsettled, so the plan
    never ended."""

    class Cancelling(fake_agent("cancelling")):  # type: ignore[misc, valid-type]
        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            me = asyncio.current_task()
            assert me is not None
            me.cancel()
            await asyncio.sleep(10)
            return AgentResult()

    plan = OrchestrationPlan(tasks=[task("C", "cancelling"), task("A", "after", ("C",)), task("F", "fine")])
    reg = AgentRegistry([Cancelling, fake_agent("after"), fake_agent("fine")])
    r = run(backend, plan, reg)
    cancelled, after, fine = r.results
    assert cancelled.status in (ExecutionStatus.CANCELLED, ExecutionStatus.FAILED, ExecutionStatus.TIMEOUT)
    if backend.where == "local":
        assert cancelled.status is ExecutionStatus.CANCELLED
        assert cancelled.errors[0].error_type == "cancelled"
    assert after.status is ExecutionStatus.SKIPPED and fine.status is ExecutionStatus.COMPLETED


def test_an_agent_that_catches_its_timeout_does_not_spoil_the_fallbacks(backend: Backend) -> None:
    """An agent that catches the timer's cancel and fails: the fallback's own timeout is still a
    timeout (the first cancel request was answered, not left counted against the task)."""

    class Stubborn(fake_agent("stubborn")):  # type: ignore[misc, valid-type]
        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                raise RuntimeError("gave up") from None
            return AgentResult()

    reg = AgentRegistry([Stubborn, timed("slow", 10)])
    plan = OrchestrationPlan(tasks=[task("S", "stubborn", timeout_ms=300, fallback_agent="slow")])
    (x,) = run(backend, plan, reg, timeouts=Timeouts(per_agent={"slow": 300})).results  # the fallback's own
    assert x.used_fallback and x.status is ExecutionStatus.TIMEOUT
    assert x.errors[-1].agent == "slow" and x.errors[-1].error_type == "timeout"
