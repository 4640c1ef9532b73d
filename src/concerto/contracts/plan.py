"""Orchestration plan (002_*.txt) whose tasks carry the dispatch settings of 001_*.txt."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, model_validator

from concerto.contracts.base import new_id
from concerto.contracts.dispatch import AgentDispatchRequest


class ExecutionStrategy(StrEnum):
    """How the plan's tasks relate: all independent, or a chain/graph of dependencies."""

    PARALLEL = "parallel"
    SEQUENTIAL = "sequential"


class AgentTask(AgentDispatchRequest):
    """One task of a plan: a dispatch request with an id and the tasks it waits for."""

    task_id: str = Field(default_factory=new_id)
    request: str = Field("", description="What this task should answer (default: the question)")
    depends_on: list[str] = Field(default_factory=list)


class OrchestrationPlan(BaseModel):
    """The tasks to run for one query, why, and how they depend on each other."""

    query_id: str = ""
    intent: str = ""
    strategy: ExecutionStrategy = ExecutionStrategy.PARALLEL
    tasks: list[AgentTask]
    reasoning: str = ""
    source: str = Field("default", description="Where the plan came from: table, llm or default")
    max_concurrency: int | None = Field(None, ge=1, description="Cap from the agents' declarations")

    @model_validator(mode="after")
    def _derive_strategy(self) -> OrchestrationPlan:
        if any(t.depends_on for t in self.tasks):
            self.strategy = ExecutionStrategy.SEQUENTIAL
        return self
