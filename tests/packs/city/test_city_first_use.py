"""The city agents' MCP servers are started before their tasks (`Agent.first_use`): a stdio
server is a new Python process, and on a busy machine starting it took most of an agent's
7.5 s; now the agent's timeout covers the call only."""

from __future__ import annotations

from concerto.agents.registry import AgentRegistry
from concerto.contracts.orchestrator import OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.orchestrator.events import EventStream
from concerto.packs.city.datetime_agent import DateTimeAgent
from concerto.packs.city.echo import EchoAgent
from concerto.resources import Resources
from concerto.settings import Settings


async def test_the_server_is_started_before_the_task(settings: Settings, resources: Resources) -> None:
    orchestrator = Orchestrator(settings, registry=AgentRegistry([DateTimeAgent, EchoAgent]), resources=resources)
    agent = orchestrator.agent("datetime")
    work = agent.first_use()
    assert work is not None and (work.key, work.title) == ("mcp.datetime", "the datetime MCP server")
    events = EventStream("", 1000)
    result = await orchestrator.ask("what time is it in Chicago?", events=events, agent="datetime")
    assert isinstance(result, OrchestratorOutput), result
    titles = [e.title for e in events.events]
    started = next(i for i, t in enumerate(titles) if t.startswith("Preparing the datetime MCP server"))
    assert titles[started + 1].startswith("Prepared the datetime MCP server in ")
    assert started < titles.index("Dispatching agents")
    assert agent.first_use() is None  # connected
    assert orchestrator.agent("echo").first_use() is not None  # each server its own
    await orchestrator.aclose()
