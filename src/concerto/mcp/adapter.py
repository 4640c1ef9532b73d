"""Any MCP server as agents: each tool of each server in the MCP servers file becomes one agent.

`discover(settings)` (the `mcp` pack's discovery hook) connects to every listed server
once, at orchestrator start-up, lists its tools and builds one `Agent` subclass per
tool, named `<server>_<tool>` and described by the tool's own description and input
schema, so the router chooses them like any built-in agent. A server listed under the
name of a pack's own server (the city pack's weather, datetime, echo) replaces that
server instead of adding agents. A server that cannot be reached is skipped with a
warning: the others still load.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import TYPE_CHECKING, Any

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult
from concerto.agents.task import TaskInput
from concerto.contracts.common import ErrorKind
from concerto.mcp.client import MCPCallError, MCPServer, shared_server
from concerto.mcp.settings import MCPSettings
from concerto.mcp.spec import ServerSpec, load_servers

if TYPE_CHECKING:
    from mcp.types import Tool

    from concerto.settings import Settings

log = logging.getLogger(__name__)

_KV = re.compile(r"\b([A-Za-z_][\w-]*)\s*[=:]\s*(\"[^\"]*\"|'[^']*'|\S+)")


def agent_name(server: str, tool: str) -> str:
    """`<server>_<tool>` as an agent name: lower case, `[a-z0-9_]`, starting with a letter."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", f"{server}_{tool}").lower()
    name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    return name if re.match(r"^[a-z]", name) else f"mcp_{name}"


def describe_inputs(schema: dict[str, Any]) -> dict[str, str]:
    """One line per input property: type, whether required, and its description."""
    required = set(schema.get("required") or [])
    out: dict[str, str] = {}
    for prop, body in (schema.get("properties") or {}).items():
        body = body if isinstance(body, dict) else {}
        kind = body.get("type") or "any"
        text = f"{kind}{', required' if prop in required else ''}"
        if body.get("description"):
            text += f": {body['description']}"
        out[prop] = text
    return out


async def discover(settings: Settings) -> list[type[Agent]]:
    """One agent class per tool of every external server in `CONCERTO_MCP_SERVERS_FILE`."""
    mcp = MCPSettings.of(settings)
    specs = load_servers(mcp.mcp_servers_file)
    if specs:
        from concerto.agents.loader import load_packs

        provided = set(load_packs().mcp_servers())  # these names replace a pack's server
        specs = [s for s in specs if s.name not in provided]
    listed = await asyncio.gather(*(_list_tools(spec, mcp) for spec in specs))
    agents: list[type[Agent]] = []
    taken: set[str] = set()
    for spec, tools in zip(specs, listed, strict=True):
        for tool in tools:
            name = agent_name(spec.name, tool.name)
            base, n = name, 2
            while name in taken:
                name, n = f"{base}_{n}", n + 1
            taken.add(name)
            agents.append(make_tool_agent(spec, tool, name))
    return agents


async def _list_tools(spec: ServerSpec, settings: MCPSettings) -> list[Tool]:
    server = MCPServer.configured(spec, settings)
    try:
        return await server.list_tools()
    except (MCPCallError, TimeoutError) as exc:
        log.warning("MCP server '%s' skipped: %s", spec.name, getattr(exc, "message", exc))
        return []
    finally:
        await server.aclose()


def make_tool_agent(spec: ServerSpec, tool: Tool, name: str) -> type[Agent]:
    """An agent class that calls `tool` on the server `spec` describes."""
    schema: dict[str, Any] = dict(tool.inputSchema or {})
    description = (tool.description or f"The {tool.name} tool of the {spec.name} MCP server.").strip()
    if spec.description:
        description = f"{spec.description.strip()} {description}"
    first_sentence = re.split(r"(?<=[.!?])\s", description, maxsplit=1)[0]
    info = AgentInfo(
        name=name,
        description=description,
        capabilities=[first_sentence, f"MCP tool {tool.name} of server {spec.name}"],
        inputs=describe_inputs(schema),
        outputs={"result": "The tool's structured result, or its text"},
        pack=f"mcp:{spec.name}",
        default_timeout_ms=7500,
        max_concurrency=2,
    )

    class ToolAgent(Agent):
        __doc__ = f"Calls the MCP tool {tool.name} on server {spec.name}."

        async def prepare(self, question: str, context: AgentContext) -> dict[str, Any]:
            return {"arguments": await arguments_for(question, schema, context)}

        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            from concerto.mcp.tools import call_tool

            arguments = task.inputs.get("arguments")
            if not isinstance(arguments, dict):
                arguments = await arguments_for(task.question, schema, context)
            settings = MCPSettings.of(context.settings)
            server = shared_server(context.resources, spec.name, lambda: MCPServer.configured(spec, settings))
            result = await call_tool(context, server, tool.name, arguments)
            # FastMCP wraps a plain return value as {"result": value}.
            value = result.get("result") if set(result) == {"result"} else result.get("text")
            text = value if isinstance(value, str) else json.dumps(result, ensure_ascii=False)
            summary = text if len(text) <= 300 else text[:297] + "..."
            return AgentResult(output=result, summary=summary, key_findings=[summary], entities=arguments)

    ToolAgent.info = info
    ToolAgent.__name__ = ToolAgent.__qualname__ = f"MCPTool_{name}"
    return ToolAgent


async def arguments_for(request: str, schema: dict[str, Any], context: AgentContext) -> dict[str, Any]:
    """Tool arguments from the question.

    A JSON object in the question is taken as is; `key=value` pairs fill properties of
    those names; a single required string property gets the whole question. Otherwise,
    when an LLM is configured, it fills the schema. Failing all that, the agent says
    which inputs it needs.
    """
    props: dict[str, Any] = schema.get("properties") or {}
    required = [p for p in schema.get("required") or [] if p in props]
    start = request.find("{")
    if start >= 0:
        try:
            value = json.loads(request[start : request.rfind("}") + 1])
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
    pairs = {k: v.strip("\"'") for k, v in _KV.findall(request) if k in props}
    if pairs and all(r in pairs for r in required):
        return {k: _coerce(v, props[k]) for k, v in pairs.items()}
    strings = [p for p in (required or list(props)) if (props[p] or {}).get("type") == "string"]
    if not required and not props:
        return {}
    if len(required or props) == 1 and strings:
        return {strings[0]: request}
    if context.llm is not None:
        return await _llm_arguments(request, schema, context)
    raise AgentFailure(
        f"This tool needs the inputs {', '.join(required or props)}; give them as key=value.",
        error_type="invalid_input",
        kind=ErrorKind.VALIDATION,
        suggestion=" ".join(f"{p}=..." for p in (required or props)),
    )


def _coerce(value: str, body: dict[str, Any]) -> Any:
    kind = (body or {}).get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
        if kind == "boolean":
            return value.lower() in ("1", "true", "yes")
    except ValueError:
        pass
    return value


async def _llm_arguments(request: str, schema: dict[str, Any], context: AgentContext) -> dict[str, Any]:
    from concerto.llm.base import LLMError, Message

    assert context.llm is not None
    messages = [
        Message(
            role="system",
            content="Fill the tool's arguments from the question. "
            "Answer with one JSON object matching this schema:\n" + json.dumps(schema),
        ),
        Message(role="user", content=request),
    ]
    try:
        reply = await context.llm.complete(messages, json_schema=schema, max_tokens=256)
        value = json.loads(reply.text)
    except (LLMError, ValueError) as exc:
        raise AgentFailure(
            f"Could not work out the tool's arguments from the question: {exc}",
            error_type="invalid_input",
            kind=ErrorKind.VALIDATION,
        ) from None
    if not isinstance(value, dict):
        raise AgentFailure(
            "The LLM did not give the tool's arguments as an object.",
            error_type="invalid_input",
            kind=ErrorKind.VALIDATION,
        )
    return value
