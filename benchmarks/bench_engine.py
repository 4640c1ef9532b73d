"""Engine benchmarks (issue 2), side by side in one run.

1. Orchestration overhead with no-op agents, routing excluded: a 3-way fan-out plus a
   join, and a 3-step chain; Concerto's executor (events and contract validation on)
   vs plain asyncio vs LangGraph's StateGraph on the same plan.
2. Real parallelism: three agents that each wait 50 ms.
3. Throughput with 100 questions in flight (no-op agents, full `Orchestrator.ask`).
4. Router latency: structured format, semantic (warm); cold `concerto ask`.

Run:  .venv/bin/python -m benchmarks.bench_engine [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from benchmarks._executing import executing
from benchmarks._timing import percentile, timed
from concerto.agents.base import Agent, AgentContext, AgentInfo, AgentResult
from concerto.agents.loader import load_registry
from concerto.agents.registry import AgentRegistry
from concerto.agents.task import TaskInput
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.contracts.plan import AgentTask, OrchestrationPlan
from concerto.orchestrator.engine import Orchestrator
from concerto.orchestrator.executor import Executor
from concerto.resources import Resources
from concerto.settings import Settings


def noop_agent(name: str, delay: float = 0.0) -> type[Agent]:
    class _A(Agent):
        info = AgentInfo(name=name, description=f"no-op {name}", examples=[f"run the {name} step"])

        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            if delay:
                await asyncio.sleep(delay)
            return AgentResult(output={"agent": name}, summary=f"{name} done")

    return _A


async def _noop(state: dict[str, Any] | None = None) -> dict[str, Any]:
    return {}


def fanout_plan() -> OrchestrationPlan:
    return OrchestrationPlan(
        tasks=[
            AgentTask(task_id="a", agent="a"),
            AgentTask(task_id="b", agent="b"),
            AgentTask(task_id="c", agent="c"),
            AgentTask(task_id="d", agent="d", depends_on=["a", "b", "c"]),
        ]
    )


def chain_plan() -> OrchestrationPlan:
    return OrchestrationPlan(
        tasks=[
            AgentTask(task_id="a", agent="a"),
            AgentTask(task_id="b", agent="b", depends_on=["a"]),
            AgentTask(task_id="c", agent="c", depends_on=["b"]),
        ]
    )


def concerto_runner(plan_factory: Callable[[], OrchestrationPlan], delay: float = 0.0) -> Callable[[], Awaitable[Any]]:
    settings = Settings(store_events=False)
    resources = Resources(settings)
    registry = AgentRegistry([noop_agent(n, delay) for n in "abcd"])
    instances = {n: registry.get(n)(settings, resources) for n in registry.names()}
    executor = Executor(instances.__getitem__, 8)
    query = OrchestratorInput(query="bench")
    now = datetime.now(UTC)

    plan = plan_factory()  # built once, like LangGraph's compiled graph; execution never mutates it
    return executing(executor, plan, query, settings, resources, now)


def asyncio_fanout(delay: float = 0.0) -> Callable[[], Awaitable[Any]]:
    async def step() -> dict[str, Any]:
        if delay:
            await asyncio.sleep(delay)
        return {}

    async def run() -> Any:
        results = await asyncio.gather(step(), step(), step())
        return results, await step()

    return run


def asyncio_chain() -> Callable[[], Awaitable[Any]]:
    # Each step scheduled on the loop as gather does for the fan-out; a bare `await coro()`
    # never touches the loop and would measure nothing an orchestrator could do.
    async def run() -> Any:
        (a,) = await asyncio.gather(_noop())
        (b,) = await asyncio.gather(_noop(a))
        return await asyncio.gather(_noop(b))

    return run


class _State(TypedDict, total=False):
    a: int
    b: int
    c: int
    d: int


def langgraph_runner(kind: str) -> Callable[[], Awaitable[Any]] | None:
    try:
        from langgraph.graph import END, START, StateGraph
    except ImportError:
        return None

    def node(name: str):  # type: ignore[no-untyped-def]
        async def _n(state: _State) -> dict[str, int]:
            return {name: 1}

        return _n

    g = StateGraph(_State)
    for n in "abcd" if kind == "fanout" else "abc":
        g.add_node(n, node(n))
    if kind == "fanout":
        for n in "abc":
            g.add_edge(START, n)
        g.add_edge(["a", "b", "c"], "d")
        g.add_edge("d", END)
    else:
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", "c")
        g.add_edge("c", END)
    app = g.compile()

    async def run() -> Any:
        return await app.ainvoke({})

    return run


async def timeit(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    """Milliseconds per run after up to 200 warm-up runs."""
    return await timed(fn, n, warmup=min(200, n))


def row(name: str, xs: list[float], base: float | None = None) -> str:
    med = statistics.median(xs)
    ratio = f"{med / base:.1f}×" if base else "1.0×"
    return f"| {name} | {med:.3f} | {percentile(xs, 0.95):.3f} | {ratio} |"


async def overhead(n: int) -> list[str]:
    lines = []
    for kind, plan, plain in (
        ("3-way fan-out + join", fanout_plan, asyncio_fanout()),
        ("3-step chain", chain_plan, asyncio_chain()),
    ):
        base = await timeit(plain, n)
        ours = await timeit(concerto_runner(plan), n)
        lg_fn = langgraph_runner("fanout" if plan is fanout_plan else "chain")
        lg = await timeit(lg_fn, n) if lg_fn else None
        b = statistics.median(base)
        lines += [
            f"\n**{kind}** ({n} runs; median and p95 in ms; ratio to plain asyncio)\n",
            "| runner | median ms | p95 ms | × asyncio |",
            "|---|---|---|---|",
            row("plain asyncio (gather/await)", base),
            row("Concerto executor (events + validation)", ours, b),
        ]
        if lg:
            lines.append(row("LangGraph StateGraph (ainvoke)", lg, b))
            lines.append(
                f"\nConcerto is {statistics.median(lg) / statistics.median(ours):.1f}× faster than LangGraph "
                f"and {statistics.median(ours) / b:.1f}× plain asyncio."
            )
    return lines


async def parallelism() -> list[str]:
    run = concerto_runner(lambda: OrchestrationPlan(tasks=[AgentTask(task_id=n, agent=n) for n in "abc"]), 0.05)
    xs = await timeit(run, 20)
    return [
        f"\n**Real parallelism**: three agents that each wait 50 ms finish in median "
        f"{statistics.median(xs):.1f} ms, max {max(xs):.1f} ms (goal < 60 ms)."
    ]


async def throughput(data_dir: Path) -> list[str]:
    settings = Settings(data_dir=data_dir, store_events=False)
    orch = Orchestrator(settings, registry=AgentRegistry([noop_agent("a"), noop_agent("b")]))

    class Structured(noop_agent("s")):  # type: ignore[misc, valid-type]
        def match_structured(self, text: str) -> dict[str, Any] | None:
            return {"text": text} if text.startswith("s:") else None

    orch.registry.register(Structured)
    await orch.ask("s: warm")
    out = []
    for inflight in (1, 100):
        t = time.perf_counter()
        total = 0
        while time.perf_counter() - t < 2.0:
            await asyncio.gather(*(orch.ask(f"s: q{i}") for i in range(inflight)))
            total += inflight
        qps = total / (time.perf_counter() - t)
        out.append(f"| {inflight} | {qps:,.0f} |")
    return [
        "\n**Throughput** (full `Orchestrator.ask`: structured route, plan, execute, synthesize; events on, "
        "storage off)\n",
        "| questions in flight | questions/s |",
        "|---|---|",
        *out,
    ]


async def router_latency(data_dir: Path) -> list[str]:
    settings = Settings(data_dir=data_dir, store_events=False)
    orch = Orchestrator(settings, registry=load_registry())
    router = orch.router
    structured_q = 'echo: "hello"'
    semantic_qs = [
        "what's the weather and the time in Seattle?",
        "show CPU usage for the last hour",
        "home-loan attrition rate previous 4 months",
        "what time is it in Chicago?",
    ]
    await router.route(semantic_qs[0])  # loads the model and the index

    s = [0.0] * 2000
    for i in range(len(s)):
        t = time.perf_counter()
        router._structured(structured_q)
        s[i] = (time.perf_counter() - t) * 1000
    sem = []
    for i in range(60):  # new text each time: the embedder's cache must not answer
        q = f"{semantic_qs[i % 4]} ({i})"
        t = time.perf_counter()
        await router.route(q)
        sem.append((time.perf_counter() - t) * 1000)
    return [
        "\n**Router latency** (per question, all built-in agents loaded)\n",
        "| step | median ms | p95 ms | goal |",
        "|---|---|---|---|",
        f"| structured format | {statistics.median(s):.4f} | {percentile(s, 0.95):.4f} | < 0.1 |",
        f"| semantic (warm, uncached question) | {statistics.median(sem):.2f} | {percentile(sem, 0.95):.2f} | < 20 |",
    ]


def cold_start(data_dir: Path, runs: int = 5) -> list[str]:
    exe = str(Path(sys.executable).with_name("concerto"))
    env = {**os.environ, "CONCERTO_DATA_DIR": str(data_dir)}
    out = [
        "\n**Cold start of `concerto ask`** (new process each run, all built-in agents, to the first byte "
        "of the answer; the echo agent starts its MCP server over stdio)\n",
        "| question | median s | max s | goal |",
        "|---|---|---|---|",
    ]
    for label, q, extra in (
        ("`--help`", None, {}),
        ("structured (`echo: hi`)", "echo: hi", {}),
        ("semantic (`please repeat back: good morning`)", "please repeat back: good morning", {}),
    ):
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            argv = [exe, "ask", q, "--json"] if q else [exe, "--help"]
            p = subprocess.Popen(argv, env={**env, **extra}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert p.stdout is not None
            p.stdout.read(1)
            times.append(time.perf_counter() - t)
            p.wait()
        out.append(f"| {label} | {statistics.median(times):.2f} | {max(times):.2f} | < 3 |")
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    n = 500 if args.quick else 3000
    lines = [
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores; "
        "`.venv/bin/python -m benchmarks.bench_engine`"
    ]
    with tempfile.TemporaryDirectory() as tmp:
        lines += await overhead(n)
        lines += await parallelism()
        lines += await throughput(Path(tmp))
        lines += await router_latency(Path(tmp))
        lines += cold_start(Path(tmp))
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
