"""The A2A endpoint, tried with the SDK's own client (a2a.client): against a real `concerto
serve` on loopback (card, send, stream, failed task, protocol errors, both transports), and
in process through the ASGI app where a test needs agents of its own (cancel, the fields of a
data part, a context's earlier answers)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_message, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    InvalidParamsError,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskNotCancelableError,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf.json_format import MessageToDict

from _services.ports import dead_url
from _services.serve import running_serve
from concerto.agents.base import Agent, AgentContext, AgentInfo, AgentResult
from concerto.agents.registry import AgentRegistry
from concerto.contracts.events import Event, EventType
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.protocols.a2a_server import EVENTS_METADATA, router
from concerto.server.app import create_app
from concerto.settings import Settings
from concerto.testing import fake_agent

A2A_VERSION = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`concerto serve` with the echo agent alone, on a free loopback port."""
    with running_serve(
        {"CONCERTO_DATA_DIR": str(tmp_path_factory.mktemp("data")), "CONCERTO_AGENTS": "echo"}
    ) as served:
        yield served.base


@asynccontextmanager
async def a2a_client(base: str, transport: str = TransportProtocol.JSONRPC, **config: Any) -> AsyncIterator[Client]:
    """The SDK's client for the server at `base`, found from its agent card."""
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            base, ClientConfig(httpx_client=http, supported_protocol_bindings=[transport], **config)
        )
        async with client:
            yield client


def ask(text: str, *data: dict[str, Any], context_id: str = "") -> SendMessageRequest:
    message = new_text_message(text, context_id=context_id or None, role=Role.ROLE_USER)
    message.parts.extend(new_data_part(d) for d in data)
    return SendMessageRequest(message=message)


async def collect(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [item async for item in client.send_message(request)]


def answer(task: Task) -> tuple[str, OrchestratorOutput]:
    """The text and the output contract of a completed task's `answer` artifact."""
    (artifact,) = task.artifacts
    assert artifact.name == "answer"
    (text,) = get_text_parts(artifact.parts)
    (data,) = get_data_parts(artifact.parts)
    return text, OrchestratorOutput.model_validate(data)


# -- against `concerto serve` --------------------------------------------------------------


async def test_the_card_names_concerto_its_skills_and_this_server(server: str) -> None:
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, server).get_agent_card()
    validate_proto_required_fields(card)  # every field the protocol requires is there
    assert card.name == "Concerto" and card.capabilities.streaming
    assert [(i.protocol_binding, i.protocol_version, i.url) for i in card.supported_interfaces] == [
        ("JSONRPC", "1.0", f"{server}/a2a"),
        ("HTTP+JSON", "1.0", f"{server}/a2a"),
        ("JSONRPC", "0.3", f"{server}/a2a"),
    ]
    (skill,) = card.skills
    assert skill.id == "echo" and skill.examples and "city" in skill.tags


async def test_a_message_becomes_a_completed_task_with_the_answer(server: str) -> None:
    async with a2a_client(server, streaming=False) as client:
        (item,) = await collect(client, ask("echo hello world"))
    task = item.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    text, output = answer(task)
    assert text == output.response == 'Echo: "hello world"'
    assert output.agents_invoked == ["echo"] and output.query_id == task.id
    assert task.history[0].role == Role.ROLE_USER  # the question, then the steps as the agent's messages


async def test_a_stream_reports_each_step_before_the_answer(server: str) -> None:
    async with a2a_client(server) as client:
        items = await collect(client, ask("echo streamed"))
    kinds = [item.WhichOneof("payload") for item in items]
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    assert kinds.index("artifact_update") == len(kinds) - 2  # every step came before the answer
    steps = [item.status_update for item in items[1:-2]]
    assert steps and all(s.status.state == TaskState.TASK_STATE_WORKING for s in steps)
    events = []
    for step in steps:  # one line per event, the events themselves in the metadata
        batch = [Event.model_validate(e) for e in MessageToDict(step.metadata)[EVENTS_METADATA]]
        lines = get_text_parts(step.status.message.parts)[0].split("\n")
        assert len(lines) == len(batch) and all(line.endswith(e.title) for line, e in zip(lines, batch, strict=True))
        events += batch
    assert len(events) >= 5 and [e.seq for e in events] == list(range(events[0].seq, events[0].seq + len(events)))
    assert len(steps) < len(events)  # events close together share an update (one write each)
    artifact = items[-2].artifact_update.artifact
    assert get_text_parts(artifact.parts) == ['Echo: "streamed"']
    assert items[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_steps_apart_in_time_are_updates_of_their_own() -> None:
    events: list[str] = []
    async with serving(counting_agent(events)) as http:
        client = await create_client("http://test", ClientConfig(httpx_client=http))
        items = await collect(client, ask("count slowly"))
    texts = [
        get_text_parts(i.status_update.status.message.parts)
        for i in items
        if i.WhichOneof("payload") == "status_update"
    ]
    counted = [t[0] for t in texts if t and "counted" in t[0]]
    assert counted == [f"counter: counted {i}" for i in range(1, 6)]  # 0.2 s apart: each alone, as it happened


async def test_a_question_no_agent_answers_fails_the_task_with_the_error_contract(server: str) -> None:
    async with a2a_client(server, streaming=False) as client:
        (item,) = await collect(client, ask("what is the capital of Mongolia?"))
    status = item.task.status
    assert status.state == TaskState.TASK_STATE_FAILED
    (text,) = get_text_parts(status.message.parts)
    error = OrchestratorErrorResponse.model_validate(get_data_parts(status.message.parts)[0])
    assert error.error_category == "classification_failed" and text == error.error_message
    assert error.alternative_queries  # what to ask instead


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_empty_message_is_the_protocols_invalid_params_error(server: str, streaming: bool) -> None:
    async with a2a_client(server, streaming=streaming) as client:
        with pytest.raises(InvalidParamsError, match="the question is empty"):
            await collect(client, ask("   "))
        with pytest.raises(InvalidParamsError, match="user_expertise"):
            await collect(client, ask("echo hi", {"user_expertise": "wizard"}))


async def test_the_rest_binding_answers_too(server: str) -> None:
    async with a2a_client(server, TransportProtocol.HTTP_JSON, streaming=False) as client:
        (item,) = await collect(client, ask("echo over rest"))
        assert answer(item.task)[0] == 'Echo: "over rest"'
        again = await client.get_task(GetTaskRequest(id=item.task.id))
        assert again.status.state == TaskState.TASK_STATE_COMPLETED


async def test_malformed_requests_get_json_rpc_errors_not_traces(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        cases = [
            (b"{not json", -32700),
            (b'{"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod"}', -32601),
            (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 7}}', -32602),
            (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}', -32001),
        ]
        for body, code in cases:
            response = await http.post(
                "/a2a", content=body, headers={**A2A_VERSION, "content-type": "application/json"}
            )
            assert response.status_code == 200
            error = response.json()["error"]
            assert error["code"] == code, body
            assert "Traceback" not in response.text and 'File "' not in response.text


async def test_text_that_cannot_be_encoded_is_refused_before_any_task(server: str) -> None:
    """A lone surrogate in a text or data part: the protocol's invalid-params error (protobuf
    refuses it in a text part, the input contract in a data part), never a failed task or a 500."""
    text = b'{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "echo \\ud800"}]}'
    data = b'{"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "echo hi"}, {"data": {"source": "\\udcff"}}]}'
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        for message in (text, data):
            body = b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": ' + message + b"}}"
            response = await http.post(
                "/a2a", content=body, headers={**A2A_VERSION, "content-type": "application/json"}
            )
            assert response.status_code == 200 and response.json()["error"]["code"] == -32602, response.text
            assert "Traceback" not in response.text
            rest = await http.post(
                "/a2a/message:send",
                content=b'{"message": ' + message + b"}",
                headers={**A2A_VERSION, "content-type": "application/json"},
            )
            assert rest.status_code == 400 and rest.json()["error"]["status"] == "INVALID_ARGUMENT", rest.text


async def test_a_client_of_protocol_0_3_is_answered(server: str) -> None:
    """Many frameworks still speak 0.3 (`message/send`, `kind` on each part)."""
    message = {"messageId": "m1", "role": "user", "kind": "message", "parts": [{"kind": "text", "text": "echo old"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        result = (await http.post("/a2a", json=body)).json()["result"]
    assert result["status"]["state"] == "completed"
    assert result["artifacts"][0]["parts"][0]["text"] == 'Echo: "old"'


# -- in process, with agents of the test's own ---------------------------------------------


@asynccontextmanager
async def serving(*agents: type[Agent]) -> AsyncIterator[httpx.AsyncClient]:
    """The app with these agents and the A2A routes, its lifespan running, over ASGI."""
    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="concerto-a2a-")), store_events=False)
    app = create_app(orchestrator=Orchestrator(settings, registry=AgentRegistry(list(agents))))
    app.include_router(router())  # what `concerto serve` does with the protocols pack's routes
    transport = httpx.ASGITransport(app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


async def test_cancel_stops_the_run() -> None:
    started, stopped = asyncio.Event(), asyncio.Event()

    class Slow(Agent):
        info = AgentInfo(name="slow", description="Thinks slowly about anything", examples=["think slowly"])

        async def run(self, context: AgentContext, payload: dict[str, Any]) -> AgentResult:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                stopped.set()
                raise
            return AgentResult(output={})

    async with serving(Slow) as http:
        config = ClientConfig(httpx_client=http, streaming=False, polling=True)  # returns once the task exists
        client = await create_client("http://test", config)
        (item,) = await collect(client, ask("think slowly"))
        await asyncio.wait_for(started.wait(), 10)
        cancelled = await client.cancel_task(CancelTaskRequest(id=item.task.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        await asyncio.wait_for(stopped.wait(), 5)  # the agent's work was stopped, not left running
        task = await client.get_task(GetTaskRequest(id=item.task.id))
        assert task.status.state == TaskState.TASK_STATE_CANCELED and not task.artifacts
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=item.task.id))


async def test_a_data_part_carries_the_input_contracts_fields() -> None:
    seen: list[AgentContext] = []
    greeter = fake_agent("greeter", description="Says hello to people", examples=["say hello to me"])
    counter = fake_agent(
        "counter",
        description="Counts the words of a text",
        examples=["count words"],
        on_run=lambda c, p: seen.append(c),
    )
    async with serving(greeter, counter) as http:
        client = await create_client("http://test", ClientConfig(httpx_client=http, streaming=False))
        fields = {"user_expertise": "executive", "parameters": {"column": "revenue"}, "context": "board pack"}
        (item,) = await collect(client, ask("count the words of this", fields))
    assert item.task.status.state == TaskState.TASK_STATE_COMPLETED
    (context,) = seen
    assert context.query.user_expertise == "executive" and context.query.context == "board pack"
    assert context.query.parameters == {"column": "revenue"}


def word_counter(seen: list[AgentContext], summary: str) -> type[Agent]:
    """An agent answering `summary` to "count words ...", noting the context of each run in `seen`."""
    return fake_agent(
        "counter",
        description="Counts words",
        examples=["count words"],
        summary=summary,
        on_run=lambda c, _: seen.append(c),
    )


async def test_earlier_answers_of_a_context_are_the_conversation_history() -> None:
    seen: list[AgentContext] = []
    agent = word_counter(seen, "Three words.")
    async with serving(agent) as http:
        client = await create_client("http://test", ClientConfig(httpx_client=http, streaming=False))
        (first,) = await collect(client, ask("count words: a b c"))
        (second,) = await collect(client, ask("count words again", context_id=first.task.context_id))
        (other,) = await collect(client, ask("count words elsewhere"))
    assert second.task.context_id == first.task.context_id != other.task.context_id
    first_answer = answer(first.task)[0]
    assert seen[0].query.conversation_history is None
    assert seen[1].query.conversation_history == [
        {"role": "user", "content": "count words: a b c"},
        {"role": "assistant", "content": first_answer},
    ]
    assert seen[2].query.conversation_history is None


def test_a_message_without_text_or_data_is_refused_before_any_task() -> None:
    from concerto.protocols.a2a_server import question

    with pytest.raises(InvalidParamsError, match="the question is empty"):
        question(Message(role=Role.ROLE_USER, message_id="m", parts=[new_text_part("")]))
    with pytest.raises(InvalidParamsError, match="JSON object"):
        question(Message(role=Role.ROLE_USER, message_id="m", parts=[new_text_part("hi"), new_data_part([1, 2])]))
    assert question(Message(role=Role.ROLE_USER, message_id="m", parts=[new_data_part({"query": "hi"})])).query == "hi"
    with pytest.raises(InvalidParamsError, match="contextId is 129 characters long; at most 128"):
        question(Message(role=Role.ROLE_USER, message_id="m", context_id="c" * 129, parts=[new_text_part("hi")]))


# -- tasks in the database ------------------------------------------------------------------


def counting_agent(events: list[str]) -> type[Agent]:
    """An agent that counts to five, a step every 0.2 s, noting each step and being stopped."""

    class Counter(Agent):
        info = AgentInfo(name="counter", description="Counts slowly to five", examples=["count slowly"])

        async def run(self, context: AgentContext, payload: dict[str, Any]) -> AgentResult:
            for i in range(1, 6):
                try:
                    await asyncio.sleep(0.2)
                except asyncio.CancelledError:
                    events.append(f"stopped at {i}")
                    raise
                events.append(f"counted {i}")
                await context.emit(EventType.ACTION, f"counted {i}", {})
            return AgentResult(summary="counted to five", output={})

    return Counter


@asynccontextmanager
async def processes(data_dir: Path, *agents: type[Agent]) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Two apps on one data dir (each with its own orchestrator, handler and task store, as two
    `concerto serve` processes have), an HTTP client for each."""
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for _ in range(2):
            settings = Settings(data_dir=data_dir, store_events=False)
            app = create_app(orchestrator=Orchestrator(settings, registry=AgentRegistry(list(agents))))
            app.include_router(router())
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app)
            clients.append(
                await stack.enter_async_context(httpx.AsyncClient(transport=transport, base_url="http://test"))
            )
        yield clients


async def sdk(http: httpx.AsyncClient, **config: Any) -> Client:
    """The SDK's client over `http`, not streaming (`polling=True`: returns once the task exists)."""
    return await create_client("http://test", ClientConfig(httpx_client=http, streaming=False, **config))


async def test_a_task_outlives_the_process_that_answered_it(tmp_path: Path) -> None:
    greeter = fake_agent("greeter", description="Says hello", examples=["say hello"], summary="Hello!")
    async with processes(tmp_path, greeter) as (http, _):
        (item,) = await collect(await sdk(http), ask("say hello"))
    async with processes(tmp_path, greeter) as (http, _):  # a restart: new processes, same data dir
        task = await (await sdk(http)).get_task(GetTaskRequest(id=item.task.id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED and answer(task)[0] == "Hello!"


async def test_a_cancel_sent_to_another_process_stops_the_agent_and_stays(tmp_path: Path) -> None:
    events: list[str] = []
    async with processes(tmp_path, counting_agent(events)) as (one, two):
        running, other = await sdk(one, polling=True), await sdk(two)
        (item,) = await collect(running, ask("count slowly"))
        while not events:
            await asyncio.sleep(0.05)
        cancelled = await other.cancel_task(CancelTaskRequest(id=item.task.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        await asyncio.sleep(1.5)  # longer than the agent takes: had it not stopped, it would have answered
        assert events[-1].startswith("stopped at") and "counted 5" not in events
        for client in (running, other):
            task = await client.get_task(GetTaskRequest(id=item.task.id))
            assert task.status.state == TaskState.TASK_STATE_CANCELED and not task.artifacts


async def test_a_context_started_on_one_process_continues_on_another(tmp_path: Path) -> None:
    seen: list[AgentContext] = []
    agent = word_counter(seen, "Three.")
    async with processes(tmp_path, agent) as (one, two):
        (first,) = await collect(await sdk(one), ask("count words: a b c"))
        (second,) = await collect(await sdk(two), ask("count words again", context_id=first.task.context_id))
    assert second.task.context_id == first.task.context_id
    assert seen[1].query.conversation_history == [
        {"role": "user", "content": "count words: a b c"},
        {"role": "assistant", "content": "Three."},
    ]


async def test_the_tasks_are_pruned_by_age_and_by_rows(tmp_path: Path) -> None:
    from a2a.server.cluster import TaskVersion
    from a2a.server.context import ServerCallContext
    from a2a.types import TaskStatus, TaskStatusUpdateEvent

    from concerto.protocols.a2a_tasks import EVENTS_PER_TASK, Tasks
    from concerto.store import open_database

    settings = Settings(data_dir=tmp_path, events_max_rows=4 * EVENTS_PER_TASK, events_max_age_days=1)
    tasks = Tasks()
    tasks.configure(settings)
    call = ServerCallContext()
    for n in range(7):
        status = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
        task, event = (
            Task(id=f"t{n}", context_id="c", status=status),
            TaskStatusUpdateEvent(task_id=f"t{n}", status=status),
        )
        await tasks.store.save(task, event=event, prev=None, prev_version=TaskVersion.MISSING, context=call)
    shared = open_database(settings)
    ages = [3, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]  # days: the first is too old, the second one task too many
    aged = [(time.time() - age * 86_400, f"t{n}") for n, age in enumerate(ages)]
    shared.transaction(lambda x: x("UPDATE a2a_tasks SET updated = ? WHERE task_id = ?", aged, many=True), write=True)
    await tasks.prune()
    kept = [f"t{n}" for n in range(len(ages)) if await tasks.store.get(f"t{n}", call)]
    assert kept == ["t3", "t4", "t5", "t6"]
    events = shared.transaction(lambda x: x("SELECT task_id FROM a2a_task_events ORDER BY task_id"), write=False)
    assert [e[0] for e in events] == kept  # a pruned task's events go with it
    await tasks.aclose()


async def test_a_task_whose_process_died_is_failed_not_followed_forever(tmp_path: Path) -> None:
    from a2a.server.cluster import TaskVersion
    from a2a.server.context import ServerCallContext
    from a2a.types import TaskStatus

    from concerto.protocols.a2a_tasks import Tasks

    settings, call = Settings(data_dir=tmp_path, store_events=False), ServerCallContext()
    dead, beating, reader = Tasks(), Tasks(), Tasks()  # three processes on one data dir
    for process in (dead, beating, reader):
        process.configure(settings)
    beating.heartbeat_s, reader.stale_s = 0.1, 0.5
    versions = {}
    for process, task_id in ((dead, "gone"), (dead, "followed"), (beating, "alive")):
        task = Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
        versions[task_id] = await process.store.save(
            task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=call
        )
    beating.started("alive")  # its process runs it and says so; `dead` wrote its tasks and stopped
    followed = reader.stream.subscribe("followed", after=versions["followed"])
    await asyncio.sleep(0.8)

    gone = await reader.store.get("gone", call)
    assert gone is not None and gone.task.status.state == TaskState.TASK_STATE_FAILED
    (text,) = get_text_parts(gone.task.status.message.parts)
    error = OrchestratorErrorResponse.model_validate(get_data_parts(gone.task.status.message.parts)[0])
    assert "not been heard from for 0.5 s" in text and error.error_category == "timeout" and error.retry_recommended
    alive = await reader.store.get("alive", call)
    assert alive is not None and alive.task.status.state == TaskState.TASK_STATE_WORKING
    event = await asyncio.wait_for(anext(followed), 5)  # the follower hears of the failure, then stops
    assert event.event.status.state == TaskState.TASK_STATE_FAILED  # type: ignore[union-attr]
    await followed.aclose()
    beating.finished("alive")
    for process in (dead, beating, reader):
        await process.aclose()


async def test_a_database_that_cannot_be_reached_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    down = dead_url().replace("http://", "postgresql://postgres@") + "/db"
    monkeypatch.setenv("CONCERTO_DATABASE_URL", down)
    async with processes(tmp_path, fake_agent("greeter", description="Says hello", examples=["say hello"])) as (
        http,
        _,
    ):
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "any"}}
        response = await http.post("/a2a", json=body, headers=A2A_VERSION)
    error = response.json()["error"]
    where = down.removeprefix("postgresql://postgres@").removesuffix("/db")
    assert error["code"] == -32603 and "A2A task store" in error["message"] and where in error["message"]
    assert "Traceback" not in response.text
