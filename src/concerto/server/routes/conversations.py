"""Conversations kept on the server: `GET /v1/conversations/{conversation_id}` (its turns,
oldest first) and `DELETE` (forget them). Turns are added by asking with a `conversation_id`
(`routes/ask.py`, `routes/runs.py`)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParameter
from fastapi.responses import Response
from pydantic import BaseModel

from concerto.server.errors import error_response
from concerto.server.log import Turn
from concerto.server.routes.common import CONVERSATION_ID, ERRORS, UNAVAILABLE

router = APIRouter()

ConversationPath = Annotated[str, PathParameter(pattern=CONVERSATION_ID, description="A conversation's id")]
RESPONSES: dict[int | str, dict[str, Any]] = {404: ERRORS[422], 422: ERRORS[422], **UNAVAILABLE}


class Conversation(BaseModel):
    """A conversation's turns, oldest first."""

    conversation_id: str
    turns: list[Turn]


@router.get("/v1/conversations/{conversation_id}", response_model=Conversation, responses=RESPONSES)
async def conversation(conversation_id: ConversationPath, request: Request) -> Any:
    """A conversation's turns (questions and answers asked with its `conversation_id`), oldest first."""
    turns = await asyncio.to_thread(request.app.state.log.turns, conversation_id)
    if not turns:
        return error_response(404, f"no conversation '{conversation_id}'")
    return Conversation(conversation_id=conversation_id, turns=turns)


@router.delete("/v1/conversations/{conversation_id}", status_code=204, responses=RESPONSES)
async def forget_conversation(conversation_id: ConversationPath, request: Request) -> Response:
    """Remove a conversation's turns from the server."""
    if not await asyncio.to_thread(request.app.state.log.delete_conversation, conversation_id):
        return error_response(404, f"no conversation '{conversation_id}'")
    return Response(status_code=204)
