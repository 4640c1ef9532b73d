"""Concerto: a multi-agent orchestrator for plain-language questions about data and systems.

The public API is what `__all__` lists; modules are implementation detail.
"""

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult
from concerto.agents.registry import AgentRegistry, load_registry, register_agent
from concerto.contracts.common import AgentError, ErrorKind, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchRequest, AgentDispatchResponse
from concerto.contracts.events import Event, EventType, QueryState
from concerto.contracts.orchestrator import (
    IntentClassification,
    OrchestratorErrorResponse,
    OrchestratorInput,
    OrchestratorOutput,
)
from concerto.contracts.plan import AgentTask, OrchestrationPlan
from concerto.orchestrator.engine import Orchestrator
from concerto.settings import Settings

__all__ = [
    "Agent",
    "AgentContext",
    "AgentDispatchRequest",
    "AgentDispatchResponse",
    "AgentError",
    "AgentFailure",
    "AgentInfo",
    "AgentRegistry",
    "AgentResult",
    "AgentTask",
    "ErrorKind",
    "Event",
    "EventType",
    "ExecutionStatus",
    "IntentClassification",
    "OrchestrationPlan",
    "Orchestrator",
    "OrchestratorErrorResponse",
    "OrchestratorInput",
    "OrchestratorOutput",
    "QueryState",
    "Settings",
    "load_registry",
    "register_agent",
]
