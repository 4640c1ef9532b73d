"""HTTP API: ask (JSON), ask with a live event stream (server-sent events), agents, health,
and the routes and static files that packs add.

One `Orchestrator` lives for the app's lifetime, so agents keep their connections and
the embedding model stays loaded between questions. The request bodies are the input
contract itself (`OrchestratorInput`), so the API, the CLI and the Python API take the
same fields; every malformed request gets the error contract, never FastAPI's own shape.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
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
from concerto.server.runs import Run, Runs, RunStarted, RunStatus, UnknownRun, after_id, sse_fields
from concerto.settings import Settings

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
    """Body of POST /v1/ask and /v1/ask/stream: the input contract plus an optional fixed clock."""

    now: Now = None


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


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    agents: int
    llm: bool
    failed_packs: list[PackProblem] = Field(default_factory=list, description="Packs that did not load, and why")


def create_app(settings: Settings | None = None, orchestrator: Orchestrator | None = None) -> FastAPI:
    """The FastAPI app; pass an orchestrator to serve one built elsewhere (tests)."""
    settings = orchestrator.settings if orchestrator else settings or Settings()
    packs = orchestrator.packs if orchestrator else load_packs(settings.agents)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        orch = orchestrator or Orchestrator(settings, packs=packs)
        await orch.start()
        app.state.orchestrator = orch
        app.state.runs = Runs(orch)
        warm = asyncio.create_task(_warm_up(orch), name="warm-up")
        try:
            yield
        finally:
            warm.cancel()
            await app.state.runs.aclose()
            if orchestrator is None:
                await orch.aclose()

    app = FastAPI(
        title="Concerto",
        version="0.1.0",
        lifespan=lifespan,
        description="Plain-language questions answered by specialist agents.",
    )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(f"Invalid request — {validation_message(exc.errors(), skip='body')}")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == _BODY_NOT_PARSED:
            return _error("Invalid request — the body is not JSON in UTF-8")
        if exc.status_code == 405:  # Starlette lists the methods of the first route of the path only
            exc.headers = {**(exc.headers or {}), "Allow": ", ".join(_methods(app, request.url.path))}
        return await http_exception_handler(request, exc)

    def _orch(request: Request) -> Orchestrator:
        return request.app.state.orchestrator

    @app.post("/v1/ask", response_model=OrchestratorOutput, responses={**ERRORS, 200: YAML_RESPONSE})
    async def ask(body: AskRequest, request: Request) -> Any:
        """Answer a question; errors come back in the `OrchestratorErrorResponse` shape. With
        `Accept: application/yaml`, each agent's result as the spec's `agent_to_orchestrator`
        YAML handoff (one document per agent)."""
        started = datetime.now(UTC)
        orchestrator = _orch(request)
        result = await orchestrator.ask(_input(body), now=body.now)
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

    @app.post("/v1/ask/stream", response_class=EventSourceResponse, responses=stream_responses)
    async def ask_stream(body: AskRequest, request: Request) -> AsyncIterable[StreamItem]:
        """Server-sent events: one `event` per step, then one `result` with the output contract."""
        async for event in _stream(_orch(request), _input(body), body.now):
            yield event  # type: ignore[misc]  # a ServerSentEvent whose data is a StreamItem

    @app.get("/v1/ask/stream", response_class=EventSourceResponse, responses=stream_responses)
    async def ask_stream_get(request: Request, params: Annotated[StreamQuery, Query()]) -> AsyncIterable[StreamItem]:
        """The same stream for a browser's EventSource (GET only); a question the orchestrator
        refuses (e.g. too long) comes back as the stream's `result` with the error contract."""
        query: Any = params
        values = query.model_dump(exclude={"now"}, exclude_none=True)
        async for event in _stream(_orch(request), values, query.now):
            yield event  # type: ignore[misc]  # a ServerSentEvent whose data is a StreamItem

    @app.post("/v1/runs", status_code=202, response_model=RunStarted, responses={422: ERRORS[422]})
    async def start_run(body: AskRequest, request: Request) -> RunStarted:
        """Start a question and return at once; follow it at `events_url` (server-sent events that
        resume after `Last-Event-ID`) or poll `result_url`. The run goes on if readers leave."""
        run = request.app.state.runs.start(_input(body), body.now)
        return RunStarted(
            run_id=run.run_id,
            query_id=run.query_id,
            events_url=f"/v1/runs/{run.run_id}/events",
            result_url=f"/v1/runs/{run.run_id}",
        )

    @app.exception_handler(UnknownRun)
    async def _unknown_run(request: Request, exc: UnknownRun) -> JSONResponse:
        return _error(str(exc), status=404)

    @app.get("/v1/runs/{run_id}", response_model=RunStatus, responses={404: ERRORS[422]})
    async def run_status(run: Annotated[Run, Depends(_run)]) -> RunStatus:
        """A run's state, and its result once it has one."""
        return run.describe()

    @app.get(
        "/v1/runs/{run_id}/events",
        response_class=EventSourceResponse,
        responses={
            200: {"description": RUN_EVENTS_DESCRIPTION},
            **{status: ERROR_JSON for status in (404, 422)},
        },
    )
    async def run_events(
        run: Annotated[Run, Depends(_run)],
        request: Request,
        after: Annotated[int | None, Query(ge=0, description="Resume after this event id")] = None,
    ) -> AsyncIterable[StreamItem]:
        """Every event of the run after `Last-Event-ID` (or `after`), then new ones live, then
        the `result`."""
        runs: Runs = request.app.state.runs
        start = after_id(request.headers.get("last-event-id"), after)
        async for item in runs.follow(run, start):
            yield ServerSentEvent(data=item, **sse_fields(item, run))  # type: ignore[misc]

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

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> str:
        return PAGE.read_text(encoding="utf-8")

    app.mount("/static", StaticFiles(directory=PAGE.parent), name="static")
    _mount_packs(app, packs)
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


def _methods(app: FastAPI, path: str) -> list[str]:
    """Every method some route of `path` accepts."""
    found: set[str] = set()
    routes = list(app.routes)
    while routes:
        route = routes.pop()
        nested = getattr(route, "original_router", None)  # a router included whole (packs' routes)
        if nested is not None:
            routes.extend(nested.routes)
            continue
        regex, methods = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if regex is not None and methods and regex.match(path):
            found |= set(methods)
    return sorted(found)


def _input(body: AskRequest) -> OrchestratorInput:
    return OrchestratorInput.model_validate(body.model_dump(exclude={"now"}))


def _run(run_id: str, request: Request) -> Run:
    """The run of the path (resolved before a stream starts, so an unknown one is a 404)."""
    run: Run = request.app.state.runs.get(run_id)
    return run


def _error(message: str, status: int = STATUS["invalid_input"]) -> JSONResponse:
    body = OrchestratorErrorResponse(error_message=message, error_category="invalid_input")
    return JSONResponse(body.model_dump(mode="json"), status_code=status)


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
