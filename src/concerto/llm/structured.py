"""Structured output: ask any `LLMClient` for JSON of a pydantic model, validate, retry a little.

Small and local models often wrap JSON in code fences or a sentence, cut it off at
`max_tokens`, or miss a field. The JSON is dug out of whatever surrounds it, checked
by pydantic, and on failure the model is told what was wrong and asked again, a
bounded number of times, so that a caller can fall back to its deterministic path.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from concerto.llm.base import LLMClient, LLMError, LLMResponse, Message, Usage

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """Return the first JSON value in `text`: bare, inside a ``` fence, or inside prose.

    Raises `ValueError` when there is none.
    """
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    # Prose around the JSON: try every `{` (then every `[`) as a start; raw_decode
    # ignores whatever follows the value.
    decoder = json.JSONDecoder()
    for opener in "{[":
        start = stripped.find(opener)
        while start != -1:
            try:
                value, _ = decoder.raw_decode(stripped, start)
                return value
            except ValueError:
                start = stripped.find(opener, start + 1)
    raise ValueError("no JSON value found in the reply")


def _validation_problem(error: ValidationError) -> str:
    """Pydantic's errors in a few words per field, for the model to correct."""
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "(the object)"
        parts.append(f"{where}: {item['msg']}")
    more = len(error.errors()) - len(parts)
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _check(text: str, finish_reason: str | None, model_cls: type[T]) -> tuple[T | None, str]:
    """The validated model, or None and what was wrong with the reply."""
    if finish_reason == "length":
        return None, "the reply was cut off before the JSON was complete; answer more briefly"
    try:
        value = extract_json(text)
    except ValueError:
        return None, "the reply contained no JSON object"
    try:
        return model_cls.model_validate(value), ""
    except ValidationError as exc:
        return None, f"the JSON did not match the schema ({_validation_problem(exc)})"


def _record(usage: Usage | None, purpose: str, *, reply: LLMResponse | None = None, failed: bool = False) -> None:
    """Count one call (and its tokens and latency when it answered) under `purpose`."""
    if usage is None:
        return
    usage.calls += 1
    key = purpose or "other"
    usage.by_purpose[key] = usage.by_purpose.get(key, 0) + 1
    if failed:
        usage.failures += 1
    if reply is not None:
        usage.prompt_tokens += reply.prompt_tokens
        usage.completion_tokens += reply.completion_tokens
        usage.latency_ms += reply.latency_ms


async def complete_text(
    llm: LLMClient,
    messages: list[Message],
    *,
    usage: Usage | None = None,
    purpose: str = "",
    max_tokens: int = 512,
    temperature: float = 0.0,
) -> LLMResponse:
    """One free-text completion (a synthesis, a summary) with its call counted in `usage`.

    Errors are counted as failures and raised as they are.
    """
    try:
        reply = await llm.complete(messages, max_tokens=max_tokens, temperature=temperature)
    except Exception:
        _record(usage, purpose, failed=True)
        raise
    _record(usage, purpose, reply=reply)
    return reply


async def complete_structured(
    llm: LLMClient,
    messages: list[Message],
    model_cls: type[T],
    *,
    retries: int,
    usage: Usage | None = None,
    purpose: str = "",
    max_tokens: int = 512,
) -> T:
    """Ask `llm` for an instance of `model_cls`; at most `1 + retries` calls.

    The schema goes to the client as `json_schema` (the provider puts it in the
    prompt and, where the endpoint supports it, in `response_format`). A reply that
    is cut off (`finish_reason == "length"`), holds no JSON, or fails validation is
    answered with a message saying what was wrong; when the attempts run out,
    `LLMError(kind="invalid_output")` is raised. Errors from the client itself
    (timeout, unavailable, ...) are raised at once: asking again would not help.

    `usage` gets one call per attempt (under `by_purpose[purpose]`), its tokens and
    latency, and one failure per attempt that gave nothing usable.
    """
    schema = model_cls.model_json_schema()
    conversation = list(messages)
    problem = ""
    for _attempt in range(retries + 1):
        try:
            reply = await llm.complete(conversation, json_schema=schema, max_tokens=max_tokens)
        except Exception:
            _record(usage, purpose, failed=True)
            raise
        result, problem = _check(reply.text, reply.finish_reason, model_cls)
        _record(usage, purpose, reply=reply, failed=result is None)
        if result is not None:
            return result
        conversation = [
            *conversation,
            Message(role="assistant", content=reply.text[:2000]),
            Message(
                role="user",
                content=f"That was not valid: {problem}. "
                "Reply again with only one JSON object that matches the schema.",
            ),
        ]
    what = f" for {purpose}" if purpose else ""
    raise LLMError(
        f"the LLM gave no valid {model_cls.__name__}{what} in {retries + 1} attempt{'s' if retries else ''}: {problem}",
        kind="invalid_output",
    )
