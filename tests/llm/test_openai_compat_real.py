"""The provider against a real OpenAI-compatible server: llama-cpp-python with SmolLM2-135M.

The model is tiny and its answers are poor; these tests check the protocol (token
counts, finish reasons, JSON constrained by the schema, the server's own errors),
not the quality of the answers.
"""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from _services.llama import LlamaServer
from concerto.llm import (
    LLMError,
    Message,
    OpenAICompatibleLLM,
    Usage,
    complete_structured,
    llm_from_settings,
)
from concerto.llm.structured import extract_json
from concerto.settings import Settings

pytestmark = pytest.mark.llm


class Pick(BaseModel):
    """What the LLM router asks for: one of the known agents."""

    agent: Literal["temperature", "datetime", "echo"]
    reason: str = Field(max_length=80)


ROUTE = [
    Message(
        role="system",
        content="You choose the agent that answers a question. Agents: temperature "
        "(weather), datetime (current time), echo (repeats text).",
    ),
    Message(role="user", content="What time is it in Tokyo?"),
]


@pytest.fixture
def llm(llama_server: LlamaServer) -> OpenAICompatibleLLM:
    """A client of the real server. Sync on purpose: async fixtures run on the session
    loop here, and a connection pool must be closed on the loop that opened it."""
    return OpenAICompatibleLLM(llama_server.model, base_url=llama_server.base_url, timeout_s=120)


async def test_server_started_quickly(llama_server: LlamaServer) -> None:
    assert llama_server.startup_s < 60
    assert llama_server.process.poll() is None


async def test_plain_completion_has_token_counts(llm: OpenAICompatibleLLM) -> None:
    async with llm:
        reply = await llm.complete([Message(role="user", content="Say hello to Concerto.")], max_tokens=24)
    assert reply.text.strip()
    assert reply.prompt_tokens > 5
    assert 0 < reply.completion_tokens <= 24
    assert reply.finish_reason in ("stop", "length")
    assert reply.latency_ms > 0
    assert reply.model.endswith(".gguf")


async def test_max_tokens_cuts_off_with_finish_reason_length(llm: OpenAICompatibleLLM) -> None:
    async with llm:
        reply = await llm.complete(
            [Message(role="user", content="Write a long story about a lighthouse keeper.")],
            max_tokens=4,
        )
    assert reply.finish_reason == "length"
    assert reply.completion_tokens == 4


async def test_json_object_mode_constrains_output_to_the_schema(llm: OpenAICompatibleLLM) -> None:
    async with llm:
        reply = await llm.complete(ROUTE, json_schema=Pick.model_json_schema(), max_tokens=128)
    assert reply.finish_reason == "stop", reply.text
    pick = Pick.model_validate(extract_json(reply.text))
    assert pick.agent in ("temperature", "datetime", "echo")


async def test_structured_output_through_settings(llama_server: LlamaServer) -> None:
    settings = Settings(llm_base_url=llama_server.base_url, llm_model=llama_server.model, llm_timeout_s=120)
    client = llm_from_settings(settings)
    assert isinstance(client, OpenAICompatibleLLM)
    usage = Usage()
    async with client:
        pick = await complete_structured(
            client, ROUTE, Pick, retries=settings.llm_max_retries, usage=usage, purpose="route"
        )
    assert isinstance(pick, Pick)
    assert usage.calls >= 1 and usage.by_purpose["route"] == usage.calls
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0 and usage.latency_ms > 0


async def test_truncated_json_is_invalid_output(llm: OpenAICompatibleLLM) -> None:
    usage = Usage()
    async with llm:
        with pytest.raises(LLMError) as info:
            await complete_structured(llm, ROUTE, Pick, retries=1, usage=usage, max_tokens=3)
    assert info.value.kind == "invalid_output"
    assert "cut off" in str(info.value)
    assert usage.calls == 2 and usage.failures == 2


async def test_json_schema_mode_refused_by_llama_cpp_falls_back_to_json_object(
    llama_server: LlamaServer,
) -> None:
    # llama-cpp-python's server answers OpenAI's json_schema response_format with HTTP 500.
    async with OpenAICompatibleLLM(
        llama_server.model, base_url=llama_server.base_url, json_mode="json_schema", timeout_s=120
    ) as client:
        pick = await complete_structured(client, ROUTE, Pick, retries=1)
    assert isinstance(pick, Pick)
    assert client.response_format_kind == "json_object+schema"


async def test_prompt_longer_than_the_context_is_an_error(llm: OpenAICompatibleLLM) -> None:
    async with llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(
                [Message(role="user", content="word " * 3000)],
                json_schema=Pick.model_json_schema(),
                max_tokens=10,
            )
    assert info.value.kind == "error"
    assert "HTTP 400" in str(info.value) and "context length" in str(info.value)


async def test_wrong_path_on_a_live_server_is_an_error(llama_server: LlamaServer) -> None:
    base = llama_server.base_url.removesuffix("/v1")
    async with OpenAICompatibleLLM(llama_server.model, base_url=base) as client:
        with pytest.raises(LLMError) as info:
            await client.complete(ROUTE, max_tokens=8)
    assert info.value.kind == "error"
    assert "HTTP 404" in str(info.value) and "CONCERTO_LLM_BASE_URL" in str(info.value)


async def test_short_timeout_on_a_real_completion(llama_server: LlamaServer) -> None:
    async with OpenAICompatibleLLM(llama_server.model, base_url=llama_server.base_url, timeout_s=0.01) as client:
        with pytest.raises(LLMError) as info:
            await client.complete([Message(role="user", content="Write a long story.")], max_tokens=40)
    assert info.value.kind == "timeout"
