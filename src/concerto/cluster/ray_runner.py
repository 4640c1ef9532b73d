"""The Ray executor backend (`CONCERTO_EXECUTOR=ray`): agents' `run` on a Ray cluster.

Only `run` moves. The executor keeps everything else in the driver, unchanged: the plan's
dependencies, the agents' tasks (`prepare`), per-task timeouts, fallbacks, the deadline, concurrency
caps and events. So a plan behaves the same on both backends, and no agent changes a line.

An agent declares where it runs (`AgentInfo.remote`):
- `never` (the default; echo, the city pack): in the driver, as with the local backend;
- `task`: each call is a Ray task that builds the agent, runs it once and exits;
- `actor`: calls go to `CONCERTO_RAY_REPLICAS` Ray actors per agent, built on first use and
  kept, so the agent's state (an embedding model, fitted models, database connections)
  serves every question; a call goes to the replica with the fewest calls in flight.

Events stream back while the agent works (a Ray streaming generator). The agent's output is an
item of its own in that stream, its tables as Arrow (`tables.py`), so it lands in Ray's object
store owned by this process: a dependent task that also runs on the cluster receives it by
reference (its worker reads it from the store), not as a copy in the call. When the executor
cancels a task (its timeout, the deadline, the caller leaving), the Ray task is cancelled.
A worker that dies mid-task is the task's failure (`worker_died`, kind `error`, so a
fallback runs where the plan has one; Ray does not retry it); an actor is restarted by Ray for the next call. A
cluster that cannot be reached is every shipped task's failure (`cluster_unavailable`),
found within seconds, never a hang.

`CONCERTO_RAY_ADDRESS` empty starts a local cluster on first use (its workers see this
process's `sys.path`); an address joins that cluster, whose workers must have Concerto and
the packs installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult
from concerto.agents.task import TaskInput
from concerto.cluster.host import AgentHost, Earlier, run_task
from concerto.cluster.tables import unpack
from concerto.contracts.common import ErrorKind
from concerto.settings import Settings

NAMESPACE = "concerto"
CONNECT_TIMEOUT_S = 60.0  # starting a local cluster takes about 4 s here
KEPT_OUTPUTS = 256  # task outputs kept in the object store for dependents, newest first
REACH_TIMEOUT_S = 3.0  # a TCP connect to the cluster's address, before Ray's own 30 s retries
INSTALL_RAY = "Install Ray with: pip install 'concerto[ray]' (or set CONCERTO_EXECUTOR=local)."
_connect_lock = threading.Lock()
# Ray starts a local cluster's processes with a parent-death signal, which Linux sends when the
# *thread* that started them exits: start it on one thread that lives as long as the process.
_CONNECTOR = ThreadPoolExecutor(1, thread_name_prefix="ray-connect")


class RayRunner:
    """The executor's `runner` for Ray; one per orchestrator (it owns its actors)."""

    def __init__(self, settings: Settings, *, placement: Callable[[AgentInfo], str] | None = None) -> None:
        self.settings = settings
        self.placement = placement or (lambda info: info.remote)  # tests ship every agent
        self._actors: dict[type[Agent], list[Any]] = {}
        self._in_flight: dict[Any, int] = {}
        self._task: Any = None
        # (query id, task id) -> the object holding that task's output, for its dependents
        self._outputs: OrderedDict[tuple[str, str], Any] = OrderedDict()

    async def __call__(self, agent: Agent, context: AgentContext, task: TaskInput) -> AgentResult:
        mode = self.placement(agent.info)
        if mode == "never":
            return await agent.run(context, task)
        ray = await self._connect(agent.info.name)
        task, earlier = self._by_reference(context, task)
        args = (task, context.query, context.now, context.task_id, earlier)
        host = None
        if mode == "actor":
            host = self._replica(type(agent))
            self._in_flight[host] += 1
            stream = host.run.options(num_returns="streaming").remote(*args)
        else:
            stream = self._task_fn(ray).remote(type(agent), self.settings, *args)
        output: tuple[Any, Any] | None = None  # the output's object and value
        try:
            async for ref in stream:
                item = await ref
                if item[0] == "event":
                    await context.emit(item[1], item[2], item[3], item[4])
                elif item[0] == "output":
                    output = (ref, unpack(item[1]))
                elif item[0] == "result":
                    result: AgentResult = item[1]
                    if output is not None:
                        self._keep((context.query.query_id, context.task_id), output[0])
                        result = result.model_copy(update={"output": output[1]})
                    return result
                else:
                    raise item[1]
            raise AgentFailure(f"{agent.info.name} ended without a result on the Ray cluster", error_type="worker_died")
        except asyncio.CancelledError:
            ray.cancel(stream)
            raise
        except (ray.exceptions.RayError, ConnectionError) as exc:
            raise _failure(agent.info.name, exc) from None
        finally:
            if host is not None:
                self._in_flight[host] -= 1

    async def aclose(self) -> None:
        """Stop this runner's actors (the cluster itself is left as it is)."""
        if not self._actors:
            return
        import ray

        for handle in [h for handles in self._actors.values() for h in handles]:
            with contextlib.suppress(Exception):  # already gone with the cluster
                ray.kill(handle)
        self._actors.clear()
        self._in_flight.clear()

    def _by_reference(self, context: AgentContext, task: TaskInput) -> tuple[TaskInput, list[Earlier]]:
        """What a shipped task receives of its earlier tasks: the results of those that ran on the
        cluster by reference (their outputs stay in the object store, not copied into the call),
        the others as they are."""
        qid = context.query.query_id
        found = [(p.task_id, self._outputs.get((qid, p.task_id))) for p in task.previous]
        earlier = [Earlier(task_id, ref) for task_id, ref in found if ref is not None]
        if not earlier:
            return task, []
        sent = {e.task_id for e in earlier}
        previous = [p.model_copy(update={"result": {}}) if p.task_id in sent else p for p in task.previous]
        return task.model_copy(update={"previous": previous}), earlier

    def _keep(self, key: tuple[str, str], ref: Any) -> None:
        """Remember a task's output object for its dependents (the newest `KEPT_OUTPUTS`; a
        forgotten one is freed by Ray, and a later dependent gets a copy instead)."""
        self._outputs[key] = ref
        self._outputs.move_to_end(key)
        while len(self._outputs) > KEPT_OUTPUTS:
            self._outputs.popitem(last=False)

    def _replica(self, cls: type[Agent]) -> Any:
        """The actor of `cls` with the fewest calls in flight (the replicas built on first use)."""
        handles = self._actors.get(cls)
        if handles is None:
            import ray

            host = ray.remote(AgentHost).options(num_cpus=0, max_restarts=-1, namespace=NAMESPACE)
            handles = [host.remote(cls, self.settings) for _ in range(self.settings.ray_replicas)]
            self._actors[cls] = handles
            self._in_flight.update({h: 0 for h in handles})
        return min(handles, key=lambda h: self._in_flight[h])

    def _task_fn(self, ray: Any) -> Any:
        if self._task is None:
            # No retry: a task whose worker died is the task's failure (the plan's fallback decides).
            self._task = ray.remote(run_task).options(num_returns="streaming", max_retries=0)
        return self._task

    async def _connect(self, agent: str) -> Any:
        """Ray, connected (the first call starts or joins the cluster, off the event loop)."""
        if (problem := ray_missing()) is not None:
            raise AgentFailure(
                f"{agent} could not run: {problem}",
                error_type="ray_not_installed",
                kind=ErrorKind.UNAVAILABLE,
                suggestion=INSTALL_RAY,
            )
        import ray

        if ray.is_initialized():
            return ray
        try:
            connecting = asyncio.get_running_loop().run_in_executor(_CONNECTOR, _connect, self.settings.ray_address)
            await asyncio.wait_for(connecting, CONNECT_TIMEOUT_S)
        except (ConnectionError, TimeoutError, RuntimeError) as exc:
            where = self.settings.ray_address or "a local cluster"
            raise AgentFailure(
                f"{agent} could not run: the Ray cluster ({where}) cannot be reached: {exc}",
                error_type="cluster_unavailable",
                kind=ErrorKind.UNAVAILABLE,
                suggestion="Check CONCERTO_RAY_ADDRESS, or set CONCERTO_EXECUTOR=local.",
            ) from None
        return ray


def ray_missing() -> str | None:
    """Why this process cannot use Ray (the `ray` extra is not installed), or None."""
    import importlib.util

    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        found = False
    return None if found else "CONCERTO_EXECUTOR=ray, but Ray is not installed"


def _connect(address: str) -> None:
    """Join the cluster at `address`, or start a local one; once per process."""
    import ray

    with _connect_lock:
        if ray.is_initialized():
            return
        if address and address != "auto":
            _reachable(address)
        options: dict[str, Any] = {"namespace": NAMESPACE, "include_dashboard": False, "log_to_driver": False}
        if not address:  # a local cluster: its workers import what this process can
            path = os.pathsep.join(p for p in sys.path if p)
            options["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
        ray.init(address=address or None, **options)


def _reachable(address: str) -> None:
    """Raise ConnectionError unless something listens at the cluster's address (host:port, or
    ray://host:port): Ray itself retries an unreachable address for 30 s."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if not parts.hostname or not parts.port:
        raise ConnectionError(f"'{address}' is not host:port or ray://host:port")
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {parts.hostname}:{parts.port} ({exc.strerror or exc})") from None


def _failure(agent: str, exc: BaseException) -> AgentFailure:
    """A Ray error as the task's failure: a worker or node that died, or the cluster gone."""
    import ray

    if isinstance(exc, ray.exceptions.TaskCancelledError):
        return AgentFailure(f"{agent} was cancelled on the Ray cluster", error_type="cancelled", kind=ErrorKind.TIMEOUT)
    died = (
        ray.exceptions.ActorDiedError,
        ray.exceptions.ActorUnavailableError,
        ray.exceptions.WorkerCrashedError,
        ray.exceptions.NodeDiedError,
        ray.exceptions.ObjectLostError,
    )
    if isinstance(exc, ray.exceptions.ActorDiedError) and exc.actor_init_failed:
        return AgentFailure(
            f"{agent} could not start on the Ray cluster: {str(exc)[:400]}",
            error_type="agent_error",
            suggestion="Its workers must be able to import the agent (CONCERTO_RAY_ADDRESS: install the packs there).",
        )
    if isinstance(exc, died):
        return AgentFailure(
            f"the Ray worker running {agent} died before it answered ({type(exc).__name__})",
            error_type="worker_died",
            kind=ErrorKind.ERROR,  # the task's run failed: a plan's fallback runs by default
            suggestion="Ask again: Ray restarts the agent's worker.",
        )
    if isinstance(exc, ray.exceptions.RayTaskError):  # the host itself failed (e.g. the agent's constructor)
        cause = exc.cause if exc.cause is not None else exc
        return AgentFailure(
            f"{agent} could not start on the Ray cluster: {type(cause).__name__}: {str(cause)[:300]}",
            error_type="agent_error",
        )
    return AgentFailure(
        f"{agent} could not run on the Ray cluster: {type(exc).__name__}: {str(exc)[:300]}",
        error_type="cluster_unavailable",
        kind=ErrorKind.UNAVAILABLE,
    )
