"""The OpenAI-compatible provider without a model: request shape, settings, and failures.

The request body is checked through httpx.MockTransport; the failures go over real
loopback sockets (a closed port, a server that sleeps, one that answers garbage).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from _services.ports import dead_url
from concerto.llm import LLMError, Message, OpenAICompatibleLLM, llm_from_settings
from concerto.llm.openai_compat import OPENAI_BASE_URL
from concerto.settings import Settings
from concerto.testing import allow_llm_endpoint

SCHEMA = {
    "title": "Pick",
    "type": "object",
    "properties": {"agent": {"type": "string"}},
    "required": ["agent"],
}
MESSAGES = [
    Message(role="system", content="You route questions."),
    Message(role="user", content="hi"),
]


def completion(text: str = "hello", finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "served-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


def recording_llm(**kwargs: Any) -> tuple[OpenAICompatibleLLM, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=completion())

    llm = OpenAICompatibleLLM("m", base_url="http://llm.test/v1", transport=httpx.MockTransport(handler), **kwargs)
    return llm, seen


async def test_plain_completion_reads_text_usage_and_finish_reason() -> None:
    llm, seen = recording_llm(api_key="sk-test")
    async with llm:
        reply = await llm.complete(MESSAGES, max_tokens=7, temperature=0.2)
    assert (reply.text, reply.model, reply.finish_reason) == ("hello", "served-model", "stop")
    assert (reply.prompt_tokens, reply.completion_tokens) == (12, 3)
    assert reply.latency_ms > 0
    request = seen[0]
    assert str(request.url) == "http://llm.test/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test"
    body = json.loads(request.content)
    assert body == {
        "model": "m",
        "messages": [m.model_dump() for m in MESSAGES],
        "max_tokens": 7,
        "temperature": 0.2,
    }


async def test_no_key_sends_no_authorization() -> None:
    llm, seen = recording_llm()
    async with llm:
        await llm.complete(MESSAGES)
    assert "Authorization" not in seen[0].headers


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("json_object", {"type": "json_object", "schema": SCHEMA}),
        (
            "json_schema",
            {
                "type": "json_schema",
                "json_schema": {"name": "Pick", "schema": SCHEMA, "strict": False},
            },
        ),
        ("none", None),
    ],
)
async def test_json_modes(mode: str, expected: dict[str, Any] | None) -> None:
    llm, seen = recording_llm(json_mode=mode)
    async with llm:
        await llm.complete(MESSAGES, json_schema=SCHEMA)
    body = json.loads(seen[0].content)
    assert body.get("response_format") == expected
    # The schema is always stated in the (existing) system prompt too.
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You route questions.")
    assert '"required":["agent"]' in system["content"]
    assert len(body["messages"]) == 2


def test_schema_prompt_is_added_when_there_is_no_system_message() -> None:
    llm = OpenAICompatibleLLM("m", base_url="http://llm.test/v1")
    body = llm.request_body([Message(role="user", content="hi")], json_schema=SCHEMA)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "JSON schema" in body["messages"][0]["content"]


def test_factory_follows_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert llm_from_settings(Settings(llm_model=None, llm_base_url=None, llm_api_key=None)) is None
    assert llm_from_settings(Settings(llm_model=None, llm_base_url="http://x/v1")) is None
    local = llm_from_settings(
        Settings(
            llm_model="qwen",
            llm_base_url="http://127.0.0.1:11434/v1/",
            llm_timeout_s=3,
            llm_json_mode="none",
        )
    )
    assert isinstance(local, OpenAICompatibleLLM)
    assert (local.model, local.base_url, local.timeout_s, local.json_mode) == (
        "qwen",
        "http://127.0.0.1:11434/v1",
        3,
        "none",
    )
    openai = llm_from_settings(Settings(llm_model="gpt-4o-mini", llm_api_key=SecretStr("sk-x")))
    assert isinstance(openai, OpenAICompatibleLLM)
    assert openai.base_url == OPENAI_BASE_URL
    assert openai.headers["Authorization"] == "Bearer sk-x"


def refusing_llm(
    refuse: set[str], json_mode: str = "json_object", status: int = 400
) -> tuple[OpenAICompatibleLLM, list[dict[str, Any]]]:
    """A client whose endpoint refuses the listed response_format forms, as real servers do."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        fmt = body.get("response_format")
        form = "none" if fmt is None else fmt["type"] + ("+schema" if "schema" in fmt else "")
        if form in refuse:
            error = {"message": f"Unknown parameter: response_format ({form})."}
            return httpx.Response(status, json={"error": error})
        return httpx.Response(200, json=completion('{"agent": "echo"}'))

    transport = httpx.MockTransport(handler)
    llm = OpenAICompatibleLLM("m", base_url="http://llm.test/v1", json_mode=json_mode, transport=transport)
    return llm, bodies


async def test_refused_schema_key_falls_back_to_plain_json_object_and_remembers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # OpenAI answers 400 "Unknown parameter: 'response_format.schema'".
    llm, bodies = refusing_llm({"json_object+schema"})
    async with llm:
        first = await llm.complete(MESSAGES, json_schema=SCHEMA)
        second = await llm.complete(MESSAGES, json_schema=SCHEMA)
        plain = await llm.complete(MESSAGES)
    assert first.text == second.text == plain.text == '{"agent": "echo"}'
    formats = [b.get("response_format") for b in bodies]
    assert formats == [
        {"type": "json_object", "schema": SCHEMA},
        {"type": "json_object"},
        {"type": "json_object"},
        None,
    ]
    assert llm.response_format_kind == "json_object"
    assert "refused response_format 'json_object+schema'" in caplog.text
    assert "CONCERTO_LLM_JSON_MODE" in caplog.text


async def test_refused_json_schema_falls_back_down_to_nothing() -> None:
    # llama-cpp-python answers json_schema with 500; here json_object is refused too.
    refused = {"json_schema", "json_object+schema", "json_object"}
    llm, bodies = refusing_llm(refused, json_mode="json_schema", status=500)
    async with llm:
        await llm.complete(MESSAGES, json_schema=SCHEMA)
    assert [b.get("response_format") for b in bodies] == [
        {
            "type": "json_schema",
            "json_schema": {"name": "Pick", "schema": SCHEMA, "strict": False},
        },
        {"type": "json_object", "schema": SCHEMA},
        {"type": "json_object"},
        None,
    ]
    assert llm.response_format_kind == "none"
    assert "JSON schema" in bodies[-1]["messages"][0]["content"]


async def test_refusing_everything_reports_the_first_refusal() -> None:
    llm, bodies = refusing_llm({"json_object+schema", "json_object", "none"})
    async with llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(MESSAGES, json_schema=SCHEMA)
    assert info.value.kind == "error"
    assert "HTTP 400" in str(info.value) and "(json_object+schema)" in str(info.value)
    assert len(bodies) == 3
    assert llm.response_format_kind == "json_object+schema"


async def test_errors_unrelated_to_response_format_are_not_repeated() -> None:
    llm, bodies = refusing_llm({"none"}, status=500)
    async with llm:
        with pytest.raises(LLMError, match="HTTP 500"):
            await llm.complete(MESSAGES)
    assert len(bodies) == 1


async def test_errors_unrelated_to_the_schema_are_not_repeated_with_other_forms() -> None:
    requests: list[httpx.Request] = []

    def too_long(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        error = {"message": "This model's maximum context length is 2048 tokens."}
        return httpx.Response(400, json={"error": error})

    transport = httpx.MockTransport(too_long)
    async with OpenAICompatibleLLM("m", base_url="http://llm.test/v1", transport=transport) as llm:
        with pytest.raises(LLMError, match="maximum context length"):
            await llm.complete(MESSAGES, json_schema=SCHEMA)
    assert len(requests) == 1


def test_one_client_serves_several_event_loops() -> None:
    # A CLI or a test suite may call asyncio.run more than once with the same client.
    import asyncio

    llm, seen = recording_llm()
    for _ in range(2):
        reply = asyncio.run(llm.complete(MESSAGES))
        assert reply.text == "hello"
    assert len(seen) == 2
    asyncio.run(llm.aclose())


async def test_closed_port_is_unavailable_and_names_the_setting() -> None:
    url = dead_url("/v1")
    allow_llm_endpoint(url)  # nothing listens there: that is the point of the test
    async with OpenAICompatibleLLM("m", base_url=url) as llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(MESSAGES)
    assert info.value.kind == "unavailable"
    assert "CONCERTO_LLM_BASE_URL" in str(info.value)
    assert "Traceback" not in str(info.value)


async def test_dns_failure_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno -2] Name or service not known", request=request)

    transport = httpx.MockTransport(refuse)
    async with OpenAICompatibleLLM("m", base_url="http://no-such-host/v1", transport=transport) as llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(MESSAGES)
    assert info.value.kind == "unavailable"
    assert "Name or service not known" in str(info.value)


async def test_slow_server_times_out(bad_server: str) -> None:
    async with OpenAICompatibleLLM("m", base_url=f"{bad_server}/slow/v1", timeout_s=0.3) as llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(MESSAGES)
    assert info.value.kind == "timeout"
    assert "0.3 s" in str(info.value) and "CONCERTO_LLM_TIMEOUT_S" in str(info.value)


@pytest.mark.parametrize(
    ("behaviour", "kind", "words"),
    [
        ("garbage", "error", "did not return a chat completion"),
        ("nochoices", "error", "did not return a chat completion"),
        ("error500", "error", "HTTP 500: model crashed: out of memory"),
        ("text500", "error", "HTTP 500: Internal Server Error"),
        ("trace500", "error", "HTTP 500: 1 validation error: bad response_format"),
        ("unauthorized", "error", "Incorrect API key provided (check CONCERTO_LLM_API_KEY"),
        ("missing", "error", "HTTP 404: Not Found (check CONCERTO_LLM_BASE_URL"),
    ],
)
async def test_bad_answers_become_llm_errors(bad_server: str, behaviour: str, kind: str, words: str) -> None:
    async with OpenAICompatibleLLM("m", base_url=f"{bad_server}/{behaviour}/v1") as llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(MESSAGES)
    assert info.value.kind == kind
    assert words in str(info.value)
    assert "Traceback" not in str(info.value) and 'File "' not in str(info.value)
