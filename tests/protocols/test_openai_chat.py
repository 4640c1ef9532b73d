"""The OpenAI-compatible endpoint, tried with the official `openai` client: against a real
`concerto serve` process (echo and KPI agents) for the main paths and 100 questions in flight,
in process (ASGI transport, fake agents) for what the request becomes, faults and the OpenAPI
document, and over a real socket in process for the timing of a stream's events."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, settings
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionUserMessageParam
from schemathesis.checks import CHECKS
from schemathesis.config import SchemathesisConfig

from _helpers.openapi import asgi_schema
from _services.ports import free_port, stop, wait_for_http
from concerto.agents.base import Agent, AgentContext
from concerto.agents.loader import Packs
from concerto.agents.registry import AgentRegistry
from concerto.contracts.events import Event
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.protocols.openai_chat.answer import AnswerData
from concerto.protocols.openai_chat.request import MODELS
from concerto.protocols.pack import pack as protocols_pack
from concerto.server.app import create_app
from concerto.settings import Settings
from concerto.testing import fake_agent

BLOCK = re.compile(r"\n\n(`{3,})json\n(.*)\n\1\Z", re.S)
ECHO = "echo hello world"
KPI = "home-loan attrition rate previous 4 months"
UNANSWERABLE = "what is the weather on mars"


def split(content: str) -> tuple[str, AnswerData]:
    """An answer's text and its data block."""
    found = BLOCK.search(content)
    assert found, f"no data block at the end of {content[-200:]!r}"
    return content[: found.start()], AnswerData.model_validate_json(found.group(2))


def extra(item: Any, name: str) -> Any:
    """A field the client's models do not declare (Concerto's own, `reasoning_content`)."""
    return (item.model_extra or {}).get(name)


def user(text: str) -> ChatCompletionUserMessageParam:
    return {"role": "user", "content": text}


# -- a real `concerto serve` ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONCERTO_") and k != "OPENAI_API_KEY"}
    env |= {"CONCERTO_DATA_DIR": str(tmp_path_factory.mktemp("data")), "CONCERTO_AGENTS": "echo,kpi"}
    command = [sys.executable, "-m", "concerto.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/health", proc, timeout_s=90)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
        errors = proc.stderr.read().decode() if proc.stderr else ""
        assert "Traceback" not in errors, errors[-3000:]


@pytest.fixture
def client(server: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0) as c:
        yield c


def test_models_are_listed_and_retrieved(client: openai.OpenAI) -> None:
    assert (
        [m.id for m in client.models.list()]
        == list(MODELS)
        == [
            "concerto",
            "concerto-executive",
            "concerto-analyst",
            "concerto-data-scientist",
        ]
    )
    assert client.models.retrieve("concerto").owned_by == "concerto"
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("gpt-4o")
    assert caught.value.code == "model_not_found"


def test_an_answer_is_its_text_then_its_data_block(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="concerto", messages=[user(ECHO)], temperature=0.2, max_tokens=5)
    choice = reply.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant" and not choice.message.tool_calls
    text, data = split(choice.message.content or "")
    assert text == 'Echo: "hello world"'  # max_tokens does not cut an answer
    assert reply.id == f"chatcmpl-{data.query_id}" and reply.model == "concerto"
    assert data.status == "completed" and data.error is None
    assert [(a.agent, a.data["echo_text"]) for a in data.agents] == [("echo", "hello world")]
    usage = reply.usage
    assert usage and usage.prompt_tokens == 4 and usage.completion_tokens == -(-len(choice.message.content or "") // 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert not extra(reply, "concerto")  # the attachment only when asked for


def test_the_attachment_carries_the_whole_output_contract(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model="concerto", messages=[user(KPI)], extra_body={"concerto": {"attachment": True}}
    )
    content = reply.choices[0].message.content or ""
    output = OrchestratorOutput.model_validate(extra(reply, "concerto"))
    assert content == output.response and "```" not in content and "attrition" in content.lower()
    assert output.agents_invoked == ["kpi"] and len(output.agent_results[0].output["records"]) == 4
    assert reply.id == f"chatcmpl-{output.query_id}" and output.intent_classification.agents == ["kpi"]


def test_a_stream_sends_the_events_then_the_answer_then_its_data(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="concerto", messages=[user(ECHO)], stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant" and len({c.id for c in chunks}) == 1
    events = [Event.model_validate(extra(c, "concerto_event")) for c in chunks if extra(c, "concerto_event")]
    assert events[0].state == "Received" and events[-1].state == "Completed" and len(events) >= 8
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    thinking = "".join(extra(c.choices[0].delta, "reasoning_content") or "" for c in chunks if c.choices)
    assert "Intent: echo" in thinking and "echo: echo answered" in thinking
    said = [i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content]
    last_event = max(i for i, c in enumerate(chunks) if extra(c, "concerto_event"))
    assert said and said[0] > last_event  # every event before the answer
    content = "".join(chunks[i].choices[0].delta.content or "" for i in said)
    text, data = split(content)
    assert text == 'Echo: "hello world"' and data.agents[0].data["echo_text"] == "hello world"
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage and chunks[-1].usage.completion_tokens > 0


def test_a_streamed_attachment_and_the_end_of_the_stream_on_the_wire(server: str) -> None:
    body = {"model": "concerto", "messages": [user(ECHO)], "stream": True, "concerto": {"attachment": True}}
    with httpx.stream("POST", f"{server}/v1/chat/completions", json=body, timeout=30) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    items = [json.loads(line[6:]) for line in lines[:-1]]
    attached = [i["concerto"] for i in items if "concerto" in i]
    assert len(attached) == 1 and OrchestratorOutput.model_validate(attached[0]).response == 'Echo: "hello world"'
    content = "".join(i["choices"][0]["delta"].get("content") or "" for i in items if i["choices"])
    assert content == 'Echo: "hello world"'
    assert "usage" not in items[-1]  # not asked for


def test_a_follow_up_sends_the_earlier_turns(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(model="concerto", messages=[user("echo good morning")])
    answer = first.choices[0].message.content
    history: list[ChatCompletionMessageParam] = [user("echo good morning"), {"role": "assistant", "content": answer}]
    reply = client.chat.completions.create(model="concerto-executive", messages=[*history, user("echo and again")])
    text, data = split(reply.choices[0].message.content or "")
    assert text == 'Echo: "and again"' and reply.model == "concerto-executive"
    assert data.query_id != split(first.choices[0].message.content or "")[1].query_id


def test_an_unanswered_question_is_a_completion_with_the_error(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="concerto", messages=[user(UNANSWERABLE)])
    text, data = split(reply.choices[0].message.content or "")
    assert data.status == "failed" and data.error and data.error.category == "classification_failed"
    assert text == data.error.message and "No agent can answer" in text
    attached = client.chat.completions.create(
        model="concerto", messages=[user(UNANSWERABLE)], extra_body={"concerto": {"attachment": True}}
    )
    error = OrchestratorErrorResponse.model_validate(extra(attached, "concerto"))
    assert attached.choices[0].message.content == error.error_message


@pytest.mark.parametrize(
    ("request_", "error", "param", "code"),
    [
        ({"model": "gpt-4o", "messages": [user(ECHO)]}, openai.NotFoundError, "model", "model_not_found"),
        ({"model": "concerto", "messages": []}, openai.BadRequestError, "messages", "invalid_value"),
        (
            {"model": "concerto", "messages": [{"role": "system", "content": "be brief"}]},
            openai.BadRequestError,
            "messages",
            "no_user_message",
        ),
        (
            {"model": "concerto", "messages": [user("echo " + "x" * 600)]},
            openai.BadRequestError,
            "messages[0].content",
            "context_length_exceeded",
        ),
        ({"model": "concerto", "messages": [user("   ")]}, openai.BadRequestError, "messages[0].content", None),
        (
            {"model": "concerto", "messages": [{"role": "user", "content": 5}]},
            openai.BadRequestError,
            "messages[0].content",
            "invalid_type",
        ),
        (
            {"model": "concerto", "messages": [user(ECHO)], "extra_body": {"concerto": {"max_latency_ms": "9"}}},
            openai.BadRequestError,
            "concerto.max_latency_ms",
            "invalid_type",
        ),
        (
            {"model": "concerto", "messages": [user(ECHO)], "extra_body": {"concerto": {"colour": "red"}}},
            openai.BadRequestError,
            "concerto.colour",
            "invalid_value",
        ),
    ],
)
def test_refusals_are_openai_errors(
    client: openai.OpenAI, request_: dict[str, Any], error: type[openai.APIStatusError], param: str, code: str | None
) -> None:
    with pytest.raises(error) as caught:
        client.chat.completions.create(**request_)
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "invalid_request_error" and body["message"]
    assert caught.value.param == param and (code is None or caught.value.code == code)


def test_a_body_that_is_not_json_is_an_openai_error(server: str) -> None:
    for content in (b"{not json", b"\xff\xfe", b"[1, 2]", b""):
        r = httpx.post(f"{server}/v1/chat/completions", content=content, headers={"content-type": "application/json"})
        assert r.status_code == 400, content
        assert set(r.json()) == {"error"} and r.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b'{"model": "concerto", "messages": [{"role": "user", "content": "echo \\ud800"}]}', "messages"),
        (b'{"model": "\\ud800", "messages": [{"role": "user", "content": "echo hi"}]}', "model"),
        (b'{"model": "concerto", "user": "\\udcff", "messages": [{"role": "user", "content": "echo hi"}]}', None),
        (
            b'{"model": "concerto", "messages": [{"role": "user", "content": "echo hi"}], '
            b'"concerto": {"source": "\\udfff"}}',
            "concerto",
        ),
    ],
)
def test_text_that_cannot_be_encoded_is_an_openai_error(server: str, body: bytes, param: str | None) -> None:
    """A lone surrogate anywhere in the request (JSON can escape one; no UTF-8 text holds it)."""
    r = httpx.post(f"{server}/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    error = r.json()["error"]
    assert r.status_code == 400 and error["type"] == "invalid_request_error" and error["param"] == param
    assert "a lone surrogate" in error["message"]


async def test_a_hundred_questions_in_flight_at_once(server: str) -> None:
    async with openai.AsyncOpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0, timeout=60) as c:
        asks = [c.chat.completions.create(model="concerto", messages=[user(f"echo hello {i}")]) for i in range(100)]
        started = time.perf_counter()
        replies = await asyncio.gather(*asks, return_exceptions=True)
        elapsed = time.perf_counter() - started
    errors = [r for r in replies if isinstance(r, BaseException)]
    assert errors == [], errors[:3]
    texts = [split(r.choices[0].message.content or "")[0] for r in replies if not isinstance(r, BaseException)]
    assert texts == [f'Echo: "hello {i}"' for i in range(100)]
    assert elapsed < 30, f"100 echo questions took {elapsed:.1f} s"


# -- in process: what a request becomes, and faults --------------------------------------------


@asynccontextmanager
async def app_with(*agents: type[Agent]) -> AsyncIterator[Any]:
    """The app with the protocols pack's routes and only `agents`, its lifespan running."""
    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="concerto-openai-")), store_events=False)
    orchestrator = Orchestrator(settings, registry=AgentRegistry(agents), packs=Packs([protocols_pack]))
    app = create_app(orchestrator=orchestrator)
    try:
        async with app.router.lifespan_context(app):
            yield app
    finally:
        await orchestrator.aclose()


def in_process(app: Any) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app))
    return openai.AsyncOpenAI(base_url="http://concerto.test/v1", api_key="unused", max_retries=0, http_client=http)


async def test_the_conversation_becomes_the_input_contract() -> None:
    seen: list[OrchestratorInput] = []

    def record(context: AgentContext, payload: dict[str, Any]) -> None:
        seen.append(context.query)

    recorder = fake_agent(
        "recorder",
        description="Records what it is asked",
        examples=["record this"],
        on_run=record,
        inputs={"source": "The table it records about"},
    )
    earlier = 'Recorded.\n\n```json\n{"query_id": "x"}\n```'
    messages: list[Any] = [  # a developer message with parts, a tool turn, an image: beyond the client's types
        {"role": "system", "content": "The reader is the board."},
        {"role": "developer", "content": [{"type": "text", "text": "Use euros."}]},
        user("record that"),
        {"role": "assistant", "content": earlier, "tool_calls": None},
        {"role": "tool", "content": "not a turn", "tool_call_id": "t1"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "record this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
    ]
    options = {"source": "sales", "parameters": {"unit": "eur"}, "now": "2025-06-15T12:00:00Z", "context": "Q2"}
    async with app_with(recorder) as app, in_process(app) as client:
        reply = await client.chat.completions.create(
            model="concerto-data-scientist",
            messages=messages,
            metadata={"concerto": json.dumps({"output_format": "brief", "source": "ignored"})},
            extra_body={"concerto": options},
            n=3,
            user="someone",
        )
    assert len(reply.choices) == 1 and split(reply.choices[0].message.content or "")[1].agents[0].agent == "recorder"
    (asked,) = seen
    assert asked.query == "record this"
    assert asked.conversation_history == [
        {"role": "user", "content": "record that"},
        {"role": "assistant", "content": "Recorded."},  # the data block it carried is left out
    ]
    assert asked.context == "The reader is the board.\n\nUse euros.\n\nQ2"
    assert asked.user_expertise == "data_scientist" and asked.output_format == "brief"
    assert asked.source == "sales" and asked.parameters == {"unit": "eur"}  # `concerto` wins over metadata
    assert asked.query_id == reply.id.removeprefix("chatcmpl-")


async def test_the_options_choose_the_reader_over_the_model_and_metadata_must_be_json() -> None:
    seen: list[OrchestratorInput] = []
    recorder = fake_agent(
        "recorder",
        description="Records what it is asked",
        examples=["record this"],
        on_run=lambda context, payload: seen.append(context.query),
    )
    async with app_with(recorder) as app, in_process(app) as client:
        await client.chat.completions.create(
            model="concerto-executive",
            messages=[user("record this")],
            extra_body={"concerto": {"user_expertise": "analyst"}},
        )
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(
                model="concerto", messages=[user("record this")], metadata={"concerto": "{not json"}
            )
    assert [q.user_expertise for q in seen] == ["analyst"]
    assert caught.value.param == "metadata"


async def test_a_fault_in_this_layer_is_a_server_error_never_a_trace() -> None:
    """An agent's output that is not JSON cannot be written as a data block: the non-streaming
    reply is a 500 in OpenAI's shape, the stream ends with an `error` item the client raises."""
    odd = fake_agent(
        "odd", description="Returns an odd value", examples=["give me something odd"], output={"x": object()}
    )
    async with app_with(odd) as app, in_process(app) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await client.chat.completions.create(model="concerto", messages=[user("give me something odd")])
        assert caught.value.type == "server_error" and "Traceback" not in str(caught.value.body)
        stream = await client.chat.completions.create(
            model="concerto", messages=[user("give me something odd")], stream=True
        )
        with pytest.raises(openai.APIError) as streamed:
            async for _ in stream:
                pass
    assert "Internal error while streaming" in streamed.value.message


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """`app` on a real loopback socket (uvicorn in this event loop); yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


async def test_events_arrive_while_the_question_runs() -> None:
    """Over a real socket: the agent's dispatch is reported before its 0.6 s of work ends."""
    slow = fake_agent("slow", description="Takes its time", examples=["take your time please"], delay_s=0.6)
    arrived: list[tuple[float, Any]] = []
    async with (
        app_with(slow) as app,
        served(app) as base,
        openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0) as c,
    ):
        question = [user("take your time please")]
        stream = await c.chat.completions.create(model="concerto", messages=question, stream=True)
        async for chunk in stream:
            arrived.append((time.perf_counter(), chunk))
    titles = [(t, (extra(c, "concerto_event") or {}).get("title")) for t, c in arrived]
    dispatched = next(t for t, title in titles if title == "Dispatching slow")
    answered = next(t for t, c in arrived if c.choices and c.choices[0].delta.content)
    assert answered - dispatched >= 0.5


async def test_a_reader_that_leaves_stops_the_work() -> None:
    finished: list[str] = []
    slow = fake_agent(
        "slow",
        description="Takes its time",
        examples=["take your time please"],
        delay_s=1.0,
        on_run=lambda context, payload: finished.append(context.agent),
    )
    body = {"model": "concerto", "messages": [user("take your time please")], "stream": True}
    async with app_with(slow) as app, served(app) as base:
        url = f"{base}/v1/chat/completions"
        async with httpx.AsyncClient(timeout=10) as http, http.stream("POST", url, json=body) as r:
            async for line in r.aiter_lines():
                if "Dispatching slow" in line:
                    break  # leave while the agent works
        await asyncio.sleep(1.5)
    assert finished == []


# -- the OpenAPI document of these routes, under schemathesis --------------------------------------

CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "not_a_server_error": {"expected-statuses": ["2xx", "4xx"]},
            "positive_data_acceptance": {"expected-statuses": ["2xx", "400", "404"]},
        }
    }
)
_AGENTS = [fake_agent("greeter", description="Says hello to people", examples=["say hello to me"])]
_orchestrator = Orchestrator(
    Settings(data_dir=Path(tempfile.mkdtemp(prefix="concerto-openai-openapi-")), store_events=False),
    registry=AgentRegistry(_AGENTS),
    packs=Packs([protocols_pack]),
)
# not `from_asgi`: it would start the app during collection (_helpers/openapi.py)
schema = asgi_schema(create_app(orchestrator=_orchestrator), CONFIG).include(path_regex="^/v1/(models|chat/)")


@schemathesis.check
def refusals_are_openai_errors(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every refusal is OpenAI's shape; a schema-valid request is refused only for what a schema
    cannot say (no user message, a blank or over-long question) or a model that is not served."""
    ours = case.path.startswith(("/v1/models", "/v1/chat/"))
    if not ours or response.status_code < 400 or response.status_code == 405:
        return None  # a method no route of the path takes (405) is the app's answer
    body = response.json()
    assert set(body) == {"error"} and body["error"]["message"], response.text[:300]
    meta = case.meta
    if meta is not None and meta.generation.mode.is_positive:
        error = body["error"]
        if response.status_code == 404:
            assert error["code"] == "model_not_found", response.text[:300]
        else:
            assert str(error["param"]).startswith("messages") and error["code"] != "invalid_type", response.text[:300]
    return None


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_openai_routes_keep_their_documented_contract(case: Any) -> None:
    # Checks other test modules register (about /v1/ask, /v1/runs) are global in schemathesis.
    ours = ("schemathesis.", __name__)
    skipped = [c for c in CHECKS.get_all() if not c.__module__.startswith(ours)]
    case.call_and_validate(excluded_checks=skipped)
