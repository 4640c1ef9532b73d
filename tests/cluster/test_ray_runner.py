"""The Ray backend beyond the executor's own suite (which runs on both backends): actors that keep
state, replicas, live events, a worker that dies, a cluster that cannot be reached, and a
real question answered on the cluster exactly as in process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from _services.ports import free_port
from _services.ray import RayCluster
from concerto.agents.base import AgentContext, AgentResult
from concerto.agents.registry import AgentRegistry
from concerto.agents.task import TaskInput
from concerto.cluster.ray_runner import RayRunner
from concerto.cluster.tables import Records
from concerto.contracts.common import ErrorKind, ExecutionStatus
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.contracts.plan import OrchestrationPlan
from concerto.orchestrator.engine import Orchestrator
from concerto.orchestrator.events import EventStream
from concerto.orchestrator.executor import Executor
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import fake_agent, make_context

pytestmark = pytest.mark.usefixtures("ray_cluster")


class Counting(fake_agent("counting")):  # type: ignore[misc, valid-type]
    """Counts its calls in its own state; reports its process and the count."""

    calls = 0

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        self.calls += 1
        mine = self.calls
        await context.emit(EventType.THINKING, "counting", {"calls": mine})
        await asyncio.sleep(float(task.inputs.get("delay", 0)))
        return AgentResult(output={"pid": os.getpid(), "calls": mine})


class Dying(fake_agent("dying")):  # type: ignore[misc, valid-type]
    """Kills its own worker process in the middle of a task."""

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        await context.emit(EventType.THINKING, "about to die")
        await asyncio.sleep(0.1)
        os.kill(os.getpid(), signal.SIGKILL)
        await asyncio.sleep(30)
        return AgentResult()


def execute(runner: RayRunner, plan: OrchestrationPlan, registry: AgentRegistry) -> tuple[list[Any], EventStream]:
    settings = runner.settings
    resources = Resources(settings)
    instances = {n: registry.get(n)(settings, resources) for n in registry.names()}
    events = EventStream("q")
    query = make_context().query  # one question for every task of the plan, as the engine does

    def context(task, agent):  # type: ignore[no-untyped-def]
        made = make_context(settings=settings, resources=resources, agent=agent)
        made.query, made.task_id, made._emit = query, task.task_id, events.agent_emit
        return made

    executor = Executor(instances.__getitem__, runner=runner)

    async def main() -> list[Any]:
        try:
            return await executor.execute(plan, context, events)
        finally:
            await runner.aclose()

    return asyncio.run(main()), events


def one(agent: str, **kw: Any) -> Any:
    from concerto.contracts.plan import AgentTask

    return AgentTask(task_id=kw.pop("task_id", "T"), agent=agent, **kw)


def test_an_actor_keeps_its_agent_across_calls_and_replicas_share_the_load() -> None:
    runner = RayRunner(Settings(ray_replicas=2), placement=lambda info: "actor")
    plan = OrchestrationPlan(tasks=[one("counting", task_id=f"T{i}", input_payload={"delay": 0.5}) for i in range(4)])
    results, events = execute(runner, plan, AgentRegistry([Counting]))
    assert all(r.status is ExecutionStatus.COMPLETED for r in results), [r.errors for r in results]
    pids = {r.output["pid"] for r in results}
    assert len(pids) == 2 and os.getpid() not in pids  # two replicas, neither of them this process
    by_pid = sorted(sorted(r.output["calls"] for r in results if r.output["pid"] == pid) for pid in pids)
    assert by_pid == [[1, 2], [1, 2]]  # each replica's agent counted its own calls: state kept
    thinking = [e for e in events.events if e.title == "counting"]
    assert len(thinking) == 4 and {e.source for e in thinking} == {"counting"}
    assert {e.task_id for e in thinking} == {"T0", "T1", "T2", "T3"}


def test_events_arrive_while_the_agent_works() -> None:
    runner = RayRunner(Settings(), placement=lambda info: "actor")
    plan = OrchestrationPlan(tasks=[one("counting", input_payload={"delay": 1.0})])
    (result,), events = execute(runner, plan, AgentRegistry([Counting]))
    thinking = next(e for e in events.events if e.title == "counting")
    answered = next(e for e in events.events if e.title == "counting answered")
    assert answered.ts - thinking.ts >= 0.8  # the event came back before the agent's sleep ended
    assert result.execution_latency_ms >= 1000


@pytest.mark.parametrize("placement", ["actor", "task"])
def test_a_worker_that_dies_mid_task_is_the_tasks_error_or_its_fallback(placement: str) -> None:
    runner = RayRunner(Settings(), placement=lambda info: "never" if info.name == "backup" else placement)
    backup = fake_agent("backup", summary="answered by the backup")
    plan = OrchestrationPlan(
        tasks=[
            one("dying", task_id="D"),
            one("dying", task_id="F", fallback_agent="backup"),
        ]
    )
    started = time.monotonic()
    (alone, fallen_back), events = execute(runner, plan, AgentRegistry([Dying, backup]))
    assert time.monotonic() - started < 60  # never a hang
    assert alone.status is ExecutionStatus.FAILED
    error = alone.errors[0]
    assert error.error_type == "worker_died" and error.kind is ErrorKind.ERROR
    assert "Ray worker running dying died" in error.message
    assert fallen_back.status is ExecutionStatus.COMPLETED and fallen_back.used_fallback
    assert fallen_back.summary == "answered by the backup"
    assert any(e.title == "about to die" for e in events.events)


def test_a_cluster_that_cannot_be_reached_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    """In a fresh process (this one is joined to the test cluster): a dead address fails each
    shipped task within seconds, with what to check."""
    script = (
        "import asyncio, json\n"
        "from concerto import Orchestrator, Settings\n"
        "async def main():\n"
        "    async with Orchestrator(Settings()) as o:\n"
        "        r = await o.ask('What is the effect of sampling on Kisqali prescriptions?', agent='causal_impact')\n"
        "        print(r.model_dump_json())\n"
        "asyncio.run(main())\n"
    )
    env = {
        **os.environ,
        "CONCERTO_DATA_DIR": str(tmp_path),
        "CONCERTO_EXECUTOR": "ray",
        "CONCERTO_RAY_ADDRESS": f"127.0.0.1:{free_port()}",
        "CONCERTO_AGENTS": "causal_impact",
    }
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    result = OrchestratorErrorResponse.model_validate_json(done.stdout.strip().splitlines()[-1])
    (task,) = result.partial_results or []
    assert task.errors[0].error_type == "cluster_unavailable"
    assert "cannot be reached" in task.errors[0].message and "nothing answers at 127.0.0.1" in task.errors[0].message
    assert "CONCERTO_RAY_ADDRESS" in (task.errors[0].suggestion or "")
    assert elapsed < 30, f"took {elapsed:.0f} s"
    assert "Traceback" not in done.stdout


async def test_a_question_answered_on_the_cluster_is_the_same_as_in_process(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """The seed's commercial question: causal_impact runs on a Ray actor, unchanged; the numbers
    are the ones the local backend gives."""
    question = "What is the effect of sampling on Kisqali prescriptions?"
    now = datetime(2025, 6, 15, tzinfo=UTC)
    answers: dict[str, OrchestratorOutput] = {}
    for executor in ("local", "ray"):
        settings = Settings(
            data_dir=tmp_path, executor=executor, ray_address=ray_cluster.address, agents="causal_impact"
        )
        async with Orchestrator(settings) as orchestrator:
            result = await orchestrator.ask(question, now=now, agent="causal_impact")
        assert isinstance(result, OrchestratorOutput), result
        answers[executor] = result
    local, remote = (answers[k].agent_results[0] for k in ("local", "ray"))
    assert remote.output["ate"] == local.output["ate"]
    assert remote.output["confidence_interval"] == local.output["confidence_interval"]
    untimed = [
        [{k: v for k, v in r.items() if k != "seconds"} for r in a.output["refutations"]] for a in (local, remote)
    ]
    assert untimed[0] == untimed[1]
    assert answers["ray"].response == answers["local"].response


class Table(fake_agent("table")):  # type: ignore[misc, valid-type]
    """Returns a table of 20,000 rows (about 1 MB pickled)."""

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        rows = [{"id": i, "amount": i * 0.5, "region": f"r{i % 7}"} for i in range(20_000)]
        return AgentResult(output={"rows": rows}, summary="20,000 rows")


class Reader(fake_agent("reader")):  # type: ignore[misc, valid-type]
    """Reads the earlier table from its task (and checks it is the table the first task made)."""

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        (earlier,) = task.previous
        rows = earlier.result["rows"]
        same = rows == [{"id": i, "amount": i * 0.5, "region": f"r{i % 7}"} for i in range(20_000)]
        total = sum(row["amount"] for row in rows)
        return AgentResult(output={"rows": len(rows), "same": same, "total": total})


@pytest.mark.parametrize("placement", ["actor", "task"])
def test_a_dependent_task_reads_an_earlier_table_from_the_object_store(placement: str) -> None:
    runner = RayRunner(Settings(), placement=lambda info: placement)
    plan = OrchestrationPlan(tasks=[one("table", task_id="T"), one("reader", task_id="R", depends_on=["T"])])
    (table, reader), events = execute(runner, plan, AgentRegistry([Table, Reader]))
    assert len(table.output["rows"]) == 20_000  # the driver has the output for the answer
    assert reader.output == {"rows": 20_000, "same": True, "total": sum(i * 0.5 for i in range(20_000))}
    by_reference = [e for e in events.events if e.source == "reader" and "object store" in e.title]
    assert [e.title for e in by_reference] == ["Read 1 earlier result(s) from the object store"]
    import ray

    (stored,) = [ref for (_, task_id), ref in runner._outputs.items() if task_id == "T"]
    kind, output = ray.get(stored)  # the table travelled as Arrow, not as 20,000 dicts
    assert kind == "output" and isinstance(output["rows"], Records)
    assert output["rows"].table.num_rows == 20_000 and output["rows"].table.column_names == ["id", "amount", "region"]


def test_an_earlier_result_from_this_process_is_sent_as_a_copy() -> None:
    runner = RayRunner(Settings(), placement=lambda info: "never" if info.name == "table" else "actor")
    plan = OrchestrationPlan(tasks=[one("table", task_id="T"), one("reader", task_id="R", depends_on=["T"])])
    (_, reader), events = execute(runner, plan, AgentRegistry([Table, Reader]))
    assert reader.output["rows"] == 20_000 and reader.output["same"]
    assert not [e for e in events.events if "object store" in e.title]
