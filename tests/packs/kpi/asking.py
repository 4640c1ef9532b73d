"""Asking the `kpi` agent one question as the orchestrator does (`prepare`, then `run`), for the
pack's test modules (a helper module: test modules do not import one another)."""

from __future__ import annotations

import pytest

from concerto.agents.base import AgentContext, AgentFailure, AgentResult
from concerto.packs.kpi.agent import KPIAgent
from concerto.testing import run_agent


async def ask(agent: KPIAgent, context: AgentContext, question: str) -> AgentResult:
    """The agent's answer to `question`."""
    return await run_agent(agent, context, question)


async def failure(agent: KPIAgent, context: AgentContext, question: str) -> AgentFailure:
    """The failure the agent reports for `question` (the test fails if it answers)."""
    with pytest.raises(AgentFailure) as info:
        await ask(agent, context, question)
    return info.value
