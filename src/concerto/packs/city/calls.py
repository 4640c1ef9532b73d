"""What the pack's agents share: their servers, calling a tool on a shared session, checking its answer."""

from __future__ import annotations

import asyncio
import sys
from abc import abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentResult, FirstUse, Unanswered
from concerto.agents.task import TaskInput
from concerto.contracts.common import ErrorKind
from concerto.mcp.client import MCPServer, shared_server
from concerto.mcp.settings import MCPSettings
from concerto.mcp.spec import ServersFileError, ServerSpec, load_servers
from concerto.packs.city.settings import CitySettings

if TYPE_CHECKING:
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.resources import Resources
    from concerto.settings import Settings

M = TypeVar("M", bound=BaseModel)

_ERROR_TYPES = {
    400: "invalid_input",
    404: "city_not_found",
    409: "ambiguous_city",
    502: "provider_error",
    503: "provider_unavailable",
    504: "provider_timeout",
}


def builtin_spec(kind: str, settings: Settings) -> ServerSpec:
    """The pack's own server, started as `python -m concerto.mcp concerto.packs.city.servers:KIND_server`."""
    return ServerSpec(
        name=kind,
        command=sys.executable,
        args=["-m", "concerto.mcp", f"concerto.packs.city.servers:{kind}_server", "--transport", "stdio"],
        env={"CONCERTO_WEATHER_URL": CitySettings.of(settings).weather_url},
    )


def server_for(resources: Resources, name: str, settings: Settings) -> MCPServer:
    """The shared session with the server `name` (weather, datetime, echo).

    It is the pack's own server unless the MCP servers file lists a server of that name,
    which then replaces it (e.g. the same server over HTTP).
    """

    def make() -> MCPServer:
        mcp = MCPSettings.of(settings)
        listed = {s.name: s for s in load_servers(mcp.mcp_servers_file)}
        spec = listed.get(name) or builtin_spec(name, settings)
        return MCPServer.configured(spec, mcp, request_timeout_ms=CitySettings.of(settings).city_request_timeout_ms)

    return shared_server(resources, name, make)


def server_first_use(agent: Agent, name: str) -> FirstUse | None:
    """Starting the MCP server `name` before the agent's task (`Agent.first_use`): a stdio
    server is a new Python process, which on a busy machine took most of the agent's 7.5 s."""
    try:
        server = server_for(agent.resources, name, agent.settings)
    except ServersFileError:
        return None  # the task reports the file's problem
    if server.connected:
        return None
    return FirstUse(f"mcp.{name}", f"the {name} MCP server", 0.5, server.session, lasting=False)


async def call_tool(context: AgentContext, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call `tool` on the named server through the orchestrator's shared session.

    Every failure becomes an `AgentFailure` whose message a user can act on (see
    `concerto.mcp.tools.call_tool`), with this pack's names for the server's error codes.
    """
    from concerto.mcp import tools

    # 002_*.txt: at most `city_max_concurrency` (2) sub-agent requests at once per orchestrator.
    slots = CitySettings.of(context.settings).city_max_concurrency
    limit = context.resources.get("city.request_slots", lambda: asyncio.Semaphore(slots))
    try:
        session = server_for(context.resources, server, context.settings)
    except ServersFileError as exc:
        raise AgentFailure(
            str(exc),
            error_type="config_error",
            kind=ErrorKind.ERROR,
            suggestion="Fix the file named by CONCERTO_MCP_SERVERS_FILE.",
        ) from None
    async with limit:
        return await tools.call_tool(context, session, tool, arguments, error_types=_ERROR_TYPES)


def check_result(model: type[M], data: dict[str, Any], server: str, tool: str) -> M:
    """Validate a tool's structured result against the spec's shape; malformed → AgentFailure."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'result'}: {e['msg']}" for e in exc.errors())
        raise AgentFailure(
            f"The {server} MCP server returned a malformed {tool} result ({problems}).",
            error_type="malformed_response",
            kind=ErrorKind.ERROR,
            details={"server": server, "tool": tool, "result": data},
        ) from None


def city_from(task: TaskInput) -> str:
    """The city of a task, extracted from the question when `prepare` did not run."""
    city = str(task.inputs.get("city") or "").strip()
    if not city:
        from concerto.packs.city.extract import extract_city

        city = extract_city(task.question)
    if not city:
        raise AgentFailure(
            "Which city? Name a US city, e.g. 'What time is it in Seattle?'.",
            error_type="missing_city",
            kind=ErrorKind.VALIDATION,
        )
    return city


class CityAgent(Agent):
    """Base of the agents that answer about a city: the orchestrator side finds the cities.

    A question may name several ("what time is it in Seattle, Boston and Gotham?"): each is
    answered (the pack's request slots bound the concurrency), and a city that cannot be
    answered is named in the result as an `Unanswered` part with the server's reason, so
    the other answers never stand for the whole question silently.
    """

    server: ClassVar[str]  # the MCP server it calls

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        return server_first_use(self, self.server)

    async def prepare(self, question: str, context: AgentContext) -> dict[str, Any]:
        """Find the cities in the question (as typed; the server resolves them)."""
        from concerto.packs.city.extract import extract_cities

        cities = extract_cities(question)
        inputs: dict[str, Any] = {"city": cities[0] if cities else ""}
        if len(cities) > 1:
            inputs["cities"] = cities
        return inputs

    @abstractmethod
    async def answer(self, context: AgentContext, city: str) -> AgentResult:
        """The answer for one city (its own result shape, as 002 defines it)."""

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        cities = [str(c).strip() for c in task.inputs.get("cities") or [] if str(c).strip()]
        if len(cities) < 2:
            return await self.answer(context, city_from(task))
        outcomes = await asyncio.gather(*(self.answer(context, c) for c in cities), return_exceptions=True)
        answered = [(c, r) for c, r in zip(cities, outcomes, strict=True) if isinstance(r, AgentResult)]
        failed = [(c, r) for c, r in zip(cities, outcomes, strict=True) if isinstance(r, AgentFailure)]
        crashed = [r for r in outcomes if isinstance(r, BaseException) and not isinstance(r, AgentFailure)]
        if crashed:
            raise crashed[0]
        if not answered:
            raise failed[0][1]
        summaries = [r.summary for _, r in answered if r.summary]
        return AgentResult(
            output={"cities": [r.output for _, r in answered], **answered[0][1].output},
            summary=" ".join(summaries),
            key_findings=[f for _, r in answered for f in r.key_findings],
            follow_up_questions=list(dict.fromkeys(q for _, r in answered for q in r.follow_up_questions))[:4],
            entities={"city": [r.entities.get("city", c) for c, r in answered]},
            unanswered=[
                Unanswered(
                    part=f"city '{city}'",
                    reason=failure.message,
                    error_type=failure.error_type,
                    kind=failure.kind,
                    suggestion=failure.suggestion,
                )
                for city, failure in failed
            ],
        )
