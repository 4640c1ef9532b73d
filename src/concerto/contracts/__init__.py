"""Pydantic models of every contract the engine owns; packs keep their own under their folder."""

from concerto.contracts.common import AgentError, AgentName, ErrorKind, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchRequest, AgentDispatchResponse
from concerto.contracts.events import Event, EventType, QueryState
from concerto.contracts.handoff import (
    AgentToOrchestrator,
    HandoffError,
    OrchestratorSynthesis,
    OrchestratorToAgent,
)
from concerto.contracts.orchestrator import (
    IntentClassification,
    OrchestratorErrorResponse,
    OrchestratorInput,
    OrchestratorOutput,
)
from concerto.contracts.plan import AgentTask, ExecutionStrategy, OrchestrationPlan

__all__ = [
    "AgentDispatchRequest",
    "AgentDispatchResponse",
    "AgentError",
    "AgentName",
    "AgentTask",
    "AgentToOrchestrator",
    "ErrorKind",
    "Event",
    "EventType",
    "ExecutionStatus",
    "ExecutionStrategy",
    "HandoffError",
    "IntentClassification",
    "OrchestrationPlan",
    "OrchestratorErrorResponse",
    "OrchestratorInput",
    "OrchestratorOutput",
    "OrchestratorSynthesis",
    "OrchestratorToAgent",
    "QueryState",
]
