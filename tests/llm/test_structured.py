"""Structured output over a scripted model: extraction, validation, bounded retry, usage."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from concerto.llm import (
    LLMError,
    LLMResponse,
    Message,
    Usage,
    complete_structured,
    complete_text,
)
from concerto.llm.structured import extract_json
from concerto.testing import ScriptedLLM


class Pick(BaseModel):
    agent: Literal["temperature", "datetime", "echo"]
    confidence: float = Field(ge=0, le=1)


PROMPT = [Message(role="user", content="Which agent answers 'what time is it in Paris'?")]
VALID = '{"agent": "datetime", "confidence": 0.9}'


async def test_valid_json_is_parsed() -> None:
    llm = ScriptedLLM([VALID])
    usage = Usage()
    pick = await complete_structured(llm, PROMPT, Pick, retries=1, usage=usage, purpose="route")
    assert pick == Pick(agent="datetime", confidence=0.9)
    assert len(llm.calls) == 1
    assert usage.calls == 1 and usage.failures == 0
    assert usage.by_purpose == {"route": 1}
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{VALID}\n```",
        f"```\n{VALID}\n```",
        f"Sure! Here is the answer:\n\n```json\n{VALID}\n```\nHope this helps.",
        f"The answer is {VALID} as requested.",
        f"  {VALID}  \n",
    ],
    ids=["json-fence", "bare-fence", "fence-in-prose", "inline-prose", "whitespace"],
)
async def test_wrapped_json_is_extracted(reply: str) -> None:
    pick = await complete_structured(ScriptedLLM([reply]), PROMPT, Pick, retries=0)
    assert pick.agent == "datetime"


async def test_garbage_then_valid_retries_and_says_what_was_wrong() -> None:
    llm = ScriptedLLM(["I think it is the datetime agent.", VALID])
    usage = Usage()
    pick = await complete_structured(llm, PROMPT, Pick, retries=1, usage=usage, purpose="route")
    assert pick.agent == "datetime"
    assert len(llm.calls) == 2
    retry = llm.calls[1]
    assert retry[: len(PROMPT)] == PROMPT
    assert retry[-2].role == "assistant" and "datetime agent" in retry[-2].content
    assert retry[-1].role == "user" and "no JSON" in retry[-1].content
    assert usage.calls == 2 and usage.failures == 1 and usage.by_purpose == {"route": 2}


async def test_schema_violation_is_reported_to_the_model() -> None:
    llm = ScriptedLLM(['{"agent": "weather", "confidence": 3}', VALID])
    await complete_structured(llm, PROMPT, Pick, retries=1)
    correction = llm.calls[1][-1].content
    assert "agent" in correction and "confidence" in correction


async def test_garbage_every_time_raises_invalid_output_after_bounded_attempts() -> None:
    llm = ScriptedLLM(["nope", "still nope", "{not json", "never reached"])
    usage = Usage()
    with pytest.raises(LLMError) as info:
        await complete_structured(llm, PROMPT, Pick, retries=2, usage=usage, purpose="plan")
    assert info.value.kind == "invalid_output"
    assert "Pick" in str(info.value) and "3 attempts" in str(info.value)
    assert len(llm.calls) == 3
    assert llm.replies == ["never reached"]
    assert usage.calls == 3 and usage.failures == 3


async def test_zero_retries_means_one_call() -> None:
    llm = ScriptedLLM(["garbage", VALID])
    with pytest.raises(LLMError, match="1 attempt:"):
        await complete_structured(llm, PROMPT, Pick, retries=0)
    assert len(llm.calls) == 1


async def test_truncated_output_counts_as_invalid() -> None:
    class Truncating(ScriptedLLM):
        async def complete(self, messages: list[Message], **kwargs: object) -> LLMResponse:
            reply = await super().complete(messages)
            if len(self.calls) == 1:
                return reply.model_copy(update={"finish_reason": "length"})
            return reply

    # Even a reply that parses is refused when the server says it was cut off.
    llm = Truncating([VALID, VALID])
    await complete_structured(llm, PROMPT, Pick, retries=1)
    assert len(llm.calls) == 2
    assert "cut off" in llm.calls[1][-1].content


@pytest.mark.parametrize("kind", ["timeout", "unavailable", "error"])
async def test_llm_errors_pass_through_without_retry(kind: str) -> None:
    llm = ScriptedLLM([LLMError("boom", kind=kind), VALID])
    usage = Usage()
    with pytest.raises(LLMError) as info:
        await complete_structured(llm, PROMPT, Pick, retries=3, usage=usage)
    assert info.value.kind == kind
    assert len(llm.calls) == 1
    assert usage.calls == 1 and usage.failures == 1


async def test_other_exceptions_pass_through() -> None:
    llm = ScriptedLLM([RuntimeError("bug in a client")])
    with pytest.raises(RuntimeError, match="bug in a client"):
        await complete_structured(llm, PROMPT, Pick, retries=2)


async def test_schema_is_passed_to_the_client() -> None:
    seen: list[object] = []

    class Recording(ScriptedLLM):
        async def complete(self, messages: list[Message], **kwargs: object) -> LLMResponse:
            seen.append(kwargs.get("json_schema"))
            return await super().complete(messages)

    await complete_structured(Recording([VALID]), PROMPT, Pick, retries=0)
    assert seen == [Pick.model_json_schema()]


def test_extract_json_prefers_the_first_object_and_rejects_none() -> None:
    assert extract_json('noise {"a": 1} more {"b": 2}') == {"a": 1}
    assert extract_json("list: [1, 2]") == [1, 2]
    assert extract_json('{broken {"a": {"b": 1}} tail') == {"a": {"b": 1}}
    with pytest.raises(ValueError):
        extract_json("no json here")


async def test_complete_text_counts_calls_tokens_and_failures() -> None:
    llm = ScriptedLLM(["A short synthesis.", LLMError("down", kind="unavailable")])
    usage = Usage()
    reply = await complete_text(llm, PROMPT, usage=usage, purpose="synthesis")
    assert reply.text == "A short synthesis."
    with pytest.raises(LLMError):
        await complete_text(llm, PROMPT, usage=usage, purpose="synthesis")
    assert usage.calls == 2 and usage.failures == 1
    assert usage.by_purpose == {"synthesis": 2}
    assert usage.completion_tokens == reply.completion_tokens > 0


def test_public_api_is_sorted_and_importable() -> None:
    import concerto.llm as llm_api

    assert llm_api.__all__ == sorted(llm_api.__all__)
    for name in llm_api.__all__:
        assert getattr(llm_api, name) is not None
