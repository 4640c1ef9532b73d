"""The `echo` agent of 002_*.txt: text sent through the echo MCP server, returned exactly."""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult, FirstUse
from concerto.agents.task import TaskInput
from concerto.contracts.common import ErrorKind
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.packs.city.calls import call_tool, check_result, server_first_use
from concerto.packs.city.models import MAX_ECHO_CHARS, EchoData, EchoResult
from concerto.packs.city.temperature import AGENT_TIMEOUT_MS

# The exact grammar: `echo: TEXT` or `echo "TEXT"`; TEXT is kept as typed.
_STRUCTURED = re.compile(r'^\s*echo\s*(?::\s?(?P<plain>.*)|"(?P<quoted>.*)")\s*$', re.S | re.I)
# In a free question the text to echo follows the verb, optionally quoted.
_FREE = re.compile(r"\b(?:echo|repeat|say)\b(?:\s+back)?\s*:?\s*(?P<text>.+)$", re.S | re.I)


def check_echo_text(text: str) -> str:
    """Check the text before sending it (002_*.txt: non-empty, at most 1000 characters)."""
    if not text or not text.strip():
        raise AgentFailure(
            "Echo text must be non-empty.",
            error_type="invalid_input",
            kind=ErrorKind.VALIDATION,
            suggestion='Try: echo "hello world"',
        )
    if len(text) > MAX_ECHO_CHARS:
        raise AgentFailure(
            f"Echo text is {len(text)} characters; the maximum is {MAX_ECHO_CHARS}.",
            error_type="invalid_input",
            kind=ErrorKind.VALIDATION,
            suggestion="Send a shorter text.",
        )
    return text


def _strip_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


class EchoAgent(Agent):
    """Returns the given text unchanged via the echo MCP server: checks the whole pipeline."""

    info = AgentInfo(
        name="echo",
        pack="city",
        description="Repeats back exactly the text it is given, unchanged.",
        capabilities=[
            "Echo a piece of text back verbatim",
            "Check that the pipeline works end to end",
        ],
        inputs={"text": "Text to echo (1 to 1000 characters)"},
        outputs={"original_text": "The text received", "echo_text": "The same text, echoed"},
        examples=[
            'echo "hello world"',
            "repeat after me: good morning",
            "say back the words testing 1 2 3",
        ],
        default_timeout_ms=AGENT_TIMEOUT_MS,
        max_concurrency=2,
    )

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        return server_first_use(self, "echo")

    def match_structured(self, text: str) -> dict[str, Any] | None:
        m = _STRUCTURED.match(text)
        if m is None:
            return None
        value = m.group("plain") if m.group("plain") is not None else m.group("quoted")
        return {"text": value}

    async def prepare(self, question: str, context: AgentContext) -> dict[str, Any]:
        structured = self.match_structured(question)
        if structured is not None:
            return structured
        m = _FREE.search(question)
        return {"text": _strip_quotes(m.group("text")) if m else question}

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        text = check_echo_text(str(task.inputs.get("text", task.question)))
        raw = await call_tool(context, "echo", "echo", {"text": text})
        result = check_result(EchoResult, raw, "echo", "echo")
        if result.original_text != text:
            raise AgentFailure(
                "The echo MCP server answered for a different text than the one sent.",
                error_type="malformed_response",
                kind=ErrorKind.ERROR,
            )
        data = EchoData(**result.model_dump(), timestamp=context.now.astimezone(UTC))
        return AgentResult(
            output=data.model_dump(mode="json"),
            summary=f'Echo: "{data.echo_text}"',
            key_findings=[data.echo_text],
            entities={"text": text},
        )
