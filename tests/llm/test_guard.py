"""The guard against real LLM requests: on in this suite, it refuses endpoints nobody started."""

from __future__ import annotations

import contextlib

import httpx
import pytest

from _services.ports import dead_url
from concerto.llm import LLMError, Message, OpenAICompatibleLLM
from concerto.llm.guard import LLMRequestBlocked
from concerto.testing import allow_llm_endpoint, block_llm_requests

HI = [Message(role="user", content="hi")]


async def test_an_unknown_endpoint_is_refused_before_any_request() -> None:
    """Even where the caller would swallow the error, leaving the block fails the test."""
    with pytest.raises(LLMRequestBlocked, match=r"api\.openai\.example"), block_llm_requests():
        llm = OpenAICompatibleLLM("gpt-x", base_url="https://api.openai.example/v1", api_key="sk-real")
        with contextlib.suppress(LLMRequestBlocked):  # as an orchestrator falling back on LLM errors would
            await llm.complete(HI)


async def test_allowed_servers_and_mock_transports_go_through() -> None:
    url = dead_url("/v1")
    with block_llm_requests():
        allow_llm_endpoint(url)  # any path of that server
        async with OpenAICompatibleLLM("m", base_url=url) as llm:
            with pytest.raises(LLMError, match="unreachable"):  # allowed: the request was made
                await llm.complete(HI)

        def answer(request: httpx.Request) -> httpx.Response:
            choice = {"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
            return httpx.Response(200, json={"choices": [choice], "model": "m"})

        mocked = OpenAICompatibleLLM(
            "m", base_url="https://elsewhere.example/v1", transport=httpx.MockTransport(answer)
        )
        assert (await mocked.complete(HI)).text == "ok"  # never leaves the process


async def test_the_suite_blocks_by_default() -> None:
    with pytest.raises(LLMRequestBlocked):
        await OpenAICompatibleLLM("m", base_url="https://never.example/v1").complete(HI)
    from concerto.llm import guard

    guard.refused.clear()  # this test's refusal was expected; the autouse block must not fail it
