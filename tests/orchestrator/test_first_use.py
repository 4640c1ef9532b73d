"""First use (`Agent.first_use`): slow one-time work runs before the plan, outside every task's
timeout, once however many questions wait for it, with progress as events and lines."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult, FirstUse
from concerto.agents.task import TaskInput
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.orchestrator.events import EventStream
from concerto.orchestrator.first_use import FirstUseWork, about, machine_load

PREPARE_S = 0.8
ESTIMATE_S = 3.0  # what the agent declares: long enough to be announced on stderr (NOTICE_S)


class Demo:
    """Data an agent loads on first use, like the demo table: slow, idempotent, thread-safe.

    With `held`, a load does not end before the test sets `release` (a hung preparation, or
    one the test checks while it runs); `started` is set when a load begins."""

    def __init__(self, fail: int = 0, held: bool = False) -> None:
        self.loaded = False
        self.runs = 0
        self.fail = fail  # fail this many times first
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.release = threading.Event()
        if not held:
            self.release.set()

    def load(self) -> None:
        with self.lock:
            if self.loaded:
                return
            self.runs += 1
            self.started.set()
            self.release.wait(60)
            time.sleep(PREPARE_S)
            if self.fail:
                self.fail -= 1
                raise OSError("disk full")
            self.loaded = True


def demo_agent(name: str, demo: Demo, timeout_ms: int = 300, lazy: bool = True) -> type[Agent]:
    """An agent that answers in a moment once its data is loaded, and loads it itself when
    asked first (as the analytics agents do): within its timeout only if prepared before.
    Not `lazy`: it answers without the data (as an agent whose own connection works)."""

    class DemoAgent(Agent):
        info: ClassVar[AgentInfo] = AgentInfo(
            name=name, description=f"{name} answers about the demo data", default_timeout_ms=timeout_ms
        )

        def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
            if demo.loaded or (query is not None and query.source):
                return None
            return FirstUse("test.demo", "the test data", ESTIMATE_S, demo.load)

        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            if not lazy:
                return AgentResult(summary=f"{name} answered without the data")
            try:
                await asyncio.to_thread(demo.load)
            except OSError as exc:
                raise AgentFailure(f"cannot load the test data: {exc}") from None
            return AgentResult(summary=f"{name} read the data")

    return DemoAgent


async def _ask(orch: Orchestrator, question: str = "q", **fields: Any) -> tuple[Any, list[Any]]:
    events = EventStream("", 1000)
    result = await orch.ask({"query": question, **fields}, events=events, agent="reader")
    return result, list(events.events)


async def test_slow_first_use_is_done_before_the_task_and_outside_its_timeout(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    demo = Demo()
    orch = make_orchestrator(demo_agent("reader", demo))
    result, events = await _ask(orch)
    assert isinstance(result, OrchestratorOutput), result  # 0.8 s of loading, 300 ms timeout
    assert demo.runs == 1 and result.breakdown["first_use_ms"] >= PREPARE_S * 1000 * 0.9
    titles = [e.title for e in events]
    preparing = next(i for i, t in enumerate(titles) if t.startswith("Preparing the test data (first use, about "))
    assert titles[preparing + 1].startswith("Prepared the test data in ")
    assert preparing < titles.index("Dispatching agents")
    again, events = await _ask(orch)
    assert isinstance(again, OrchestratorOutput) and "first_use_ms" not in again.breakdown
    assert not [e for e in events if "first_use" in e.details]


async def test_questions_waiting_for_the_same_work_share_one_run(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    demo = Demo()
    orch = make_orchestrator(demo_agent("reader", demo), demo_agent("other", demo))
    said: list[str] = []
    orch.first_use.notify = said.append
    results = await asyncio.gather(*(orch.ask("q", agent=name) for name in ("reader", "other", "reader")))
    assert all(isinstance(r, OrchestratorOutput) for r in results), results
    assert demo.runs == 1
    assert said[0].startswith("Preparing the test data (first use, about") and said[0].endswith("s)…")
    assert said[1].startswith("Prepared the test data in ") and len(said) == 2


async def test_a_failed_preparation_is_reported_and_tried_again_by_the_next_question(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    demo = Demo(fail=2)  # the preparation fails, then the agent's own attempt
    orch = make_orchestrator(demo_agent("reader", demo, timeout_ms=5000))
    result, events = await _ask(orch)
    assert isinstance(result, OrchestratorErrorResponse)
    assert "cannot load the test data: disk full" in result.error_message
    assert any(
        e.type is EventType.ERROR and e.title == "Could not prepare the test data: OSError: disk full" for e in events
    )
    assert orch.first_use.status() == ([], {"the test data": "OSError: disk full"})
    assert orch.first_use.readiness() == (
        True,
        "could not prepare the test data (the first question that needs it tries again)",  # /ready: the title
    )
    result, _ = await _ask(orch)
    assert isinstance(result, OrchestratorOutput) and demo.runs == 3
    assert orch.first_use.status() == ([], {})


async def test_a_failure_is_reported_without_the_server_paths_it_names(
    make_orchestrator: Callable[..., Orchestrator], tmp_path: Path
) -> None:
    """DuckDB's and the OS's errors name files by their full paths; events reach clients."""
    demo = Demo()
    held = tmp_path / "sources" / "demo.duckdb"

    def locked() -> None:
        raise OSError(f'IO Error: Could not set lock on file "{held}": Conflicting lock')

    demo.load = locked  # type: ignore[method-assign]
    orch = make_orchestrator(demo_agent("reader", demo, timeout_ms=5000))
    _, events = await _ask(orch)
    assert [e.title for e in events if e.type is EventType.ERROR and "first_use" in e.details] == [
        'Could not prepare the test data: OSError: IO Error: Could not set lock on file "demo.duckdb": Conflicting lock'
    ]
    assert orch.first_use.status()[1] == {
        "the test data": 'OSError: IO Error: Could not set lock on file "demo.duckdb": Conflicting lock'
    }
    assert str(tmp_path) not in str(orch.first_use.readiness())


async def test_a_question_that_does_not_need_the_work_does_not_wait(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    demo = Demo()
    orch = make_orchestrator(demo_agent("reader", demo, timeout_ms=5000))
    result, _ = await _ask(orch, source="mine")
    assert isinstance(result, OrchestratorOutput) and "first_use_ms" not in result.breakdown


async def test_prepare_does_every_agents_work_and_status_says_what_is_running(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    demo = Demo(held=True)
    orch = make_orchestrator(demo_agent("reader", demo))
    orch.first_use = FirstUseWork(patience=0, floor_s=0)  # a question would not wait: start-up does
    started = asyncio.create_task(orch.prepare())
    try:
        assert await asyncio.to_thread(demo.started.wait, 30)
        assert orch.first_use.status() == (["the test data"], {})
        assert orch.first_use.readiness(started) == (False, "preparing the test data (first use)")
        await asyncio.sleep(0.1)
        assert not started.done()
    finally:
        demo.release.set()
    await started
    assert orch.first_use.readiness(started) == (True, None)
    assert demo.loaded and orch.first_use.status() == ([], {})
    assert orch.first_use.needed([orch.agent("reader")]) == []


async def test_a_cancelled_question_leaves_the_work_running_for_the_next() -> None:
    demo = Demo(held=True)
    work = FirstUseWork()
    agent = demo_agent("reader", demo)(None, None)  # type: ignore[arg-type]
    waiting = asyncio.create_task(work.prepare([agent]))
    try:
        assert await asyncio.to_thread(demo.started.wait, 30)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
    finally:
        demo.release.set()
    await work.prepare([agent])  # joins the same run, which finished on its own
    assert demo.loaded and demo.runs == 1


def test_the_estimate_grows_with_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    assert about(3.0, 0.2) == 3  # an idle machine: as declared
    assert about(3.0, 1.5) == 4  # two busy processes on two cores and this one: 2/3 of a core
    assert about(0.1, 0.0) == 1  # never "about 0 s"
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (15.0, 1.0, 1.0))
    assert machine_load() == 7.5 and about(3.0) == 22  # the machine's own 1-minute load per core

    def unknown() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(os, "getloadavg", unknown)
    assert machine_load() == 0.0 and about(3.0) == 3  # a platform without one: as declared


async def test_async_work_runs_on_the_loop_and_short_work_is_not_announced(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    started: list[asyncio.AbstractEventLoop] = []

    class Session(Agent):
        info: ClassVar[AgentInfo] = AgentInfo(name="reader", description="needs a session", default_timeout_ms=300)

        def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
            return None if started else FirstUse("test.session", "the test server", 0.2, self.open)

        async def open(self) -> None:  # a session bound to the loop (an MCP server's)
            await asyncio.sleep(PREPARE_S)
            started.append(asyncio.get_running_loop())

        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            return AgentResult(summary="open" if started else "closed")

    orch = make_orchestrator(Session)
    said: list[str] = []
    orch.first_use = FirstUseWork(said.append, load=lambda: 0.0)  # an idle machine, whatever this one's load
    result, events = await _ask(orch)
    assert isinstance(result, OrchestratorOutput) and result.response == "open"
    assert started == [asyncio.get_running_loop()]
    assert said == []  # about a fifth of a second: not worth a line (the events say it)
    assert any(e.title.startswith("Preparing the test server (first use, about") for e in events)


async def test_a_hung_preparation_does_not_hang_the_questions_that_need_it(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    demo = Demo(held=True)  # hangs until the test releases it
    orch = make_orchestrator(demo_agent("reader", demo, lazy=False))
    said: list[str] = []
    # Waits at most 0.1 x the 3 s estimate (0.3 s) after the preparation started.
    orch.first_use = FirstUseWork(said.append, load=lambda: 0.0, patience=0.1, floor_s=0.3)
    try:
        for _ in range(2):  # the second question finds it overdue already and does not wait
            result, events = await asyncio.wait_for(_ask(orch), 30)
            assert isinstance(result, OrchestratorOutput), result
            assert result.response == "reader answered without the data"
            titles = [e.title for e in events]
            overdue = next(i for i, t in enumerate(titles) if t.startswith("Still preparing the test data after "))
            assert "asking the agents anyway" in titles[overdue] and events[overdue].details["overdue"] is True
            assert overdue < titles.index("Dispatching agents")
            assert orch.first_use.status() == (["the test data"], {})  # it goes on in the background
        assert demo.runs == 1
        assert said[0].startswith("Preparing the test data") and said[1].startswith("Still preparing the test data")
        assert len(said) == 2  # the second question joined the run: the first one said it
    finally:
        demo.release.set()
    await orch.first_use.prepare([orch.agent("reader")], bounded=False)  # joins the same run
    assert demo.loaded and demo.runs == 1 and orch.first_use.status() == ([], {})
    result, events = await _ask(orch)
    assert isinstance(result, OrchestratorOutput) and not [e for e in events if "first_use" in e.details]


async def test_the_wait_for_a_preparation_ends_at_the_questions_deadline(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    demo = Demo(held=True)
    orch = make_orchestrator(demo_agent("reader", demo))
    orch.first_use = FirstUseWork(load=lambda: 0.0, floor_s=600)  # only the deadline ends the wait
    try:
        result, events = await asyncio.wait_for(_ask(orch, max_latency_ms=500), 30)
        assert isinstance(result, OrchestratorErrorResponse) and result.error_category == "timeout", result
        assert any(e.title.startswith("Still preparing the test data after ") for e in events)
    finally:
        demo.release.set()
