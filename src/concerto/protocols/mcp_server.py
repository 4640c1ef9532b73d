"""Concerto as an MCP server: `concerto mcp serve concerto --transport stdio|http`.

What a client sees:
- the `ask` tool: a question (with `source`, `format`, `expertise`, `now`) answered by the
  whole orchestrator; the answer as text, the output contract (or the error contract, with
  `isError`) as structured content. While it runs, each transparency event is a progress
  notification (when the client sent a progress token): progress is the event's sequence
  number, the message its title.
- one tool per loaded agent, named after it, for a direct call (no routing): `question` plus
  the agent's declared inputs (`AgentInfo.inputs`) as optional arguments, which travel as the
  question's `parameters`; the same result shape as `ask`.
- every agent's example questions as prompts (`<agent>-<n>`, described by the question).
- every loaded data source as a resource `concerto://sources/<name>` (its data context as
  JSON), and `concerto://agents` (every agent's declaration).

One orchestrator per server process, created on first use and shared by every session; it
is closed when the last session ends (stdio: when the client closes stdin).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts import Prompt
from mcp.types import CallToolResult, Resource, TextContent
from pydantic import Field

from concerto.agents.base import AgentInfo
from concerto.contracts.events import Event
from concerto.contracts.orchestrator import OrchestratorErrorResponse
from concerto.mcp.serve import HTTP_PATH
from concerto.settings import Settings

if TYPE_CHECKING:
    from concerto.orchestrator.engine import Orchestrator

SOURCES_URI = "concerto://sources/"
AGENTS_URI = "concerto://agents"
# Declared inputs that are the question itself or come from the plan, not from a caller.
_NOT_ARGUMENTS = {"request", "query", "previous_results"}
# Declared inputs that are fields of the input contract rather than `parameters`.
_INPUT_FIELDS = {"data_source_id", "context", "user_expertise", "output_format"}

Expertise = Literal["executive", "analyst", "data_scientist"]
Format = Literal["narrative", "structured", "brief"]


class Engine:
    """The process's one orchestrator, started on first use, closed with the last session."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._orchestrator: Orchestrator | None = None
        self._lock = asyncio.Lock()
        self._sessions = 0

    async def get(self) -> Orchestrator:
        async with self._lock:
            if self._orchestrator is None:
                from concerto.orchestrator.engine import Orchestrator

                orchestrator = Orchestrator(self.settings)
                await orchestrator.start()
                self._orchestrator = orchestrator
            return self._orchestrator

    @asynccontextmanager
    async def session(self, _server: Any) -> AsyncIterator[None]:
        """The MCP SDK's per-session lifespan: count sessions, close the engine after the last."""
        self._sessions += 1
        try:
            yield None
        finally:
            self._sessions -= 1
            if self._sessions == 0 and self._orchestrator is not None:
                orchestrator, self._orchestrator = self._orchestrator, None
                await orchestrator.aclose()


def concerto_server(host: str = "127.0.0.1", port: int = 8000, *, settings: Settings | None = None) -> FastMCP:
    """The MCP server of the whole orchestrator (the `protocols` pack's `concerto` server)."""
    from concerto.agents.loader import load_packs

    settings = settings or Settings()
    engine = Engine(settings)
    infos = load_packs(settings.agents).registry(settings).infos()

    class ConcertoMCP(FastMCP):
        async def list_resources(self) -> list[Any]:
            """The fixed resources, then one per data source loaded now."""
            return [*await super().list_resources(), *await _source_resources(engine)]

    server = ConcertoMCP(
        name="concerto",
        host=host,
        port=port,
        streamable_http_path=HTTP_PATH,
        log_level="WARNING",
        lifespan=engine.session,
        instructions="Concerto answers plain-language questions about a company's data and systems with "
        "specialist agents. Use `ask` for any question; the per-agent tools skip routing.",
    )
    _add_ask(server, engine)
    for info in infos:
        _add_agent_tool(server, engine, info)
        _add_prompts(server, info)
    _add_resources(server, engine, infos)
    return server


# -- tools ------------------------------------------------------------------------------


def _add_ask(server: FastMCP, engine: Engine) -> None:
    async def ask(
        question: Annotated[str, Field(description="The question, in plain language")],
        ctx: Context,
        source: Annotated[str | None, Field(description="A loaded data source to ask about")] = None,
        format: Annotated[Format, Field(description="Shape of the answer")] = "narrative",
        expertise: Annotated[Expertise, Field(description="Who the answer is written for")] = "analyst",
        now: Annotated[str | None, Field(description="Fix the clock every agent sees (ISO 8601)")] = None,
    ) -> CallToolResult:
        fields: dict[str, Any] = {"query": question, "output_format": format, "user_expertise": expertise}
        if source is not None:
            fields["source"] = source
        return await _answer(engine, ctx, fields, now)

    server.add_tool(
        ask,
        name="ask",
        title="Ask Concerto",
        description="Answer a plain-language question with Concerto's agents (KPIs, weather and time, "
        "metrics, data analytics, commercial statistics). Returns the answer as text and the output "
        "contract (data, steps, timings) as structured content.",
        structured_output=False,
    )


def _add_agent_tool(server: FastMCP, engine: Engine, info: AgentInfo) -> None:
    """A tool named after the agent: `question` plus its declared inputs as optional arguments."""
    names = [name for name in info.inputs if name not in _NOT_ARGUMENTS and name.isidentifier()]
    names = [name for name in names if name not in {"question", "ctx", "now"}]

    async def call(question: str, ctx: Context, now: str | None = None, **inputs: Any) -> CallToolResult:
        fields: dict[str, Any] = {"query": question}
        parameters = {}
        for name, value in inputs.items():
            if value is None:
                continue
            if name in _INPUT_FIELDS:
                fields[name] = value
            else:
                parameters[name] = value
        if parameters:
            fields["parameters"] = parameters
        return await _answer(engine, ctx, fields, now, agent=info.name)

    parameters = [
        inspect.Parameter(
            "question",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str, Field(description=f"The question for {info.name}")],
        ),
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context),
        inspect.Parameter(
            "now",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str | None, Field(description="Fix the clock (ISO 8601)")],
            default=None,
        ),
        *(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[Any, Field(description=info.inputs[name])],
                default=None,
            )
            for name in names
        ),
    ]
    call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters}
    examples = "; ".join(f'"{e}"' for e in info.examples[:3])
    server.add_tool(
        call,
        name=info.name,
        title=f"{info.name} ({info.pack} pack)" if info.pack else info.name,
        description=f"{info.description} Asks this agent directly, without routing."
        + (f" Examples: {examples}." if examples else ""),
        structured_output=False,
    )


async def _answer(
    engine: Engine, ctx: Context, fields: dict[str, Any], now: str | None, agent: str | None = None
) -> CallToolResult:
    """Run the question, report each event as progress, return the contract as the tool result."""
    try:
        clock = datetime.fromisoformat(now.replace("Z", "+00:00")) if now else None
    except ValueError:
        return _refusal(f"Invalid now '{now}': give the date-time as ISO 8601 text, e.g. 2025-06-15T12:00:00Z")
    orchestrator = await engine.get()
    result: Any = None
    async for item in orchestrator.stream(fields, now=clock, agent=agent):
        if isinstance(item, Event):
            await _progress(ctx, item)
        else:
            result = item
    failed = isinstance(result, OrchestratorErrorResponse)
    text = result.error_message if failed else result.response
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structuredContent=result.model_dump(mode="json"),
        isError=failed,
    )


async def _progress(ctx: Context, event: Any) -> None:
    """One transparency event as a progress notification; a client that did not ask for
    progress (no token) gets none, and a client that went away does not stop the question."""
    meta = ctx.request_context.meta
    if meta is None or meta.progressToken is None:
        return
    source = "" if event.source == "orchestrator" else f"{event.source}: "
    try:
        await ctx.report_progress(event.seq, None, f"{source}{event.title}")
    except Exception:  # the notification could not be sent (e.g. the stream closed)
        return


def _refusal(message: str) -> CallToolResult:
    body = OrchestratorErrorResponse(error_message=message, error_category="invalid_input")
    return CallToolResult(
        content=[TextContent(type="text", text=message)], structuredContent=body.model_dump(mode="json"), isError=True
    )


# -- prompts and resources ------------------------------------------------------------------


def _add_prompts(server: FastMCP, info: AgentInfo) -> None:
    """Each example question as a prompt whose one message asks it."""
    for n, example in enumerate(info.examples, 1):

        def render(question: str = example) -> str:
            return question

        prompt = Prompt.from_function(render, name=f"{info.name}-{n}", description=example)
        prompt.arguments = []  # the question is fixed; nothing to fill in
        server.add_prompt(prompt)


def _add_resources(server: FastMCP, engine: Engine, infos: list[AgentInfo]) -> None:
    @server.resource(
        AGENTS_URI, name="agents", description="Every loaded agent's declaration", mime_type="application/json"
    )
    def agents() -> str:
        return json.dumps([info.model_dump(mode="json") for info in infos], indent=1)

    @server.resource(
        SOURCES_URI + "{name}",
        name="source",
        description="A loaded data source's data context: columns, types, samples, statistics, meanings",
        mime_type="application/json",
    )
    async def source(name: str) -> str:
        from concerto.data.sources import store_for

        orchestrator = await engine.get()
        store = store_for(orchestrator.settings, orchestrator.resources)
        context = await asyncio.to_thread(store.context, name)
        return context.model_dump_json(indent=1)


async def _source_resources(engine: Engine) -> list[Any]:
    """One resource per loaded data source; none when the data pack cannot be used."""
    from concerto.data.sources import store_for

    orchestrator = await engine.get()
    try:
        store = store_for(orchestrator.settings, orchestrator.resources)
        contexts = await asyncio.to_thread(store.contexts)
    except Exception:  # the store is not configured or cannot be reached: no sources to list
        return []
    return [
        Resource(
            uri=f"{SOURCES_URI}{c.name}",
            name=c.name,
            description=f"{c.row_count} rows: " + ", ".join(c.columns[:12]),
            mimeType="application/json",
        )
        for c in contexts
    ]
