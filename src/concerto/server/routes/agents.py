"""The agents: `GET /v1/agents` (every loaded agent's declaration) and
`GET /v1/agents/availability` (whether each can do its work now)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from concerto.agents.base import AgentInfo
from concerto.server.routes.common import orchestrator_of

router = APIRouter()


class Availability(BaseModel):
    """Whether an agent can do its work now."""

    agent: str
    available: bool
    reason: str | None = Field(None, description="What to set up first, when it is not available")


@router.get("/v1/agents", response_model=list[AgentInfo])
async def agents(request: Request) -> list[AgentInfo]:
    """Every loaded agent's declaration."""
    return orchestrator_of(request).registry.infos()


@router.get("/v1/agents/availability", response_model=list[Availability])
async def availability(request: Request) -> list[Availability]:
    """Whether each agent can do its work now, and if not what to set up (the agent still
    answers, with an error saying so)."""
    orch = orchestrator_of(request)
    out = []
    for name in orch.registry.names():
        reason = orch.agent(name).availability()
        out.append(Availability(agent=name, available=reason is None, reason=reason))
    return out
