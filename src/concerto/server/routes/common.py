"""What several core routers share: the HTTP status of each error category, the error
contract's documented responses, the body of a question (`AskRequest`) and the question it
carries, and the app's orchestrator."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from pydantic import Field

from concerto.contracts.clock import Now
from concerto.contracts.events import Event
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.server.runs import recall

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
# The error contract as JSON, for streaming endpoints (whose default media type is the stream's).
ERROR_JSON: dict[str, Any] = {
    "description": "The error contract",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OrchestratorErrorResponse"}}},
}
UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {"model": OrchestratorErrorResponse, "description": "The shared log (database) cannot be reached"}
}
StreamItem = Event | OrchestratorOutput | OrchestratorErrorResponse
CONVERSATION_ID = r"^[A-Za-z0-9_-]{1,128}$"


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


def orchestrator_of(request: Request) -> Orchestrator:
    """The app's one orchestrator (started with the app, `server/app.py`)."""
    orchestrator: Orchestrator = request.app.state.orchestrator
    return orchestrator


def _input(body: AskRequest) -> OrchestratorInput:
    return OrchestratorInput.model_validate(body.model_dump(exclude={"now", "conversation_id"}))


async def question(body: AskRequest, request: Request) -> OrchestratorInput:
    """The question of a body: with a `conversation_id` and no `conversation_history`, the
    conversation's stored turns are the history."""
    query = _input(body)
    if body.conversation_id and query.conversation_history is None:
        history = await recall(request.app.state.log, body.conversation_id)
        query = query.model_copy(update={"conversation_history": history or None})
    return query
