"""Dispatch request and response between the orchestrator and one agent (001_*.txt)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from concerto.contracts.common import AgentError, AgentName, AnswerValues, ErrorKind, ExecutionStatus

MIN_TIMEOUT_MS = 1
MAX_TIMEOUT_MS = 600_000


class AgentDispatchRequest(BaseModel):
    """Request to dispatch to one agent: priority, timeout, fallback and grouping."""

    model_config = ConfigDict(extra="forbid")

    agent: AgentName
    priority: int = Field(5, ge=1, le=10)
    timeout_ms: int = Field(30000, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS)
    input_payload: dict[str, Any] = Field(default_factory=dict)
    fallback_agent: AgentName | None = None
    fallback_on: list[ErrorKind] = Field(default_factory=lambda: [ErrorKind.TIMEOUT, ErrorKind.ERROR])
    parallel_group: int | None = None
    wait_for_group: bool = True


class AgentDispatchResponse(BaseModel):
    """Response from one dispatched agent, with timing split as in 001_*.txt."""

    agent: AgentName
    task_id: str = ""
    status: ExecutionStatus
    dispatch_latency_ms: float = Field(0, ge=0)
    execution_latency_ms: float = Field(0, ge=0)
    total_latency_ms: float = Field(0, ge=0)
    # default_factory, not `= {}`: pydantic deep-copies mutable defaults on every instance
    output: dict[str, Any] = Field(default_factory=dict)
    summary: str | None = None
    key_findings: list[str] = Field(default_factory=list)
    errors: list[AgentError] = Field(default_factory=list)
    entities: dict[str, Any] = Field(default_factory=dict, description="What the agent recognised in the question")
    answer_values: AnswerValues = None
    used_fallback: bool = False
    fallback_reason: str | None = None
