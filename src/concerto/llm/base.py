"""The LLM extension point: one async `complete` call, plus the errors it may raise."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field


class Message(BaseModel):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


class LLMResponse(BaseModel):
    """Text of one completion with its token counts and timing."""

    text: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0
    finish_reason: str | None = None


class LLMError(Exception):
    """The LLM could not give a usable answer (unreachable, timed out, invalid output)."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind  # "timeout", "unavailable", "invalid_output", "error"


class Usage(BaseModel):
    """Token counts summed over the calls of one query."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0
    failures: int = 0
    by_purpose: dict[str, int] = Field(default_factory=dict)


@runtime_checkable
class LLMClient(Protocol):
    """Anything that completes a chat; `json_schema` asks for JSON of that shape."""

    model: str

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> LLMResponse:
        """Return the completion, or raise `LLMError`."""
        ...
