"""Asking: `POST /v1/ask` (one answer, JSON or the spec's YAML handoff) and `/v1/ask/stream`
(server-sent events: each step, then the answer), by POST with the input contract or by GET
with its scalar fields for a browser's EventSource."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field, create_model

from concerto.contracts.clock import Now
from concerto.contracts.events import Event
from concerto.contracts.handoff import result_yaml
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.server.routes.common import (
    ERROR_JSON,
    ERRORS,
    STATUS,
    UNAVAILABLE,
    AskRequest,
    StreamItem,
    orchestrator_of,
    question,
)
from concerto.server.runs import remember

router = APIRouter()

YAML_RESPONSE: dict[str, Any] = {
    "description": "The output contract; with `Accept: application/yaml`, one `agent_to_orchestrator` "
    "YAML document per agent (001_*.txt's handoff)",
    "content": {"application/yaml": {"schema": {"type": "string"}}},
}
SSE_DESCRIPTION = (
    "Server-sent events: one `event` per step (data: an Event, id: its sequence number), "
    "then one `result` whose data is the output contract or the error contract."
)
STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {200: {"description": SSE_DESCRIPTION}, 422: ERROR_JSON}


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


@router.post("/v1/ask", response_model=OrchestratorOutput, responses={**ERRORS, **UNAVAILABLE, 200: YAML_RESPONSE})
async def ask(body: AskRequest, request: Request) -> Any:
    """Answer a question; errors come back in the `OrchestratorErrorResponse` shape. With
    `Accept: application/yaml`, each agent's result as the spec's `agent_to_orchestrator`
    YAML handoff (one document per agent)."""
    started = datetime.now(UTC)
    orchestrator = orchestrator_of(request)
    query = await question(body, request)
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


@router.post("/v1/ask/stream", response_class=EventSourceResponse, responses={**STREAM_RESPONSES, 503: ERROR_JSON})
async def ask_stream(body: AskRequest, request: Request) -> AsyncIterable[StreamItem]:
    """Server-sent events: one `event` per step, then one `result` with the output contract."""
    query = await question(body, request)
    async for event in _stream(orchestrator_of(request), query, body.now):
        yield event  # type: ignore[misc]  # a ServerSentEvent whose data is a StreamItem
        if body.conversation_id and event.event == "result":
            await remember(request.app.state.log, body.conversation_id, query.query, query.query_id, event.data)


@router.get("/v1/ask/stream", response_class=EventSourceResponse, responses=STREAM_RESPONSES)
async def ask_stream_get(request: Request, params: Annotated[StreamQuery, Query()]) -> AsyncIterable[StreamItem]:
    """The same stream for a browser's EventSource (GET only); a question the orchestrator
    refuses (e.g. too long) comes back as the stream's `result` with the error contract."""
    query: Any = params
    values = query.model_dump(exclude={"now"}, exclude_none=True)
    async for event in _stream(orchestrator_of(request), values, query.now):
        yield event  # type: ignore[misc]  # a ServerSentEvent whose data is a StreamItem
