"""First use: the slow one-time work agents declare (`Agent.first_use`), done outside timeouts.

On a fresh data directory the demo table must be generated, loaded and its descriptions
embedded before an analytics agent can answer; done inside the agent's task, that work
counted against the task's timeout (20 s), and on a busy 2-core machine it did not fit.
The orchestrator asks the agents of a plan what they still need before dispatching it, and
runs that work here, once per key however many questions wait for it, with an event and a
line for the user ("Preparing the demo table (first use, about 6 s)…"). `concerto serve`
does every agent's `lasting` work (what stays in the data dir) at start-up, and `/ready` says
what is still being prepared.

A question waits for a preparation only so long: `PATIENCE` times its estimate after it
started (at least `FLOOR_S`), and never past the question's own deadline (`max_latency_ms`).
Then it is dispatched anyway, with an event that says so: the agents still load lazily, so
they answer (or say what is missing) themselves, and the preparation goes on for the next
question. One that hangs no longer hangs every question that needs it.

Synchronous work runs in a daemon thread of its own, not the loop's executor: a server asked
to stop does not wait for a half-done load (the agents would do it again when asked). A
coroutine (opening a session that belongs to the loop) runs as a task on the loop, cancelled
when the orchestrator closes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeAlias

from concerto.contracts.events import EventType
from concerto.redact import without_paths

if TYPE_CHECKING:
    from concerto.agents.base import Agent, FirstUse
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.orchestrator.events import EventStream

log = logging.getLogger(__name__)

Notify = Callable[[str], None]
Running: TypeAlias = "concurrent.futures.Future[float] | asyncio.Future[float]"
NOTICE_S = 2  # a preparation expected to take less is not announced on stderr (the events still say it)
PATIENCE = 3  # a question waits up to this many times a preparation's estimate after it started...
FLOOR_S = 10.0  # ...and at least this long (a new process or a cold disk on a busy machine)


def machine_load() -> float:
    """The machine's 1-minute load average per core (0 where the platform has none)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # not on every platform
        return 0.0


def about(seconds: float, load_per_core: float | None = None) -> int:
    """`seconds` on an idle machine, stretched by how busy the cores are (the load average per
    core, the machine's own when None: with two busy processes on two cores, a third gets two
    thirds of a core)."""
    if load_per_core is None:
        load_per_core = machine_load()
    return max(1, round(seconds * max(1.0, load_per_core)))


class FirstUseWork:
    """The preparations of one orchestrator: which run, which are done, which failed."""

    def __init__(
        self,
        notify: Notify | None = None,
        *,
        load: Callable[[], float] = machine_load,
        patience: float = PATIENCE,
        floor_s: float = FLOOR_S,
    ) -> None:
        self.notify = notify  # the CLI prints progress lines on stderr; a server logs them
        self.load = load  # the load per core that stretches the estimates (`about`)
        self.patience = patience
        self.floor_s = floor_s
        self._running: dict[str, tuple[FirstUse, Running]] = {}
        self._since: dict[str, float] = {}  # key -> when its running preparation started
        self._done: dict[str, float] = {}  # key -> seconds it took
        self._failed: dict[str, str] = {}  # title -> why (tried again when an agent next needs it)
        self._lock = threading.Lock()

    def needed(
        self, agents: Iterable[Agent], query: OrchestratorInput | None = None, *, lasting: bool = False
    ) -> list[FirstUse]:
        """What `agents` still need for `query`, one per key, in order (none once done here);
        only the `lasting` work when `lasting`."""
        found: dict[str, FirstUse] = {}
        for agent in agents:
            try:
                work = agent.first_use(query)
            except Exception as exc:  # a broken check: the agent does the work itself when asked
                log.warning("first use of %s could not be checked: %s: %s", agent.info.name, type(exc).__name__, exc)
                continue
            if work is not None and work.key not in self._done and (work.lasting or not lasting):
                found.setdefault(work.key, work)
        return list(found.values())

    async def prepare(
        self,
        agents: Iterable[Agent],
        query: OrchestratorInput | None = None,
        events: EventStream | None = None,
        *,
        lasting: bool = False,
        bounded: bool = True,
        until: float | None = None,
    ) -> None:
        """Do what `agents` need before they answer `query`, one preparation after another (two
        loads at once would share the cores and a DuckDB file); waiting here is outside every
        task's timeout. A failure is logged and reported as an event: the agent then meets
        the same problem itself and says so in its answer.

        When `bounded`, each wait ends `patience` times the estimate after the preparation
        started (at least `floor_s`) and at `until` (a `time.perf_counter()` instant: the
        question's deadline), whichever is first; the preparation goes on without this caller.
        Start-up (`bounded=False`) waits for each to the end."""
        for work in self.needed(agents, query, lasting=lasting):
            started = time.perf_counter()
            future, fresh = self._start(work)
            estimate = about(work.seconds, self.load())
            limit = self._limit(work, estimate, until) if bounded else None
            line = f"Preparing {work.title} (first use, about {estimate} s)…"
            if events is not None:
                events.emit(EventType.ACTION, line, details={"first_use": work.key})
            announced = fresh and estimate >= NOTICE_S  # the one who started it says so
            if announced:
                self._say(line)
            try:
                took = await _finished_within(future, limit)
            except Exception as exc:
                problem = without_paths(f"Could not prepare {work.title}: {type(exc).__name__}: {exc}")
                if events is not None:
                    events.emit(EventType.ERROR, problem, details={"first_use": work.key})
                if fresh:
                    self._say(problem)
                continue
            if took is None:  # overdue: ask the agents anyway
                self._overdue(work, events, announced)
                continue
            if events is not None:
                done = f"Prepared {work.title} in {time.perf_counter() - started:.1f} s"
                events.emit(EventType.ACTION, done, details={"first_use": work.key})
            if announced:
                self._say(f"Prepared {work.title} in {took:.1f} s.")

    async def aclose(self) -> None:
        """Stop the preparations running on the loop (sessions being opened) before the
        orchestrator closes what they open; those in threads finish or die with the process."""
        with self._lock:
            tasks = [f for _, f in self._running.values() if isinstance(f, asyncio.Future)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def status(self) -> tuple[list[str], dict[str, str]]:
        """(titles being prepared now, title -> why it failed)."""
        with self._lock:
            return [work.title for work, _ in self._running.values()], dict(self._failed)

    def readiness(self, startup: asyncio.Task[None] | None = None) -> tuple[bool, str | None]:
        """(ready, why not or what to know) for `/ready`, given the server's start-up preparation:
        not ready while it runs; ready after, even when something failed (the questions that
        need it try again, and the rest are answered). A failure is named by its title only:
        `/ready` is open even with a token, and an error's text may name the server's files."""
        running, failed = self.status()
        if running:
            return False, f"preparing {', '.join(running)} (first use)"
        if startup is not None and not startup.done():
            return False, "about to prepare the agents' first-use data (demo tables)"
        if failed:
            problems = "; ".join(f"could not prepare {title}" for title in failed)
            return True, f"{problems} (the first question that needs it tries again)"
        return True, None

    def _limit(self, work: FirstUse, estimate: float, until: float | None) -> float:
        """Seconds from now a question waits for `work`: until `patience` times its `estimate`
        (at least `floor_s`) after it started, and not past `until`; 0 once overdue."""
        with self._lock:
            since = self._since.get(work.key, time.perf_counter())
        end = since + max(self.patience * estimate, self.floor_s)
        if until is not None:
            end = min(end, until)
        return max(end - time.perf_counter(), 0.0)

    def _overdue(self, work: FirstUse, events: EventStream | None, announced: bool) -> None:
        """Say that a question stops waiting for `work`, which goes on for the next question."""
        with self._lock:
            since = self._since.get(work.key)
        took = f" after {time.perf_counter() - since:.1f} s" if since is not None else ""
        line = (
            f"Still preparing {work.title}{took}: asking the agents anyway "
            "(they load what they need themselves; the preparation goes on for the next question)"
        )
        if events is not None:
            events.emit(EventType.ACTION, line, details={"first_use": work.key, "overdue": True})
        if announced:
            self._say(line)

    def _start(self, work: FirstUse) -> tuple[Running, bool]:
        """The running preparation of `work.key`, started now if there is none (then True)."""
        with self._lock:
            running = self._running.get(work.key)
            if running is not None:
                return running[1], False
            self._since[work.key] = time.perf_counter()
            if inspect.iscoroutinefunction(work.run):  # bound to this loop (e.g. a session it opens)
                task = asyncio.ensure_future(self._run_async(work))
                task.add_done_callback(lambda t: t.cancelled() or t.exception())  # read even if no one waits
                self._running[work.key] = (work, task)
                return task, True
            future: concurrent.futures.Future[float] = concurrent.futures.Future()
            self._running[work.key] = (work, future)
        threading.Thread(target=self._run, args=(work, future), name=f"first-use {work.key}", daemon=True).start()
        return future, True

    def _run(self, work: FirstUse, future: concurrent.futures.Future[float]) -> None:
        future.set_running_or_notify_cancel()
        started = time.perf_counter()
        try:
            work.run()
        except BaseException as exc:
            self._finished(work, exc)
            future.set_exception(exc)
            return
        took = time.perf_counter() - started
        self._finished(work, None, took)
        future.set_result(took)

    async def _run_async(self, work: FirstUse) -> float:
        started = time.perf_counter()
        try:
            await work.run()  # type: ignore[misc]
        except asyncio.CancelledError:  # the orchestrator is closing: not a failure
            with self._lock:
                self._running.pop(work.key, None)
                self._since.pop(work.key, None)
            raise
        except BaseException as exc:
            self._finished(work, exc)
            raise
        took = time.perf_counter() - started
        self._finished(work, None, took)
        return took

    def _finished(self, work: FirstUse, failure: BaseException | None, took: float = 0.0) -> None:
        with self._lock:
            self._running.pop(work.key, None)
            self._since.pop(work.key, None)
            if failure is None:
                self._failed.pop(work.title, None)
                self._done[work.key] = took
            else:
                self._failed[work.title] = without_paths(f"{type(failure).__name__}: {failure}")
        if failure is not None:
            log.warning("preparing %s failed: %s: %s", work.title, type(failure).__name__, failure)

    def _say(self, line: str) -> None:
        log.info("%s", line)
        if self.notify is not None:
            self.notify(line)


async def _finished_within(future: Running, limit: float | None) -> float | None:
    """The seconds `future`'s preparation took, or None when it is not done within `limit`
    seconds (None: no limit). Neither a limit nor a cancelled caller stops the preparation."""
    waiting = future if isinstance(future, asyncio.Future) else asyncio.wrap_future(future)
    if waiting is not future:  # this caller's own copy: its failure is read even if no one waits
        waiting.add_done_callback(lambda f: f.cancelled() or f.exception())
    done, _ = await asyncio.wait([waiting], timeout=limit)
    return waiting.result() if done else None
