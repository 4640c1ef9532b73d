"""What the app does in the background as it starts, so that no question waits for it:
registering the shared log's tables; the warm-up (imports the first question would otherwise
make while its events stream), then the router and its embedding model, then the agents'
first-use data. `/ready`
(`routes/health.py`) reports the last two.

The server names no pack: what a pack's agents need imported is the pack's own `warm_up`
(`Pack.warm_up`; the city pack's is the MCP SDK, whose stdio servers its agents start)."""

from __future__ import annotations

import asyncio
import inspect
import logging

from starlette.concurrency import run_in_threadpool

from concerto.agents.pack import Pack, resolve
from concerto.orchestrator.engine import Orchestrator
from concerto.server.log import ServerLog
from concerto.store import LogUnavailable

log = logging.getLogger(__name__)


def start(orch: Orchestrator) -> tuple[asyncio.Task[None], asyncio.Task[str | None], asyncio.Task[None]]:
    """Start the three background steps, one after the other: the warm-up, loading the router
    (its outcome: what went wrong, or None), preparing first use."""
    warm = asyncio.create_task(warm_up(orch), name="warm-up")
    router_loaded = asyncio.create_task(load_router(orch, warm), name="load-router")
    first_use = asyncio.create_task(prepare_first_use(orch, router_loaded), name="first-use")
    return warm, router_loaded, first_use


async def register_tables(shared: ServerLog) -> None:
    """Register the runs' and turns' tables (with their pruning) at start-up, not at the first
    run or conversation: from then on this process prunes them as it writes events, so turns
    (the users' text) are kept no longer than `CONCERTO_EVENTS_MAX_AGE_DAYS` even by a server
    that answers no conversation after a restart. A database that cannot be reached yet is
    what `/ready` reports; the first use registers them then. A SQLite file nothing has
    written yet is left unmade (nothing to prune)."""
    if shared.database.unmade():
        return
    try:
        await asyncio.to_thread(shared.create_tables)
    except LogUnavailable as exc:
        log.warning("the shared log's tables are not registered yet: %s", exc)


async def warm_up(orch: Orchestrator) -> None:
    """Import in the background what the first question would otherwise import while its
    events stream: anyio's thread runner (FastAPI's for sync dependencies, imported on the
    event loop at first use) and what each pack of the loaded agents declares (`Pack.warm_up`:
    the city pack's agents start MCP servers on first use, so it imports the MCP SDK). Without
    it the first echo question of a process delayed its events by 80-170 ms: sampled, the loop
    was importing anyio's backend (to open the run's event stream) while a worker thread
    imported the SDK, each waiting on the other for the GIL and the import lock
    (benchmarks/results/page.md)."""
    try:
        await run_in_threadpool(int)
    except Exception as exc:  # only a head start: the question that needs it meets the error and says so
        log.warning("warm-up failed: %s: %s", type(exc).__name__, exc)
    for pack in orch.packs.serving(orch.registry):
        if pack.warm_up is not None:
            await _warm_up_pack(pack)


async def _warm_up_pack(pack: Pack) -> None:
    """Run a pack's `warm_up`; a failure is logged, the other packs' still run."""
    try:
        done = resolve(pack.warm_up, f"warm_up of pack {pack.name}")()
        if inspect.isawaitable(done):
            await done
    except Exception as exc:
        log.warning("warm-up failed: pack %s: %s: %s", pack.name, type(exc).__name__, exc)


async def load_router(orch: Orchestrator, after: asyncio.Task[None]) -> str | None:
    """Build the router (on the loop, as questions do: a few ms) and load its embedding model and
    vectors (in a thread), after the warm-up; what went wrong, or None (`/ready` reports it)."""
    await asyncio.wait({after})
    try:
        router = orch.router
        if router.index is not None:
            await asyncio.to_thread(router.index.rank, "warm up")
    except Exception as exc:
        log.warning("loading the router failed: %s: %s", type(exc).__name__, exc)
        return f"the router could not be loaded: {type(exc).__name__}: {exc}"
    return None


async def prepare_first_use(orch: Orchestrator, after: asyncio.Task[str | None]) -> None:
    """Prepare the agents' first-use data (the demo tables) once the router is loaded, so no
    question waits for it; `/ready` says it is preparing meanwhile."""
    await asyncio.wait({after})
    await orch.prepare()
