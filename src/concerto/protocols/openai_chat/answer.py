"""The answer side of OpenAI's chat protocol: the data block, the completion, and the stream of
chunks (events as `reasoning_content`, then the answer)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, Field

from concerto.contracts.common import AgentName, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.events import Event
from concerto.contracts.orchestrator import (
    OrchestratorErrorResponse,
    OrchestratorOutput,
)
from concerto.orchestrator.engine import Orchestrator
from concerto.protocols.openai_chat.request import ErrorBody, ErrorDetail, Question, Result, tokens

log = logging.getLogger(__name__)

# -- the answer --------------------------------------------------------------------------------


class AgentData(BaseModel):
    """What one agent found: its output, without the latencies."""

    agent: AgentName
    status: ExecutionStatus
    summary: str | None = None
    data: dict[str, Any] = Field(default_factory=dict, description="The agent's output")
    errors: list[dict[str, Any]] = Field(default_factory=list, description="error_type, message, suggestion")


class AnswerError(BaseModel):
    category: str
    message: str
    retry_recommended: bool = False
    alternative_queries: list[str] = Field(default_factory=list)


class AnswerData(BaseModel):
    """The fenced JSON block after the answer's text: each agent's data, the findings and the
    follow-ups; the full output contract (timings, plan, routing) is the attachment's."""

    query_id: str
    status: Literal["completed", "failed"]
    agents: list[AgentData]
    key_findings: list[str] = Field(default_factory=list)
    follow_up_questions: list[str] = Field(default_factory=list)
    error: AnswerError | None = Field(None, description="Why the question got no answer (the error contract)")


def answer_text(result: Result) -> str:
    return result.response if isinstance(result, OrchestratorOutput) else result.error_message


def answer_data(result: Result) -> AnswerData:
    """The data block's content for an answer or for the error contract."""
    if isinstance(result, OrchestratorOutput):
        return AnswerData(
            query_id=result.query_id,
            status="completed",
            agents=[_agent_data(r) for r in result.agent_results],
            key_findings=result.key_findings,
            follow_up_questions=result.follow_up_questions,
        )
    return AnswerData(
        query_id=result.query_id,
        status="failed",
        agents=[_agent_data(r) for r in result.partial_results or []],
        error=AnswerError(
            category=result.error_category,
            message=result.error_message,
            retry_recommended=result.retry_recommended,
            alternative_queries=result.alternative_queries,
        ),
    )


def _agent_data(result: AgentDispatchResponse) -> AgentData:
    errors = [e.model_dump(mode="json", include={"error_type", "message", "suggestion"}) for e in result.errors]
    return AgentData(
        agent=result.agent, status=result.status, summary=result.summary, data=result.output, errors=errors
    )


def data_block(result: Result) -> str:
    """The answer's data as a fenced JSON block, its fence longer than any run of backticks inside."""
    text = answer_data(result).model_dump_json(indent=2, exclude_none=True)
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}json\n{text}\n{fence}"


class Usage(BaseModel):
    """Estimated token counts (four characters a token): Concerto's agents do not count tokens."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int

    @classmethod
    def of(cls, prompt: int, completion: int) -> Usage:
        return cls(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: None = None


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class ChatCompletion(BaseModel):
    """OpenAI's `chat.completion`: one choice, the answer (or the error contract's message) as content."""

    id: str = Field(..., description="`chatcmpl-` and the question's query_id")
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    concerto: OrchestratorOutput | OrchestratorErrorResponse | None = Field(
        None, description="The whole output (or error) contract, when the request asked for the attachment"
    )


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    reasoning_content: str | None = Field(None, description="A transparency event's title, on its own line")


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None


class ChatCompletionChunk(BaseModel):
    """One `data:` item of a stream, OpenAI's `chat.completion.chunk` with Concerto's two fields."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = Field(None, description="Only on the last chunk, with stream_options.include_usage")
    concerto_event: dict[str, Any] | None = Field(None, description="The transparency `Event` the chunk reports")
    concerto: dict[str, Any] | None = Field(None, description="The whole output contract, with the attachment")


def completion(q: Question, result: Result) -> ChatCompletion:
    text = answer_text(result)
    content = text if q.attachment else f"{text}\n\n{data_block(result)}"
    return ChatCompletion(
        id=f"chatcmpl-{q.input.query_id}",
        created=int(time.time()),
        model=q.model,
        choices=[Choice(message=AssistantMessage(content=content))],
        usage=Usage.of(q.prompt_tokens, tokens(content)),
        concerto=result if q.attachment else None,
    )


def event_text(event: Event) -> str:
    """An event as one line of the model's "thinking": its title, after the agent's name."""
    return event.title if event.source == "orchestrator" else f"{event.source}: {event.title}"


async def chunks(orchestrator: Orchestrator, q: Question) -> AsyncIterator[ChatCompletionChunk]:
    """The stream's chunks: the role, one per event while the question runs, the answer, its data
    block (or the attachment), the end, and the usage when asked for."""
    created = int(time.time())

    def chunk(choices: list[ChunkChoice], **extra: Any) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=f"chatcmpl-{q.input.query_id}", created=created, model=q.model, choices=choices, **extra
        )

    def delta(**fields: Any) -> list[ChunkChoice]:
        return [ChunkChoice(delta=Delta(**fields))]

    yield chunk(delta(role="assistant", content=""))
    result: Result | None = None
    line = ""
    async for item in orchestrator.stream(q.input, now=q.now):
        if isinstance(item, Event):
            text = event_text(item)
            said = "" if text == line else f"{text}\n"  # a state and its event often share a title
            line = text
            yield chunk(delta(reasoning_content=said), concerto_event=item.model_dump(mode="json"))
        else:
            result = item
    if result is None:  # orchestrator.stream always ends with the result
        raise RuntimeError("the question's stream ended without a result")
    text = answer_text(result)
    yield chunk(delta(content=text))
    if q.attachment:
        yield chunk(delta(), concerto=result.model_dump(mode="json"))
        said = text
    else:
        block = f"\n\n{data_block(result)}"
        yield chunk(delta(content=block))
        said = text + block
    yield chunk([ChunkChoice(delta=Delta(), finish_reason="stop")])
    if q.include_usage:
        yield chunk([], usage=Usage.of(q.prompt_tokens, tokens(said)))


async def sse(items: AsyncIterator[ChatCompletionChunk]) -> AsyncIterator[bytes]:
    """Server-sent `data:` lines ending with `data: [DONE]`; a fault midway is an `error` item,
    which OpenAI's clients raise."""
    try:
        async for item in items:
            yield f"data: {item.model_dump_json(exclude_none=True)}\n\n".encode()
    except Exception as exc:
        log.exception("a chat completion stream failed")
        detail = ErrorDetail(message=f"Internal error while streaming: {type(exc).__name__}", type="server_error")
        yield f"data: {ErrorBody(error=detail).model_dump_json()}\n\n".encode()
        return
    yield b"data: [DONE]\n\n"
