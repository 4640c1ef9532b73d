"""Base input and output models referenced by 001_*.txt (`BaseAgentInput`, `BaseAgentOutput`)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field


def new_id() -> str:
    """A short unique identifier for queries, tasks and executions."""
    return uuid.uuid4().hex[:12]


class BaseAgentInput(BaseModel):
    """Fields every request into the orchestrator carries."""

    model_config = ConfigDict(extra="forbid")

    query_id: str = Field(default_factory=new_id, description="Unique query identifier")


class BaseAgentOutput(BaseModel):
    """Fields every output of the orchestrator carries."""

    query_id: str = ""
