"""Ray benchmark (issue 19): what the Ray executor backend adds per task, how a table travels
from one task to a dependent one, the throughput of CPU-heavy questions on 1 and 2 Ray
workers here, and the projection to N machines.

- overhead: one no-op agent (`concerto.testing.fake_agent`) run `--runs` times, one
  single-task plan after another, through `Executor.execute`: in process, as a Ray task and on
  a Ray actor; beside them the floors, a plain `await agent.run(...)` (no executor) and a bare
  Ray streaming-generator call that yields one item (Ray's own cost, on an actor and as a task).
  Median and p95 per task; "added by Ray" is the Ray median minus the in-process median.
- tables: a table of 1,000, 20,000 and 100,000 records from one shipped task to a dependent
  one: copied into the dependent's call, by reference as pickled records, by reference as
  Arrow (Concerto's way), and the whole two-task plan in process and on Ray actors; the bytes
  pickled in band and out of band.
- throughput: the commercial pack's causal_impact on `--rows` rows (the built-in data set as
  bench_commercial.py builds it), `--in-flight` questions at once through `Orchestrator.ask`,
  `--rounds` times, in process and on Ray with 1 and 2 replicas (actors); every answer must be
  an OrchestratorOutput with the same `ate`. Also one question alone: its wall time and the
  CPU seconds it costs in this process (in process: the work; on Ray: what is left in the
  driver) and on the replicas (read on each actor), and each replica's peak memory.

The projection to N machines of c cores is written from the measured numbers (kept in the
results file, so one part can be measured again alone).

    .venv/bin/python -m benchmarks.bench_ray [--parts overhead,tables,throughput] [--runs 200] [--table-runs 20]
        [--rows 1000000] [--in-flight 4] [--rounds 3] [--output benchmarks/results/ray.md]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._executing import executing
from benchmarks._timing import percentile, timed
from benchmarks.bench_commercial import NOW, SEED_QUESTION, Runner, hcps_for
from concerto.testing import fake_agent

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 5.0
NUMBERS = "<!-- bench_ray numbers: "  # the measured numbers the projection uses, kept between runs
MACHINES = (1, 2, 4, 8)
CORES = (2, 16)
BACKENDS = [
    ("local", "local", 1, "in process (local executor)"),
    ("ray1", "ray", 1, "Ray, 1 replica"),
    ("ray2", "ray", 2, "Ray, 2 replicas"),
]
ALONE = 3  # questions asked alone on each backend (the median is the work of one)


# -- overhead per task --------------------------------------------------------------------


class NoopAgent(fake_agent("noop")):  # type: ignore[misc]
    """The no-op agent, importable as `bench_ray.NoopAgent`: Ray ships it by reference, as it
    ships a pack's agents (a class made inside a function would be pickled whole every call)."""


class _FloorActor:
    """Ray's own cost: an async actor (as AgentHost is) whose streaming call yields one item."""

    async def one(self) -> Any:
        yield ("result", None)


def _floor_task() -> Any:
    """The same as a Ray task (as `run_task` is)."""
    yield ("result", None)


async def overhead(runs: int) -> tuple[list[str], dict[str, float]]:
    """Milliseconds per single-task plan on each path, and Ray's floors."""
    import ray

    from benchmarks.bench_ray import NoopAgent  # this file as a module (not __main__), so workers import it
    from concerto.agents.base import AgentContext
    from concerto.agents.task import TaskInput
    from concerto.cluster.ray_runner import RayRunner
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.contracts.plan import AgentTask, OrchestrationPlan
    from concerto.orchestrator.executor import Executor
    from concerto.resources import Resources
    from concerto.settings import Settings

    tmp = tempfile.TemporaryDirectory(prefix="bench-ray-")
    settings = Settings(data_dir=Path(tmp.name), store_events=False)
    resources = Resources(settings)
    noop = NoopAgent(settings, resources)
    query = OrchestratorInput(query="no-op")
    plan = OrchestrationPlan(tasks=[AgentTask(task_id="T1", agent="noop")])

    def through(runner: Any) -> Callable[[], Awaitable[Any]]:
        execute = executing(Executor(lambda name: noop, runner=runner), plan, query, settings, resources, NOW)

        async def call() -> None:
            (result,) = await execute()
            assert result.output == {"agent": "noop"}, result

        return call

    async def plain() -> None:
        context = AgentContext(query=query, now=NOW, settings=settings, resources=resources, agent="noop")
        result = await noop.run(context, TaskInput(question="no-op"))
        assert result.output == {"agent": "noop"}

    floor_actor: Any = ray.remote(num_cpus=0)(_FloorActor).remote()
    floor_task: Any = ray.remote(_floor_task).options(num_returns="streaming", max_retries=0)

    async def bare_actor() -> None:
        async for ref in floor_actor.one.options(num_returns="streaming").remote():
            assert (await ref)[0] == "result"

    async def bare_task() -> None:
        async for ref in floor_task.remote():
            assert (await ref)[0] == "result"

    task_runner = RayRunner(settings, placement=lambda info: "task")
    actor_runner = RayRunner(settings, placement=lambda info: "actor")
    warm = max(20, runs // 10)  # starts the workers (Python, Concerto's imports) and the actor
    paths: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        ("plain", "plain `await agent.run(...)` (no executor)", plain),
        ("local", "Executor.execute, in process (runner=None)", through(None)),
        ("bare_actor", "bare Ray actor, streaming call yielding one item", bare_actor),
        ("actor", "Executor.execute, Ray actor (placement `actor`)", through(actor_runner)),
        ("bare_task", "bare Ray task, streaming generator yielding one item", bare_task),
        ("task", "Executor.execute, Ray task (placement `task`)", through(task_runner)),
    ]
    times: dict[str, list[float]] = {}
    try:
        for key, _, call in paths:
            times[key] = await timed(call, runs, warmup=warm)
            print(f"{key}: median {statistics.median(times[key]):.2f} ms", file=sys.stderr)
    finally:
        await task_runner.aclose()
        await actor_runner.aclose()
        ray.kill(floor_actor)
        tmp.cleanup()
    base = statistics.median(times["local"])
    lines = [
        "| path | median ms | p95 ms | added by Ray (median − in process) |",
        "|---|---|---|---|",
    ]
    for key, label, _ in paths:
        median, p95 = statistics.median(times[key]), percentile(times[key], 0.95)
        added = f"+{median - base:.2f} ms" if key in ("actor", "task") else ("baseline" if key == "local" else "floor")
        lines.append(f"| {label} | {median:.2f} | {p95:.2f} | {added} |")
    numbers = {
        "in_process_ms": base,
        "actor_added_ms": statistics.median(times["actor"]) - base,
        "task_added_ms": statistics.median(times["task"]) - base,
        "bare_actor_ms": statistics.median(times["bare_actor"]),
        "bare_task_ms": statistics.median(times["bare_task"]),
    }
    left = (numbers["actor_added_ms"] - numbers["bare_actor_ms"], numbers["task_added_ms"] - numbers["bare_task_ms"])
    verdict = lambda ms: "under" if ms < GOAL_MS else "over"  # noqa: E731
    lines += [
        "",
        f"{runs} plans of one task after another on each path, after {warm} not counted (workers and the actor "
        f"started and warm). Added by Ray per task: actor {numbers['actor_added_ms']:.2f} ms "
        f"({verdict(numbers['actor_added_ms'])} the {GOAL_MS:.0f} ms goal), task {numbers['task_added_ms']:.2f} ms "
        f"({verdict(numbers['task_added_ms'])}). Of that, Ray's own round trip is "
        f"{numbers['bare_actor_ms']:.2f} ms (actor) and {numbers['bare_task_ms']:.2f} ms (task); what is left, "
        f"{left[0]:+.2f} ms (actor) and {left[1]:+.2f} ms (task), is Concerto's: the payload, "
        "question and settings pickled, the agent's context built on the worker (a task also builds the agent, "
        "its resources and LLM client each time), the result streamed back"
        + (" (below zero: within the noise)." if min(left) < 0 else "."),
    ]
    return lines, numbers


# -- tables between tasks -----------------------------------------------------------------


def _records(rows: int) -> list[dict[str, Any]]:
    """A table as agents return it: four columns (int, float, a short and a longer text)."""
    return [{"id": i, "amount": i * 0.5, "region": f"r{i % 7}", "name": f"customer number {i}"} for i in range(rows)]


class _Producer:
    """An actor yielding an output as a stream item (as AgentHost does), packed or not."""

    async def make(self, rows: int, arrow: bool) -> Any:
        from concerto.cluster.tables import pack

        output = {"data": _records(rows)}
        yield ("output", pack(output) if arrow else output)


class _Consumer:
    """An actor reading an earlier output: from the object store by reference, or from its call."""

    async def by_reference(self, refs: list[Any]) -> int:
        from concerto.cluster.tables import unpack

        (item,) = await asyncio.gather(*refs)
        return len(unpack(item[1])["data"])

    async def copied(self, output: dict[str, Any]) -> int:
        return len(output["data"])


class TableAgent(fake_agent("table")):  # type: ignore[misc]
    """Returns a table of `parameters["rows"]` records."""

    async def run(self, context: Any, task: Any) -> Any:
        from concerto.agents.base import AgentResult

        rows = _records(int(task.inputs["rows"]))
        return AgentResult(output={"data": rows}, summary=f"{len(rows)} rows")


class ReaderAgent(fake_agent("reader")):  # type: ignore[misc]
    """Reads the earlier table (from its task) and counts its rows."""

    async def run(self, context: Any, task: Any) -> Any:
        from concerto.agents.base import AgentResult

        (earlier,) = task.previous
        return AgentResult(output={"rows": len(earlier.result["data"])})


async def tables(sizes: list[int], runs: int) -> tuple[list[str], dict[str, float]]:
    """A table from one task to a dependent one: how it travels (copied into the call, or by
    reference as pickled records, or by reference as Arrow), and the whole two-task plan."""
    import pickle

    import ray

    from benchmarks.bench_ray import ReaderAgent, TableAgent, _Consumer, _Producer
    from concerto.agents.registry import AgentRegistry
    from concerto.cluster.ray_runner import RayRunner
    from concerto.cluster.tables import pack, unpack
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.contracts.plan import AgentTask, OrchestrationPlan
    from concerto.orchestrator.executor import Executor
    from concerto.resources import Resources
    from concerto.settings import Settings

    producer: Any = ray.remote(num_cpus=0)(_Producer).remote()
    consumer: Any = ray.remote(num_cpus=0)(_Consumer).remote()
    tmp = tempfile.TemporaryDirectory(prefix="bench-ray-")
    settings = Settings(data_dir=Path(tmp.name), store_events=False)
    resources = Resources(settings)
    registry = AgentRegistry([TableAgent, ReaderAgent])
    plan = OrchestrationPlan(
        tasks=[AgentTask(task_id="T", agent="table"), AgentTask(task_id="R", agent="reader", depends_on=["T"])]
    )
    actor_runner = RayRunner(settings, placement=lambda info: "actor")

    def travel(rows: int, how: str) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            async for ref in producer.make.options(num_returns="streaming").remote(rows, how == "arrow"):
                output = unpack((await ref)[1])  # the driver reads the output for the answer
                if how == "copy":
                    got = await consumer.copied.remote(output)
                else:
                    got = await consumer.by_reference.remote([ref])
                assert got == rows, got

        return call

    def plan_through(rows: int, runner: Any) -> Callable[[], Awaitable[Any]]:
        executor = Executor(lambda name: registry.get(name)(settings, resources), runner=runner)
        query = OrchestratorInput(query="table", parameters={"rows": rows})
        execute = executing(executor, plan, query, settings, resources, NOW)

        async def call() -> None:
            _, reader = await execute()
            assert reader.output == {"rows": rows}, reader

        return call

    lines = [
        "| rows | pickled records: bytes in band / out of band | as Arrow: in band / out of band "
        "| copied into the call: ms | by reference, records: ms | by reference, Arrow: ms "
        "| the two-task plan in process: ms | on Ray actors: ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    numbers: dict[str, float] = {}
    try:
        for rows in sizes:
            output = {"data": _records(rows)}
            sizes_of = []
            for value in (output, pack(output)):
                buffers: list[pickle.PickleBuffer] = []
                in_band = len(pickle.dumps(value, protocol=5, buffer_callback=buffers.append))
                sizes_of.append((in_band, sum(b.raw().nbytes for b in buffers)))
            medians = {}
            for how in ("copy", "records", "arrow"):
                medians[how] = statistics.median(await timed(travel(rows, how), runs, warmup=3))
            for key, runner in (("plan_local", None), ("plan_actor", actor_runner)):
                medians[key] = statistics.median(await timed(plan_through(rows, runner), runs, warmup=3))
            print(f"tables {rows}: {medians}", file=sys.stderr)
            numbers |= {f"tables_{rows}_{k}_ms": v for k, v in medians.items()}
            (plain_in, plain_out), (arrow_in, arrow_out) = sizes_of
            lines.append(
                f"| {rows:,} | {plain_in:,} / {plain_out:,} | {arrow_in:,} / {arrow_out:,} | {medians['copy']:.1f} "
                f"| {medians['records']:.1f} | {medians['arrow']:.1f} | {medians['plan_local']:.1f} "
                f"| {medians['plan_actor']:.1f} |"
            )
    finally:
        await actor_runner.aclose()
        ray.kill(producer)
        ray.kill(consumer)
        tmp.cleanup()
    lines += [
        "",
        f"Median of {runs} runs each, after 3 not counted. The three middle columns are one table's trip as "
        "Concerto makes it: a producer actor yields the output as a stream item, this process (the driver) "
        "reads it for the answer, and a consumer actor reads it: copied into the consumer's call, or by "
        "reference from the object store as pickled records, or by reference as Arrow (what Concerto does: "
        "`cluster/tables.py` packs on the worker, unpacks where the output is used). The last two columns are "
        "the whole plan (a `table` task, then a `reader` task that depends on it) through `Executor.execute`, "
        "in process and with both agents on Ray actors. Bytes: pickled with protocol 5 as Ray does; out of "
        "band is what Ray's object store keeps as buffers of their own, which a reader on the same node maps "
        "without copying.",
    ]
    return lines, numbers


# -- throughput of CPU-heavy questions ----------------------------------------------------


@dataclass
class _Backend:
    """One backend under test, with what was measured on it."""

    key: str
    label: str
    orchestrator: Any
    replicas: int
    answers: list[Any] = field(default_factory=list)
    alone_walls: list[float] = field(default_factory=list)
    alone_cpus: list[float] = field(default_factory=list)
    replica_cpus: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    round_cpus: list[float] = field(default_factory=list)

    async def ask(self) -> Any:
        return await self.orchestrator.ask(SEED_QUESTION, now=NOW, agent="causal_impact")

    async def alone(self) -> None:
        """One question by itself: its wall time, this process's CPU and the replicas' CPU."""
        on_replicas = sum(await _replicas(self.orchestrator, _cpu_s))
        cpu, wall = time.process_time(), time.perf_counter()
        self.answers.append(await self.ask())
        self.alone_walls.append(time.perf_counter() - wall)
        self.alone_cpus.append(time.process_time() - cpu)
        self.replica_cpus.append(sum(await _replicas(self.orchestrator, _cpu_s)) - on_replicas)

    async def round(self, in_flight: int) -> None:
        """`in_flight` questions at once."""
        cpu, wall = time.process_time(), time.perf_counter()
        self.answers += await asyncio.gather(*(self.ask() for _ in range(in_flight)))
        self.walls.append(time.perf_counter() - wall)
        self.round_cpus.append((time.process_time() - cpu) / in_flight)


async def _measure(
    stack: contextlib.AsyncExitStack[Any], data_dir: Path, rows: int, in_flight: int, rounds: int
) -> tuple[list[_Backend], dict[str, list[float]], int]:
    """The data set loaded into `data_dir`, then the backends opened on `stack` and measured in turn
    (all open at once, so that what else runs on this shared machine falls on all alike)."""
    from concerto.orchestrator.engine import Orchestrator
    from concerto.packs.commercial.base.data import generate
    from concerto.settings import Settings

    started = time.perf_counter()
    made = generate(hcps_per_brand=hcps_for(rows))
    runner = Runner(data_dir)
    runner.load(made.panel)
    runner.load(made.spend, "commercial_spend")
    loaded = len(made.panel)
    del made, runner
    print(f"{loaded:,} rows generated and loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    backends = []
    for key, executor, replicas, label in BACKENDS:
        settings = Settings(
            data_dir=data_dir, agents="causal_impact", executor=executor, ray_replicas=replicas, store_events=False
        )
        orchestrator = await stack.enter_async_context(Orchestrator(settings))
        backend = _Backend(key, label, orchestrator, replicas)
        # Warm-up: one question per replica, together (each replica imports and opens the data).
        backend.answers += await asyncio.gather(*(backend.ask() for _ in range(replicas)))
        backends.append(backend)
    for _ in range(ALONE):
        for backend in backends:
            await backend.alone()
    for _ in range(rounds):
        for backend in backends:
            await backend.round(in_flight)
    peaks = {b.key: await _replicas(b.orchestrator, _peak_rss_mb) for b in backends}
    return backends, peaks, loaded


async def throughput(rows: int, in_flight: int, rounds: int) -> tuple[list[str], dict[str, float]]:
    """Questions per minute with `in_flight` causal_impact questions at once, on each backend."""
    from concerto.contracts.orchestrator import OrchestratorOutput

    numbers: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ray-data-") as tmp:
        async with contextlib.AsyncExitStack() as stack:
            backends, peaks, loaded = await _measure(stack, Path(tmp), rows, in_flight, rounds)
    lines = [
        "| backend | one question alone: wall s | its CPU s in the driver | its CPU s on the replicas | "
        f"{in_flight} in flight: wall s per round | questions / min | peak MB per replica | answers |",
        "|---|---|---|---|---|---|---|---|",
    ]
    reference = next(
        (a.agent_results[0].output.get("ate") for a in backends[0].answers if isinstance(a, OrchestratorOutput)), None
    )
    for b in backends:
        ates = {a.agent_results[0].output.get("ate") for a in b.answers if isinstance(a, OrchestratorOutput)}
        good = sum(isinstance(a, OrchestratorOutput) for a in b.answers)
        if good == len(b.answers) and ates == {reference}:
            check = f"{good}/{len(b.answers)} OrchestratorOutput, ate {reference:.4f} (the same)"
        else:
            bad = next((a for a in b.answers if not isinstance(a, OrchestratorOutput)), None)
            check = f"**{good}/{len(b.answers)} OrchestratorOutput, ate {sorted(map(str, ates))}** {str(bad)[:120]}"
            print(f"{b.label}: answers differ: {check}", file=sys.stderr)
        per_minute = 60 * in_flight / statistics.median(b.walls)
        numbers |= {
            f"{b.key}_per_min": per_minute,
            f"{b.key}_alone_s": statistics.median(b.alone_walls),
            f"{b.key}_alone_cpu_s": statistics.median(b.alone_cpus),
            f"{b.key}_driver_cpu_s": statistics.median(b.round_cpus),
        }
        replica_cpu = "—"
        if b.key != "local":
            numbers[f"{b.key}_replica_cpu_s"] = statistics.median(b.replica_cpus)
            numbers[f"{b.key}_replica_peak_mb"] = max(peaks[b.key])
            replica_cpu = f"{statistics.median(b.replica_cpus):.2f}"
        lines.append(
            f"| {b.label} | {numbers[f'{b.key}_alone_s']:.2f} | {numbers[f'{b.key}_alone_cpu_s']:.2f} | "
            f"{replica_cpu} | {', '.join(f'{w:.2f}' for w in b.walls)} | {per_minute:.1f} | "
            f"{', '.join(f'{p:,.0f}' for p in peaks[b.key]) or '—'} | {check} |"
        )
        print(f"{b.label}: {per_minute:.1f} questions/min", file=sys.stderr)
    numbers["rows"] = loaded
    lines += [
        "",
        f'The question: “{SEED_QUESTION}” (`agent="causal_impact"`: three estimators and three refutations) on '
        f"the built-in data set with {loaded:,} rows in a DuckDB data dir. The three backends are open at once "
        "and measured in turn, so that what else runs on this shared machine falls on all three alike: a "
        f"warm-up question per replica, then {ALONE} turns of one question alone (the median is shown), then "
        f"{rounds} turns of {in_flight} questions at once (`asyncio.gather`); questions per minute are "
        f"{in_flight} over the median round. “CPU s in the driver” is this process's CPU time (all its threads, "
        "Ray's included) for the question alone: in process it is the question's work, on Ray what is left in "
        "the driver (planning, events, the answer); “on the replicas” is the actors' own CPU time for it (read "
        "on each actor). “Peak MB per replica” is each actor process's peak resident memory (VmHWM) at the "
        "end. Ray starts an actor that asks for no CPU with `OMP_NUM_THREADS=1`, so a replica's linear algebra "
        "runs on one thread where in process it may use both cores: one question alone may be a little slower "
        "on a replica, and a replica is one core's worth of work. In process, the agent's estimators run in "
        "worker threads (`asyncio.to_thread`), so questions in flight already overlap where numpy and DuckDB "
        "release the GIL; a Ray actor runs its calls the same way, in its own process.",
    ]
    return lines, numbers


def _peak_rss_mb(host: Any) -> float:
    """On a replica (`__ray_call__`): its process's peak resident memory, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_s(host: Any) -> float:
    """On a replica: its process's CPU seconds so far (every thread, user and system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _replicas(orchestrator: Any, probe: Callable[[Any], float]) -> list[float]:
    """`probe` run on each of the orchestrator's Ray actors (none in process)."""
    handles = [h for hs in getattr(orchestrator.executor.runner, "_actors", {}).values() for h in hs]
    return [float(await h.__ray_call__.remote(probe)) for h in handles]


# -- projection ---------------------------------------------------------------------------


def projection(n: dict[str, float]) -> list[str]:
    """Questions per minute of N machines with c cores each, from the measured numbers."""
    needed = ["actor_added_ms", "ray1_replica_cpu_s", "ray1_alone_s", "ray2_per_min"]
    needed += ["ray1_driver_cpu_s", "ray2_driver_cpu_s"]
    if any(k not in n for k in needed):
        return ["(measure both parts first: `--parts overhead,throughput`)"]
    o = n["actor_added_ms"] / 1000  # seconds Ray adds per task
    w = n["ray1_replica_cpu_s"]  # CPU seconds of one question's work on a worker
    d = max(n["ray1_driver_cpu_s"], n["ray2_driver_cpu_s"])  # driver CPU seconds per question on Ray
    here = 60 * 2 / (w + o)  # the formula for one machine of 2 cores
    e = min(n["ray2_per_min"] / here, 1.0)
    driver_max = 60 / d if d > 0 else float("inf")
    lines = [
        "With one Ray actor replica per core (`CONCERTO_RAY_REPLICAS` = c on each machine) and at least N·c "
        "questions in flight, every core answers questions one after another, so",
        "",
        "    questions / min = 60 · N · c / (w + o),  capped by one driver at 60 / d",
        "",
        f"where w = {w:.2f} CPU s is the work of one question on one worker (Ray, 1 replica, one question "
        f"alone: the actor's CPU time; its wall time was {n['ray1_alone_s']:.2f} s), "
        f"o = {o * 1000:.2f} ms is what Ray adds per task (actor, measured above), and d = {d:.3f} CPU s is what "
        "is left in the driver per question on Ray (this process's CPU time over a round in flight, divided "
        "by its questions, the median round; the larger of the two Ray rows), so one driver process saturates at "
        f"{driver_max:,.0f} questions / min. "
        f"Here (N = 1, c = 2) the formula gives {here:.1f} / min and Ray with 2 replicas measured "
        f"{n['ray2_per_min']:.1f} / min, an efficiency e = {e:.2f}: the driver and Ray's own processes share "
        "the two cores with the replicas, and other processes used "
        f"{n.get('throughput_others_cores', 0):.2f} of them on average meanwhile (this machine is shared), so e "
        "is a floor for a machine that does nothing else. The fourth column applies it.",
        "",
        f"| machines N | cores c | ideal questions / min | at e = {e:.2f} | through one driver | bound by |",
        "|---|---|---|---|---|---|",
    ]
    for c in CORES:
        for machines in MACHINES:
            ideal = 60 * machines * c / (w + o)
            one_driver = min(e * ideal, driver_max)
            limit = "the driver: add API processes" if e * ideal > driver_max else "cores"
            lines.append(f"| {machines} | {c} | {ideal:,.0f} | {e * ideal:,.0f} | {one_driver:,.0f} | {limit} |")
    lines += [
        "",
        "What it assumes, and where it stops holding:",
        f"- The data is reachable from every worker: a shared data dir (the DuckDB files, opened read-only by each "
        f"replica) or PostgreSQL (`CONCERTO_DATABASE_URL`). Each question reads its columns itself: "
        f"{int(n.get('rows', 0)):,} rows of a few columns per question, so at high rates the database (or the "
        "shared file system) becomes the bottleneck before the cores do.",
        "- The driver is not the bottleneck: routing, planning, events and synthesis stay in the process that "
        f"took the question (d above). Past 60 / d ≈ {driver_max:,.0f} questions / min, run several "
        "`concerto serve` processes behind a load balancer, each its own driver. d is measured on direct calls "
        "(`agent=`, no routing); a routed question adds the router's work (embedding the question) to d, "
        "and an LLM-written plan or answer adds a call to the model per question.",
        "- Questions are independent and there are enough of them: one question does not get faster "
        f"(its latency stays about {n['ray1_alone_s']:.1f} s, one question alone on a replica); N machines "
        "answer more questions at once, not one question sooner. A plan with several CPU-heavy tasks spreads "
        "them over replicas of different agents, but its latency is its longest task.",
        "- One replica per core fits in memory: each actor holds its agent and the columns of the questions in "
        f"flight (peak {n.get('ray2_replica_peak_mb', 0):,.0f} MB per replica here); with 16 replicas on a "
        "machine, that is 16 copies.",
        f"- The per-task overhead o stays small next to the work: at {o * 1000:.1f} ms against {w:.1f} s it is "
        f"{o / w:.2%}; it matters only for agents whose work is a few milliseconds, which is why cheap agents "
        "(`remote: never`) stay in process.",
    ]
    return lines


# -- the run ------------------------------------------------------------------------------


def _previous(output: Path) -> tuple[dict[str, list[str]], dict[str, float]]:
    """The `### ` sections and the numbers of the last run's file."""
    sections: dict[str, list[str]] = {}
    numbers: dict[str, float] = {}
    if not output.exists():
        return sections, numbers
    current: list[str] | None = None
    for line in output.read_text(encoding="utf-8").splitlines():
        if line.startswith(NUMBERS):
            numbers = json.loads(line[len(NUMBERS) : -len(" -->")])
            current = None
        elif line.startswith("### "):
            current = sections.setdefault(line[4:].split(" (")[0], [])
        if current is not None:
            current.append(line)
    return {k: v[: len(v) - (1 if v and not v[-1] else 0)] for k, v in sections.items()}, numbers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="overhead,tables,throughput", help="Which sections to measure")
    parser.add_argument("--runs", type=int, default=200, help="Single-task plans per path (overhead)")
    parser.add_argument("--table-runs", type=int, default=20, help="Runs per size and path (tables)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="Rows of the built-in data set (throughput)")
    parser.add_argument("--in-flight", type=int, default=4, help="Questions at once (throughput)")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of questions in flight (throughput)")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "ray.md")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    command = " ".join([".venv/bin/python -m benchmarks.bench_ray", *sys.argv[1:]])
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, Ray {_ray_version()}"
    _start_cluster()
    sections, numbers = _previous(args.output)
    measured: dict[str, tuple[str, str, Callable[[], tuple[list[str], dict[str, float]]]]] = {
        "Overhead per task": (
            "overhead",
            f"one no-op agent, {args.runs} single-task plans",
            lambda: asyncio.run(overhead(args.runs)),
        ),
        "Tables between tasks": (
            "tables",
            "a table of 1,000 to 100,000 rows from one task to a dependent one",
            lambda: asyncio.run(tables([1_000, 20_000, 100_000], args.table_runs)),
        ),
        "Throughput of CPU-heavy questions": (
            "throughput",
            f"causal_impact on {args.rows:,} rows, {args.in_flight} in flight",
            lambda: asyncio.run(throughput(args.rows, args.in_flight, args.rounds)),
        ),
    }
    unknown = parts - {p for p, _, _ in measured.values()}
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    body = ["## Ray executor backend (issue 19)", ""]
    for title, (part, detail, measure) in measured.items():
        if part in parts:
            before = _cpu_now()
            lines, got = measure()
            numbers |= got
            numbers[f"{part}_others_cores"] = others = _others(before)
            meanwhile = f"meanwhile other processes used {others:.2f} of the {os.cpu_count()} cores on average"
            section = [f"### {title} ({detail})", "", f"`{command}` on {machine}; {meanwhile}.", "", *lines]
        else:
            section = sections.get(title, [f"### {title}", "", "(not measured yet)"])
        body += [*section, ""]
    body += ["### Projection to N machines", "", *projection(numbers), ""]
    body += [NUMBERS + json.dumps(numbers, sort_keys=True) + " -->", ""]
    _shutdown()
    args.output.write_text("\n".join(body), encoding="utf-8")
    print("\n".join(body))
    print(f"wrote {args.output}", file=sys.stderr)


def _cpu_now() -> tuple[float, float, float]:
    """(now, CPU seconds the machine has been busy, those of this process and its descendants:
    the Ray cluster it started and its workers), read from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    busy = (user + nice + system + irq + softirq + steal) / tick
    children: dict[int, list[int]] = {}
    used: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        used[int(entry.name)] = sum(int(x) for x in fields[11:15])  # utime, stime, and of reaped children
    mine, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        mine += used.get(pid, 0)
        todo += children.get(pid, [])
    return time.monotonic(), busy, mine / tick


def _others(before: tuple[float, float, float]) -> float:
    """Cores other processes used on average since `before` (this machine is shared: other
    sessions run their tests on it)."""
    now = _cpu_now()
    wall, busy, mine = (b - a for a, b in zip(before, now, strict=True))
    return max(busy - mine, 0.0) / wall


def _ray_version() -> str:
    import ray

    return str(ray.__version__)


def _start_cluster() -> None:
    """A local Ray cluster, as `CONCERTO_EXECUTOR=ray` with `CONCERTO_RAY_ADDRESS` empty starts one,
    but from the main thread: Ray ties its processes' lives to the thread that started them
    (PR_SET_PDEATHSIG), and `RayRunner` starts it in an `asyncio.to_thread` worker, which exits
    with the first `asyncio.run` of this script; the runners find it connected and use it."""
    from concerto.cluster.ray_runner import _connect

    started = time.perf_counter()
    _connect("")
    print(f"local Ray cluster up in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def _shutdown() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()  # the local cluster this run started


if __name__ == "__main__":
    main()
