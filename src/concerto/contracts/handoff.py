"""YAML handoff documents of 001_*.txt: request to an agent, its response, a synthesis request.

Each document is a mapping with one top-level key (`orchestrator_to_agent`,
`agent_to_orchestrator`, `orchestrator_synthesis`); fields keep the spec's order so a
dump reads like the spec's examples.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

T = TypeVar("T", bound="HandoffDocument")


class HandoffError(ValueError):
    """A handoff document that is not YAML, or not the shape the spec shows."""


class HandoffDocument(BaseModel):
    """Base of the three documents: YAML round trip under the document's top-level key."""

    model_config = ConfigDict(extra="forbid")
    root_key: ClassVar[str]

    def to_yaml(self) -> str:
        """Serialise as the spec shows it, fields in declaration order, unset options left out."""
        body = self.model_dump(mode="json", exclude_none=True)
        return yaml.safe_dump({self.root_key: body}, sort_keys=False, allow_unicode=True)

    @classmethod
    def from_yaml(cls: type[T], text: str) -> T:
        """Parse and validate; any problem becomes a `HandoffError` with a readable reason."""
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise HandoffError(f"not valid YAML: {exc}") from None
        if not isinstance(data, dict) or cls.root_key not in data:
            raise HandoffError(f"expected a mapping with the top-level key '{cls.root_key}'")
        try:
            return cls.model_validate(data[cls.root_key])
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise HandoffError(f"invalid {cls.root_key}: {problems}") from None


class RequestMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")
    execution_id: str
    start_time: str
    intent: str | None = None
    confidence: float | None = Field(None, ge=0, le=1)


class ResponseMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")
    execution_id: str
    start_time: str
    end_time: str | None = None
    latency_ms: int | None = None
    model_used: str | None = None


class OrchestratorToAgent(HandoffDocument):
    """Request from the orchestrator to one agent."""

    root_key: ClassVar[str] = "orchestrator_to_agent"
    source_agent: str = "orchestrator"
    target_agent: str
    handoff_type: Literal["request"] = "request"
    priority: int = Field(5, ge=1, le=10)
    timeout_ms: int = Field(30000, gt=0)
    payload: dict[str, Any]
    metadata: RequestMetadata


class AgentToOrchestrator(HandoffDocument):
    """Response from an agent back to the orchestrator."""

    root_key: ClassVar[str] = "agent_to_orchestrator"
    source_agent: str
    target_agent: str = "orchestrator"
    handoff_type: Literal["response"] = "response"
    payload: dict[str, Any]
    metadata: ResponseMetadata
    key_findings: list[str] = []
    recommendations: list[str] = []
    requires_further_analysis: bool = False


class AnalysisResult(BaseModel):
    model_config = ConfigDict(extra="allow")
    agent: str
    key_findings: list[str] = []


class SynthesisPayload(BaseModel):
    model_config = ConfigDict(extra="allow")
    query: str
    analysis_results: list[AnalysisResult]
    user_expertise: Literal["executive", "analyst", "data_scientist"] = "analyst"
    output_format: Literal["narrative", "structured", "brief"] = "narrative"


class OrchestratorSynthesis(HandoffDocument):
    """Request to a synthesising agent with the findings of several others."""

    root_key: ClassVar[str] = "orchestrator_synthesis"
    source_agents: list[str] = Field(..., min_length=1)
    target_agent: str
    handoff_type: Literal["request"] = "request"
    payload: SynthesisPayload
