"""What the pack's agents share: calling a tool on a shared session and checking its answer."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from concerto.agents.base import Agent, AgentContext, AgentFailure
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType

M = TypeVar("M", bound=BaseModel)

_ERROR_TYPES = {
    400: "invalid_input",
    404: "city_not_found",
    409: "ambiguous_city",
    502: "provider_error",
    503: "provider_unavailable",
    504: "provider_timeout",
}


async def call_tool(context: AgentContext, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call `tool` on the named server through the orchestrator's shared session.

    Every failure becomes an `AgentFailure` whose message a user can act on; the
    server's error code, reason and options (e.g. the cities a name could mean) go to
    `details`.
    """
    from concerto.packs.city.client import MCPCallError, server_for
    from concerto.packs.city.config import ServersFileError

    await context.emit(
        EventType.ACTION,
        f"Calling {tool} on the {server} MCP server",
        {"server": server, "tool": tool, "arguments": arguments},
        step=2,
    )
    # 002_*.txt: at most `city_max_concurrency` (2) sub-agent requests at once per orchestrator.
    limit = context.resources.get(
        "city.request_slots", lambda: asyncio.Semaphore(context.settings.city_max_concurrency)
    )
    try:
        async with limit:
            mcp = server_for(context.resources, server, context.settings)
            return await mcp.call(tool, arguments)
    except ServersFileError as exc:
        raise AgentFailure(
            str(exc),
            error_type="config_error",
            kind=ErrorKind.ERROR,
            suggestion="Fix the file named by CONCERTO_MCP_SERVERS_FILE.",
        ) from None
    except MCPCallError as exc:
        reason = str(exc.data.get("reason") or "")
        error_type = (
            reason
            or _ERROR_TYPES.get(exc.code)
            or (
                "timeout"
                if exc.kind == ErrorKind.TIMEOUT
                else "mcp_unavailable"
                if exc.kind == ErrorKind.UNAVAILABLE
                else "mcp_error"
            )
        )
        # The server's message already says what to do ("Which one? Add the state, ...").
        options = [str(o) for o in exc.data.get("options") or []]
        raise AgentFailure(
            exc.message,
            error_type=error_type,
            kind=exc.kind,
            details={"server": server, "tool": tool, "code": exc.code, "options": options},
        ) from None


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


def city_from(payload: dict[str, Any]) -> str:
    """The city of a payload, extracted from the question when `prepare` did not run."""
    city = str(payload.get("city") or "").strip()
    if not city and payload.get("request"):
        from concerto.packs.city.extract import extract_city

        city = extract_city(str(payload["request"]))
    if not city:
        raise AgentFailure(
            "Which city? Name a US city, e.g. 'What time is it in Seattle?'.",
            error_type="missing_city",
            kind=ErrorKind.VALIDATION,
        )
    return city


class CityAgent(Agent):
    """Base of the agents that answer about one city: the orchestrator side finds the city."""

    async def prepare(self, request: str, context: AgentContext) -> dict[str, Any]:
        """Find the city in the question (as typed; the server resolves it)."""
        from concerto.packs.city.extract import extract_city

        return {"city": extract_city(request), "request": request}
