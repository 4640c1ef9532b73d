"""YAML handoff documents of 001_*.txt: request to an agent, its response, a synthesis request.

Each document is a mapping with one top-level key (`orchestrator_to_agent`,
`agent_to_orchestrator`, `orchestrator_synthesis`); fields keep the spec's order so a
dump reads like the spec's examples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from concerto.contracts.dispatch import AgentDispatchResponse
    from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput

T = TypeVar("T", bound="HandoffDocument")
# Output keys that are fields of the response document itself, not of its payload.
_RESPONSE_FIELDS = ("recommendations", "requires_further_analysis")


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

    @classmethod
    def from_response(
        cls, response: AgentDispatchResponse, *, execution_id: str, start_time: str, model_used: str | None = None
    ) -> AgentToOrchestrator:
        """An agent's dispatch response as the spec's document: its output is the payload (less
        `recommendations` and `requires_further_analysis`, which are the document's own fields);
        `start_time` is the query's, `latency_ms` the task's total."""
        output = dict(response.output)
        recommendations = output.pop("recommendations", None) or []
        further = bool(output.pop("requires_further_analysis", False))
        if response.errors:
            output["errors"] = [e.model_dump(mode="json", exclude_none=True) for e in response.errors]
        return cls(
            source_agent=response.agent,
            payload=output,
            metadata=ResponseMetadata(
                execution_id=execution_id,
                start_time=start_time,
                latency_ms=round(response.total_latency_ms),
                model_used=model_used,
                status=response.status.value,
            ),
            key_findings=response.key_findings,
            recommendations=[str(r) for r in recommendations],
            requires_further_analysis=further,
        )


def responses_yaml(
    results: list[AgentDispatchResponse], *, execution_id: str, start_time: str, model_used: str | None = None
) -> str:
    """Every agent's response as `agent_to_orchestrator` documents, one YAML document each."""
    documents = [
        AgentToOrchestrator.from_response(
            r,
            execution_id=f"{execution_id}:{r.task_id}" if r.task_id else execution_id,
            start_time=start_time,
            model_used=model_used,
        ).to_yaml()
        for r in results
    ]
    return "---\n".join(documents)


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


def result_yaml(
    result: OrchestratorOutput | OrchestratorErrorResponse, *, start_time: str, model_used: str | None = None
) -> str:
    """A question's result as YAML: one `agent_to_orchestrator` document per agent that ran;
    a failed question first gives its error (`orchestrator_error`), then what it salvaged."""
    from concerto.contracts.orchestrator import OrchestratorErrorResponse

    if isinstance(result, OrchestratorErrorResponse):
        error = result.model_dump(mode="json", exclude={"partial_results"}, exclude_none=True)
        head = yaml.safe_dump({"orchestrator_error": error}, sort_keys=False, allow_unicode=True)
        rest = result.partial_results or []
        if not rest:
            return head
        tail = responses_yaml(rest, execution_id=result.query_id, start_time=start_time, model_used=model_used)
        return head + "---\n" + tail
    return responses_yaml(
        result.agent_results, execution_id=result.query_id, start_time=start_time, model_used=model_used
    )
