"""The LLM client's errors and repr name the endpoint without a password or key in its URL."""

from __future__ import annotations

import pytest

from _services.blackhole import blackhole
from _services.ports import dead_url
from concerto.llm.base import LLMError, Message
from concerto.llm.openai_compat import OpenAICompatibleLLM
from concerto.testing import allow_llm_endpoint

PASSWORD = "s3cret-PASSWORD"
QUESTION = [Message(role="user", content="hi")]


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@") + "/v1?api_key=" + PASSWORD


async def _error(base_url: str, timeout_s: float = 5.0) -> LLMError:
    allow_llm_endpoint(base_url)
    llm = OpenAICompatibleLLM("m", base_url=base_url, timeout_s=timeout_s)
    assert PASSWORD not in repr(llm)
    try:
        with pytest.raises(LLMError) as caught:
            await llm.complete(QUESTION)
    finally:
        await llm.aclose()
    assert PASSWORD not in str(caught.value)
    return caught.value


async def test_an_unreachable_endpoint_is_named_without_its_password() -> None:
    error = await _error(_with_password(dead_url()))
    assert error.kind == "unavailable" and "user:***@127.0.0.1" in str(error) and "api_key=***" in str(error)


async def test_an_endpoint_that_never_answers_is_named_without_its_password() -> None:
    with blackhole() as hole:
        error = await _error(_with_password(hole.url), timeout_s=0.3)
    assert error.kind == "timeout"


async def test_an_error_status_is_reported_without_the_password(bad_server: str) -> None:
    error = await _error(_with_password(bad_server).replace("/v1?", "/unauthorized/v1?"))
    assert "answered HTTP 401" in str(error)
