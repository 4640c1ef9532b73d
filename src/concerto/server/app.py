"""HTTP API: `create_app` assembles the app from its parts, and does nothing else.

- the settings and the packs, and one `Orchestrator` for the app's lifetime (started with the
  app), so agents keep their connections and the embedding model stays loaded between
  questions; the shared log and the runs beside it (`app.state`, which every route reads);
- the edge in front of every route (`server/edge.py`) and the error handlers
  (`server/handlers.py`): every malformed request gets the error contract, never FastAPI's
  own shape;
- the core's routes (`server/routes/`) and page, mounted exactly as a pack's routes and
  static files are (the core is declared as a `Pack`, `concerto/core.py`), then `/docs`,
  then every pack's;
- what the OpenAPI document says of the edge (`server/openapi.py`).

What outlives a request (runs, conversations, the event log) is in the shared log
(`server/log.py` and `orchestrator/log.py` on `concerto.store`), so several processes behind a load balancer serve one
conversation and one run (docs/scale-out.md).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from concerto.agents.loader import Packs, load_packs
from concerto.agents.pack import Pack, PackError, resolve
from concerto.core import pack as core
from concerto.orchestrator.engine import Orchestrator
from concerto.server import startup
from concerto.server.docs import add_docs
from concerto.server.edge import Edge
from concerto.server.handlers import add_error_handlers
from concerto.server.log import ServerLog
from concerto.server.openapi import document_edge
from concerto.server.runs import Runs
from concerto.settings import Settings

Fail = Callable[[str, str, BaseException | str], None]


def create_app(settings: Settings | None = None, orchestrator: Orchestrator | None = None) -> FastAPI:
    """The FastAPI app; pass an orchestrator to serve one built elsewhere (tests)."""
    from concerto.log_redaction import install_log_redaction

    install_log_redaction()  # the server's log shows no secret, whoever logs it
    settings = orchestrator.settings if orchestrator else settings or Settings()
    packs = orchestrator.packs if orchestrator else load_packs(settings.agents)
    app = FastAPI(
        title="Concerto",
        version="0.1.0",
        lifespan=_lifespan(settings, packs, orchestrator),
        description="Plain-language questions answered by specialist agents.",
        docs_url=None,  # served by `add_docs`, from this server
        redoc_url=None,
    )
    app.add_middleware(Edge, settings=settings)
    add_error_handlers(app)
    mount(app, core, _core_broken)
    add_docs(app)
    for pack in packs:
        mount(app, pack, packs.fail)
    document_edge(app, settings)
    return app


def _lifespan(
    settings: Settings, packs: Packs, orchestrator: Orchestrator | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's life: its orchestrator (`orchestrator`, else one made here and closed with the
    app), the shared log and the runs in `app.state`, and the start-up work (`server/startup.py`)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        orch = orchestrator or Orchestrator(settings, packs=packs)
        await orch.start()
        app.state.orchestrator = orch
        app.state.log = ServerLog.of(orch.settings)
        app.state.runs = Runs(orch, app.state.log)
        tables = asyncio.create_task(startup.register_tables(app.state.log), name="register-tables")
        warm, app.state.router_loaded, app.state.first_use = startup.start(orch)
        try:
            yield
        finally:
            tables.cancel()
            warm.cancel()
            app.state.router_loaded.cancel()
            app.state.first_use.cancel()
            await app.state.runs.aclose()
            if orchestrator is None:
                await orch.aclose()

    return lifespan


def mount(app: FastAPI, pack: Pack, fail: Fail) -> None:
    """A pack's routes (an APIRouter, or a function returning one) and static directories.

    A route that cannot be imported or a directory that does not exist is `fail`ed: a pack's
    is reported as that pack's failure (`/health`) and the rest of the app is served.
    """
    for ref in pack.routes:
        try:
            found = resolve(ref, f"routes of pack {pack.name}")
            router = found() if inspect.isfunction(found) else found
            app.include_router(router)
        except Exception as exc:
            fail(pack.name, "routes", exc)
    for url, directory in pack.static.items():
        if not Path(directory).is_dir():
            fail(pack.name, "static", f"{directory} is not a directory")
            continue
        app.mount(url, StaticFiles(directory=directory), name=f"{pack.name}:{url}")


def _core_broken(pack: str, part: str, error: BaseException | str) -> None:
    """The core's own routes are not optional: one that cannot be mounted is a bug, raised."""
    raise PackError(f"the core's {part} cannot be mounted: {error}") from (
        error if isinstance(error, BaseException) else None
    )
