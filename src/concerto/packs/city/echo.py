"""The `echo` agent of 002_*.txt: returns the text it is given, exactly."""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from pydantic import BaseModel, Field, model_validator

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult
from concerto.agents.registry import register_agent
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType

MAX_ECHO_CHARS = 1000

# The exact grammar: `echo: TEXT` or `echo "TEXT"`; TEXT is kept as typed.
_STRUCTURED = re.compile(r'^\s*echo\s*(?::\s?(?P<plain>.*)|"(?P<quoted>.*)")\s*$', re.S | re.I)
# In a free question the text to echo follows the verb, optionally quoted.
_FREE = re.compile(r'\b(?:echo|repeat|say)\b(?:\s+back)?\s*:?\s*(?P<text>.+)$', re.S | re.I)


class EchoData(BaseModel):
    """Echo validation of 002_*.txt: non-empty, at most 1000 characters, returned unchanged."""

    original_text: str = Field(..., min_length=1, max_length=MAX_ECHO_CHARS)
    echo_text: str

    @model_validator(mode="after")
    def _must_match(self) -> EchoData:
        if self.echo_text != self.original_text:
            raise ValueError("echo response must match the original text exactly")
        return self


def echo_text(text: str) -> EchoData:
    """Validate `text` and return it echoed; raises `AgentFailure` on invalid input."""
    if not text or not text.strip():
        raise AgentFailure(
            "Echo text must be non-empty.", error_type="invalid_input", kind=ErrorKind.VALIDATION,
            suggestion='Try: echo "hello world"',
        )
    if len(text) > MAX_ECHO_CHARS:
        raise AgentFailure(
            f"Echo text is {len(text)} characters; the maximum is {MAX_ECHO_CHARS}.",
            error_type="invalid_input", kind=ErrorKind.VALIDATION,
            suggestion="Send a shorter text.",
        )
    return EchoData(original_text=text, echo_text=text)


def _strip_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


@register_agent
class EchoAgent(Agent):
    """Returns the given text unchanged: the reference agent for testing the pipeline."""

    info = AgentInfo(
        name="echo",
        pack="city",
        description="Repeats back exactly the text it is given, unchanged.",
        capabilities=["Echo a piece of text back verbatim", "Check that the pipeline works end to end"],
        inputs={"text": "Text to echo (1 to 1000 characters)"},
        outputs={"original_text": "The text received", "echo_text": "The same text, echoed"},
        examples=['echo "hello world"', "repeat after me: good morning", "say back the words testing 1 2 3"],
        default_timeout_ms=5000,
    )

    def match_structured(self, text: str) -> dict[str, Any] | None:
        m = _STRUCTURED.match(text)
        if m is None:
            return None
        value = m.group("plain") if m.group("plain") is not None else m.group("quoted")
        return {"text": value}

    async def prepare(self, request: str, context: AgentContext) -> dict[str, Any]:
        structured = self.match_structured(request)
        if structured is not None:
            return structured
        m = _FREE.search(request)
        return {"text": _strip_quotes(m.group("text")) if m else request}

    async def run(self, context: AgentContext, payload: dict[str, Any]) -> AgentResult:
        text = payload.get("text", payload.get("request", ""))
        await context.emit(EventType.ACTION, "Echoing text", {"chars": len(text)}, step=2)
        data = echo_text(text)
        out = data.model_dump() | {"timestamp": context.now.astimezone(UTC).isoformat()}
        return AgentResult(output=out, summary=f'Echo: "{data.echo_text}"', key_findings=[data.echo_text])
