"""Run a plan as a dependency graph: each task starts as soon as its own dependencies are done.

No supersteps: with A→B (5 s) and A→C (2 s)→D (2 s), then B,D→E, E starts at 5 s.
Per-task timeouts, a fallback agent on the listed failure kinds (under its own timeout,
`timeouts.py`), a concurrency cap that admits ready tasks by priority, and the caller's
deadline, after which what is still running is cancelled and what finished is returned.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentResult, Unanswered
from concerto.agents.task import PriorResult, TaskInput, prior_result
from concerto.contracts.common import AgentError, ErrorKind, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.events import EventType
from concerto.contracts.plan import AgentTask, OrchestrationPlan
from concerto.orchestrator.events import EventStream
from concerto.orchestrator.timeouts import Timeouts

log = logging.getLogger(__name__)

ContextFactory = Callable[[AgentTask, str], AgentContext]  # (task, agent name) -> its context
# Runs one agent's `run` somewhere (a Ray worker); None: in this process.
Runner = Callable[[Agent, AgentContext, TaskInput], Awaitable[AgentResult]]


class _PriorityGate:
    """A semaphore that, when full, admits waiting tasks in priority order (1 first)."""

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = 0

    async def acquire(self, priority: int) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self._waiters, (priority, self._seq, fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # the slot was handed over just as we were cancelled
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
                return
        self._free += 1


class _Attempt:
    """Outcome of running one agent once."""

    __slots__ = ("error", "execution_ms", "expired", "result", "status")

    def __init__(self) -> None:
        self.result: AgentResult | None = None
        self.error: AgentError | None = None
        self.status = ExecutionStatus.COMPLETED
        self.execution_ms = 0.0
        self.expired = False  # this attempt's own timer fired (and cancelled the task)


def _expire(attempt: _Attempt, task: asyncio.Task[Any]) -> None:
    """The attempt's timer: mark the attempt timed out, then cancel its task.

    The mark, not the clock, tells the attempt that a cancel was its own timeout: uvloop
    computes a timer's `when()` as `ms * 1e-3` and `time()` as `ms / 1000`, so a check like
    `loop.time() >= timer.when()` can be false in the very millisecond the timer fired.
    """
    attempt.expired = True
    task.cancel()


class _PlanRun:
    """One plan being executed: what finished, what runs, what waits for how many dependencies,
    and how a finished task starts its dependents (`Executor.execute` drives it)."""

    __slots__ = (
        "by_id",
        "dependents",
        "events",
        "executor",
        "finished",
        "gate",
        "loop",
        "make_context",
        "prepared",
        "results",
        "running",
        "start",
        "stopping",
        "tasks",
        "waiting",
    )

    def __init__(
        self,
        executor: Executor,
        tasks: list[AgentTask],
        make_context: ContextFactory,
        events: EventStream,
        gate: _PriorityGate | None,
        prepared: Mapping[str, dict[str, Any]],
    ) -> None:
        self.executor, self.tasks, self.make_context, self.events = executor, tasks, make_context, events
        self.gate, self.prepared = gate, prepared
        self.start = time.perf_counter()
        self.loop = asyncio.get_running_loop()
        self.by_id = {t.task_id: t for t in tasks}
        self.waiting = {t.task_id: len(t.depends_on) for t in tasks}
        self.dependents: dict[str, list[str]] = {t.task_id: [] for t in tasks}
        for t in tasks:
            for dep in t.depends_on:
                self.dependents[dep].append(t.task_id)
        self.results: dict[str, AgentDispatchResponse] = {}
        self.running: dict[str, asyncio.Task[AgentDispatchResponse]] = {}
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self.stopping = False  # the deadline expired or the caller left: cancelled tasks are not settled

    def launch(self, task: AgentTask) -> None:
        """Start `task`, whose dependencies are done; skip it when one of them did not complete."""
        deps = [self.results[d] for d in task.depends_on]
        failed = [d for d in deps if d.status is not ExecutionStatus.COMPLETED]
        if failed:
            names = ", ".join(f"{d.agent} ({d.status.value})" for d in failed)
            skipped = _skipped(task, f"skipped because it depends on {names}")
            self.events.emit(
                EventType.ERROR,
                f"{task.agent} skipped",
                source=task.agent,
                task_id=task.task_id,
                step=99,
                details={"reason": skipped.errors[0].message},
            )
            self.settle(task.task_id, skipped)
            return
        executor, prepared = self.executor, self.prepared.get(task.task_id)
        coro = (
            executor._run_with_fallback(
                task, self.make_context, deps, self.events, time.perf_counter(), prepared, self.by_id
            )
            if self.gate is None
            else executor._gated(task, self.make_context, deps, self.events, prepared, self.by_id, self.gate)
        )
        runner = self.loop.create_task(coro)
        self.running[task.task_id] = runner
        runner.add_done_callback(functools.partial(self._on_done, task.task_id))

    def _on_done(self, task_id: str, runner: asyncio.Task[AgentDispatchResponse]) -> None:
        self.running.pop(task_id, None)
        if runner.cancelled():
            if not self.stopping:  # cancelled by someone other than this plan: settle it, never hang
                self.settle(task_id, _interrupted(self.by_id[task_id], self.start))
            return
        exc = runner.exception()
        if exc is None:
            self.settle(task_id, runner.result())
        else:  # a bug in the executor itself: report it for this task, never hang the plan
            log.error("task %s crashed in the executor", task_id, exc_info=exc)
            self.settle(task_id, _crashed(self.by_id[task_id], exc))

    def settle(self, task_id: str, response: AgentDispatchResponse) -> None:
        """Record `task_id`'s response and start the dependents it was the last one missing."""
        self.results[task_id] = response
        waiting = self.waiting
        for child in self.dependents[task_id]:
            waiting[child] -= 1
            if waiting[child] == 0:
                self.launch(self.by_id[child])
        if len(self.results) == len(self.tasks) and not self.finished.done():
            self.finished.set_result(None)

    def stop(self) -> list[asyncio.Task[AgentDispatchResponse]]:
        """Cancel what is running (it is not settled: the caller answers for it); those tasks."""
        self.stopping = True
        pending = list(self.running.values())
        for runner in pending:
            runner.cancel()
        return pending


class Executor:
    """Executes plans against instantiated agents; one instance serves many queries."""

    def __init__(
        self,
        agents: Callable[[str], Agent],
        max_concurrency: int = 8,
        runner: Runner | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self._agent = agents
        self.max_concurrency = max_concurrency
        self.runner = runner  # everything but `run` itself (tasks, timeouts, fallbacks, events) stays here
        self.timeouts = timeouts or Timeouts()  # a fallback's timeout (a task's own is in the plan)

    async def execute(
        self,
        plan: OrchestrationPlan,
        make_context: ContextFactory,
        events: EventStream,
        *,
        deadline_ms: float | None = None,
        max_concurrency: int | None = None,
        prepared: Mapping[str, dict[str, Any]] | None = None,
    ) -> list[AgentDispatchResponse]:
        """Run every task; return one response per task, in plan order.

        Tasks are created only when they are ready: finishing a task counts down its
        dependents and starts those whose count reaches zero, so nothing sits waiting.
        """
        tasks = plan.tasks
        if not tasks:
            return []
        cap = max_concurrency or self.max_concurrency
        gate = _PriorityGate(cap) if cap < len(tasks) else None
        run = _PlanRun(self, tasks, make_context, events, gate, prepared or {})
        for task in tasks:
            if not task.depends_on:
                run.launch(task)
        try:
            if deadline_ms is None:
                await run.finished
                return [run.results[t.task_id] for t in tasks]
            done, _ = await asyncio.wait([run.finished], timeout=deadline_ms / 1000)
        except asyncio.CancelledError:  # the caller gave up (client gone): stop our tasks too
            run.stop()
            raise
        if not done:
            events.emit(
                EventType.ERROR,
                f"Deadline of {deadline_ms:.0f} ms expired; cancelling {len(run.running)} running task(s)",
                step=99,
                details={"deadline_ms": deadline_ms},
            )
            await asyncio.gather(*run.stop(), return_exceptions=True)
            run.finished.cancel()
        return [run.results.get(t.task_id) or _cancelled(t, run.start, deadline_ms) for t in tasks]

    async def _gated(
        self,
        task: AgentTask,
        make_context: ContextFactory,
        deps: list[AgentDispatchResponse],
        events: EventStream,
        prepared: dict[str, Any] | None,
        by_id: Mapping[str, AgentTask],
        gate: _PriorityGate,
    ) -> AgentDispatchResponse:
        ready = time.perf_counter()
        await gate.acquire(task.priority)
        try:
            return await self._run_with_fallback(task, make_context, deps, events, ready, prepared, by_id)
        finally:
            gate.release()

    async def _run_with_fallback(
        self,
        task: AgentTask,
        make_context: ContextFactory,
        deps: list[AgentDispatchResponse],
        events: EventStream,
        ready: float,
        prepared: dict[str, Any] | None,
        by_id: Mapping[str, AgentTask],
    ) -> AgentDispatchResponse:
        previous = [prior_result(d, by_id[d.task_id].request) for d in deps] if deps else None
        first = await self._attempt(task, task.agent, task.timeout_ms, make_context, events, prepared, previous)
        errors = [first.error] if first.error else []
        final, agent_name, fallback_reason = first, task.agent, None
        if first.error is not None and task.fallback_agent and first.error.kind in task.fallback_on:
            fallback_reason = f"{task.agent} failed ({first.error.kind.value}): {first.error.message}"
            events.emit(
                EventType.THINKING,
                f"Falling back from {task.agent} to {task.fallback_agent}",
                task_id=task.task_id,
                details={"reason": fallback_reason},
            )
            agent_name = task.fallback_agent
            timeout_ms = self.timeouts.of(agent_name, self._agent(agent_name).info.default_timeout_ms)
            final = await self._attempt(task, agent_name, timeout_ms, make_context, events, None, previous)
            if final.error:
                errors.append(final.error)
        total = (time.perf_counter() - ready) * 1000
        result = final.result
        findings = list(result.key_findings) if result else []
        if result is not None and final.error is None:
            errors += [_unanswered_error(agent_name, gap) for gap in result.unanswered]
            findings += [gap.sentence for gap in result.unanswered if gap.sentence not in findings]
        return AgentDispatchResponse(
            agent=agent_name,
            task_id=task.task_id,
            status=final.status,
            # dispatch = preparing the task, waiting for a slot, instantiating: all but `run`
            dispatch_latency_ms=max(total - first.execution_ms - (final.execution_ms if final is not first else 0), 0),
            execution_latency_ms=final.execution_ms,
            total_latency_ms=total,
            output=result.output if result else {},
            summary=result.summary if result else None,
            key_findings=findings,
            errors=errors,
            entities=result.entities if result else {},
            answer_values=result.answer_values if result and final.error is None else None,
            used_fallback=agent_name != task.agent,
            fallback_reason=fallback_reason,
        )

    async def _attempt(
        self,
        task: AgentTask,
        agent_name: str,
        timeout_ms: int,
        make_context: ContextFactory,
        events: EventStream,
        prepared: dict[str, Any] | None,
        previous: list[PriorResult] | None,
    ) -> _Attempt:
        attempt = _Attempt()
        agent = self._agent(agent_name)
        context = make_context(task, agent_name)
        events.emit(
            EventType.ACTION,
            f"Dispatching {agent_name}",
            source="orchestrator",
            task_id=task.task_id,
            step=4,
            details={"timeout_ms": timeout_ms},
        )
        t0 = time.perf_counter()
        # A bare timer instead of asyncio.timeout(): same semantics here, a third of the cost,
        # which matters because every task of every plan pays it.
        me = asyncio.current_task()
        assert me is not None
        timer = asyncio.get_running_loop().call_later(timeout_ms / 1000, _expire, attempt, me)
        try:
            query = context.query
            if prepared is None or agent_name != task.agent:
                # the default `prepare` reads nothing: skip a coroutine per task
                prepared = (
                    None
                    if type(agent).prepare is Agent.prepare
                    else await agent.prepare(task.request or query.query, context)
                )
            given = TaskInput.build(
                query,
                request=task.request,
                prepared=prepared,
                task_input=task.input_payload,
                previous=previous,
                reading=context.reading,
            )
            t0 = time.perf_counter()
            work = agent.run(context, given) if self.runner is None else self.runner(agent, context, given)
            attempt.result = await work
        except asyncio.CancelledError:
            if not attempt.expired or me.cancelling() > 1:
                raise  # not this task's timer, or the deadline or the caller as well: theirs wins
            attempt.status = ExecutionStatus.TIMEOUT
            attempt.error = self._timed_out(agent_name, timeout_ms)
        except AgentFailure as exc:
            attempt.status = ExecutionStatus.FAILED
            attempt.error = _reported(agent_name, exc)
            if exc.output:
                attempt.result = AgentResult(output=exc.output)
        except Exception as exc:  # an agent bug must not take the others down
            log.exception("agent %s raised", agent_name)
            attempt.error = _raised(agent_name, exc)
            # a timeout inside the agent (its own client's) is a timeout
            attempt.status = ExecutionStatus.TIMEOUT if isinstance(exc, TimeoutError) else ExecutionStatus.FAILED
        finally:
            timer.cancel()
            if attempt.expired:  # the timer's cancel is answered (here, or by an agent that caught it)
                me.uncancel()
        attempt.execution_ms = (time.perf_counter() - t0) * 1000
        _report(events, task, agent_name, attempt)
        return attempt

    def _timed_out(self, agent_name: str, timeout_ms: int) -> AgentError:
        """The error of an attempt its own timer ended: which setting gives the agent more time."""
        return AgentError(
            agent=agent_name,
            kind=ErrorKind.TIMEOUT,
            error_type="timeout",
            recoverable=True,
            message=f"{agent_name} did not answer within {timeout_ms} ms",
            suggestion=self.timeouts.suggestion(agent_name, timeout_ms),
        )


def _reported(agent_name: str, exc: AgentFailure) -> AgentError:
    """The error an agent reported by raising `AgentFailure`."""
    return AgentError(
        agent=agent_name,
        kind=exc.kind,
        error_type=exc.error_type,
        message=exc.message,
        suggestion=exc.suggestion,
        details=exc.details,
    )


def _raised(agent_name: str, exc: Exception) -> AgentError:
    """The error of an agent that raised something else (a bug, or its own client's timeout)."""
    return AgentError(
        agent=agent_name,
        kind=ErrorKind.TIMEOUT if isinstance(exc, TimeoutError) else ErrorKind.ERROR,
        error_type="agent_error",
        message=f"{agent_name} failed: {type(exc).__name__}: {exc}"[:500],
        details={"exception": type(exc).__name__},
    )


def _report(events: EventStream, task: AgentTask, agent_name: str, attempt: _Attempt) -> None:
    """The event of an attempt's end: its answer, or its error."""
    if attempt.error is None:
        events.emit(
            EventType.RESULT,
            f"{agent_name} answered",
            source=agent_name,
            task_id=task.task_id,
            step=6,
            details={
                "ms": round(attempt.execution_ms, 3),
                "summary": attempt.result.summary if attempt.result else None,
            },
        )
    else:
        events.emit(
            EventType.ERROR,
            f"{agent_name}: {attempt.error.message}",
            source=agent_name,
            task_id=task.task_id,
            step=99,
            details={"error_type": attempt.error.error_type, "kind": attempt.error.kind.value},
        )


def _unanswered_error(agent: str, gap: Unanswered) -> AgentError:
    """A part of the question a completed answer does not cover, as an error entry."""
    return AgentError(
        agent=agent,
        kind=gap.kind,
        error_type=gap.error_type,
        message=f"{gap.part}: {gap.reason}",
        suggestion=gap.suggestion,
        details={"part": gap.part},
    )


def _skipped(task: AgentTask, reason: str) -> AgentDispatchResponse:
    return AgentDispatchResponse(
        agent=task.agent,
        task_id=task.task_id,
        status=ExecutionStatus.SKIPPED,
        errors=[
            AgentError(agent=task.agent, kind=ErrorKind.DEPENDENCY, error_type="dependency_failed", message=reason)
        ],
    )


def _crashed(task: AgentTask, exc: BaseException) -> AgentDispatchResponse:
    return AgentDispatchResponse(
        agent=task.agent,
        task_id=task.task_id,
        status=ExecutionStatus.FAILED,
        errors=[
            AgentError(
                agent=task.agent,
                error_type="internal_error",
                message=f"internal error while running {task.agent}: {type(exc).__name__}: {exc}"[:500],
            )
        ],
    )


def _interrupted(task: AgentTask, since: float) -> AgentDispatchResponse:
    """A task whose run was cancelled by something other than its timer, the deadline or the caller."""
    return AgentDispatchResponse(
        agent=task.agent,
        task_id=task.task_id,
        status=ExecutionStatus.CANCELLED,
        total_latency_ms=(time.perf_counter() - since) * 1000,
        errors=[
            AgentError(
                agent=task.agent,
                error_type="cancelled",
                recoverable=True,
                message=f"{task.agent} was cancelled before it answered",
                suggestion="Try again.",
            )
        ],
    )


def _cancelled(task: AgentTask, since: float, deadline_ms: float | None) -> AgentDispatchResponse:
    total = (time.perf_counter() - since) * 1000
    return AgentDispatchResponse(
        agent=task.agent,
        task_id=task.task_id,
        status=ExecutionStatus.CANCELLED,
        total_latency_ms=total,
        errors=[
            AgentError(
                agent=task.agent,
                kind=ErrorKind.TIMEOUT,
                error_type="deadline_expired",
                recoverable=True,
                message=f"cancelled: the query's deadline of {deadline_ms:.0f} ms expired"
                if deadline_ms
                else "cancelled",
            )
        ],
    )
