"""Concerto as an A2A agent: its agent card and the A2A endpoint on `concerto serve` (a2a-sdk 1.x).

Agents built on other frameworks find Concerto at `/.well-known/agent-card.json` and send
it tasks at `/a2a`: JSON-RPC 2.0 (also the 0.3 method names) and the HTTP+JSON binding
(`/a2a/message:send`, `/a2a/tasks/{id}` ...). A message's text is the question; a data
part may carry any other `OrchestratorInput` field (`source`, `user_expertise`,
`parameters` ...). The transparency events become `working` status updates (those that come
within 50 ms of each other share one, `_Steps`), the answer an `answer` artifact (the response
as text, the output contract as data) and the task completes; an error contract makes the task
`failed` with the contract as data. Earlier
answered tasks of the same context are the question's `conversation_history`.

The SDK speaks the protocol (routing, validation, task store, streams, errors in JSON-RPC's
shape); this module only translates between its tasks and the one orchestrator of the app
(`app.state.orchestrator`), reached through the call context of each request. Tasks live in
the shared log (`a2a_tasks.py`), so any process behind a load balancer serves any task.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import Event as A2AEvent
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import (
    PROTOCOL_VERSION_0_3,
    PROTOCOL_VERSION_1_0,
    TransportProtocol,
)
from a2a.utils.errors import InvalidParamsError
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.routing import Route

from concerto.contracts.events import Event
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorInput
from concerto.orchestrator.engine import validation_message
from concerto.protocols.a2a_edge import A2A_PATH, CARD_PATH, JsonRpcRoute, RestRoute, json_only
from concerto.protocols.a2a_tasks import Tasks

if TYPE_CHECKING:
    from concerto.agents.base import AgentInfo
    from concerto.orchestrator.engine import Orchestrator

ANSWER_ARTIFACT = "answer"
EVENTS_METADATA = "concerto_events"  # key of a status update's metadata: the Event contracts it reports
STEP_BATCH_S = 0.05  # events that follow an update within this time go together in the next one
MAX_ID = 128  # characters of a task or context id (the SDK makes UUIDs, 36), as of a conversation_id
MAX_HISTORY_TASKS = 10  # earlier tasks of a context read back as conversation history
MODES = ["text/plain", "application/json"]
BEARER = "bearer"  # the card's name of the security scheme CONCERTO_API_TOKEN is
_ORCHESTRATOR = "concerto.orchestrator"  # key of the call context's state
# The card's one skill when no agent is loaded (a card needs at least one).
ASK_SKILL = AgentSkill(id="ask", name="ask", description="Any question; no agent is loaded yet", tags=["concerto"])


def router() -> APIRouter:
    """The card and the A2A routes, with a task store and request handler of their own (one
    per app, the store on the app's database); the handler's running tasks are drained when
    the app shuts down."""
    tasks = Tasks()
    handler = _Handler(
        agent_executor=ConcertoExecutor(tasks),
        task_store=tasks.store,
        agent_card=agent_card("http://localhost/", []),
        event_stream=tasks.stream,
    )
    context = _CallContext()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks.configure(app.state.orchestrator.settings)
        try:
            yield
        finally:
            await handler.aclose()
            await tasks.aclose()

    api = APIRouter(lifespan=lifespan)

    async def card(request: Request) -> JSONResponse:
        """The agent card: Concerto, one skill per loaded agent, this server's URLs."""
        orchestrator: Orchestrator = request.app.state.orchestrator
        token = orchestrator.settings.api_token is not None
        found = agent_card(str(request.base_url), orchestrator.registry.infos(), token=token)
        return JSONResponse(agent_card_to_dict(found))

    api.add_api_route(CARD_PATH, card, methods=["GET"], include_in_schema=False)
    # Starlette routes (JSON-RPC envelopes and the protobuf JSON of the REST binding are not
    # described by FastAPI models): left out of the OpenAPI document, described in docs/protocols/a2a.md.
    rpc = create_jsonrpc_routes(handler, A2A_PATH, context_builder=context, enable_v0_3_compat=True)
    # The SDK also mounts every REST route under `/{tenant}`, which on the app's root would
    # catch any two-segment path; Concerto has no tenants.
    rest = [r for r in create_rest_routes(handler, context, path_prefix=A2A_PATH) if isinstance(r, Route)]
    api.routes.extend(json_only(route, JsonRpcRoute) for route in rpc)
    api.routes.extend(json_only(route, RestRoute) for route in rest)
    return api


def agent_card(base_url: str, infos: list[AgentInfo], *, token: bool = False) -> AgentCard:
    """Concerto's card: what it is, how to reach it from `base_url`, one skill per agent, and
    with `token` (CONCERTO_API_TOKEN is set) that requests need it as a bearer token."""
    url = base_url.rstrip("/") + A2A_PATH
    security: dict[str, Any] = {}
    if token:
        scheme = HTTPAuthSecurityScheme(scheme="Bearer", description="The server's CONCERTO_API_TOKEN")
        security = {
            "security_schemes": {BEARER: SecurityScheme(http_auth_security_scheme=scheme)},
            "security_requirements": [SecurityRequirement(schemes={BEARER: StringList()})],
        }
    return AgentCard(
        **security,
        name="Concerto",
        description=(
            "Answers plain-language questions about data and systems by routing them to specialist "
            "agents; streams every step it takes and returns the answer with its data."
        ),
        version=_version(),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=PROTOCOL_VERSION_1_0),
            AgentInterface(
                url=url, protocol_binding=TransportProtocol.HTTP_JSON, protocol_version=PROTOCOL_VERSION_1_0
            ),
            AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=PROTOCOL_VERSION_0_3),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=[
            AgentSkill(
                id=info.name,
                name=info.name.replace("_", " "),
                description=info.description,
                tags=[t for t in (info.pack, info.name) if t],
                examples=info.examples,
            )
            for info in infos
        ]
        or [ASK_SKILL],
    )


def question(message: Message, query_id: str | None = None) -> OrchestratorInput:
    """The input contract a message carries: its text parts are the question; its data parts
    (JSON objects, merged in order) any other field. Anything invalid is the protocol's
    invalid-params error, naming the field."""
    for name, value in (("taskId", message.task_id), ("contextId", message.context_id)):
        if len(value) > MAX_ID:
            raise InvalidParamsError(message=f"{name} is {len(value)} characters long; at most {MAX_ID} are kept")
    fields: dict[str, Any] = {}
    for data in get_data_parts(message.parts):
        if not isinstance(data, dict):
            raise InvalidParamsError(message="a data part must be a JSON object of OrchestratorInput fields")
        fields.update(data)
    text = "\n".join(get_text_parts(message.parts))
    if text or "query" not in fields:
        fields["query"] = text
    if query_id and "query_id" not in fields:
        fields["query_id"] = query_id
    try:
        return OrchestratorInput.model_validate(fields)
    except ValidationError as exc:
        errors = [
            {
                "field": ".".join(str(p) for p in e["loc"]) or "message",
                "message": str(e["msg"]).removeprefix("Value error, "),
            }
            for e in exc.errors()
        ]
        raise InvalidParamsError(
            message="Invalid question — " + validation_message(exc.errors()), data={"errors": errors}
        ) from None


class ConcertoExecutor(AgentExecutor):
    """Runs a task's question through the app's orchestrator and reports it as A2A events."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self.store = tasks.store
        self._cancelled: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        message = context.message or Message()
        if context.current_task is None:
            task = Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
            task.history.append(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task_id, context_id)
        orchestrator: Orchestrator = context.call_context.state[_ORCHESTRATOR]
        self.tasks.started(task_id)  # touched while it runs: other processes know it is alive
        try:
            request = question(message, query_id=task_id)
            if request.conversation_history is None:
                history = await self._history(context_id, task_id, context.call_context)
                request = request.model_copy(update={"conversation_history": history or None})
            async with _Steps(updater) as steps:
                async for item in orchestrator.stream(request):
                    if task_id in self._cancelled:
                        return
                    if isinstance(item, Event):
                        steps.add(item)
                        continue
                    await steps.flush()
                    if isinstance(item, OrchestratorErrorResponse):
                        await updater.failed(updater.new_agent_message(_parts(item.error_message, item)))
                    else:
                        await updater.add_artifact(_parts(item.response, item), name=ANSWER_ARTIFACT)
                        await updater.complete()
        except InvalidParamsError as exc:  # checked by the handler already; a task resumed later is not
            await updater.failed(updater.new_agent_message([new_text_part(exc.message)]))
        finally:
            self._cancelled.discard(task_id)
            self.tasks.finished(task_id)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task cancelled; the SDK then cancels `execute`, whose stream stops the run."""
        task_id = context.task_id or ""
        self._cancelled.add(task_id)
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()

    async def _history(self, context_id: str, task_id: str, call: ServerCallContext) -> list[dict[str, Any]]:
        """The question and answer of the context's earlier completed tasks, oldest first."""
        page = await self.store.list(
            ListTasksRequest(context_id=context_id, include_artifacts=True, page_size=MAX_HISTORY_TASKS + 1), call
        )
        turns: list[dict[str, Any]] = []
        for task in reversed(page.tasks):  # the store lists the newest first
            if task.id == task_id or task.status.state != TaskState.TASK_STATE_COMPLETED:
                continue
            asked = next((m for m in task.history if m.role == Role.ROLE_USER), None)
            answer = next((a for a in task.artifacts if a.name == ANSWER_ARTIFACT), None)
            if asked is not None and answer is not None:
                turns.append({"role": "user", "content": "\n".join(get_text_parts(asked.parts))})
                turns.append({"role": "assistant", "content": "\n".join(get_text_parts(answer.parts))})
        return turns


class _Steps:
    """A question's events as `working` status updates: the first at once, then those that
    follow within `STEP_BATCH_S` together in one update (its message one line per event, its
    metadata the events). Every update is a write to the task store (a transaction on the
    shared log), so an echo question's twenty events make two writes, while an agent's step
    that comes seconds after the last still arrives alone and at once."""

    def __init__(self, updater: TaskUpdater) -> None:
        self.updater = updater
        self.pending: list[Event] = []
        self.sent_at = -STEP_BATCH_S
        self.later: asyncio.Task[None] | None = None
        self.sending = asyncio.Lock()  # updates go out in the order of their events

    async def __aenter__(self) -> _Steps:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.later is not None:
            self.later.cancel()

    def add(self, event: Event) -> None:
        self.pending.append(event)
        if self.later is None:
            wait = self.sent_at + STEP_BATCH_S - time.monotonic()
            self.later = asyncio.create_task(self._flush_after(wait), name="a2a-steps")

    async def _flush_after(self, wait: float) -> None:
        if wait > 0:
            await asyncio.sleep(wait)
        self.later = None
        await self.flush()

    async def flush(self) -> None:
        """Send the events not sent yet, as one update."""
        if self.later is not None and self.later is not asyncio.current_task():
            self.later.cancel()
            self.later = None
        async with self.sending:
            batch, self.pending = self.pending, []
            if not batch:
                return
            self.sent_at = time.monotonic()
            lines = [e.title if e.source == "orchestrator" else f"{e.source}: {e.title}" for e in batch]
            await self.updater.update_status(
                TaskState.TASK_STATE_WORKING,
                message=self.updater.new_agent_message([new_text_part("\n".join(lines))]),
                metadata={EVENTS_METADATA: [_json(e) for e in batch]},
            )


class _Handler(DefaultRequestHandler):
    """The SDK's handler, refusing a message that carries no valid question before any task
    exists (the protocol's invalid-params error, not a failed task)."""

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Message | Task:
        question(params.message)
        return await super().on_message_send(params, context)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[A2AEvent, None]:
        question(params.message)
        async for event in super().on_message_send_stream(params, context):
            yield event


class _CallContext(DefaultServerCallContextBuilder):
    """The SDK's call context plus the app's orchestrator, for the executor."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[_ORCHESTRATOR] = request.app.state.orchestrator
        return context


def _parts(text: str, contract: BaseModel) -> list[Part]:
    return [new_text_part(text, media_type="text/plain"), new_data_part(_json(contract), media_type="application/json")]


def _json(model: BaseModel) -> dict[str, Any]:
    """A contract as plain JSON values (non-finite numbers as null, which protobuf's Value keeps)."""
    value: dict[str, Any] = json.loads(model.model_dump_json())
    return value


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("concerto")
    except PackageNotFoundError:
        return "0.0.0"
