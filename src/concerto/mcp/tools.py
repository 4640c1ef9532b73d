"""Calling an MCP tool from an agent: an event that shows the call, and failures a user can act on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from concerto.agents.base import AgentContext, AgentFailure
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType
from concerto.mcp.client import MCPCallError, MCPServer


async def call_tool(
    context: AgentContext,
    server: MCPServer,
    tool: str,
    arguments: dict[str, Any],
    *,
    error_types: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """Call `tool` on `server` and return its structured result.

    Every failure becomes an `AgentFailure` whose message a user can act on. Its
    `error_type` is the reason the server gave in the error's data, else the name
    `error_types` gives the error code (a pack's vocabulary, e.g. 404 → city_not_found),
    else timeout / mcp_unavailable / mcp_error; the code, the reason and any options
    (e.g. the cities a name could mean) go to `details`.
    """
    name = server.spec.name
    await context.emit(
        EventType.ACTION,
        f"Calling {tool} on the {name} MCP server",
        {"server": name, "tool": tool, "arguments": arguments},
        step=2,
    )
    try:
        return await server.call(tool, arguments)
    except MCPCallError as exc:
        raise as_agent_failure(exc, name, tool, error_types or {}) from None


def as_agent_failure(exc: MCPCallError, server: str, tool: str, error_types: Mapping[int, str]) -> AgentFailure:
    """The `AgentFailure` for a failed call (see `call_tool`)."""
    reason = str(exc.data.get("reason") or "")
    fallback = {ErrorKind.TIMEOUT: "timeout", ErrorKind.UNAVAILABLE: "mcp_unavailable"}.get(exc.kind, "mcp_error")
    options = [str(o) for o in exc.data.get("options") or []]
    # The server's message already says what to do ("Which one? Add the state, ...").
    return AgentFailure(
        exc.message,
        error_type=reason or error_types.get(exc.code) or fallback,
        kind=exc.kind,
        details={"server": server, "tool": tool, "code": exc.code, "options": options},
    )
