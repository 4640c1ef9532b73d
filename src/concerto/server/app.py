"""HTTP API: ask (JSON), ask with a live event stream (server-sent events), runs,
conversations, agents, health and readiness, and the routes and static files that packs add.

One `Orchestrator` lives for the app's lifetime, so agents keep their connections and
the embedding model stays loaded between questions. The request bodies are the input
contract itself (`OrchestratorInput`), so the API, the CLI and the Python API take the
same fields; every malformed request gets the error contract, never FastAPI's own shape.

What outlives a request (runs, conversations, the event log) is in the shared log
(`concerto.server.log`, on `concerto.store`), so several processes behind a load balancer serve one
conversation and one run (docs/scale-out.md).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParameter
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, BeforeValidator, Field, create_model
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from concerto.agents.base import AgentInfo
from concerto.agents.loader import Packs, load_packs
from concerto.agents.pack import resolve
from concerto.contracts.events import Event
from concerto.contracts.handoff import result_yaml
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator, validation_message
from concerto.server.docs import add_docs
from concerto.server.edge import BodyTooLarge, Edge
from concerto.server.errors import error_response, refusal
from concerto.server.log import ServerLog, Turn
from concerto.server.openapi import document_edge
from concerto.server.routes import every_route
from concerto.server.runs import (
    MAX_EVENT_ID,
    Run,
    Runs,
    RunStarted,
    RunStatus,
    UnknownRun,
    after_id,
    recall,
    remember,
    sse_fields,
)
from concerto.settings import Settings
from concerto.store import LogUnavailable

log = logging.getLogger(__name__)
PAGE = Path(__file__).parent / "static" / "index.html"  # the page; its modules, styles and vendored libraries beside it

# HTTP status per error category: the body is always the error contract.
STATUS = {
    "invalid_input": 422,
    "classification_failed": 422,
    "routing_failed": 500,
    "all_agents_failed": 502,
    "timeout": 504,
    "synthesis_failed": 500,
}
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": OrchestratorErrorResponse, "description": "The error contract"}
    for status in sorted(set(STATUS.values()))
}
YAML_RESPONSE: dict[str, Any] = {
    "description": "The output contract; with `Accept: application/yaml`, one `agent_to_orchestrator` "
    "YAML document per agent (001_*.txt's handoff)",
    "content": {"application/yaml": {"schema": {"type": "string"}}},
}
StreamItem = Event | OrchestratorOutput | OrchestratorErrorResponse
SSE_DESCRIPTION = (
    "Server-sent events: one `event` per step (data: an Event, id: its sequence number), "
    "then one `result` whose data is the output contract or the error contract."
)
# The error contract as JSON, for streaming endpoints (whose default media type is the stream's).
ERROR_JSON: dict[str, Any] = {
    "description": "The error contract",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OrchestratorErrorResponse"}}},
}
RUN_EVENTS_DESCRIPTION = (
    "Server-sent events of one run: `event` items (id: the event's sequence number), then one "
    "`result` (the output or error contract). Reconnect with `Last-Event-ID` to get only what you missed."
)
_BODY_NOT_PARSED = "There was an error parsing the body"  # FastAPI's words for a body that is not UTF-8 JSON
CONVERSATION_ID = r"^[A-Za-z0-9_-]{1,128}$"
UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {"model": OrchestratorErrorResponse, "description": "The shared log (database) cannot be reached"}
}
READY_WAIT_S = 0.5  # how long /ready waits for a warm-up about to finish before saying "not yet"


def _iso_datetime(value: Any) -> Any:
    """ISO 8601 text only: pydantic would also read a number (or numeric text) as a Unix time."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        if isinstance(value, str):
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        pass
    raise ValueError("give the date-time as ISO 8601 text, e.g. 2025-06-15T12:00:00Z")


Now = Annotated[
    datetime | None,
    BeforeValidator(_iso_datetime),
    Field(description="Fix the clock every agent sees (ISO 8601)"),
]


class AskRequest(OrchestratorInput):
    """Body of POST /v1/ask, /v1/ask/stream and /v1/runs: the input contract plus an optional
    fixed clock and conversation."""

    now: Now = None
    conversation_id: str | None = Field(
        None,
        pattern=CONVERSATION_ID,
        description="Keep the turns on the server: without `conversation_history`, this conversation's "
        "earlier turns are the history; the question and its answer are appended to it",
    )


def _stream_query_model() -> type[BaseModel]:
    """Query parameters of GET /v1/ask/stream: the input contract's scalar fields (`q` is the
    question), for a browser's EventSource, which can only send a GET."""
    fields: dict[str, Any] = {
        "query": (str, Field(..., alias="q", min_length=1, description="The question")),
        "now": (Now, None),
    }
    structured = OrchestratorInput.structured_fields()
    for name, field in OrchestratorInput.model_fields.items():
        if name not in fields and name not in structured:
            fields[name] = (field.annotation, field)
    return create_model("StreamQuery", **fields)


StreamQuery: Any = _stream_query_model()


class PackProblem(BaseModel):
    """A pack, or a part of one, that could not be loaded; the others work."""

    pack: str
    part: str
    error: str


class Availability(BaseModel):
    """Whether an agent can do its work now."""

    agent: str
    available: bool
    reason: str | None = Field(None, description="What to set up first, when it is not available")


class Conversation(BaseModel):
    """A conversation's turns, oldest first."""

    conversation_id: str
    turns: list[Turn]


class Check(BaseModel):
    ok: bool
    detail: str | None = None


class Readiness(BaseModel):
    """Whether this process can answer now, and each check's outcome."""

    ready: bool
    checks: dict[str, Check]


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    agents: int
    llm: bool
    failed_packs: list[PackProblem] = Field(default_factory=list, description="Packs that did not load, and why")


def create_app(settings: Settings | None = None, orchestrator: Orchestrator | None = None) -> FastAPI:
    """The FastAPI app; pass an orchestrator to serve one built elsewhere (tests)."""
    from concerto.log_redaction import install_log_redaction

    install_log_redaction()  # the server's log shows no secret, whoever logs it
    settings = orchestrator.settings if orchestrator else settings or Settings()
    packs = orchestrator.packs if orchestrator else load_packs(settings.agents)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        orch = orchestrator or Orchestrator(settings, packs=packs)
        await orch.start()
        app.state.orchestrator = orch
        app.state.log = ServerLog.of(orch.settings)
        app.state.runs = Runs(orch, app.state.log)
        warm = asyncio.create_task(_warm_up(orch), name="warm-up")
        app.state.router_loaded = asyncio.create_task(_load_router(orch, warm), name="load-router")
        app.state.first_use = asyncio.create_task(_first_use(orch, app.state.router_loaded), name="first-use")
        try:
            yield
        finally:
            warm.cancel()
            app.state.router_loaded.cancel()
            app.state.first_use.cancel()
            await app.state.runs.aclose()
            if orchestrator is None:
                await orch.aclose()

    app = FastAPI(
        title="Concerto",
        version="0.1.0",
        lifespan=lifespan,
        description="Plain-language questions answered by specialist agents.",
        docs_url=None,  # served by `add_docs`, from this server
        redoc_url=None,
    )
    app.add_middleware(Edge, settings=settings)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(f"Invalid request — {validation_message(exc.errors(), skip='body')}")

    @app.exception_handler(BodyTooLarge)
    async def _too_large(request: Request, exc: BodyTooLarge) -> Response:
        """In the shape of the route that was reading (OpenAI's, JSON-RPC's, or the error contract)."""
        return refusal(request.scope, exc.status_code, exc.detail)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == _BODY_NOT_PARSED:
            return _error("Invalid request — the body is not JSON in UTF-8")
        if exc.status_code == 405:  # Starlette lists the methods of the first route of the path only
            exc.headers = {**(exc.headers or {}), "Allow": ", ".join(_methods(app, request.url.path))}
        return await http_exception_handler(request, exc)

    def _orch(request: Request) -> Orchestrator:
        return request.app.state.orchestrator

    @app.post("/v1/ask", response_model=OrchestratorOutput, responses={**ERRORS, **UNAVAILABLE, 200: YAML_RESPONSE})
    async def ask(body: AskRequest, request: Request) -> Any:
        """Answer a question; errors come back in the `OrchestratorErrorResponse` shape. With
        `Accept: application/yaml`, each agent's result as the spec's `agent_to_orchestrator`
        YAML handoff (one document per agent)."""
        started = datetime.now(UTC)
        orchestrator = _orch(request)
        query = await _question(body, request)
        result = await orchestrator.ask(query, now=body.now)
        if body.conversation_id:
            await remember(request.app.state.log, body.conversation_id, query.query, query.query_id, result)
        if "application/yaml" in request.headers.get("accept", ""):
            settings = orchestrator.settings
            text = result_yaml(
                result,
                start_time=started.isoformat(),
                model_used=settings.llm_model if settings.llm_configured else None,
            )
            status = STATUS[result.error_category] if isinstance(result, OrchestratorErrorResponse) else 200
            return Response(text, media_type="application/yaml", status_code=status)
        if isinstance(result, OrchestratorErrorResponse):
            return JSONResponse(result.model_dump(mode="json"), status_code=STATUS[result.error_category])
        return result

    async def _stream(
        orch: Orchestrator, query: OrchestratorInput | dict[str, Any], now: datetime | None
    ) -> AsyncIterator[ServerSentEvent]:
        async for item in orch.stream(query, now=now):
            if isinstance(item, Event):
                yield ServerSentEvent(data=item, event="event", id=str(item.seq))
            else:
                yield ServerSentEvent(data=item, event="result")

    stream_responses: dict[int | str, dict[str, Any]] = {200: {"description": SSE_DESCRIPTION}, 422: ERROR_JSON}

    @app.post("/v1/ask/stream", response_class=EventSourceResponse, responses={**stream_responses, 503: ERROR_JSON})
    async def ask_stream(body: AskRequest, request: Request) -> AsyncIterable[StreamItem]:
        """Server-sent events: one `event` per step, then one `result` with the output contract."""
        query = await _question(body, request)
        async for event in _stream(_orch(request), query, body.now):
            yield event  # type: ignore[misc]  # a ServerSentEvent whose data is a StreamItem
            if body.conversation_id and event.event == "result":
                await remember(request.app.state.log, body.conversation_id, query.query, query.query_id, event.data)

    @app.get("/v1/ask/stream", response_class=EventSourceResponse, responses=stream_responses)
    async def ask_stream_get(request: Request, params: Annotated[StreamQuery, Query()]) -> AsyncIterable[StreamItem]:
        """The same stream for a browser's EventSource (GET only); a question the orchestrator
        refuses (e.g. too long) comes back as the stream's `result` with the error contract."""
        query: Any = params
        values = query.model_dump(exclude={"now"}, exclude_none=True)
        async for event in _stream(_orch(request), values, query.now):
            yield event  # type: ignore[misc]  # a ServerSentEvent whose data is a StreamItem

    @app.post("/v1/runs", status_code=202, response_model=RunStarted, responses={422: ERRORS[422], **UNAVAILABLE})
    async def start_run(body: AskRequest, request: Request) -> RunStarted:
        """Start a question and return at once; follow it at `events_url` (server-sent events that
        resume after `Last-Event-ID`) or poll `result_url`, from this process or any other that
        shares its database. The run goes on if readers leave."""
        run = request.app.state.runs.start(await _question(body, request), body.now, body.conversation_id)
        await run.recorded.wait()  # in the log before any other process can be asked about it
        return RunStarted(
            run_id=run.run_id,
            query_id=run.query_id,
            events_url=f"/v1/runs/{run.run_id}/events",
            result_url=f"/v1/runs/{run.run_id}",
        )

    @app.exception_handler(UnknownRun)
    async def _unknown_run(request: Request, exc: UnknownRun) -> JSONResponse:
        return _error(str(exc), status=404)

    @app.exception_handler(LogUnavailable)
    async def _log_unavailable(request: Request, exc: LogUnavailable) -> JSONResponse:
        log.warning("%s", exc)
        message = f"The server's database cannot be reached; try again shortly ({exc})"
        return error_response(503, message, category="synthesis_failed", retry=True)

    @app.get("/v1/runs/{run_id}", response_model=RunStatus, responses={404: ERRORS[422], **UNAVAILABLE})
    async def run_status(run: Annotated[Run, Depends(_run)]) -> RunStatus:
        """A run's state, and its result once it has one."""
        return run.describe()

    @app.get(
        "/v1/runs/{run_id}/events",
        response_class=EventSourceResponse,
        responses={
            200: {"description": RUN_EVENTS_DESCRIPTION},
            **{status: ERROR_JSON for status in (404, 422, 503)},
        },
    )
    async def run_events(
        run: Annotated[Run, Depends(_run)],
        request: Request,
        after: Annotated[int | None, Query(ge=0, le=MAX_EVENT_ID, description="Resume after this event id")] = None,
    ) -> AsyncIterable[StreamItem]:
        """Every event of the run after `Last-Event-ID` (or `after`), then new ones live, then
        the `result`."""
        runs: Runs = request.app.state.runs
        start = after_id(request.headers.get("last-event-id"), after)
        async for item in runs.follow(run, start):
            yield ServerSentEvent(data=item, **sse_fields(item, run))  # type: ignore[misc]

    conversation_responses: dict[int | str, dict[str, Any]] = {404: ERRORS[422], 422: ERRORS[422], **UNAVAILABLE}

    @app.get("/v1/conversations/{conversation_id}", response_model=Conversation, responses=conversation_responses)
    async def conversation(conversation_id: ConversationPath, request: Request) -> Any:
        """A conversation's turns (questions and answers asked with its `conversation_id`), oldest first."""
        turns = await asyncio.to_thread(request.app.state.log.turns, conversation_id)
        if not turns:
            return _error(f"no conversation '{conversation_id}'", status=404)
        return Conversation(conversation_id=conversation_id, turns=turns)

    @app.delete("/v1/conversations/{conversation_id}", status_code=204, responses=conversation_responses)
    async def forget_conversation(conversation_id: ConversationPath, request: Request) -> Response:
        """Remove a conversation's turns from the server."""
        if not await asyncio.to_thread(request.app.state.log.delete_conversation, conversation_id):
            return _error(f"no conversation '{conversation_id}'", status=404)
        return Response(status_code=204)

    @app.get("/v1/agents", response_model=list[AgentInfo])
    async def agents(request: Request) -> list[AgentInfo]:
        """Every loaded agent's declaration."""
        return _orch(request).registry.infos()

    @app.get("/v1/agents/availability", response_model=list[Availability])
    async def availability(request: Request) -> list[Availability]:
        """Whether each agent can do its work now, and if not what to set up (the agent still
        answers, with an error saying so)."""
        orch = _orch(request)
        out = []
        for name in orch.registry.names():
            reason = orch.agent(name).availability()
            out.append(Availability(agent=name, available=reason is None, reason=reason))
        return out

    @app.get("/health", response_model=Health)
    async def health(request: Request) -> Health:
        """Liveness, the number of agents, whether an LLM is configured, and packs that failed to load."""
        orch = _orch(request)
        problems = [PackProblem(**f.as_dict()) for f in orch.packs.failures]
        return Health(agents=len(orch.registry), llm=orch.llm is not None, failed_packs=problems)

    @app.get(
        "/ready",
        response_model=Readiness,
        responses={503: {"model": Readiness, "description": "Not ready yet, or no longer: the checks say why"}},
    )
    async def ready(request: Request) -> Any:
        """Readiness (for a load balancer): the router and its embedding model are loaded, the
        agents' first-use data (demo tables) is prepared, the database is reachable and, with
        `CONCERTO_EXECUTOR=ray`, so is the cluster. 503 with the checks while one fails;
        `/health` is the liveness check."""
        orch = _orch(request)
        checks = {
            "router": await _router_check(request.app.state.router_loaded),
            "database": await _log_check(request.app.state.log),
        }
        if orch.settings.executor == "ray":
            checks["cluster"] = await _cluster_check(orch.settings.ray_address)
        prepared, detail = orch.first_use.readiness(request.app.state.first_use)
        checks["first_use"] = Check(ok=prepared, detail=detail)
        body = Readiness(ready=all(c.ok for c in checks.values()), checks=checks)
        return body if body.ready else JSONResponse(body.model_dump(mode="json"), status_code=503)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> str:
        """The page (`server/static/`): a page, so a link from another site may open it."""
        return PAGE.read_text(encoding="utf-8")

    app.mount("/static", StaticFiles(directory=PAGE.parent), name="static")
    add_docs(app)
    _mount_packs(app, packs)
    document_edge(app, settings)
    return app


async def _warm_up(orch: Orchestrator) -> None:
    """Import in the background what the first question would otherwise import while its
    events stream: anyio's thread runner (FastAPI's for sync dependencies, imported on the
    event loop at first use) and the MCP SDK when an agent's pack runs MCP servers (the city
    pack's agents start theirs on first use). Without it the first echo question of a process
    delayed its events by 80-170 ms: sampled, the loop was importing anyio's backend (to open
    the run's event stream) while a worker thread imported the SDK, each waiting on the other
    for the GIL and the import lock (benchmarks/results/page.md)."""
    try:
        await run_in_threadpool(int)
        serving = {pack.name for pack in orch.packs if pack.mcp_servers}
        if any(info.pack in serving for info in orch.registry.infos()):
            from concerto.mcp.client import preload_sdk

            await preload_sdk()
    except Exception as exc:  # only a head start: the question that needs it meets the error and says so
        log.warning("warm-up failed: %s: %s", type(exc).__name__, exc)


async def _load_router(orch: Orchestrator, after: asyncio.Task[None]) -> str | None:
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


async def _first_use(orch: Orchestrator, after: asyncio.Task[str | None]) -> None:
    """Prepare the agents' first-use data (the demo tables) once the router is loaded, so no
    question waits for it; `/ready` says it is preparing meanwhile."""
    await asyncio.wait({after})
    await orch.prepare()


async def _router_check(loading: asyncio.Task[str | None]) -> Check:
    if not loading.done():
        await asyncio.wait({loading}, timeout=READY_WAIT_S)
    if not loading.done() or loading.cancelled():
        return Check(ok=False, detail="loading the router and its embedding model")
    problem = loading.result()
    return Check(ok=problem is None, detail=problem)


async def _log_check(shared: ServerLog) -> Check:
    try:
        await asyncio.wait_for(asyncio.to_thread(shared.ping), 5)
    except (LogUnavailable, TimeoutError) as exc:
        return Check(ok=False, detail=str(exc) or f"{shared.where} did not answer within 5 s")
    return Check(ok=True)


async def _cluster_check(address: str) -> Check:
    """Whether the Ray cluster answers at its address (a TCP connection: Ray's own client would
    retry for 30 s). An empty address is a local cluster started on first use."""
    from concerto.cluster.ray_runner import INSTALL_RAY, ray_missing

    if (problem := ray_missing()) is not None:
        return Check(ok=False, detail=f"{problem}. {INSTALL_RAY}")
    ray = sys.modules.get("ray")
    if not address or address == "auto":
        if ray is None or not ray.is_initialized():
            return Check(ok=True, detail="the cluster is joined (or started) with the first task sent to it")
        address = ray.get_runtime_context().gcs_address
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        if not parts.hostname or not parts.port:
            raise ValueError("not host:port or ray://host:port")
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, parts.port), 3)
        writer.close()
    except (OSError, TimeoutError, ValueError) as exc:
        return Check(ok=False, detail=f"the Ray cluster at {address} cannot be reached: {exc or 'no answer in 3 s'}")
    return Check(ok=True)


def _methods(app: FastAPI, path: str) -> list[str]:
    """Every method some route of `path` accepts."""
    found: set[str] = set()
    for route in every_route(app):
        regex, methods = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if regex is not None and methods and regex.match(path):
            found |= set(methods)
    return sorted(found)


def _input(body: AskRequest) -> OrchestratorInput:
    return OrchestratorInput.model_validate(body.model_dump(exclude={"now", "conversation_id"}))


async def _question(body: AskRequest, request: Request) -> OrchestratorInput:
    """The question of a body: with a `conversation_id` and no `conversation_history`, the
    conversation's stored turns are the history."""
    query = _input(body)
    if body.conversation_id and query.conversation_history is None:
        history = await recall(request.app.state.log, body.conversation_id)
        query = query.model_copy(update={"conversation_history": history or None})
    return query


async def _run(run_id: str, request: Request) -> Run:
    """The run of the path, from this process or the shared log (resolved before a stream
    starts, so an unknown one is a 404)."""
    run: Run = await request.app.state.runs.find(run_id)
    return run


ConversationPath = Annotated[str, PathParameter(pattern=CONVERSATION_ID, description="A conversation's id")]


def _error(message: str, status: int = STATUS["invalid_input"]) -> JSONResponse:
    return error_response(status, message, category="invalid_input")


def _mount_packs(app: FastAPI, packs: Packs) -> None:
    """Each pack's routes (an APIRouter, or a function returning one) and static directories.

    A route that cannot be imported or a directory that does not exist is reported as
    that pack's failure (`/health`); the rest of the app is served.
    """
    for pack in packs:
        for ref in pack.routes:
            try:
                found = resolve(ref, f"routes of pack {pack.name}")
                router = found() if inspect.isfunction(found) else found
                app.include_router(router)
            except Exception as exc:
                packs.fail(pack.name, "routes", exc)
        for url, directory in pack.static.items():
            if not Path(directory).is_dir():
                packs.fail(pack.name, "static", f"{directory} is not a directory")
                continue
            app.mount(url, StaticFiles(directory=directory), name=f"{pack.name}:{url}")
