"""HTTP API: ask (JSON), ask with a live event stream (server-sent events), agents, health.

One `Orchestrator` lives for the app's lifetime, so agents keep their connections and
the embedding model stays loaded between questions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse

from concerto.agents.base import AgentInfo
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.settings import Settings

PAGE = Path(__file__).parent / "page.html"

# HTTP status per error category: the body is always the error contract.
STATUS = {
    "invalid_input": 422,
    "classification_failed": 422,
    "routing_failed": 500,
    "all_agents_failed": 502,
    "timeout": 504,
    "synthesis_failed": 500,
}


class AskRequest(BaseModel):
    """Body of POST /v1/ask: the `OrchestratorInput` fields plus an optional fixed clock.

    Fields are loosely typed here on purpose: the orchestrator validates them and answers
    with its own error contract, never FastAPI's generic 422 shape.
    """

    query: Any = Field(..., examples=["what's the weather and the time in Seattle?"])
    brand: str | None = None
    user_expertise: str = "analyst"
    output_format: str = "narrative"
    max_latency_ms: int | None = None
    now: datetime | None = Field(None, description="Fix the clock every agent sees (ISO 8601)")


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    agents: int
    llm: bool


def create_app(settings: Settings | None = None, orchestrator: Orchestrator | None = None) -> FastAPI:
    """The FastAPI app; pass an orchestrator to serve one built elsewhere (tests)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        orch = orchestrator or Orchestrator(settings)
        await orch.start()
        app.state.orchestrator = orch
        try:
            yield
        finally:
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
        message = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        body = OrchestratorErrorResponse(error_message=f"Invalid request — {message}", error_category="invalid_input")
        return JSONResponse(body.model_dump(mode="json"), status_code=422)

    def _orch(request: Request) -> Orchestrator:
        return request.app.state.orchestrator

    @app.post(
        "/v1/ask",
        response_model=OrchestratorOutput,
        responses={
            422: {"model": OrchestratorErrorResponse},
            502: {"model": OrchestratorErrorResponse},
            504: {"model": OrchestratorErrorResponse},
            500: {"model": OrchestratorErrorResponse},
        },
    )
    async def ask(body: AskRequest, request: Request) -> Any:
        """Answer a question; errors come back in the `OrchestratorErrorResponse` shape."""
        result = await _orch(request).ask(body.model_dump(exclude={"now"}), now=body.now)
        if isinstance(result, OrchestratorErrorResponse):
            return JSONResponse(result.model_dump(mode="json"), status_code=STATUS[result.error_category])
        return result

    async def _stream(
        orch: Orchestrator, payload: dict[str, Any], now: datetime | None
    ) -> AsyncIterator[dict[str, str]]:
        async for item in orch.stream(payload, now=now):
            if isinstance(item, OrchestratorOutput | OrchestratorErrorResponse):
                yield {"event": "result", "data": item.model_dump_json()}
            else:
                yield {"event": "event", "id": str(item.seq), "data": item.model_dump_json()}

    @app.post("/v1/ask/stream")
    async def ask_stream(body: AskRequest, request: Request) -> EventSourceResponse:
        """Server-sent events: one `event` per step, then one `result` with the output contract."""
        return EventSourceResponse(_stream(_orch(request), body.model_dump(exclude={"now"}), body.now))

    @app.get("/v1/ask/stream")
    async def ask_stream_get(
        request: Request,
        q: str = Query(..., description="The question"),
        output_format: str = "narrative",
        user_expertise: str = "analyst",
        now: datetime | None = None,
    ) -> EventSourceResponse:
        """The same stream for a browser's EventSource (GET only)."""
        payload = {"query": q, "output_format": output_format, "user_expertise": user_expertise}
        return EventSourceResponse(_stream(_orch(request), payload, now))

    @app.get("/v1/agents", response_model=list[AgentInfo])
    async def agents(request: Request) -> list[AgentInfo]:
        """Every loaded agent's declaration."""
        return _orch(request).registry.infos()

    @app.get("/health", response_model=Health)
    async def health(request: Request) -> Health:
        """Liveness, with the number of agents and whether an LLM is configured."""
        orch = _orch(request)
        return Health(agents=len(orch.registry), llm=orch.llm is not None)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> str:
        return PAGE.read_text(encoding="utf-8")

    return app
