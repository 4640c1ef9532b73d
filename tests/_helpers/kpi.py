"""Helpers of the KPI pack's tests: the questions' clock, and asking the `kpi` agent one
question as the orchestrator does (`prepare`, then `run`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from concerto.agents.base import AgentContext, AgentFailure, AgentResult
from concerto.packs.kpi.agent import KPIAgent
from concerto.testing import run_agent

NOW = datetime(2025, 6, 15, 9, 30, tzinfo=UTC)


async def ask(agent: KPIAgent, context: AgentContext, question: str) -> AgentResult:
    """The agent's answer to `question`."""
    return await run_agent(agent, context, question)


async def failure(agent: KPIAgent, context: AgentContext, question: str) -> AgentFailure:
    """The failure the agent reports for `question` (the test fails if it answers)."""
    with pytest.raises(AgentFailure) as info:
        await ask(agent, context, question)
    return info.value
