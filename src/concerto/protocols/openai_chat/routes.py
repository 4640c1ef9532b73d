"""OpenAI's chat protocol on `concerto serve`: `GET /v1/models` and `POST /v1/chat/completions`.

Chat front-ends and SDKs that speak the protocol use Concerto as a "model" named `concerto`
(or `concerto-executive`, `concerto-analyst`, `concerto-data-scientist`: the same model,
writing for that reader). The last user message is the question; the user and assistant
turns before it become `conversation_history`, system and developer messages the question's
`context`; a `concerto` object (top level, e.g. the official client's `extra_body`, or in
`metadata`) carries the other `OrchestratorInput` fields.

The answer is the message's content, followed by the answer's data as a fenced JSON block
(`AnswerData`: each agent's output, without the latencies, plan and routing); with
`{"concerto": {"attachment": true}}` the content is the text alone and the whole output
contract travels in the response's `concerto` field. A stream sends every transparency event
as a chunk while the question runs (its title in `delta.reasoning_content`, which chat
front-ends show as the model's thinking, the `Event` itself in `concerto_event`), then the
answer, then the data block or the attachment.

A question the orchestrator could not answer (the error contract) is still a chat
completion, its message the content: a chat front-end shows it. Only a request the protocol
refuses gets OpenAI's error shape, `{"error": {message, type, param, code}}`, with its
status: this router's routes answer their own refusals, since the app's handlers answer in
Concerto's error contract, which OpenAI clients cannot read.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel

from concerto.orchestrator.engine import Orchestrator
from concerto.protocols.openai_chat.answer import ChatCompletion, ChatCompletionChunk, chunks, completion, sse
from concerto.protocols.openai_chat.request import (
    BASE_MODEL,
    ERRORS,
    MODELS,
    ChatCompletionRequest,
    OpenAIRoute,
    Refusal,
    question,
)

_CREATED = int(time.time())  # the models' `created`: when this server started

# -- the routes --------------------------------------------------------------------------------


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = _CREATED
    owned_by: str = BASE_MODEL


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


def _inline(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema with the models it nests written in place: a stream item's schema
    cannot name components that no route's body or response registers."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def expand(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return expand(defs[node["$ref"].rsplit("/", 1)[1]])
            return {key: expand(value) for key, value in node.items()}
        return [expand(value) for value in node] if isinstance(node, list) else node

    return dict(expand(schema))


CHAT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A `chat.completion`, the answer's data as a fenced JSON block (`AnswerData`) after its "
        "text. With `stream: true`, server-sent `data:` items: `chat.completion.chunk`s, one per transparency "
        "event (`delta.reasoning_content`, `concerto_event`), the answer (`delta.content`), the data block (or "
        "the `concerto` attachment), `finish_reason: stop`, the usage when asked for, then `[DONE]` (or an "
        "`error` item if this endpoint fails midway).",
        "content": {
            "text/event-stream": {
                "itemSchema": {
                    "type": "object",
                    "required": ["data"],
                    "properties": {
                        "data": {
                            "anyOf": [
                                {"const": "[DONE]"},
                                {
                                    "type": "string",
                                    "contentMediaType": "application/json",
                                    "contentSchema": {
                                        "anyOf": [
                                            _inline(ChatCompletionChunk),
                                            {"$ref": "#/components/schemas/ErrorBody"},
                                        ]
                                    },
                                },
                            ]
                        }
                    },
                }
            }
        },
    },
    **ERRORS,
}

router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute)


@router.get("/models", response_model=ModelList, responses={"4XX": ERRORS["4XX"]})
async def list_models() -> ModelList:
    """The models: `concerto`, and the same model writing for one reader (`user_expertise`)."""
    return ModelList(data=[ModelCard(id=name) for name in MODELS])


@router.get("/models/{model}", response_model=ModelCard, responses={404: ERRORS[404], "4XX": ERRORS["4XX"]})
async def get_model(model: str) -> ModelCard:
    """One model, or `model_not_found`."""
    if model not in MODELS:
        raise Refusal(404, f"The model `{model}` does not exist.", param="model", code="model_not_found")
    return ModelCard(id=model)


@router.post("/chat/completions", response_model=ChatCompletion, responses=CHAT_RESPONSES)
async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
    """Answer the conversation's last user message (OpenAI's chat protocol), streaming or not."""
    q = question(body)
    orchestrator: Orchestrator = request.app.state.orchestrator
    if body.stream:
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(sse(chunks(orchestrator, q)), media_type="text/event-stream", headers=headers)
    result = await orchestrator.ask(q.input, now=q.now)
    reply = completion(q, result)
    return JSONResponse(reply.model_dump(mode="json", exclude={"concerto"} if reply.concerto is None else None))
